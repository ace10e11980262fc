"""FlexNN's simulated evaluation: the memory/latency trade-off (Fig. 10) with the best point
under the paper's criterion, planning time (Table 2), adaptation to changing budgets (Fig. 14)
and what d_m becomes in the optimiser."""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ....memory import flexnn as F
from ....memory.graph import LayerGraph
from ....memory.profiler import RssSampler
from ....timing import Stopwatch, median_ms


@dataclass(frozen=True)
class TradeoffRow:
    """One execution mode of one model: bulk, on-demand, or FlexNN at a budget."""

    model: str
    mode: str  # bulk | on-demand | flexnn
    budget_mb: float | None
    peak_mb: float
    rss_growth_mb: float
    latency_ms: float
    memory_reduction_pct: float
    latency_increase_pct: float
    simulated_ms: float | None = None
    simulator_error_pct: float | None = None
    steps: int | None = None
    pinned_mb: float | None = None
    streamed_mb: float | None = None
    preloaded: int | None = None
    plan_ms: float | None = None


def tradeoff(graph: LayerGraph, *, fracs=(0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0),
             reps: int = 10, rounds: int = 7, root: Path | None = None) -> list[TradeoffRow]:
    """FlexNN Fig. 10 for one model: bulk, on-demand and FlexNN at budgets (fractions of bulk
    peak memory, clipped to the minimum feasible budget). Latencies interleaved over ``rounds``
    (this VM's timing drifts); memory is the planned tensor bytes and the sampled RSS growth."""
    from threadpoolctl import threadpool_limits

    root = Path(root or tempfile.mkdtemp(prefix="wb-flexnn-"))
    x = np.random.default_rng(1).normal(size=(1,) + tuple(graph.input_shape)).astype(np.float32)
    bulk_b = graph.bulk_peak_bytes()
    mb = F.min_budget(graph)
    budgets = sorted({max(mb, int(bulk_b * f)) for f in fracs})
    lt = F.measure_layer_times(graph, root)
    plans = {b: F.slice_and_plan(graph, b) for b in budgets}
    runners = {b: F.FlexRunner(p, root) for b, p in plans.items()}
    ref = graph.run(x)
    modes = {"bulk": graph.run, "on-demand": lambda z: F.run_on_demand(graph, root, z)}
    modes.update({f"flexnn@{b}": runners[b].run for b in budgets})
    lat: dict[str, list[float]] = {k: [] for k in modes}
    rss: dict[str, int] = {}
    with threadpool_limits(1):
        for k, fn in modes.items():
            np.testing.assert_allclose(fn(x), ref, atol=1e-4, rtol=1e-3)
            with RssSampler() as rs:
                fn(x)
            rss[k] = rs.peak_delta
        for _ in range(rounds):
            for k, fn in modes.items():
                lat[k].append(median_ms(fn, x, runs=reps))
    for r in runners.values():
        r.close()

    def increase(k: str) -> float:
        # Paired per round against bulk: this VM's speed drifts by tens of percent over
        # seconds, so each round's ratio to the bulk median of the same round is the stable
        # comparison.
        return 100 * (statistics.median(a / b for a, b in zip(lat[k], lat["bulk"])) - 1)

    def reduction(peak: int) -> float:
        return 100 * (1 - peak / bulk_b)

    od = F.on_demand_peak_bytes(graph)
    rows = [TradeoffRow(graph.name, "bulk", None, bulk_b / 1e6, rss["bulk"] / 1e6,
                        statistics.median(lat["bulk"]), 0.0, increase("bulk")),
            TradeoffRow(graph.name, "on-demand", None, od / 1e6, rss["on-demand"] / 1e6,
                        statistics.median(lat["on-demand"]), reduction(od), increase("on-demand"))]
    for b, p in plans.items():
        k = f"flexnn@{b}"
        ms = statistics.median(lat[k])
        sim = F.simulate(p, lt) * 1e3
        # The runner's buffer is allocated before measuring: its RSS is the buffer itself.
        rows.append(TradeoffRow(
            graph.name, "flexnn", b / 1e6, p.buffer_bytes / 1e6,
            (rss[k] + p.buffer_bytes) / 1e6, ms, reduction(p.buffer_bytes), increase(k), sim,
            100 * (sim / ms - 1), len(p.slicing.steps), p.pinned_bytes / 1e6,
            p.streamed_bytes / 1e6, p.preloaded, p.seconds * 1e3))
    return rows


def best_points(rows: list[TradeoffRow], *, min_reduction_pct: float = 90.0) -> list[TradeoffRow]:
    """Per model, FlexNN's fastest point with at least ``min_reduction_pct`` less memory than
    bulk (the paper's criterion), else its most frugal point."""
    out = []
    for model in dict.fromkeys(r.model for r in rows):
        pts = [r for r in rows if r.model == model and r.mode == "flexnn"]
        if not pts:
            continue
        ok = [r for r in pts if r.memory_reduction_pct >= min_reduction_pct]
        out.append(min(ok, key=lambda r: r.latency_increase_pct) if ok
                   else max(pts, key=lambda r: r.memory_reduction_pct))
    return out


def planning_ms(rows: list[TradeoffRow]) -> dict[str, float]:
    """Median planning time per model (Table 2's comparison)."""
    by: dict[str, list[float]] = {}
    for r in rows:
        if r.plan_ms is not None:
            by.setdefault(r.model, []).append(r.plan_ms)
    return {m: statistics.median(v) for m, v in by.items()}


@dataclass(frozen=True)
class DmRow:
    profile: str
    role: str
    design: str
    accuracy: float | None
    latency_ms: float | None
    memory_mb: float | None


def dm_with_memory_modes(base: str | Path = "host", augmented: str | Path = "host-memory",
                         slo: str = "max A; max TP; max L <= 20ms", task: str = "h1"
                         ) -> list[DmRow]:
    """RASS's designs on the host profile with and without memory-mode rows: what d_m becomes."""
    from ....moo.problem import DiscreteProblem
    from ....profiles import load_profile
    from ....solvers import solve

    rows = []
    for name, path in (("LiteRT rows only", base), ("+ memory-mode rows", augmented)):
        prof = load_profile(path)
        res = solve(DiscreteProblem(prof, slo, tasks=[task]), "rass")
        for role in ("d0", "dm", "dwm"):
            d = res.designs.get(role)
            if d is None:
                continue
            cfg = prof.config(d.configs[0])
            rows.append(DmRow(name, role, d.labels[0], d.objectives.get("A"), cfg.L, cfg.MF))
    return rows


@dataclass(frozen=True)
class InferenceRow:
    t_s: float
    budget_mb: float
    buffer_mb: float
    latency_ms: float


@dataclass(frozen=True)
class AdaptationRow:
    budget_mb: float
    resliced: bool
    slice_ms: float
    plan_ms: float
    setup_ms: float
    total_ms: float


def adaptation(graph: LayerGraph, *, fracs=(0.5, 0.15, 0.3, 1.0), loops: int = 16,
               root: Path | None = None) -> tuple[list[InferenceRow], list[AdaptationRow]]:
    """FlexNN Fig. 14: inferences under a budget that changes ``len(fracs)`` times. Returns
    per-inference rows and per-adaptation rows (re-sliced or not, times)."""
    from threadpoolctl import threadpool_limits

    root = Path(root or tempfile.mkdtemp(prefix="wb-flexnn-"))
    x = np.random.default_rng(1).normal(size=(1,) + tuple(graph.input_shape)).astype(np.float32)
    bulk_b = graph.bulk_peak_bytes()
    mb = F.min_budget(graph)
    budgets = [max(mb, int(bulk_b * f)) for f in fracs]
    f = F.FlexNN(graph, root, budget=budgets[0])
    rows, adapts = [], []
    with threadpool_limits(1), Stopwatch() as clock:
        for i, b in enumerate(budgets):
            a = f.history[-1] if i == 0 else f.adapt(b)
            adapts.append(AdaptationRow(b / 1e6, a.resliced, a.slice_ms, a.plan_ms, a.setup_ms,
                                        a.total_ms))
            for _ in range(loops):
                t = clock.lap() / 1e3
                with Stopwatch() as sw:
                    f.run(x)
                rows.append(InferenceRow(t, b / 1e6, f.plan.buffer_bytes / 1e6, sw.ms))
    f.close()
    return rows, adapts
