"""Solvers of the discrete MOO problem: RASS, OODIn, pymoo's evolutionary algorithms, and the
papers' baselines. Every solver takes a :class:`~workbench.moo.problem.DiscreteProblem` and
returns a :class:`SolveResult`.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import InputError
from ..moo.problem import DiscreteProblem
from .evolutionary import ALGORITHMS, evolutionary
from .oodin import OodinManager, oodin
from .optuna_search import SAMPLERS, optuna_search
from .rass import rass
from .result import Design, PolicyRule, SolveResult

#: Exact solvers by name; any pymoo algorithm name (see ``ALGORITHMS``) is also accepted.
SOLVERS: dict[str, Callable[..., SolveResult]] = {"rass": rass, "oodin": oodin}


def solve(problem: DiscreteProblem, solver: str = "rass", **options: Any) -> SolveResult:
    """Solve a problem with a solver named ``rass``, ``oodin``, a pymoo algorithm (``nsga2``,
    ``nsga3``, ``spea2``, ``smsemoa``, ... or a pymoo class path) or an Optuna sampler
    (``optuna-nsga2``, ``optuna-tpe``, ``optuna-random``)."""
    if solver in SOLVERS:
        return SOLVERS[solver](problem, **options)
    if solver.lower() in SAMPLERS:
        return optuna_search(problem, sampler=solver, **options)
    if solver.lower() in ALGORITHMS or solver.startswith("pymoo.algorithms."):
        return evolutionary(problem, algorithm=solver, **options)
    raise InputError(f"unknown solver; use rass, oodin, a pymoo algorithm "
                     f"({', '.join(ALGORITHMS)}) or an Optuna sampler ({', '.join(SAMPLERS)})",
                     where="solver", value=solver)


__all__ = ["ALGORITHMS", "SAMPLERS", "SOLVERS", "Design", "OodinManager", "PolicyRule", "SolveResult",
           "evolutionary", "oodin", "optuna_search", "rass", "solve"]
