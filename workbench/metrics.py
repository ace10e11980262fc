"""The metric table: every metric's name, unit, statistics and direction, in one place.
Standard library only.

Profiles hold per-model columns (CARIn's F_single); the SLO problem adds multi-DNN system metrics
(CARIn's F_multi). Units, everywhere in the workbench: latency ``L`` in ms, memory ``MF`` and size
``S`` in MB, workload ``W`` in FLOPs, energy ``E`` in mJ, throughput ``TP`` in samples/s, accuracy
``A`` in % (or the task's own metric, e.g. MAE, where the task says so).

The multi-exit engine (Delen) keeps its own per-sample arrays in the names Delen uses
(``latency_ms``, ``accuracy`` as a 0-1 fraction, ``energy_mj``); :data:`MULTI_EXIT` is the one
mapping from those to profile columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Statistic name -> the suffix of its profile column (``L`` + ``_p99`` = ``L_p99``).
STAT_SUFFIX: dict[str, str] = {"avg": "", "std": "_std", "min": "_min", "max": "_max",
                               "p50": "_p50", "p90": "_p90", "p99": "_p99"}


@dataclass(frozen=True)
class Metric:
    """One metric.

    Attributes:
        name: Its symbol in profiles and SLOs (``L``, ``A``, ...).
        unit: The unit values are stored and printed in (empty for counts and ratios).
        description: What it is, in words.
        stats: The statistics profiles hold for it (``avg`` is the plain column).
        higher_is_better: Its direction (``A`` follows its task: MAE is lower-is-better).
        summable: ``[total]`` may sum it over the tasks of a multi-DNN problem.
        latency_like: Scales with the co-execution slowdown of a multi-DNN combination.
        system: A multi-DNN system metric (computed by the problem, not stored per model).
        slo: May appear in an SLO (``params`` is a profile column only).
        units: Units an SLO may give a value in -> factor into ``unit``.
        interval: Whose 95% interval a mean value carries: ``"A"`` a row's own interval of A
            (``A_lo``, ``A_hi``), ``"L"`` the mean latency's, relative (TP and E are computed
            from L); empty: none (see workbench.moo.confidence).
    """

    name: str
    unit: str
    description: str
    stats: tuple[str, ...] = ("avg",)
    higher_is_better: bool = False
    summable: bool = False
    latency_like: bool = False
    system: bool = False
    slo: bool = True
    units: dict[str, float] = field(default_factory=dict)
    interval: str = ""

    def column(self, stat: str = "avg") -> str:
        """The profile column of a statistic (``L``, ``p99`` -> ``L_p99``)."""
        return self.name + STAT_SUFFIX[stat]

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.column(s) for s in self.stats)


_MB = {"mb": 1.0, "gb": 1024.0, "kb": 1 / 1024}

#: Every metric, per-model columns in profile order first, then the system metrics.
TABLE: tuple[Metric, ...] = (
    Metric("A", "", "accuracy in % (or the task's own metric, e.g. MAE)", higher_is_better=True,
           units={"%": 1.0}, interval="A"),
    Metric("S", "MB", "model size on storage", summable=True, units=_MB),
    Metric("params", "", "parameters", slo=False),
    Metric("W", "FLOPs", "workload per inference", summable=True,
           units={"flops": 1.0, "mflops": 1e6, "gflops": 1e9, "tflops": 1e12}),
    Metric("L", "ms", "latency per inference (batch)", stats=tuple(STAT_SUFFIX),
           latency_like=True, units={"ms": 1.0, "s": 1000.0, "us": 1e-3}, interval="L"),
    Metric("TP", "/s", "throughput in samples per second", higher_is_better=True,
           units={"/s": 1.0, "fps": 1.0, "ips": 1.0}, interval="L"),
    Metric("E", "mJ", "energy per inference", summable=True, latency_like=True,
           units={"mj": 1.0, "j": 1000.0, "uj": 1e-3}, interval="L"),
    Metric("MF", "MB", "peak memory footprint", summable=True, units=_MB),
    Metric("NTT", "", "normalised turnaround time (co-run latency over solo latency)",
           stats=("avg", "max", "min"), system=True),
    Metric("STP", "", "system throughput (sum of normalised progress)", higher_is_better=True,
           system=True),
    Metric("F", "", "fairness (min over max normalised progress)", higher_is_better=True,
           system=True),
)
BY_NAME: dict[str, Metric] = {m.name: m for m in TABLE}

#: Per-model metrics an SLO may name (CARIn F_single) and multi-DNN system metrics (F_multi).
MODEL_METRICS: tuple[str, ...] = tuple(m.name for m in TABLE if m.slo and not m.system)
SYSTEM_METRICS: tuple[str, ...] = tuple(m.name for m in TABLE if m.system)
HIGHER_IS_BETTER: frozenset[str] = frozenset(m.name for m in TABLE if m.higher_is_better)
SUMMABLE: frozenset[str] = frozenset(m.name for m in TABLE if m.summable)
#: Numeric per-model columns of a profile's configuration table, in order.
COLUMNS: tuple[str, ...] = tuple(c for m in TABLE if not m.system for c in m.columns)
#: Columns that scale with the co-execution slowdown of a multi-DNN combination.
SLOWDOWN_COLUMNS: tuple[str, ...] = tuple(c for m in TABLE if m.latency_like for c in m.columns)

#: The task metric label of accuracy taken from a citation (ImageNet top-1 of pretrained
#: weights), not measured here: reports read it to say which kind of data A is.
CITED_TOP1 = "top1 (cited)"


def is_cited(task_metric: str) -> bool:
    """Whether a profile task's metric label marks cited (not measured) accuracy."""
    return task_metric == CITED_TOP1


#: Delen's per-exit names -> (profile column, factor into the column's unit).
MULTI_EXIT: dict[str, tuple[str, float]] = {
    "latency_ms": ("L", 1.0),
    "accuracy": ("A", 100.0),   # a 0-1 fraction in the engine, % in profiles
    "energy_mj": ("E", 1.0),
    "flops": ("W", 1.0),
}


def unit(name: str) -> str:
    """The unit a metric prints in (empty when it has none or is unknown)."""
    m = BY_NAME.get(name)
    return m.unit if m else ""


#: Accuracy metrics a profile's ``Task.metric`` may name that are percentages.
PERCENT_ACCURACY = frozenset({"top1", "top-1", "top5", "top-5", "accuracy", "acc", "map", "miou",
                              "f1", "precision", "recall"})


def accuracy_unit(task_metric: str) -> str:
    """What the accuracy column A holds for a task, as an axis unit: ``% top1`` for the
    percentages, the metric's own name otherwise (``MAE``, ``cosine``)."""
    m = (task_metric or "").strip()
    if not m:
        return "%"
    return f"% {m}" if m.lower() in PERCENT_ACCURACY or "accuracy" in m.lower() else m
