"""FlexNN measured for real: the trade-off at a few budgets (RSS sampled while it runs) and
under a memory limit with swap."""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ....memory import flexnn as F
from ....memory.graph import LayerGraph


@dataclass(frozen=True)
class MeasuredRow:
    """One fresh-process run (``workbench.memory.measure``): every number read from the process.

    ``model_mb`` is the peak resident set over the pre-load baseline (less library code first run
    during it, ``Measurement.code_mb``); ``peak_mb`` the whole
    process; ``latency_ms`` the median of the run's timed inferences; ``round`` pairs rows that
    ran back to back (compare within a round: this machine drifts)."""

    model: str
    mode: str  # bulk | on-demand | flexnn | flexnn w.o. preload | flexnn w.o. slicing
    budget_mb: float | None
    round: int
    model_mb: float
    peak_mb: float
    base_mb: float
    latency_ms: float
    first_ms: float


def measured_tradeoff(graph: LayerGraph, *, fracs=(0.1, 0.2), rounds: int = 3, reps: int = 3,
                      root: Path | None = None, progress=None,
                      ablation: bool = True) -> list[MeasuredRow]:
    """FlexNN Fig. 10 and Fig. 13 measured: bulk, on-demand loading and FlexNN at budgets
    (fractions of the computed bulk peak, raised to the smallest feasible), each a fresh
    process, interleaved over ``rounds``. With ``ablation``, FlexNN also runs without preloading
    and without slicing (every layer whole) at each budget where that fits, and at the smallest
    budget that fits without slicing (so the two compare at one budget)."""
    from ....memory.measure import measure

    bulk_mb = graph.bulk_peak_bytes() / 1e6
    low = (F.min_budget(graph) + F.EXECUTOR_RESERVE) / 1e6 * 1.001
    whole_mb = (F.min_budget(graph, sliced=False) + F.EXECUTOR_RESERVE) / 1e6 * 1.001
    budgets = sorted({round(max(f * bulk_mb, low), 3) for f in fracs}
                     | ({round(whole_mb, 3)} if ablation and whole_mb < bulk_mb else set()))
    runs: list[tuple[str, dict]] = [("bulk", {}), ("on-demand", {"on_demand": True})]
    for b in budgets:
        runs.append(("flexnn", {"budget_mb": b}))
        if ablation:
            runs.append(("flexnn w.o. preload", {"budget_mb": b, "preload": False}))
            if b >= round(whole_mb, 3):
                runs.append(("flexnn w.o. slicing", {"budget_mb": b, "sliced": False}))
    rows = []
    with tempfile.TemporaryDirectory(prefix="wb-flexnn-") as tmp:
        where = Path(root or tmp)
        for r in range(rounds):
            for mode, kw in runs:
                m = measure(graph, reps=reps, root=where, **kw)
                rows.append(MeasuredRow(graph.name, mode, m.budget_mb, r, m.model_mb, m.peak_mb,
                                        m.base_mb, m.latency_ms, m.first_ms))
                if progress:
                    progress(rows[-1])
    return rows


@dataclass(frozen=True)
class MeasuredPoint:
    """A mode over rounds against bulk of the same rounds: memory is the largest reading (a
    budget must hold in every run), latency the median."""

    model: str
    mode: str
    budget_mb: float | None
    model_mb: float
    latency_ms: float
    memory_reduction_pct: float
    latency_increase_pct: float  # median over rounds of (latency / bulk latency of the round)


def measured_points(rows: list[MeasuredRow]) -> list[MeasuredPoint]:
    out = []
    bulk = {(r.model, r.round): r for r in rows if r.mode == "bulk"}
    keys = dict.fromkeys((r.model, r.mode, r.budget_mb) for r in rows)
    for model, mode, budget in keys:
        rs = [r for r in rows if (r.model, r.mode, r.budget_mb) == (model, mode, budget)]
        # The same statistic on both sides: a mode's worst reading against bulk's worst.
        b_mem = max(bulk[(model, r.round)].model_mb for r in rs)
        ratio = statistics.median(r.latency_ms / bulk[(model, r.round)].latency_ms for r in rs)
        mem = max(r.model_mb for r in rs)
        out.append(MeasuredPoint(model, mode, budget, mem,
                                 statistics.median(r.latency_ms for r in rs),
                                 100 * (1 - mem / b_mem), 100 * (ratio - 1)))
    return out


@dataclass(frozen=True)
class PressureRow:
    """One run inside a memory cgroup: real pressure, what the kernel did."""

    model: str
    mode: str  # bulk | flexnn
    budget_mb: float | None
    limit_mb: float
    swap_mb: float
    outcome: str  # ran | killed
    latency_ms: float | None
    first_ms: float | None
    group_peak_mb: float | None
    major_faults: int | None
    swapped_mb: float | None


def under_pressure(graph: LayerGraph, *, budget_mb: float, swap_mb: float, reps: int = 2,
                   root: Path | None = None) -> list[PressureRow]:
    """Bulk and FlexNN in the same memory: the limit is what the FlexNN run is charged plus a
    margin, measured first under a generous limit. Bulk is then killed (no swap) or pages
    (``swap_mb`` of swap); the plan runs. Raises PressureUnavailable where there is no cgroup."""
    from ....memory.measure import KilledByLimit, measure

    rows = []
    with tempfile.TemporaryDirectory(prefix="wb-pressure-") as tmp:
        where = Path(root or tmp)
        # Under a limit far above any run: what the plan is charged when nothing presses.
        free = measure(graph, budget_mb=budget_mb, reps=1, root=where, limit_mb=1e6 - 1)
        assert free.group_peak_mb is not None
        limit = round(free.group_peak_mb * 1.15 + 8, 1)  # the plan's charge and some headroom
        for mode, budget in (("flexnn", budget_mb), ("bulk", None)):
            for swap in (0.0, swap_mb):
                try:
                    m = measure(graph, budget_mb=budget, reps=reps, root=where, limit_mb=limit,
                                swap_mb=swap)
                except KilledByLimit:
                    rows.append(PressureRow(graph.name, mode, budget, limit, swap, "killed",
                                            None, None, None, None, None))
                    continue
                rows.append(PressureRow(graph.name, mode, budget, limit, swap, "ran",
                                        m.latency_ms, m.first_ms, m.group_peak_mb,
                                        m.major_faults, m.swapped_mb))
    return rows
