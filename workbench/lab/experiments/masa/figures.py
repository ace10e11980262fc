"""MASA's evaluation on this machine (notebook 16_masa, benchmarks/bench_memory.py): one function
per figure, each returning typed rows (snake_case fields; display labels are applied only when a
table is drawn, by :func:`workbench.lab.viz.table`), and the summaries the report and the
benchmark both quote (:func:`gains`, :func:`tightest_gains`).

Times are simulated from per-layer profiles measured here; the paging penalty of memory-unaware
policies is modelled (``workbench.memory.masa.SWAP_BPS``); :func:`real_vs_sim` measures real runs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ....memory import masa as M
from ....timing import Stopwatch
from ..memory import PAPER_BUDGETS_MB, PAPER_MEMORY_MB, SCENARIOS, STAND_INS, Nets, budgets_for

HEAVY = {"TinyYOLO": None, "FaceNet": "TinyYOLO", "AgeNet": "FaceNet", "GenderNet": "FaceNet",
         "EmotionNet": "FaceNet", "MemNet": None}
LIGHT = {"FaceNet": None, "AgeNet": "FaceNet", "GenderNet": "FaceNet"}
# The compared schedulers: the paper's three, MASA read literally (Alg. 1: every arrived job's
# tasks are ready at once), and this workbench's admission rule beside it as an extension.
COMPARED = ("bulk", "deepeye", "masa", "masa-idle")
VARIANTS = {"bulk": ("bulk", "on-arrival"), "deepeye": ("deepeye", "on-arrival"),
            "masa": ("masa", "on-arrival"), "masa-idle": ("masa", "when-idle")}


def scheduler_of(variant: str) -> tuple[str, str]:
    """(policy, admission) of a compared scheduler: a key of :data:`VARIANTS` or a policy name
    (admitted on arrival, as Alg. 1 reads)."""
    return VARIANTS.get(variant, (variant, "on-arrival"))


def run(profiles, jobs, variant: str, **kw) -> M.RunResult:
    """Simulate one compared scheduler (see :func:`scheduler_of`)."""
    policy, admission = scheduler_of(variant)
    return M.simulate(profiles, jobs, policy=policy, admission=admission, **kw)


@dataclass(frozen=True)
class NetworkRow:
    paper_network: str
    paper_memory_mb: float
    stand_in: str
    layers: int
    conv: int
    fc: int
    weights_mb: float
    bulk_memory_mb: float
    bulk_time_ms: float
    rss_profiled_peak_layer_mb: float


def network_table(nets: Nets) -> list[NetworkRow]:
    rows = []
    for role, model in STAND_INS.items():
        p, g = nets.profiles[role], nets.graphs[role]
        rows.append(NetworkRow(role, PAPER_MEMORY_MB[role], model, len(g.layers),
                               sum(1 for ly in g.layers if ly.kind == "conv"),
                               sum(1 for ly in g.layers if ly.kind == "fc"),
                               g.weight_bytes / 1e6, p.bulk_bytes / 1e6, p.bulk_seconds * 1e3,
                               max(x.rss_peak_bytes for x in p.layers) / 1e6))
    return rows


@dataclass(frozen=True)
class ResponseRow:
    """Mean response time of one policy at one budget (and intensity, for stochastic jobs)."""

    scenario: str
    paper_budget_mb: int
    budget_mb: float
    policy: str
    mean_response_ms: float
    intensity: float | None = None
    overcommitted_tasks: int = 0


def deterministic(nets: Nets, *, n: int = 20, workers: int = 2) -> list[ResponseRow]:
    """Fig. 6: periodic images, every network of the scenario on each (simulated)."""
    rows = []
    for sc, names in SCENARIOS.items():
        serial = sum(nets.profiles[x].bulk_seconds for x in names)
        jobs = M.periodic_jobs(names, n=n, interval=serial * 1.5)
        for paper_mb, b in budgets_for(nets, names).items():
            for pol in COMPARED:
                r = run(nets.profiles, jobs, pol, budget=b, workers=workers)
                rows.append(ResponseRow(sc, paper_mb, b / 1e6, pol, r.mean_response * 1e3,
                                        overcommitted_tasks=r.overcommit_tasks))
    return rows


def stochastic(nets: Nets, *, scenario: int, n: int = 150, workers: int = 2,
               intensities=(0.8, 1.0, 1.2), seed: int = 0) -> list[ResponseRow]:
    """Figs. 7 (scenario I) and 8 (scenario II) on the nine roles (simulated)."""
    pool = [p for p in PAPER_MEMORY_MB if p in nets.profiles]
    rows = []
    for paper_mb, b in budgets_for(nets, pool).items():
        for rho in intensities:
            jobs = M.stochastic_jobs(pool, nets.profiles, scenario=scenario, intensity=rho, n=n,
                                     seed=seed)
            for pol in COMPARED:
                r = run(nets.profiles, jobs, pol, budget=b, workers=workers)
                rows.append(ResponseRow("I" * scenario, paper_mb, b / 1e6, pol,
                                        r.mean_response * 1e3, rho, r.overcommit_tasks))
    return rows


@dataclass(frozen=True)
class GainRow:
    """MASA against the others at one budget and intensity (percent lower mean response).
    ``masa`` is Alg. 1 read literally; ``masa_idle`` the when-idle admission extension."""

    scenario: str
    paper_budget_mb: int
    intensity: float | None
    bulk_ms: float
    deepeye_ms: float
    masa_ms: float
    gain_vs_bulk_pct: float
    gain_vs_deepeye_pct: float
    gain_vs_best_other_pct: float
    masa_idle_ms: float | None = None
    idle_gain_vs_bulk_pct: float | None = None


def gains(rows: list[ResponseRow]) -> list[GainRow]:
    """One row per (scenario, budget, intensity) of ``rows`` that has all three policies."""
    cells: dict[tuple, dict[str, float]] = {}
    for r in rows:
        cells.setdefault((r.scenario, r.paper_budget_mb, r.intensity), {})[r.policy] = \
            r.mean_response_ms
    out = []
    for (sc, mb, rho), by in cells.items():
        if not {"bulk", "deepeye", "masa"} <= set(by):
            continue
        m, idle = by["masa"], by.get("masa-idle")
        out.append(GainRow(sc, mb, rho, by["bulk"], by["deepeye"], m,
                           100 * (1 - m / by["bulk"]), 100 * (1 - m / by["deepeye"]),
                           100 * (1 - m / min(by["bulk"], by["deepeye"])), idle,
                           None if idle is None else 100 * (1 - idle / by["bulk"])))
    return out


def tightest_gains(rows: list[GainRow], *, intensity: float = 1.2) -> dict[str, float]:
    """MASA's gain over Bulk per scenario at the tightest budget and ``intensity``: the figure
    the paper's Figs 7-8 text quotes."""
    mb = min(PAPER_BUDGETS_MB)
    return {g.scenario: g.gain_vs_bulk_pct for g in rows
            if g.paper_budget_mb == mb and g.intensity == intensity}


@dataclass(frozen=True)
class ContextRow:
    label_probability: float
    policy: str
    mean_makespan_ms: float
    aborted_tasks: int


def context(nets: Nets, tree: dict, *, probs=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0), n: int = 60,
            workers: int = 2, budget_mb: int = 1024) -> list[ContextRow]:
    """Figs. 10 (heavy) and 11 (light): mean makespan against the root's label probability.
    As in MASA 5.4, intermediate networks (with a parent and children: FaceNet in the heavy
    tree) always answer positive; the root's outcome follows ``p`` in both trees."""
    names = list(tree)
    b = budgets_for(nets, names)[budget_mb]
    serial = sum(nets.profiles[x].bulk_seconds for x in names)
    middle = tuple(k for k, v in tree.items() if v is not None and k in tree.values())
    rows = []
    for p in probs:
        jobs = M.context_jobs(tree, n=n, interval=serial, p=p, seed=1, always_positive=middle)
        for pol in ("masa", "ca-wait", "ca-preempt"):
            r = M.simulate(nets.profiles, jobs, policy=pol, budget=b, workers=workers)
            rows.append(ContextRow(p, pol, r.mean_response * 1e3, r.aborted_tasks))
    return rows


@dataclass(frozen=True)
class BatchRow:
    batch: int
    batched_ms_per_input: float
    individual_ms_per_input: float


def batching(nets: Nets, *, sizes=(1, 2, 4, 8, 16, 32), workers: int = 2,
             budget_mb: int = 1024) -> list[BatchRow]:
    """Fig. 12: a 2-network task, batched (1 x B inputs) against individual arrivals (B x 1):
    per-input time (simulated; a batch scales execution time and activations by B and loads
    each layer once)."""
    names = ["AgeNet", "GenderNet"]
    b = budgets_for(nets, names)[budget_mb]
    rows = []
    for size in sizes:
        batched = {x: nets.profiles[x].batched(size) for x in names}
        rb = M.simulate(batched, [M.Job(0, 0.0, names)], policy="masa", budget=b, workers=workers)
        ri = M.simulate(nets.profiles, M.periodic_jobs(names, n=size, interval=0.0),
                        policy="masa", budget=b, workers=workers)
        rows.append(BatchRow(size, rb.makespan / size * 1e3, ri.makespan / size * 1e3))
    return rows


@dataclass(frozen=True)
class OptimalityRow:
    workers: int
    masa_makespan: int
    optimal_makespan: int
    ratio: float
    milp_status: str
    milp_s: float


def optimality(nets: Nets, *, workers=(1, 2, 3, 4), time_limit: float = 60.0
               ) -> list[OptimalityRow]:
    """Section 5.6 / Fig. 13(a): two 4-layer networks (24 tasks), MASA against the MILP."""
    from ....memory.optimal import check_schedule, instance_from_profiles, masa_schedule, solve_milp

    inst = instance_from_profiles([nets.profiles["AgeNet"], nets.profiles["TinyYOLO"]], layers=4)
    rows = []
    for k in workers:
        m = masa_schedule(inst, workers=k)
        o = solve_milp(inst, workers=k, time_limit=time_limit)
        check_schedule(inst, o, workers=k)
        rows.append(OptimalityRow(k, m.makespan, o.makespan, m.makespan / o.makespan, o.status,
                                  o.seconds))
    return rows


def workers_effect(nets: Nets, *, workers=(1, 2, 4), n: int = 150,
                   intensity: float = 1.2) -> list[ResponseRow]:
    """Section 5.3's remark: 2 -> 4 workers on three small DNNs under high random traffic (the
    rows' ``scenario`` names the worker count)."""
    pool = SCENARIOS["small"]
    b = budgets_for(nets, pool)[1024]
    jobs = M.stochastic_jobs(pool, nets.profiles, scenario=1, intensity=intensity, n=n, seed=3)
    rows = []
    for k in workers:
        for pol in COMPARED:
            r = run(nets.profiles, jobs, pol, budget=b, workers=k)
            rows.append(ResponseRow(f"{k} workers", 1024, b / 1e6, pol, r.mean_response * 1e3,
                                    intensity, r.overcommit_tasks))
    return rows


@dataclass(frozen=True)
class RealVsSimRow:
    policy: str
    budget_mb: float
    real_mean_response_ms: float
    simulated_ms: float
    error_pct: float
    calibrated_ms: float
    calibrated_error_pct: float
    overhead_per_task_us: float
    simulation_ms: float
    real_wall_s: float
    overcommitted_tasks: int


def real_vs_sim(nets: Nets, *, n: int = 30, intensity: float = 1.2, workers: int = 2,
                policies=COMPARED, scenario: int = 1) -> list[RealVsSimRow]:
    """Real runs (threads, weights read from disk, layers executed) against the simulator on
    the same jobs at the tightest budget: the simulator's error."""
    pool = ["AgeNet", "GenderNet", "TinyYOLO", "FaceNet"]
    b = budgets_for(nets, pool)[PAPER_BUDGETS_MB[0]]
    jobs = M.stochastic_jobs(pool, nets.profiles, scenario=scenario, intensity=intensity, n=n,
                             seed=2)
    # Calibrated on a job outside the evaluated ones (GenderNet alone, one worker).
    over = M.calibrate_overhead(nets.graphs, nets.roots, nets.profiles, "GenderNet")
    rows = []
    for pol in policies:
        policy, admission = scheduler_of(pol)
        real = M.run_real(nets.graphs, nets.roots, jobs, policy=policy, budget=b,
                          workers=workers, nets=nets.profiles, admission=admission)
        with Stopwatch() as sw:
            sim = run(nets.profiles, jobs, pol, budget=b, workers=workers)
        cal = run(nets.profiles, jobs, pol, budget=b, workers=workers, overhead_s=over)
        rows.append(RealVsSimRow(
            pol, b / 1e6, real.mean_response * 1e3, sim.mean_response * 1e3,
            100 * (sim.mean_response / real.mean_response - 1), cal.mean_response * 1e3,
            100 * (cal.mean_response / real.mean_response - 1), over * 1e6, sw.ms, real.wall_s,
            real.overcommit_tasks))
    return rows


def median_abs_error_pct(rows: list[RealVsSimRow]) -> float:
    """The simulator's typical error against real runs (calibrated), in percent."""
    return statistics.median(abs(r.calibrated_error_pct) for r in rows)
