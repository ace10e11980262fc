"""pymoo's evolutionary algorithms (NSGA-II by default) on the integer encoding of the problem.

The problem is already a pymoo ``Problem`` (one integer variable per task); this module only
picks the algorithm, runs ``pymoo.optimize.minimize`` and compares what it found with the exact
answer: pymoo's hypervolume and IGD of its front against the exact Pareto front (objectives
min-max normalised over the feasible space), the optimality of its best design in RASS's
normalisation, its evaluations and wall time.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from ..moo.front import exact_front, front_indicators
from ..moo.optimality import feasible_mask
from ..moo.problem import DiscreteProblem
from .result import Design, SolveResult

#: Short names for pymoo algorithms; any other pymoo class can be named by its dotted path.
ALGORITHMS = {
    "nsga2": "pymoo.algorithms.moo.nsga2.NSGA2",
    "nsga3": "pymoo.algorithms.moo.nsga3.NSGA3",
    "unsga3": "pymoo.algorithms.moo.unsga3.UNSGA3",
    "moead": "pymoo.algorithms.moo.moead.MOEAD",
    "spea2": "pymoo.algorithms.moo.spea2.SPEA2",
    "smsemoa": "pymoo.algorithms.moo.sms.SMSEMOA",
    "agemoea": "pymoo.algorithms.moo.age.AGEMOEA",
    "ga": "pymoo.algorithms.soo.nonconvex.ga.GA",
}
#: The largest population or generation count accepted (beyond it a typo runs for days).
MAX_EFFORT = 100_000
_NEEDS_REF_DIRS = {"nsga3", "unsga3", "moead"}


def make_algorithm(name: str, n_obj: int, *, pop_size: int = 100, seed: int = 1) -> Any:
    """A pymoo algorithm set up for integer variables (rounding repair, no duplicates)."""
    from pymoo.core.algorithm import Algorithm
    from pymoo.operators.crossover.sbx import SBX
    from pymoo.operators.mutation.pm import PM
    from pymoo.operators.repair.rounding import RoundingRepair
    from pymoo.operators.sampling.rnd import IntegerRandomSampling

    path = ALGORITHMS.get(name.lower(), name)
    module, _, cls_name = path.rpartition(".")
    cls = None
    # Only pymoo's own algorithm modules are imported: a solver name must never run other code.
    if module.startswith("pymoo.algorithms.") and all(
            part.isidentifier() for part in path.split(".")):
        try:
            cls = getattr(importlib.import_module(module), cls_name)
        except (ImportError, AttributeError):
            cls = None
    if isinstance(cls, type) and issubclass(cls, Algorithm) and module.startswith(
            "pymoo.algorithms.soo.") and n_obj > 1:
        raise InputError(f"{name} optimises one objective; this SLO has {n_obj} (use nsga2, "
                         "spea2, smsemoa, ... or an SLO with one objective)", where="solver",
                         value=name)
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        raise InputError(f"unknown algorithm; use one of {', '.join(ALGORITHMS)} or a pymoo class "
                         "path such as pymoo.algorithms.moo.nsga2.NSGA2", where="solver",
                         value=name)
    kw: dict[str, Any] = dict(
        sampling=IntegerRandomSampling(),
        crossover=SBX(prob=0.9, eta=15, vtype=float, repair=RoundingRepair()),
        mutation=PM(eta=20, vtype=float, repair=RoundingRepair()),
        eliminate_duplicates=True)
    if name.lower() in _NEEDS_REF_DIRS:
        from pymoo.util.ref_dirs import get_reference_directions

        kw["ref_dirs"] = get_reference_directions("energy", n_obj, pop_size, seed=seed)
        if name.lower() == "moead":
            kw.pop("eliminate_duplicates")  # MOEA/D replaces neighbours; it has no such option
    else:
        kw["pop_size"] = pop_size
    return cls(**kw)


def evolutionary(problem: DiscreteProblem, *, algorithm: str = "nsga2", pop_size: int = 100,
                 n_gen: int = 100, seed: int = 1, compare: bool = True,
                 progress: Callable[[int, int], bool | None] | None = None,
                 history: bool = False) -> SolveResult:
    """Run a pymoo algorithm on the problem.

    Args:
        algorithm: A short name from ``ALGORITHMS`` or a pymoo class path.
        pop_size: Population size.
        n_gen: Generations.
        seed: Random seed (results are reproducible).
        compare: Also compute HV/IGD against the exact front and the optimality ratio to the
            best design (costs an exhaustive evaluation; the solver's own time excludes it).
        progress: Called after each generation with (generations done, ``n_gen``); returning
            False stops the run there (``extra["cancelled"]``), keeping the front found so far.
        history: Keep pymoo's per-generation snapshots in ``raw.history`` (memory grows with
            the generations).

    Returns:
        SolveResult whose ``d0`` is the front member with the highest optimality (RASS's
        normalisation), with ``extra`` holding the front, evaluations and indicators.
    """
    from pymoo.optimize import minimize

    for name, v, lo in (("pop_size", pop_size, 2), ("n_gen", n_gen, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= MAX_EFFORT:
            raise InputError(f"must be a whole number {lo}..{MAX_EFFORT}", where=name, value=v)
    alg = make_algorithm(algorithm, problem.n_obj, pop_size=pop_size, seed=seed)
    cancelled, stopped_at = [False], [0]
    callback = None
    if progress is not None:
        from pymoo.core.callback import Callback

        report = progress

        class _Progress(Callback):
            def notify(self, algorithm: Any) -> None:
                done = int(algorithm.n_gen)
                if not cancelled[0] and report(done, n_gen) is False:
                    cancelled[0] = True
                    stopped_at[0] = done  # pymoo may finish the generation under way
                    algorithm.termination.terminate()

        callback = _Progress()
    t0 = time.perf_counter()
    try:
        # SPEA2 normalises by nadir - ideal, which is 0 when every point is the same (a space of
        # one row): pymoo then divides by zero, warns, and carries on correctly.
        with np.errstate(divide="ignore", invalid="ignore"):
            res = minimize(problem, alg, ("n_gen", n_gen), seed=seed, verbose=False,
                           save_history=history,
                           **({"callback": callback} if callback is not None else {}))
    except AssertionError as exc:  # pymoo states an algorithm's limits as assertions
        raise InputError(f"pymoo's {algorithm} cannot solve this problem: {exc}",
                         where="solver", value=algorithm) from None
    solve_ms = (time.perf_counter() - t0) * 1e3
    n_eval = int(res.algorithm.evaluator.n_eval)
    extra: dict[str, Any] = {"algorithm": algorithm, "pop_size": pop_size, "n_gen": n_gen,
                             "seed": seed, "evaluations": n_eval}
    if cancelled[0]:
        extra["cancelled"] = True
        extra["generations_done"] = stopped_at[0]
    if res.X is None:
        return SolveResult(algorithm, "infeasible", {}, {"solve": solve_ms, "total": solve_ms},
                           problem.size, -1, extra=extra, raw=res)
    X = np.atleast_2d(res.X).astype(np.int64)
    flats = np.unique(np.ravel_multi_index(tuple(X.T), problem.shape))
    flats = flats[feasible_mask(problem.evaluate_flat(flats).G)]
    if len(flats) == 0:
        return SolveResult(algorithm, "infeasible", {}, {"solve": solve_ms, "total": solve_ms},
                           problem.size, -1, extra=extra, raw=res)
    return front_result(problem, algorithm, flats, extra, solve_ms, compare=compare, raw=res)


def feasible_front(problem: DiscreteProblem, flats: Any) -> np.ndarray:
    """The feasible, non-dominated combinations among ``flats`` (flat indices, any order or
    repeats): what a sampling solver's trials, or its trials so far, amount to as a front."""
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    seen = np.unique(np.asarray(flats, dtype=np.int64))
    ok = seen[feasible_mask(problem.evaluate_flat(seen).G)] if len(seen) else seen
    if not len(ok):
        return ok
    F = problem.evaluate_flat(ok).F
    F = np.where(problem.maximise, -F, F)  # minimisation form
    return ok[NonDominatedSorting().do(F, only_non_dominated_front=True)]


def front_result(problem: DiscreteProblem, solver: str, front: np.ndarray, extra: dict[str, Any],
                 solve_ms: float, *, compare: bool, raw: Any) -> SolveResult:
    """A sampling solver's answer from its feasible front (flat indices): ``d0`` the member of
    the highest optimality in RASS's normalisation, the front in ``extra``, and with
    ``compare`` pymoo's HV and IGD against the exact front and the optimality ratio. The one
    shape every evolutionary solver (pymoo's, Optuna's) returns."""
    opt = problem.optimality_of(front)
    best = int(front[int(np.nanargmax(opt))])
    extra["front"] = np.sort(front).tolist()
    if compare:
        exact = exact_front(problem)
        extra.update(front_indicators(problem, front, exact))
        extra["exact_front_size"] = int(len(exact))
        best_opt = float(problem.scores.optimality.max())
        extra["optimality_ratio"] = float(np.nanmax(opt) / best_opt) if np.isfinite(best_opt) \
            else (1.0 if np.isinf(np.nanmax(opt)) else 0.0)
    d0 = Design.of(problem, "d0", best, optimality=float(np.nanmax(opt)))
    return SolveResult(solver, "ok", {"d0": d0}, {"solve": solve_ms, "total": solve_ms},
                       problem.size, -1, extra=extra, raw=raw)
