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
from .rass import rass
from .result import Design, PolicyRule, SolveResult

#: Exact solvers by name; any pymoo algorithm name (see ``ALGORITHMS``) is also accepted.
SOLVERS: dict[str, Callable[..., SolveResult]] = {"rass": rass, "oodin": oodin}


def solve(problem: DiscreteProblem, solver: str = "rass", **options: Any) -> SolveResult:
    """Solve a problem with a solver named ``rass``, ``oodin`` or a pymoo algorithm
    (``nsga2``, ``nsga3``, ``spea2``, ``smsemoa``, ... or a pymoo class path)."""
    if solver in SOLVERS:
        return SOLVERS[solver](problem, **options)
    if solver.lower() in ALGORITHMS or solver.startswith("pymoo.algorithms."):
        return evolutionary(problem, algorithm=solver, **options)
    raise InputError(f"unknown solver; use rass, oodin or a pymoo algorithm "
                     f"({', '.join(ALGORITHMS)})", where="solver", value=solver)


__all__ = ["ALGORITHMS", "SOLVERS", "Design", "OodinManager", "PolicyRule", "SolveResult",
           "evolutionary", "oodin", "rass", "solve"]
