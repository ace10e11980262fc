"""What each report's ``metrics.json`` holds: one dataclass per report, built by its notebook from
the experiments' typed results and written with :func:`write_metrics`; ``reports/index.html``
reads it back through the same class (:func:`read_metrics`), so a renamed field fails loudly in
one place instead of silently blanking the index.

Fields are snake_case values, never display labels; labels are applied only when drawing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from ...errors import InputError
from ...fileio import atomic_write_json
from ...profiles.validation import EngineError, HeldOutRow
from ..experiments.carin import (
    MethodRow,
    ObjectiveGainRow,
    PaperGainRow,
    SolveTimeRow,
    TracePoint,
    UseCaseGainRow,
    VersusRow,
    VersusSummary,
)
from ..experiments.carin.phone_trust import ContentionFit, ContentionSensitivityRow, SensitivityRow, SpecOnlyTable
from ..experiments.carin.real_scale import ScaleRow, SolverRow
from ..experiments.flexnn import AdaptationRow, DmRow, MeasuredPoint, PressureRow, TradeoffRow
from ..experiments.masa import (
    BatchRow,
    ContextRow,
    FitRow,
    GainRow,
    OptimalityRow,
    PressureRun,
    RealVsSimRow,
    ResponseRow,
)
from ..experiments.oodin_eval import SpeedupRow, SpeedupSummary, TargetRow
from ..experiments.runtime import RunSummary

T = TypeVar("T")


@dataclass
class DesignSummary:
    config: str
    label: str
    optimality: float
    A: float | None = None
    TP: float | None = None
    L_max: float | None = None
    MF: float | None = None


@dataclass
class QuickstartMetrics:
    device: str
    task: str
    profile_source: str
    n_configs: int
    n_feasible: int
    n_pareto: int
    d0: DesignSummary
    designs: dict[str, str]
    matches_carin_table7_d0: bool


@dataclass
class PolicyMatch:
    triggers: list[str]
    match: dict[str, bool]  # role -> the workbench's design equals the paper's


@dataclass
class CarinDesignsMetrics:
    source: str
    use_cases: dict[str, dict[str, Any]]  # d0 per device and gains per baseline, per use case
    gains_vs_paper: list[PaperGainRow]
    per_mapping: dict[str, list[dict[str, Any]]]
    policies: dict[str, PolicyMatch]  # "uc1_s20fe" -> Table 7's comparison
    #: Gains per use case with the number of comparable baselines (the pooled UC1-UC2 rows
    #: above can come from one use case) and CARIn 7.1.2's per-objective comparisons.
    gains_per_use_case: list[UseCaseGainRow] = field(default_factory=list)
    objective_gains: list[ObjectiveGainRow] = field(default_factory=list)


@dataclass
class SolveTimeMetrics:
    source: str
    rows: list[SolveTimeRow]
    min_speedup: float


@dataclass
class VersusMetrics:
    source: str
    rows: list[VersusRow]
    #: pymoo NSGA-II's summary (the report's headline comparison).
    summary: VersusSummary
    #: One summary per solver (pymoo's and Optuna's).
    by_solver: list[VersusSummary] = field(default_factory=list)
    #: Hypervolume ratio over wall time per solver on one problem (``trace_problem``).
    trace: list[TracePoint] = field(default_factory=list)
    trace_problem: str = ""


@dataclass
class HostUseCase:
    status: str
    triggers: list[str]
    designs: dict[str, list[str]]
    #: role -> how a tie within the 95% intervals was decided (workbench.moo.confidence).
    ties: dict[str, str] = field(default_factory=dict)


@dataclass
class HostMetrics:
    source: str
    device: str
    n_configs: int
    n_coexecution: int
    use_cases: dict[str, HostUseCase]
    zoo: list[dict[str, Any]]


@dataclass
class RuntimeMetrics:
    source: str
    device: str
    duration_s: float
    rate: float
    runs: list[RunSummary]
    paper: dict[str, Any]
    storage_modelled: list[dict[str, Any]]
    storage_host: dict[str, Any]


@dataclass
class DelenMetrics:
    source: str
    quick: bool
    models: list[dict[str, Any]]
    fig5: dict[str, Any]
    fig7: list[dict[str, Any]]
    fig8: list[dict[str, Any]]
    fig8_savings: dict[str, float]
    fig9: list[dict[str, Any]]
    fig10: list[dict[str, Any]]
    fig11: list[dict[str, Any]]
    fig13: list[dict[str, Any]]
    fig14: list[dict[str, Any]]
    fig15: list[dict[str, Any]]
    storage: list[dict[str, Any]]
    table3: dict[str, Any] | None
    paper: dict[str, Any]
    # EfficientNet-Lite0 with four exits on Fashion-MNIST: the model of Figs 5, 7, 11-13 and
    # IMG1 of Figs 8-10 and 14-15.
    real: dict[str, Any] = field(default_factory=dict)
    # Each figure's claim in the paper beside this run (delen.paper_checks).
    checks: list[dict[str, Any]] = field(default_factory=list)
    # Fig. 7's policies across offered loads (delen.fig7_overload) and where per-request C>0.7
    # stops keeping up (delen.overload_onset).
    fig7_overload: list[dict[str, Any]] = field(default_factory=list)
    fig7_onset: dict[str, Any] = field(default_factory=dict)
    # Which nets each figure ran on (app or role -> model name).
    roles: dict[str, Any] = field(default_factory=dict)
    # The CPU the run measured on (the machine changes from day to day; latencies compare only
    # within one run).
    cpu: str = ""


@dataclass
class MasaMetrics:
    source: str
    trained: bool
    fig6: list[ResponseRow]
    stochastic: list[ResponseRow]
    stochastic_gains: list[GainRow]
    tightest_gain_vs_bulk_pct: dict[str, float]  # scenario -> % (tightest budget, intensity 1.2)
    real_vs_sim: list[RealVsSimRow]
    context_heavy: list[ContextRow]
    context_light: list[ContextRow]
    batching: list[BatchRow]
    optimality: list[OptimalityRow]
    workers: list[ResponseRow]
    paper: dict[str, Any] = field(default_factory=dict)
    # Table 1's networks under a real memory limit (benchmarks/bench_memory.py --only masa) and
    # the simulator fitted to them: "" and empty when the benchmark has not run.
    pressure_source: str = ""
    pressure: list[PressureRun] = field(default_factory=list)
    pressure_gain_vs_bulk_pct: dict[str, dict[str, float]] = field(default_factory=dict)
    pressure_fit: list[FitRow] = field(default_factory=list)


@dataclass
class FlexnnMetrics:
    source: str
    trained: bool
    tradeoff: list[TradeoffRow]
    best: list[TradeoffRow]
    planning_ms: dict[str, float]
    adaptations: list[AdaptationRow]
    dm_memory_modes: list[DmRow]
    paper: dict[str, Any] = field(default_factory=dict)
    # Full-size networks measured in fresh processes (benchmarks/bench_memory.py): "" and empty
    # when the benchmark has not run.
    full_size_source: str = ""
    full_size: list[MeasuredPoint] = field(default_factory=list)
    full_size_pressure: list[PressureRow] = field(default_factory=list)


@dataclass
class RealScaleMetrics:
    real_source: str
    toy_source: str
    cpu: str
    real_configs: int
    toy_configs: int
    scale: list[ScaleRow]
    solvers: list[SolverRow]
    figs: list[MethodRow]


@dataclass
class PhoneModelMetrics:
    source: str
    calibrated_on: str
    held_out_sources: dict[str, str]
    held_out: list[HeldOutRow]
    by_engine: list[EngineError]
    by_engine_if_xnnpack: list[EngineError]
    by_engine_spec_only: list[EngineError]
    by_engine_other_phones: list[EngineError]
    by_engine_interpolation: list[EngineError]
    calibration: dict[str, Any]
    spec_only_tables: list[SpecOnlyTable]
    sensitivity_step: float
    sensitivity: list[SensitivityRow]
    contention_fit: ContentionFit
    contention_sensitivity: list[ContentionSensitivityRow]


@dataclass
class OodinEvalMetrics:
    source: str
    rows: list[SpeedupRow]
    summary: list[SpeedupSummary]
    #: Per phone: how many of the DNNs get each engine as OODIn's design (Fig. 3's objective).
    engines_chosen: dict[str, dict[str, int]]
    #: ``target TP = 30`` with the recognition rate r as a system parameter (one row per phone
    #: and DNN).
    target_fps: list[TargetRow] = field(default_factory=list)


@dataclass
class SweepMetrics:
    source: str
    problems: int
    statuses: dict[str, int]
    by_use_case: dict[str, dict[str, Any]]


#: The report (folder) -> what its metrics.json holds.
METRICS: dict[str, type] = {
    "quickstart": QuickstartMetrics, "carin_designs": CarinDesignsMetrics,
    "oodin_solve_time": SolveTimeMetrics, "rass_vs_nsga2": VersusMetrics, "host": HostMetrics,
    "runtime": RuntimeMetrics, "delen": DelenMetrics, "masa": MasaMetrics,
    "flexnn": FlexnnMetrics, "host_real": RealScaleMetrics, "phone_model": PhoneModelMetrics,
    "oodin_eval": OodinEvalMetrics, "sweep": SweepMetrics,
}


def to_json(metrics: Any) -> Any:
    """Plain JSON data of a metrics dataclass (nested dataclasses become objects)."""
    return asdict(metrics) if is_dataclass(metrics) and not isinstance(metrics, type) else metrics


def write_metrics(output_dir: str | Path, metrics: Any) -> Path:
    """Write ``metrics.json`` into ``output_dir`` (atomic; floats are rounded by the report
    runner afterwards)."""
    if type(metrics) not in METRICS.values():
        raise InputError("not a report's metrics class", value=type(metrics).__name__)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    return atomic_write_json(out / "metrics.json", to_json(metrics))


def validate_metrics(data: Any, cls: type[T]) -> T:
    """``data`` (parsed JSON) as ``cls``; a missing or mistyped field raises InputError naming
    the field."""
    from pydantic import TypeAdapter, ValidationError

    from ...profiles.store import error_from_validation

    try:
        return TypeAdapter(cls).validate_python(data)
    except ValidationError as e:
        raise error_from_validation(e, what=f"metrics do not match {cls.__name__}") from None


def read_metrics(path: str | Path, cls: type[T]) -> T:
    """Read a metrics.json back as ``cls``; a missing or mistyped field raises InputError naming
    the file and the field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"cannot read metrics: {e}", file=path) from None
    try:
        return validate_metrics(data, cls)
    except InputError as e:
        raise InputError(e.message, file=path, where=e.where) from None
