"""What every part of the profile schema shares: the strict base model (unknown fields, NaN and
control characters refused, every number bounded), the error that names a JSON path, the bounds,
the name types and the vocabularies (precisions, sources, engine kinds).

Units, everywhere in the workbench: latency ``L*`` in ms, memory footprint ``MF`` and size ``S`` in
MB, workload ``W`` in FLOPs, energy ``E`` in mJ, throughput ``TP`` in samples/s, ``params`` as a
count. ``L`` is the mean latency. Every configuration row says where its numbers come from in
``source``: measured (on the device, here), modelled (analytical model), predicted (a learned
predictor) or imported (another tool's output).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeGuard, cast, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, model_validator

from ... import processors
from ...errors import WorkbenchError
from ...names import first_control
from ...names import validator as name_validator
from ...precisions import PRECISIONS as PRECISIONS
from ...precisions import Arithmetic as Arithmetic
from ...precisions import Precision as Precision
from ...processors import EngineKind as EngineKind

Source = Literal["measured", "modelled", "predicted", "imported"]
#: Every source a row can have (what the CLI's --source offers).
SOURCES: tuple[Source, ...] = get_args(Source)


def is_precision(text: object) -> TypeGuard[Precision]:
    """Whether a text (a user's, a file name's) is one of the model precisions."""
    return text in PRECISIONS


def engine_kind(processor: str) -> EngineKind:
    """The engine kind of a processor id (InputError for an unknown one)."""
    # processors.kind returns one of processors.KINDS, the values EngineKind names.
    return cast(EngineKind, processors.kind(processor))


class PathError(WorkbenchError, ValueError):
    """A cross-field check that knows the JSON path and value it is about."""

    def __init__(self, where: str, message: str, value: object = ...) -> None:
        self.where, self.message, self.value = where, message, value
        super().__init__(f"{where}: {message}")


#: Bounds a profile's values must keep for the solver's arithmetic: core ids and thread counts
#: beyond these are refused, not wrapped or overflowed.
MAX_CORE_ID = processors.MAX_CORE_ID
MAX_THREADS = processors.MAX_THREADS
MAX_BATCH = processors.MAX_BATCH
#: The largest magnitude of any number in a profile, in its field's unit: 1e18 ms, MB, FLOPs
#: or mJ is far beyond any real model or device, and far enough below the float range (1.8e308)
#: that sums over tasks, contention factors and squares (standard deviations) stay finite.
MAX_VALUE = 1e18


#: Names a profile gives (device, task, model, configuration, engine): text with no control
#: characters, so no name printed in a table or a message can carry a terminal escape sequence.
DeviceName = Annotated[str, AfterValidator(name_validator("device"))]
TaskName = Annotated[str, AfterValidator(name_validator("task"))]
ModelName = Annotated[str, AfterValidator(name_validator("model"))]
ConfigId = Annotated[str, AfterValidator(name_validator("configuration", max_len=256))]


class _Strict(BaseModel):
    # Mistyped fields are errors, not silently ignored data.
    # strict: "L": true is not 1 ms and "threads": "4" is not 4 (an int is still a float).
    # allow_inf_nan: every float field, nested ones too, refuses NaN and infinities (JSON's
    # NaN, Infinity and 1e309 parse to them) at load, naming the field.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True,
                              allow_inf_nan=False)

    @model_validator(mode="after")
    def _bounded(self) -> Any:
        """Every float (also in a list or a mapping) within +-MAX_VALUE, and no control
        character in any text. Checked per object in bulk (one regex search over all its text,
        one min and max over its floats), and field by field only to name a failure: 10^6-row
        profiles spent most of their load in per-field calls."""
        vals = list(self.__dict__.values())
        floats = [v for v in vals if type(v) is float]
        texts = [v for v in vals if type(v) is str]
        nested = [v for v in vals if type(v) is list or type(v) is dict]
        if (floats and not -MAX_VALUE <= min(floats) <= max(floats) <= MAX_VALUE
                or texts and first_control("\n".join(texts), whitespace_ok=True) or nested):
            self._bounded_field_by_field()
        return self

    def _bounded_field_by_field(self) -> None:
        for name, v in self.__dict__.items():
            items = v if isinstance(v, list) else v.values() if isinstance(v, dict) else (v,)
            shown = v if isinstance(v, (float, str)) else ...  # a whole list says little
            for x in items:
                if isinstance(x, float) and abs(x) > MAX_VALUE:
                    raise PathError(name, f"{x!r} is beyond the largest magnitude a profile "
                                    f"holds ({MAX_VALUE:g})", shown)
                # Any text (a metric's name, a note, provenance): tables and messages print it.
                if isinstance(x, str) and first_control(x, whitespace_ok=True):
                    raise PathError(name, "control characters have no place in a profile's "
                                    "text", shown)
