"""Optuna's multi-objective samplers on the same discrete problem as pymoo's algorithms.

One integer parameter per task (the configuration's position in that task's table), the
problem's objectives in pymoo's minimisation form as the study's values, and its constraints
through the sampler's ``constraints_func`` (Optuna's convention is pymoo's: <= 0 is feasible).
What comes back is shaped like :func:`~workbench.solvers.evolutionary.evolutionary`'s result:
the feasible non-dominated trials as the front, ``d0`` its member of the highest optimality in
RASS's normalisation, and the same indicators against the exact front, so the two libraries
compare on one table. Optuna is optional (``pip install 'workbench[tune]'``).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from ..errors import InputError, MissingExtra
from ..moo.problem import DiscreteProblem
from .evolutionary import MAX_EFFORT, feasible_front, front_result
from .result import SolveResult

#: Solver name -> Optuna sampler class. NSGA-II and random search take constraints; TPE too.
SAMPLERS = {"optuna-nsga2": "NSGAIISampler", "optuna-tpe": "TPESampler",
            "optuna-random": "RandomSampler"}
#: The most trials one run may ask for (TPE's cost per trial grows with the trials so far).
MAX_TRIALS = 200_000


def _optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise MissingExtra("optuna", "tune") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def optuna_search(problem: DiscreteProblem, *, sampler: str = "optuna-nsga2", pop_size: int = 50,
                  n_gen: int = 20, seed: int = 1, compare: bool = True,
                  progress: Callable[[int, int], bool | None] | None = None) -> SolveResult:
    """Search the problem with an Optuna sampler for ``pop_size x n_gen`` trials.

    Args:
        sampler: ``optuna-nsga2``, ``optuna-tpe`` or ``optuna-random``.
        pop_size: NSGA-II's population (the other samplers take it only as the trial count's
            factor, so every solver spends evaluations alike).
        n_gen: Generations (trials = ``pop_size x n_gen``).
        seed: The sampler's seed (results are reproducible).
        compare: Also compute HV/IGD against the exact front and the optimality ratio.
        progress: Called after each trial with (trials done, trials); returning False stops.

    Returns:
        SolveResult like pymoo's; ``raw`` holds the Optuna study (every trial, its values and
        parameters) for the caller.
    """
    key = sampler.lower()
    if key not in SAMPLERS:
        raise InputError(f"unknown Optuna sampler; use {', '.join(SAMPLERS)}", where="solver",
                         value=sampler)
    for name, v, lo in (("pop_size", pop_size, 2), ("n_gen", n_gen, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= MAX_EFFORT:
            raise InputError(f"must be a whole number {lo}..{MAX_EFFORT}", where=name, value=v)
    n_trials = pop_size * n_gen
    if n_trials > MAX_TRIALS:
        raise InputError(f"pop_size x n_gen is {pop_size:,} x {n_gen:,} = {n_trials:,} Optuna "
                         f"trials; at most {MAX_TRIALS:,} (TPE's cost per trial grows with the "
                         "trials)", where="pop_size x n_gen")
    optuna = _optuna()

    def constraints(trial: Any) -> list[float]:
        return list(trial.user_attrs.get("G", []))

    cls = getattr(optuna.samplers, SAMPLERS[key])
    kw: dict[str, Any] = {"seed": seed}
    # Optuna 5 reads constraints from the trial (set_constraint); older versions from a
    # constraints_func the sampler calls.
    legacy = not hasattr(optuna.trial.Trial, "set_constraint")
    if key == "optuna-nsga2":
        kw.update(population_size=pop_size)
    if legacy and key in ("optuna-nsga2", "optuna-tpe"):
        kw.update(constraints_func=constraints)
    study = optuna.create_study(directions=["minimize"] * problem.n_obj, sampler=cls(**kw))
    shape = problem.shape
    flats: list[int] = []
    t0 = time.perf_counter()
    for k in range(n_trials):
        trial = study.ask()
        x = [trial.suggest_int(f"x{i}", 0, n - 1) for i, n in enumerate(shape)]
        flat = int(np.ravel_multi_index(tuple(x), shape))
        ev = problem.evaluate_flat(np.array([flat]))
        if ev.G is not None and np.size(ev.G):
            g = [float(v) for v in np.ravel(ev.G[0])]
            if hasattr(trial, "set_constraint"):  # Optuna 5: the trial carries its constraints
                for name, gv in zip(problem.constraint_names, g):
                    trial.set_constraint(name, gv)
            else:
                trial.set_user_attr("G", g)
        # Natural units to minimisation form (maximised objectives negated), as pymoo sees it.
        study.tell(trial, [float(v) for v in np.where(problem.maximise, -ev.F[0], ev.F[0])])
        flats.append(flat)
        if progress is not None and progress(k + 1, n_trials) is False:
            break
    solve_ms = (time.perf_counter() - t0) * 1e3
    extra: dict[str, Any] = {"algorithm": key, "pop_size": pop_size, "n_gen": n_gen,
                             "seed": seed, "evaluations": len(flats),
                             "library": f"optuna {optuna.__version__}"}
    if len(flats) < n_trials:
        extra["cancelled"] = True
        extra["generations_done"] = len(flats) // pop_size
    front = feasible_front(problem, flats)
    if len(front) == 0:
        return SolveResult(key, "infeasible", {}, {"solve": solve_ms, "total": solve_ms},
                           problem.size, -1, extra=extra, raw=study)
    return front_result(problem, key, front, extra, solve_ms, compare=compare, raw=study)
