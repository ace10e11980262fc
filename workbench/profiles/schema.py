"""Device profile schema (SPEC section 4): a device, its compute engines and the configuration table.

Units, everywhere in the workbench: latency ``L*`` in ms, memory footprint ``MF`` and size ``S`` in
MB, workload ``W`` in FLOPs, energy ``E`` in mJ, throughput ``TP`` in samples/s, ``params`` as a
count. ``L`` is the mean latency. Every configuration row says where its numbers come from in
``source``: measured (on the device, here), modelled (analytical model), predicted (a learned
predictor) or imported (another tool's output).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from .. import processors
from ..errors import InputError, WorkbenchError
from ..memorymodes import MemoryMode
from ..metrics import COLUMNS
from ..names import first_control
from ..names import validator as name_validator
from ..taskmetrics import MIN_BOOTSTRAP

PRECISIONS: tuple[str, ...] = ("FP32", "FP16", "DR8", "FX8", "FFX8")
Precision = Literal["FP32", "FP16", "DR8", "FX8", "FFX8"]
Source = Literal["measured", "modelled", "predicted", "imported"]
EngineKind = Literal["CPU", "GPU", "NPU", "DSP"]



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
#: Latencies are durations: 0 ms would be an infinite throughput that wins every SLO.
_LATENCIES = ("L", "L_min", "L_max", "L_p50", "L_p90", "L_p99")


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


class CpuCluster(_Strict):
    """A cluster of identical CPU cores (big.LITTLE devices have several)."""

    core: str = Field(description="Core type, e.g. 'Cortex-A76'.")
    count: int = Field(ge=1, le=MAX_CORE_ID + 1)
    ghz: float = Field(gt=0, le=6.0, description="Maximum clock in GHz (at most 6: a number in MHz "
                                                  "is refused, not modelled as a 1000x faster core).")
    core_ids: list[Annotated[int, Field(ge=0, le=MAX_CORE_ID)]] | None = Field(
        default=None, description="OS core ids, where known.")


class Accelerator(_Strict):
    """A GPU, NPU or DSP as the spec sheet names it, with its peak throughput where known (the
    phone model runs an accelerator from these figures, never from its name)."""

    name: DeviceName
    clock_mhz: float | None = Field(default=None, gt=0)
    fp32_gflops: float | None = Field(default=None, gt=0, description="Peak FP32 GFLOPS (GPU).")
    fp16_gflops: float | None = Field(default=None, gt=0, description="Peak FP16 GFLOPS (GPU).")
    int8_tops: float | None = Field(default=None, gt=0, description="Peak int8 TOPS (NPU, DSP).")
    fp16_tflops: float | None = Field(default=None, gt=0,
                                      description="Peak FP16 TFLOPS (NPU, DSP), where it has FP16.")
    note: str | None = None


class Device(_Strict):
    """What the device is (CARIn Table 6, OODIn Table I)."""

    name: DeviceName = Field(min_length=1, description="Short id, e.g. 's20fe'.")
    display_name: DeviceName | None = None
    soc: DeviceName | None = None
    launch: str | None = None
    os: str | None = None
    cpu_clusters: list[CpuCluster] = Field(default_factory=list)
    gpu: Accelerator | None = None
    npu: Accelerator | None = None
    dsp: Accelerator | None = None
    ram_gb: float | None = Field(default=None, gt=0)
    ram_mhz: float | None = Field(default=None, gt=0)
    dram_gbps: float | None = Field(default=None, gt=0, description=(
        "Peak DRAM bandwidth in GB/s (default for modelling: ram_mhz x 2 transfers x 64-bit bus)."))
    tdp_w: float | None = Field(default=None, gt=0)
    battery_mah: float | None = Field(default=None, gt=0)
    governors: list[str] = Field(default_factory=list, description="DVFS governors available.")
    note: str | None = Field(default=None, description="Where the spec's numbers come from.")

    @property
    def n_cores(self) -> int:
        return sum(c.count for c in self.cpu_clusters)


class EngineOptions(_Strict):
    """The tunable options of a compute engine, op(ce) in CARIn section 6.4."""

    threads: list[Annotated[int, Field(ge=1, le=MAX_THREADS)]] = Field(default_factory=list)
    xnnpack: list[bool] = Field(default_factory=list)
    delegate_precision: list[Literal["fp32", "fp16", "int8"]] = Field(default_factory=list)
    governors: list[str] = Field(default_factory=list)
    memory_modes: list[MemoryMode] = Field(default_factory=list)

    @field_validator("threads")
    @classmethod
    def _positive_threads(cls, v: list[int]) -> list[int]:
        if any(t < 1 for t in v):
            raise ValueError("thread counts must be >= 1")
        return v


class Engine(_Strict):
    """A compute engine the configurations can run on (a 'processor' in the table)."""

    name: str = Field(description="Processor id used by the configurations, e.g. 'GPU', 'CPU[0]'.")
    kind: EngineKind
    precisions: list[Precision] = Field(
        default_factory=lambda: list(PRECISIONS),  # type: ignore[arg-type]
        description="Model precisions the engine can run (natively or by fallback).")
    native: list[Literal["fp32", "fp16", "int8"]] = Field(
        default_factory=list, description="Arithmetic the engine runs natively.")
    core_ids: list[Annotated[int, Field(ge=0, le=MAX_CORE_ID)]] | None = Field(
        default=None, description="CPU affinity of this processor.")
    options: EngineOptions = Field(default_factory=EngineOptions)

    @field_validator("name")
    @classmethod
    def _known_processor(cls, v: str) -> str:
        processors.kind(v)
        return v

    @model_validator(mode="after")
    def _kind_matches_name(self) -> "Engine":
        if processors.kind(self.name) != self.kind:
            raise ValueError(f"engine {self.name!r} has kind {self.kind!r}; "
                             f"expected {processors.kind(self.name)!r}")
        return self


class Task(_Strict):
    """A DL task whose models are in the table; says how to read its accuracy column."""

    name: TaskName = Field(min_length=1)
    metric: str = Field(default="top1", description="What A holds, e.g. 'top1', 'MAE', 'mAP'.")
    higher_is_better: bool = True
    dataset: str | None = None
    batch: int = Field(default=1, ge=1, le=MAX_BATCH)


#: A configuration's fields that hold a finite number >= 0 when present.
_NON_NEGATIVE = (*COLUMNS, "A_lo", "A_hi", *(f for f in _LATENCIES if f not in COLUMNS))


class Config(_Strict):
    """One execution configuration e = <m, hw> and its metrics (one row of the table)."""

    id: ConfigId = Field(min_length=1)
    task: TaskName = "default"
    model: ModelName = Field(min_length=1,
                             description="Architecture name, e.g. 'EfficientNet Lite0'.")
    arch: ModelName | None = Field(default=None, description="Model family, e.g. 'EfficientNet'.")
    precision: Precision
    processor: str
    threads: int | None = Field(default=None, ge=1, le=MAX_THREADS)
    xnnpack: bool | None = None
    delegate_precision: Literal["fp32", "fp16", "int8"] | None = None
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

    A: float | None = None
    A_n: int | None = Field(default=None, ge=1, description="Samples A was measured on.")
    A_lo: float | None = Field(default=None, description="A's 95% interval, low end.")
    A_hi: float | None = Field(default=None, description="A's 95% interval, high end.")
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
    L_n: int | None = Field(default=None, ge=1, description="Timed runs behind L and its "
                            "statistics (the interval of the mean L is L +- 1.96 L_std / "
                            "sqrt(L_n)).")
    TP: float | None = None
    E: float | None = None
    MF: float | None = None

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
            from ..runtime.criteria import parse_criteria

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
    def kind(self) -> str:
        """Engine kind of the processor (``CPU``, ``GPU``, ``NPU`` or ``DSP``)."""
        return processors.kind(self.processor)

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


class CoExecution(_Strict):
    """Metrics of several configurations run concurrently (multi-DNN rows).

    ``latency[i]`` holds the mean latency (ms) of ``configs[i]`` under co-execution, L_i^M.
    """

    configs: list[str] = Field(min_length=2)
    L: list[float] = Field(description="Per-model mean latency under co-execution (ms).")
    L_std: list[float] | None = None
    MF: float | None = Field(default=None, ge=0, description="Combined peak memory (MB).")
    source: Source
    note: str | None = None

    @model_validator(mode="after")
    def _lengths(self) -> "CoExecution":
        for name in ("L", "L_std"):
            vals = getattr(self, name)
            if vals is None:
                continue
            if len(vals) != len(self.configs):
                raise ValueError(f"{name} has {len(vals)} values for {len(self.configs)} configs")
            if any(not math.isfinite(v) or v < 0 for v in vals):
                raise ValueError(f"{name} values must be finite numbers >= 0")
        return self


class Provenance(_Strict):
    """Where a profile came from, so every report can say what it shows."""

    method: str = Field(description="e.g. 'analytical model', 'LiteRT interpreter on host'.")
    tool: str = "workbench"
    tool_version: str | None = None
    created: str | None = Field(default=None, description="ISO date; omitted for modelled "
                                "profiles so regeneration is byte-identical.")
    citation: str | None = None
    host: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class ExitRow(_Strict):
    """One exit of a stored multi-exit model (cumulative costs to reach and run it)."""

    exit: int = Field(ge=1)
    latency_ms: float = Field(ge=0)
    accuracy: float = Field(ge=0, le=1)
    flops: float | None = Field(default=None, ge=0)
    energy_mj: float | None = Field(default=None, ge=0)
    confidence_mean: float | None = Field(default=None, ge=0, le=1)


class MultiExitModel(_Strict):
    """Delen's exit profile of one stored multi-exit model on this device. Its operating points
    (each exit, each Pareto threshold vector) appear as configurations named ``ARCH@POINT``."""

    name: ModelName = Field(min_length=1)
    task: TaskName
    arch: ModelName = Field(min_length=1)
    processor: str
    threads: int = Field(default=1, ge=1)
    size_mb: float | None = Field(default=None, ge=0)
    source: Source
    note: str | None = None
    #: Where its segments were stored when it was built (``<zoo>/multiexit/<arch>``, the quick
    #: zoo's for ``--quick``): ``bundle`` looks there first, so a profile finds its own model.
    folder: str | None = Field(default=None, max_length=4096)
    exits: list[ExitRow] = Field(min_length=1)

    @model_validator(mode="after")
    def _ordered(self) -> "MultiExitModel":
        for k, e in enumerate(self.exits):
            if e.exit != k + 1:
                raise PathError(f"exits[{k}].exit", "exits are numbered 1, 2, ... in order",
                                e.exit)
            if k and e.latency_ms < self.exits[k - 1].latency_ms:
                raise PathError(f"exits[{k}].latency_ms", "cumulative latency cannot fall from "
                                "one exit to the next", e.latency_ms)
        return self


class Profile(_Strict):
    """A device profile: the device, its engines, tasks and the configuration table."""

    schema_version: Literal[1] = 1
    device: Device
    source: Source
    provenance: Provenance
    engines: list[Engine] = Field(default_factory=list)
    tasks: list[Task] = Field(default_factory=list)
    configs: list[Config] = Field(default_factory=list)
    coexecution: list[CoExecution] = Field(default_factory=list)
    contention: dict[str, float] = Field(
        default_factory=dict, description="Parameters of the multi-DNN contention model.")
    multi_exit: list[MultiExitModel] = Field(
        default_factory=list, description="Exit profiles of stored multi-exit models (Delen).")
    failed: list[FailedConfig] = Field(
        default_factory=list, description="Configurations tried that could not run, with why.")

    @field_validator("contention")
    @classmethod
    def _finite_parameters(cls, v: dict[str, float]) -> dict[str, float]:
        for k, x in v.items():
            # Negative parameters would make co-running models faster than alone (negative
            # latencies that win every SLO); past 100 the model has lost its meaning.
            if not (math.isfinite(x) and 0 <= x <= 100):
                raise ValueError(f"parameter {k!r} must be a number 0..100, got {x!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Profile":
        if not self.configs and not self.multi_exit:
            raise PathError("configs", "a profile needs at least one configuration", [])
        tasks = [t.name for t in self.tasks]
        for i, t in enumerate(tasks):
            if t in tasks[:i]:
                raise PathError(f"tasks[{i}].name", "duplicate task", t)
        seen: dict[str, int] = {}
        for i, c in enumerate(self.configs):
            if c.id in seen:
                raise PathError(f"configs[{i}].id",
                                f"duplicate config id (first at configs[{seen[c.id]}])", c.id)
            seen[c.id] = i
        names = [e.name for e in self.engines]
        if len(set(names)) != len(names):
            raise PathError("engines", "duplicate engine names", names)
        if names:
            for i, c in enumerate(self.configs):
                if c.processor not in names:
                    raise PathError(f"configs[{i}].processor", "not an engine of this device "
                                    f"(engines: {', '.join(names)})", c.processor)
        task_names = {t.name for t in self.tasks}
        if task_names:
            for i, c in enumerate(self.configs):
                if c.task not in task_names:
                    raise PathError(f"configs[{i}].task",
                                    f"unknown task (tasks: {', '.join(sorted(task_names))})", c.task)
        for k, m in enumerate(self.multi_exit):
            if task_names and m.task not in task_names:
                raise PathError(f"multi_exit[{k}].task", "unknown task", m.task)
            if names and m.processor not in names:
                raise PathError(f"multi_exit[{k}].processor", "not an engine of this device",
                                m.processor)
        for k, row in enumerate(self.coexecution):
            for cid in row.configs:
                if cid not in seen:
                    raise PathError(f"coexecution[{k}].configs", "unknown config id", cid)
        return self

    # -- convenience --------------------------------------------------------------------------
    def config(self, config_id: str) -> Config:
        """The configuration with this id (KeyError naming the id if absent)."""
        for c in self.configs:
            if c.id == config_id:
                return c
        raise InputError(f"no such configuration in profile {self.device.name!r}", value=config_id)

    def task(self, name: str) -> Task:
        for t in self.tasks:
            if t.name == name:
                return t
        return Task(name=name)

    def engine(self, name: str) -> Engine | None:
        for e in self.engines:
            if e.name == name:
                return e
        return None

    def columns(self, *names: str, task: str | None = None):
        """Metric columns as float numpy arrays (NaN where a row lacks the value).

        Args:
            *names: Metric names from ``COLUMNS`` (default: all of them).
            task: Keep only the rows of this task.
        """
        import numpy as np

        rows = [c for c in self.configs if task is None or c.task == task]
        names = names or COLUMNS
        out = {}
        for n in names:
            if n not in COLUMNS:
                raise InputError(f"unknown metric; known: {', '.join(COLUMNS)}", value=n)
            out[n] = np.array([np.nan if getattr(c, n) is None else getattr(c, n) for c in rows],
                              dtype=float)
        return out
