"""The Pareto front of a problem's feasible space and pymoo's indicators against it.

Every function takes a :class:`~workbench.moo.problem.DiscreteProblem` (or anything with its
``feasible``, ``maximise`` and ``evaluate_flat``: :class:`FrontProblem`) and flat combination
indices; non-dominated sorting,
hypervolume and IGD are pymoo's own.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

#: Hypervolume is exponential in the number of objectives: beyond this, only IGD is reported.
MAX_HV_OBJECTIVES = 4


class FrontProblem(Protocol):
    """What these functions read of a problem (``DiscreteProblem`` has it; naming the protocol
    instead of the class keeps ``moo.problem``, which uses this module, out of a cycle)."""

    @property
    def maximise(self) -> np.ndarray: ...

    @property
    def feasible(self) -> Any: ...

    @property
    def n_obj(self) -> int: ...

    def evaluate_flat(self, idx: np.ndarray) -> Any: ...


def minimisation(problem: FrontProblem, F: np.ndarray) -> np.ndarray:
    """Objectives in pymoo's minimisation form (maximised ones negated)."""
    return np.where(problem.maximise, -F, F)


def exact_front(problem: FrontProblem, *, chunk: int = 20000) -> np.ndarray:
    """Flat indices of the exact Pareto front of the feasible space (non-dominated sorting by
    pymoo, done chunk by chunk and then on the union of the chunk fronts)."""
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    fe = problem.feasible
    if len(fe.index) == 0:
        return np.empty(0, dtype=np.int64)
    Fm = minimisation(problem, fe.F)
    nds = NonDominatedSorting()
    keep = []
    for s in range(0, len(Fm), chunk):
        part = np.arange(s, min(s + chunk, len(Fm)))
        keep.append(part[nds.do(Fm[part], only_non_dominated_front=True)])
    cand = np.concatenate(keep)
    if len(keep) > 1:
        cand = cand[nds.do(Fm[cand], only_non_dominated_front=True)]
    return fe.index[np.sort(cand)]


def front_indicators(problem: FrontProblem, front: np.ndarray, reference: np.ndarray
                     ) -> dict[str, float | None]:
    """pymoo's HV and IGD of a front against a reference (exact) front, both given by flat
    index; objectives min-max normalised over the feasible space, HV reference point 1.1."""
    from pymoo.indicators.hv import HV
    from pymoo.indicators.igd import IGD

    fe = problem.feasible
    Fm_all = minimisation(problem, fe.F)
    lo, hi = Fm_all.min(axis=0), Fm_all.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)

    def norm(idx: np.ndarray) -> np.ndarray:
        return (minimisation(problem, problem.evaluate_flat(idx).F) - lo) / span

    A, R = norm(front), norm(reference)
    out: dict[str, float | None] = {"igd": float(IGD(R)(A)) if len(A) else None}
    if problem.n_obj <= MAX_HV_OBJECTIVES and len(A):
        hv = HV(ref_point=np.full(problem.n_obj, 1.1))
        hv_ref = hv(R)
        out["hv"] = float(hv(A))
        out["hv_exact"] = float(hv_ref)
        out["hv_ratio"] = float(hv(A) / hv_ref) if hv_ref > 0 else None
    else:
        out["hv"] = out["hv_exact"] = out["hv_ratio"] = None
    return out
