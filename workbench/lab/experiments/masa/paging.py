"""The simulator's paging model (``workbench.memory.masa.paging``) fitted to MASA's runs under real
memory pressure (:mod:`.pressure`): :func:`fit_paging` searches :data:`PAGING_GRID` for the
parameters whose simulated response times are closest to the measured ones; the result is
labelled as fitted wherever it is shown."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np

from ....memory import masa as M
from ....timing import Stopwatch
from ..memory import Nets
from .figures import run
from .pressure import PressureRun, jobs_for


@dataclass(frozen=True)
class Paging:
    """The simulator's paging parameters (modelled, see ``workbench.memory.masa.paging``):
    page-out + page-in bandwidth, page cache charged per weight byte a load reads, and the share
    of reclaim taken from anonymous memory while page cache remains; and ``exec_scale``, the
    real runs' layer times over the profiled ones (two workers share the cores and the memory
    bus in a run; each layer is profiled alone)."""

    swap_mb_per_s: float
    cache_factor: float
    anon_share: float
    exec_scale: float = 1.0


@dataclass(frozen=True)
class FitRow:
    """The simulator against one measured configuration (a scaling and policy; the median of
    its rounds, their spread beside it), with paging parameters fitted to the runs named by
    ``fitted_on`` (modelled: the parameters are the simulator's, not measurements).
    ``whatif_ms`` is the simulation's own time."""

    scaling: str
    policy: str
    rounds: int
    measured_ms: float  # median over rounds
    measured_min_ms: float
    measured_max_ms: float
    simulated_ms: float
    error_pct: float
    fitted_on: str  # "all" | "by total" | "by largest layer"
    swap_mb_per_s: float
    cache_factor: float
    anon_share: float
    slack_mb: float
    whatif_ms: float
    # A check the fit does not use: bytes the kernel swapped out during the runs (median over
    # rounds, measured) against what the simulator's paging model pages out (modelled).
    measured_swapped_mb: float | None = None
    simulated_paged_out_mb: float | None = None
    # The configuration's memory and workload (see :class:`PressureRun`).
    paper_budget_mb: int = 512
    intensity: float = 1.2
    scenario: int = 1
    exec_scale: float = 1.0


#: The grid the fit searches (each axis a parameter of :class:`Paging`).
PAGING_GRID = {"swap_mb_per_s": tuple(float(v) for v in np.round(np.geomspace(50, 3200, 13))),
               "cache_factor": (0.0, 0.5, 1.0),
               "anon_share": (0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0),
               "exec_scale": (1.0,)}


def fit_paging(nets: Nets, rows: list[PressureRun], *, n: int = 30, grid: dict | None = None,
               fitted_on: str = "all", fit_on: Callable[[PressureRun], bool] | None = None,
               only: Paging | None = None,
               jobs_of: Callable[[PressureRun], list[M.Job]] | None = None) -> list[FitRow]:
    """The simulator against the finished runs of ``rows``, one row per configuration (scenario,
    scaling, memory, intensity and policy), at the paging parameters that best match the runs
    of ``fitted_on`` ("all" or one scaling), or, when ``fit_on`` is given, the runs it accepts
    (``fitted_on`` then only names them): least sum of squared log ratios of simulated to
    measured (median over rounds). ``only`` skips the search. Each run's jobs are ``jobs_of``
    it, or remade from its workload (``n`` jobs when it recorded none). The memory a real limit
    leaves beside the budget (limit - baseline - budget) is measured per run and given to the
    simulator, not fitted."""
    done: dict[tuple, list[PressureRun]] = {}
    for r in rows:
        if r.finished and r.mean_response_ms:
            key = (r.scenario, r.scaling, r.paper_budget_mb, r.intensity, r.policy)
            done.setdefault(key, []).append(r)
    if not done:
        return []
    grid = {**PAGING_GRID, **(grid or {})}
    simulator = _Simulator(nets, n, jobs_of)
    # Finished runs only (done): each has its mean response.
    measured = {k: statistics.median(cast(float, r.mean_response_ms) for r in rs)
                for k, rs in done.items()}
    if fit_on is not None:
        fit_keys = [k for k, rs in done.items() if fit_on(rs[0])]
    else:
        fit_keys = [k for k in done if fitted_on == "all" or k[1] == fitted_on]

    if not fit_keys and only is None:
        raise ValueError(f"no finished run to fit on: fitted_on={fitted_on!r} names no scaling "
                         "and no fit_on was given")

    def loss(p: Paging) -> float:
        return sum(np.log(simulator.sim(done[k], p) / measured[k]) ** 2 for k in fit_keys)

    if only is None:
        candidates = [Paging(b, c, a, e) for b in grid["swap_mb_per_s"]
                      for c in grid["cache_factor"] for a in grid["anon_share"]
                      for e in grid["exec_scale"]]
        best = min(candidates, key=loss)
    else:
        best = only
    out = []
    for k, rs in done.items():
        with Stopwatch() as sw:
            res = simulator.simulate(rs, best)
        out.append(_fit_row(k, rs, res, measured[k], best, fitted_on, sw.ms))
    return out


class _Simulator:
    """The simulator run as the measured runs ran: each run's jobs (``jobs_of`` it, or remade
    from its workload, ``n`` jobs when it recorded none), the memory its limit left beside the
    budget, the profiles' execution times scaled by ``exec_scale``. Workloads and scaled
    profiles are made once per fit."""

    def __init__(self, nets: Nets, n: int,
                 jobs_of: Callable[[PressureRun], list[M.Job]] | None) -> None:
        self.nets, self.n, self.jobs_of = nets, n, jobs_of
        self.workloads: dict[tuple, list[M.Job]] = {}
        self.scaled: dict[float, dict] = {}

    def jobs(self, r: PressureRun) -> list[M.Job]:
        if self.jobs_of is not None:
            return self.jobs_of(r)
        w = (r.jobs or self.n, r.intensity, r.scenario, r.seed)
        if w not in self.workloads:
            self.workloads[w] = jobs_for(self.nets, n=w[0], intensity=w[1], scenario=w[2],
                                         seed=w[3])
        return self.workloads[w]

    @staticmethod
    def slack(rs: list[PressureRun]) -> int:
        return int(statistics.median(r.limit_mb - (r.base_mb or 0.0) - r.budget_mb for r in rs)
                   * 1e6)

    def profiles(self, k: float) -> dict:
        if k not in self.scaled:
            self.scaled[k] = {n: M.NetProfile(n, [dataclasses.replace(x, exec_s=x.exec_s * k)
                                                  for x in p.layers])
                              for n, p in self.nets.profiles.items()}
        return self.scaled[k]

    def simulate(self, rs: list[PressureRun], p: Paging) -> list:
        """One simulation per run of ``rs`` (rounds with the same workload share one)."""
        by_seed: dict[int, M.RunResult] = {}
        for r in rs:
            if r.seed not in by_seed:
                by_seed[r.seed] = run(self.profiles(p.exec_scale), self.jobs(r), r.policy,
                                      budget=int(r.budget_mb * 1e6),
                                      swap_bps=p.swap_mb_per_s * 1e6,
                                      cache_factor=p.cache_factor, anon_share=p.anon_share,
                                      slack_bytes=self.slack(rs))
        return [by_seed[r.seed] for r in rs]

    def sim(self, rs: list[PressureRun], p: Paging) -> float:
        """The median over ``rs``'s runs of the simulated mean response, as ``measured``."""
        return statistics.median(x.mean_response for x in self.simulate(rs, p)) * 1e3


def _fit_row(k: tuple, rs: list[PressureRun], res: list, measured: float, best: Paging,
             fitted_on: str, fit_ms: float) -> FitRow:
    """One configuration's runs beside the simulator at the fitted parameters."""
    ms = statistics.median(x.mean_response for x in res) * 1e3
    ms_r = [cast(float, r.mean_response_ms) for r in rs]
    swapped = [r.swapped_mb for r in rs if r.swapped_mb is not None]
    return FitRow(k[1], k[4], len(rs), measured, min(ms_r), max(ms_r), ms,
                  100 * (ms / measured - 1), fitted_on, best.swap_mb_per_s,
                  best.cache_factor, best.anon_share, _Simulator.slack(rs) / 1e6, fit_ms,
                  statistics.median(swapped) if swapped else None,
                  statistics.median(x.paged_out_bytes for x in res) / 1e6,
                  paper_budget_mb=k[2], intensity=k[3],
                  scenario=k[0], exec_scale=best.exec_scale)
