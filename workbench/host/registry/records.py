"""What the registry stores of a model: ``model.json``'s schema (:class:`ModelRecord` with its
variants, outputs and data) and the registry's fixed names (schemes, file names, sample counts)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ... import taskmetrics
from ...names import validator as name_validator
from ...precisions import PRECISIONS as PRECISIONS
from ..intake import Kind

MetricName = Literal[taskmetrics.NAMES]  # type: ignore[valid-type]
#: Metrics measured against the FP32 variant's outputs rather than labels.
RELATIVE = tuple(m.name for m in taskmetrics.TABLE if m.relative)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
GENERATED_SAMPLES = 64
CALIBRATION_SAMPLES = 100
RECORD = "model.json"
CUSTOM_OBJECTS = "custom_objects.py"
SOURCE = {"keras": "source.keras", "savedmodel": "source.savedmodel", "tflite": "source.tflite",
          "onnx": "source.onnx"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VariantRecord(_Strict):
    """One converted scheme of a model: its file and what was measured of it."""

    precision: str
    available: bool
    reason: str | None = None
    file: str | None = None
    sha256: str | None = None
    size_mb: float | None = None
    params: int | None = None
    flops: int | None = None
    n_ops: int | None = None
    ops: dict[str, int] = Field(default_factory=dict)
    metric: float | None = Field(default=None, description="A on the evaluation inputs (LiteRT)")
    metric_n: int | None = Field(default=None, description="samples A was measured on")
    metric_lo: float | None = Field(default=None, description="A's 95% interval, low end")
    metric_hi: float | None = Field(default=None, description="A's 95% interval, high end")
    convert_seconds: float | None = None
    note: str | None = None
    output_error: dict[str, float] | None = Field(
        default=None, description="a multi-output model's every output against FP32's on the "
        "evaluation inputs, by output name (A reads one): the mean absolute difference in % of "
        "the range of FP32's values of that output (0: the same)")


class OutputRecord(_Strict):
    """One output of a model (see :class:`workbench.host.intake.Output`)."""

    name: str
    key: str | None = None
    shape: list[int | None]


class DataRecord(_Strict):
    """The task data a model was added with (absent: generated inputs)."""

    file: str = "data.npz"
    sha256: str
    source: str
    n_eval: int
    n_calib: int
    calibration: str = Field(description="which inputs calibrated the int8 schemes")


class ModelRecord(_Strict):
    """What the registry knows of one model."""

    name: str
    task: str
    # Shown in profiles and tables: a record edited by hand (or written before names were
    # checked) is refused at read, naming model.json, not when a profile is built from it.
    arch: Annotated[str, AfterValidator(name_validator("model family"))]
    kind: Kind
    file: str
    sha256: str
    source: str
    added: str
    input_shape: list[int]
    input_dtype: str
    output_shape: list[int] = Field(description="the shape of the output A reads")
    outputs: list[OutputRecord] = Field(default_factory=list, description="every output, when "
                                        "the model has more than one")
    output: int = Field(default=0, ge=0, description="the output A reads (index into outputs)")
    notes: list[str] = Field(default_factory=list, description="what was changed to convert "
                             "it (e.g. recurrent layers unrolled)")
    custom_objects: str | None = Field(default=None, description="the copy of the Python file "
                                       "defining its custom layers, imported before loading it")
    feeds: dict[str, float] = Field(default_factory=dict, description="values fed to inputs "
                                    "other than the first at every run")
    data_input: str | None = Field(default=None, description="the input the data feeds, of a "
                                   "Keras, SavedModel or .tflite model with several inputs (its "
                                   "signature key); its variant files carry it with the feeds")
    metric: MetricName
    data: DataRecord | None = None
    cited: dict[str, float] = Field(default_factory=dict, description="A per scheme from a "
                                    "citation (e.g. ImageNet top-1), used instead of the measured")
    citation: str | None = None
    variants: list[VariantRecord] = Field(default_factory=list)

    @property
    def task_metric(self) -> taskmetrics.TaskMetric:
        return taskmetrics.get(self.metric)

    @property
    def metric_label(self) -> str:
        return self.task_metric.label

    @property
    def higher_is_better(self) -> bool:
        return self.task_metric.higher_is_better

    @property
    def n_outputs(self) -> int:
        return int(np.prod(self.output_shape)) if self.output_shape else 1

    @property
    def output_ref(self) -> tuple[int, str | None, str | None] | None:
        """How :func:`workbench.host.quantise.predict` finds the output A reads (None: the only
        one)."""
        if len(self.outputs) < 2:
            return None
        o = self.outputs[self.output]
        return self.output, o.key, o.name

    def variant(self, precision: str) -> VariantRecord | None:
        return next((v for v in self.variants if v.precision == precision), None)

    @property
    def input_plan(self) -> dict | None:
        """How a LiteRT variant with several inputs is fed (stored in each variant file:
        :data:`workbench.runtime.interpreter.INPUTS_KEY`); None: one input, or ONNX."""
        return None if self.data_input is None else {"data": self.data_input,
                                                     "feeds": dict(self.feeds)}

    @property
    def available(self) -> list[str]:
        return [v.precision for v in self.variants if v.available]

    def a_of(self, v: VariantRecord) -> float | None:
        """The A a profile gets for a variant: cited where the model has citations (None for a
        scheme nobody published), else the measured one."""
        if self.cited or self.citation:
            return self.cited.get(v.precision)
        return v.metric

    def confidence_of(self, v: VariantRecord) -> tuple[int | None, float | None, float | None]:
        """A's sample count and 95% interval as a profile gets them: none for cited A (a
        citation gives no interval, and the measured one is of another metric)."""
        if self.cited or self.citation:
            return None, None, None
        return v.metric_n, v.metric_lo, v.metric_hi

    @property
    def evaluation(self) -> str:
        """Where A comes from, in words (for the profile's task description)."""
        if self.cited or self.citation:
            return (f"A = CITED, not measured ({self.citation or 'no citation'}; schemes "
                    f"{', '.join(self.cited) or 'none'}); measured here: agreement with FP32 on "
                    + (self.data.source if self.data else "generated inputs"))
        if self.data is None:
            return (f"{GENERATED_SAMPLES} generated inputs; A = agreement with the FP32 variant "
                    "(no task data given)")
        what = self.task_metric.definition.split(":")[0]
        return (f"{self.data.source} ({self.data.n_eval} samples); A = {what}, measured with "
                + ("onnxruntime" if self.kind == "onnx" else "LiteRT"))
