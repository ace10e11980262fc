"""One row of a profile's configuration table: an execution configuration, what it is and where
it runs, with its metrics; and a configuration that was tried and failed.

The metric columns are generated from the metric table (:mod:`workbench.metrics`), in its order:
each per-model metric's statistics (``L``, ``L_std``, ... ``L_p99``), then what a row keeps
beside them (A's sample count and interval, L's timed runs). A new metric is a row in that
table and a new optional column here, with no edit to this module.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pydantic import Field, create_model, field_validator, model_validator

from ... import processors
from ...errors import InputError
from ...memorymodes import MemoryMode
from ...metrics import BY_NAME, COLUMNS, TABLE, Metric
from ...taskmetrics import MIN_BOOTSTRAP
from .base import (
    MAX_BATCH,
    MAX_THREADS,
    Arithmetic,
    ConfigId,
    EngineKind,
    ModelName,
    PathError,
    Precision,
    Source,
    TaskName,
    _Strict,
    engine_kind,
)

#: Latencies are durations: 0 ms would be an infinite throughput that wins every SLO (their
#: spread, L_std, may be 0).
_LATENCIES = tuple(BY_NAME["L"].column(s) for s in BY_NAME["L"].stats if s != "std")
#: A configuration's fields that hold a finite number >= 0 when present.
_NON_NEGATIVE = (*COLUMNS, "A_lo", "A_hi")


class _ConfigHead(_Strict):
    """What a configuration is: the model, and where and how it runs."""

    id: ConfigId = Field(min_length=1)
    task: TaskName = "default"
    model: ModelName = Field(min_length=1,
                             description="Architecture name, e.g. 'EfficientNet Lite0'.")
    arch: ModelName | None = Field(default=None, description="Model family, e.g. 'EfficientNet'.")
    precision: Precision
    processor: str
    threads: int | None = Field(default=None, ge=1, le=MAX_THREADS)
    xnnpack: bool | None = None
    delegate_precision: Arithmetic | None = None
    governor: str | None = None
    recognition_rate: float | None = Field(
        default=None, gt=0, le=1, description="OODIn's recognition rate r: inference runs on this "
        "fraction of the input frames (0.5: every second one) and the others reuse its result; "
        "TP then counts frames served per second and E the energy per frame.")
    memory_mode: MemoryMode | None = None
    memory_budget_mb: float | None = Field(default=None, gt=0)
    criteria: str | None = Field(
        default=None, description="A multi-exit operating point's exit criteria (Delen's text "
        "form, e.g. 'confidence > 0.8'): model is ARCH@POINT, arch the stored model.")
    batch: int = Field(default=1, ge=1, le=MAX_BATCH)


#: What a row keeps beside a metric's statistics (written after them): how A was measured (on
#: how many samples, its 95% interval) and L's timed runs.
_BESIDE: dict[str, dict[str, Any]] = {
    "A": {
        "A_n": (int | None, Field(default=None, ge=1, description="Samples A was measured on.")),
        "A_lo": (float | None, Field(default=None, description="A's 95% interval, low end.")),
        "A_hi": (float | None, Field(default=None, description="A's 95% interval, high end.")),
    },
    "L": {
        "L_samples": (list[float] | None, None),
        "L_n": (int | None, Field(default=None, ge=1, description="Timed runs behind L and its "
                                  "statistics (the interval of the mean L is L +- 1.96 L_std / "
                                  "sqrt(L_n)).")),
    },
}


def _description(m: Metric, stat: str) -> str:
    what = m.description if stat == "avg" else f"{stat} of the {m.description}"
    return f"{what} ({m.unit})" if m.unit else what


def metric_fields() -> dict[str, Any]:
    """A configuration's metric fields from the metric table, in its order: each per-model
    metric's statistics (optional numbers in the metric's unit), then what is kept beside them.
    Their names are :data:`workbench.metrics.COLUMNS` and the extras."""
    out: dict[str, Any] = {}
    for m in TABLE:
        if m.system:
            continue
        for stat in m.stats:
            out[m.column(stat)] = (float | None, Field(default=None,
                                                       description=_description(m, stat)))
        out.update(_BESIDE.get(m.name, {}))
    return out


if TYPE_CHECKING:
    class _ConfigMetrics(_ConfigHead):
        # The type checker cannot run the table: this is its view of the columns code reads by
        # name. The model's fields are the generated ones below (tests/test_profiles_schema.py
        # checks that this view names no field they lack).
        A: float | None = None
        A_n: int | None = None
        A_lo: float | None = None
        A_hi: float | None = None
        S: float | None = None
        params: float | None = None
        W: float | None = None
        L: float | None = None
        L_std: float | None = None
        L_min: float | None = None
        L_max: float | None = None
        L_p50: float | None = None
        L_p90: float | None = None
        L_p99: float | None = None
        L_samples: list[float] | None = None
        L_n: int | None = None
        TP: float | None = None
        E: float | None = None
        MF: float | None = None
else:
    _ConfigMetrics = create_model("_ConfigMetrics", __base__=_ConfigHead, __module__=__name__,
                                  __doc__="A configuration's metric columns (the metric table's).",
                                  **metric_fields())


class Config(_ConfigMetrics):
    """One execution configuration e = <m, hw> and its metrics (one row of the table)."""

    source: Source
    note: str | None = None

    @field_validator("processor")
    @classmethod
    def _known_processor(cls, v: str) -> str:
        processors.kind(v)
        return v

    @field_validator("criteria")
    @classmethod
    def _parsable_criteria(cls, v: str | None) -> str | None:
        if v is not None:
            from ...runtime.criteria import parse_criteria

            try:
                parse_criteria(v)
            except InputError as e:
                raise ValueError(e.message) from None
        return v

    @field_validator("L_samples")
    @classmethod
    def _finite_samples(cls, v: list[float] | None) -> list[float] | None:
        if v is not None:
            for i, s in enumerate(v):
                if not math.isfinite(s) or s < 0:
                    raise ValueError(f"sample {i} is {s!r}: latency samples must be finite and >= 0")
        return v

    @model_validator(mode="after")
    def _ordered_latency(self) -> "Config":
        # The metric columns in one pass (a validator per field cost a call per field per row).
        d = self.__dict__
        for name in _NON_NEGATIVE:
            v = d[name]
            if v is None:
                continue
            if not math.isfinite(v) or v < 0:
                raise PathError(name, "must be a finite number >= 0", v)
            if v == 0 and name in _LATENCIES:
                raise PathError(name, "a latency must be > 0 ms", v)
        if self.L_min is not None and self.L_max is not None and self.L_min > self.L_max:
            raise PathError("L_min", f"L_min is greater than L_max ({self.L_max})", self.L_min)
        if (self.A_lo is None) != (self.A_hi is None):
            raise PathError("A_lo" if self.A_hi is None else "A_hi", "an interval needs both "
                            "A_lo and A_hi", self.A_lo if self.A_hi is None else self.A_hi)
        if self.A_lo is not None and self.A_hi is not None:
            if self.A is None:
                raise PathError("A_lo", "an interval of A needs A itself", self.A_lo)
            if not self.A_lo <= self.A <= self.A_hi:
                raise PathError("A_lo", f"the interval [{self.A_lo}, {self.A_hi}] does not hold "
                                f"A = {self.A}", self.A_lo)
        return self

    @property
    def A_half_width(self) -> float:
        """Half the width of A's 95% interval: 0 when the row has none (a modelled, cited or
        imported A is taken as given), infinite when A was measured on too few samples for one
        (A_n under taskmetrics.MIN_BOOTSTRAP): such an A is known only roughly, so the solvers
        let it tie rather than rank on it."""
        if self.A_lo is not None and self.A_hi is not None:
            return (self.A_hi - self.A_lo) / 2
        if self.A is not None and self.A_n is not None and self.A_n < MIN_BOOTSTRAP:
            return math.inf
        return 0.0

    @property
    def L_half_width(self) -> float:
        """Half the width of the 95% interval of the mean latency (0 when the row lacks L_std
        or L_n): 1.96 L_std / sqrt(L_n), the normal approximation over the timed runs."""
        if self.L is None or self.L_std is None or not self.L_n:
            return 0.0
        return 1.959963984540054 * self.L_std / math.sqrt(self.L_n)

    @property
    def L_cv(self) -> float | None:
        """The coefficient of variation of the timed runs (L_std / L)."""
        return None if self.L is None or self.L_std is None else self.L_std / self.L

    @property
    def kind(self) -> EngineKind:
        """Engine kind of the processor (``CPU``, ``GPU``, ``NPU`` or ``DSP``)."""
        return engine_kind(self.processor)

    def label(self) -> str:
        """Short human label in CARIn's notation, e.g. ``EfficientNet Lite0 FFX8, CPU_{4,T}``."""
        hw = processors.label(self.processor, self.threads, self.xnnpack)
        mode = ""
        if self.memory_mode:
            at = f"@{self.memory_budget_mb:g}MB" if self.memory_budget_mb else ""
            mode = f" [{self.memory_mode}{at}]"
        return f"{self.model} {self.precision}, {hw}{mode}"


class FailedConfig(_Strict):
    """A configuration that was tried and could not run here (a custom op the option cannot
    execute, a crash), kept with the reason so that a profile says what it left out."""

    id: ConfigId = Field(min_length=1)
    task: TaskName = "default"
    model: ModelName = Field(min_length=1)
    precision: Precision
    processor: str
    threads: int | None = Field(default=None, ge=1, le=MAX_THREADS)
    xnnpack: bool | None = None
    reason: str = Field(min_length=1)
