"""CARIn's solvers compared: OODIn's solve time (section 7), RASS against the evolutionary and
Optuna solvers (evaluations, time, how much of the exact front each finds) and their
hypervolume over time."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from .... import papers
from ....solvers import OodinManager, rass
from ....timing import mean_ms, samples_ms
from .designs import CARIN_DEVICES, _problem


@dataclass(frozen=True)
class SolveTimeRow:
    """CARIn Table 9's shape: OODIn's re-solve time against the decision-space size."""

    device: str
    space: int
    oodin_avg_ms: float
    oodin_max_ms: float
    rass_lookup_us: float
    paper_avg_ms: float | None
    paper_max_ms: float | None


def oodin_solve_times(devices: Iterable[str] = CARIN_DEVICES,
                      sizes: Iterable[int] = (500, 2000, 5000, 10000), *, reps: int = 50,
                      seed: int = 0) -> list[SolveTimeRow]:
    """OODIn's runtime re-solve (search of its look-up tables after a processor issue) on
    decision spaces of exactly the given sizes, against RASS's policy lookup. The spaces are
    random combinations of the device's UC4 product space (three DNNs, 110,592 combinations),
    as CARIn's Table 9 pools applications."""
    paper = {(r[1], r[0]): (r[2], r[3])
             for r in papers.paper("carin")["oodin_solve_time_ms"]["rows"]}
    rng = np.random.default_rng(seed)
    out = []
    for dev in devices:
        full = _problem("uc4", dev)
        res = rass(full)
        trig = tuple(res.triggers[:1]) if res.ok else ()
        bits = res.flag_bits({t: True for t in trig}) if res.ok else 0
        for n in sizes:
            flat = np.sort(rng.choice(full.size, size=min(n, full.size), replace=False))
            mgr = OodinManager(full, index=flat)
            times = samples_ms(lambda: mgr.resolve(unavailable=trig), runs=reps)
            lookup_us = mean_ms(res.decide_bits, bits, runs=10000) * 1e3
            p = paper.get((dev, n), (None, None))
            out.append(SolveTimeRow(dev, len(flat), statistics.fmean(times), max(times),
                                    lookup_us, p[0], p[1]))
    return out


@dataclass(frozen=True)
class VersusRow:
    """RASS against an evolutionary solver (pymoo's or Optuna's) on one use case and device."""

    use_case: str
    device: str
    algorithm: str
    space: int
    rass_ms: float
    algo_ms: float
    evaluations: int
    optimality_ratio: float | None
    hv_ratio: float | None
    igd: float | None
    same_d0: bool
    #: Share of the exact Pareto front's designs the solver's front holds.
    front_recall: float | None = None
    #: Which library ran it ("pymoo", "optuna 5.1.0").
    library: str = "pymoo"


#: The evolutionary solvers compared with RASS: pymoo's NSGA-II and Optuna's NSGA-II and TPE.
VERSUS_SOLVERS = ("nsga2", "optuna-nsga2", "optuna-tpe")


def rass_vs_evolutionary(use_cases: Iterable[str] = ("uc1", "uc2", "uc3", "uc4"),
                         devices: Iterable[str] = CARIN_DEVICES, *,
                         solvers: Iterable[str] = VERSUS_SOLVERS, pop_size: int = 100,
                         n_gen: int = 100, seed: int = 1,
                         optuna_pop_size: int = 50, optuna_n_gen: int = 20) -> list[VersusRow]:
    """RASS (exact) against evolutionary solvers of both libraries: optimality of the best
    design found, HV ratio and IGD of its front against the exact front, the share of the exact
    front it found, evaluations and wall time. pymoo runs ``pop_size x n_gen``; Optuna
    ``optuna_pop_size x optuna_n_gen`` trials (TPE's cost per trial grows with the trials)."""
    from ....moo.front import exact_front
    from ....solvers import SAMPLERS, solve

    out = []
    for uc in use_cases:
        for dev in devices:
            pr = _problem(uc, dev)
            t0 = time.perf_counter()
            r = rass(pr)
            rass_ms = (time.perf_counter() - t0) * 1e3
            if not r.ok:
                continue
            exact = set(int(f) for f in exact_front(pr))
            for solver in solvers:
                effort = ((optuna_pop_size, optuna_n_gen) if solver in SAMPLERS
                          else (pop_size, n_gen))
                e = solve(pr, solver, pop_size=effort[0], n_gen=effort[1], seed=seed)
                ex = e.extra
                found = set(ex.get("front", []))
                out.append(VersusRow(uc, dev, solver, pr.size, rass_ms, e.timing_ms["total"],
                                     ex["evaluations"], ex.get("optimality_ratio"),
                                     ex.get("hv_ratio"), ex.get("igd"),
                                     bool(e.ok and e.design().index == r.design().index),
                                     len(found & exact) / len(exact) if exact else None,
                                     ex.get("library", "pymoo")))
    return out


@dataclass(frozen=True)
class TracePoint:
    """An evolutionary solver's front after some of its work: wall time since it started (ms),
    evaluations so far, and its hypervolume ratio against the exact front."""

    solver: str
    evaluations: int
    ms: float
    hv_ratio: float | None


def hv_over_time(use_case: str, device: str, *, solvers: Iterable[str] = VERSUS_SOLVERS,
                 pop_size: int = 50, n_gen: int = 20, seed: int = 1) -> list[TracePoint]:
    """Each solver's hypervolume ratio (against the exact front) after every generation (every
    ``pop_size`` trials for Optuna), with the wall time it had taken: how fast each library
    approaches the front RASS computes exactly."""
    from ....moo.front import exact_front, front_indicators
    from ....solvers import SAMPLERS, evolutionary, optuna_search
    from ....solvers.evolutionary import feasible_front

    pr = _problem(use_case, device)
    exact = exact_front(pr)

    def hv(flats: np.ndarray) -> float | None:
        nd = feasible_front(pr, flats)
        return front_indicators(pr, nd, exact).get("hv_ratio") if len(nd) else None

    out: list[TracePoint] = []
    for solver in solvers:
        if solver in SAMPLERS:
            res = optuna_search(pr, sampler=solver, pop_size=pop_size, n_gen=n_gen, seed=seed,
                                compare=False)
            trials = res.raw.trials
            t0 = trials[0].datetime_start
            trial_flats = [int(np.ravel_multi_index(tuple(t.params[f"x{i}"]
                                                          for i in range(len(pr.shape))), pr.shape))
                           for t in trials]
            for k in range(pop_size, len(trials) + 1, pop_size):
                ms = (trials[k - 1].datetime_complete - t0).total_seconds() * 1e3
                out.append(TracePoint(solver, k, ms, hv(np.array(trial_flats[:k]))))
        else:
            stamps: list[float] = []
            t_start = time.perf_counter()

            def tick(done: int, total: int) -> None:
                stamps.append((time.perf_counter() - t_start) * 1e3)

            res = evolutionary(pr, algorithm=solver, pop_size=pop_size, n_gen=n_gen, seed=seed,
                               compare=False, progress=tick, history=True)
            for algo, ms in zip(res.raw.history, stamps):
                X = np.atleast_2d(algo.opt.get("X")).astype(np.int64)
                flats = np.ravel_multi_index(tuple(X.T), pr.shape) if X.size else np.empty(0)
                out.append(TracePoint(solver, int(algo.evaluator.n_eval), ms, hv(flats)))
    return out


@dataclass(frozen=True)
class VersusSummary:
    mean_optimality_ratio: float | None
    min_optimality_ratio: float | None
    same_d0_share: float
    mean_hv_ratio: float | None
    mean_speed_ratio: float
    #: The solver summarised ("" for rows of several).
    solver: str = ""
    mean_front_recall: float | None = None
    #: Use case x device problems summarised.
    n: int = 0


def versus_summary(rows: list[VersusRow]) -> VersusSummary:
    """Means over use cases and devices of :func:`rass_vs_evolutionary`'s rows (pass one
    solver's rows; :func:`versus_by_solver` does each)."""
    opt = [r.optimality_ratio for r in rows if r.optimality_ratio is not None]
    hv = [r.hv_ratio for r in rows if r.hv_ratio is not None]
    rec = [r.front_recall for r in rows if r.front_recall is not None]
    names = {r.algorithm for r in rows}
    return VersusSummary(statistics.fmean(opt) if opt else None, min(opt) if opt else None,
                         statistics.fmean(r.same_d0 for r in rows) if rows else 0.0,
                         statistics.fmean(hv) if hv else None,
                         statistics.fmean(r.algo_ms / r.rass_ms for r in rows) if rows else 0.0,
                         names.pop() if len(names) == 1 else "",
                         statistics.fmean(rec) if rec else None, len(rows))


def versus_by_solver(rows: list[VersusRow]) -> list[VersusSummary]:
    """One :class:`VersusSummary` per solver, in the rows' order."""
    return [versus_summary([r for r in rows if r.algorithm == s])
            for s in dict.fromkeys(r.algorithm for r in rows)]
