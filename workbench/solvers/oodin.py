"""OODIn (Venieris et al., SMARTCOMP 2021): the comparator CARIn improves on (SPEC section 7).

Each objective is normalised by its best value over the model space (OODIn Eq. 5: "divided by
the maximum observed accuracy and FPS in the model space"), f / f_best when maximised and
f_best / f when minimised, and the weighted sum is maximised by exhaustive search over the
(epsilon-)constrained space. ``normalise="feasible"`` takes the best over the constrained space
instead (what this package did before; the two can pick different designs). Constraints act as
epsilon-constraints (they filter the space). For multi-DNN problems OODIn knows no
co-execution: it solves each task alone and combines the answers (CARIn 7.1.1).
At run time OODIn re-solves over its look-up tables whenever resources change
(:class:`OodinManager`); that solve time is the cost CARIn's policy lookup removes.
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import InputError
from ..moo.confidence import break_tie
from ..moo.optimality import feasible_mask
from ..moo.problem import DiscreteProblem
from .result import Design, SolveResult, nearest_violations

#: How OODIn normalises each objective: by its best value over the whole model space (the
#: paper) or over the constrained (feasible) space.
NORMALISATIONS = ("model-space", "feasible")


def weighted_sum_scores(F: np.ndarray, maximise: np.ndarray, weights: np.ndarray, *,
                        best: np.ndarray | None = None) -> np.ndarray:
    """OODIn's score of every row: sum_i w_i * best-normalised f_i (higher is better);
    ``best``: each objective's normalising value (default: the best over the rows of F)."""
    if best is None:
        best = np.where(maximise, F.max(axis=0), F.min(axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        norm = np.where(maximise, F / best, best / F)
    # 0/0 (e.g. a zero-valued minimised metric that is also the best) counts as the best.
    norm = np.where(np.isnan(norm), 1.0, norm)
    norm = np.where(np.isinf(norm), 0.0, norm)
    return norm @ weights


def _check(normalise: str) -> None:
    if normalise not in NORMALISATIONS:
        raise InputError(f"normalise is one of {', '.join(NORMALISATIONS)}", where="normalise",
                         value=normalise)


def _best(F: np.ndarray, maximise: np.ndarray) -> np.ndarray:
    """Each objective's best value over the rows of F (NaN rows ignored)."""
    with np.errstate(invalid="ignore"):
        return np.where(maximise, np.nanmax(F, axis=0), np.nanmin(F, axis=0))


def oodin(problem: DiscreteProblem, *, normalise: str = "model-space") -> SolveResult:
    """Solve a problem as OODIn does (weighted sum, epsilon-constraints, exhaustive search);
    ``normalise``: see :data:`NORMALISATIONS`."""
    _check(normalise)
    t0 = time.perf_counter()
    if problem.multi:
        return _per_task(problem, t0, normalise)
    fe = problem.feasible
    if len(fe.index) == 0:
        return SolveResult("oodin", "infeasible", {}, {"total": (time.perf_counter() - t0) * 1e3},
                           problem.size, 0, nearest=nearest_violations(problem))
    space = fe.F if normalise == "feasible" else problem.evaluate_flat(np.arange(problem.size)).F
    scores = weighted_sum_scores(fe.F, problem.maximise, problem.weights,
                                 best=_best(space, problem.maximise))
    pos, tie = int(np.argmax(scores)), None
    if problem.noisy:
        pos, tie = _within_noise(problem, scores, pos)
    best = int(fe.index[pos])
    t1 = time.perf_counter()
    d0 = Design.of(problem, "d0", best, tie=tie)
    return SolveResult("oodin", "ok", {"d0": d0}, {"solve": (t1 - t0) * 1e3,
                       "total": (time.perf_counter() - t0) * 1e3}, problem.size,
                       len(fe.index), extra={"score": float(scores.max()), "normalise": normalise})


def _within_noise(problem: DiscreteProblem, scores: np.ndarray, pos: int) -> tuple[int, str | None]:
    """OODIn's pick reconsidered with the values' intervals
    (:func:`workbench.moo.confidence.break_tie`), its score order standing for the rank."""
    fe = problem.feasible
    order = np.argsort(-scores, kind="stable")  # break_tie wants the rows best first
    tot = problem.metrics(fe.index[order])
    pick, tie = break_tie(fe.F[order], problem.feasible_noise[order],
                          int(np.flatnonzero(order == pos)[0]), W=tot["W"], MF=tot["MF"],
                          names=problem.objective_names, best="best-scored",
                          label=lambda k: " + ".join(c.label() for c in
                                                     problem.configs_of(int(fe.index[order[k]]))))
    return int(order[pick]), tie


def _per_task(problem: DiscreteProblem, t0: float, normalise: str) -> SolveResult:
    picks = []
    for task in problem.task_names:
        sub = problem.variant(slo=problem.task_slo(task), tasks=[task])
        res = oodin(sub, normalise=normalise)
        if not res.ok:
            return SolveResult("oodin", "infeasible", {}, {"total": (time.perf_counter() - t0)
                               * 1e3}, problem.size, -1, extra={"failed_task": task})
        picks.append(res.design().configs[0])
    flat = problem.flat_of(picks)
    feasible = bool(feasible_mask(problem.evaluate_flat(np.array([flat])).G)[0])
    solve_ms = (time.perf_counter() - t0) * 1e3
    # Scoring in RASS's normalisation evaluates the whole space: not part of OODIn's own cost.
    d0 = Design.of(problem, "d0", flat)
    status = "ok" if feasible else "infeasible"
    return SolveResult("oodin", status, {"d0": d0} if feasible else {},
                       {"solve": solve_ms, "total": (time.perf_counter() - t0) * 1e3},
                       problem.size, -1,
                       extra={"combined": list(picks), "multi_dnn_unaware": True})


class OodinManager:
    """OODIn's runtime manager: keeps the look-up tables and re-solves on every change.

    Args:
        problem: The problem whose evaluated combinations form the look-up tables.
        index: Keep only these combinations (flat indices) in the tables (default: all).
    """

    def __init__(self, problem: DiscreteProblem, index: np.ndarray | None = None, *,
                 normalise: str = "model-space") -> None:
        ev = problem.evaluate_flat(np.arange(problem.size) if index is None else
                                   np.asarray(index, dtype=np.int64))
        self.index = ev.index
        self.problem = problem
        self.F, self.G = ev.F, ev.G
        rows = problem.unravel(ev.index)
        self.proc = np.stack([ts.proc[r] for ts, r in zip(problem.tasks, rows)], axis=1)
        self.MF = problem.metrics(ev.index)["MF"]
        self.feasible = feasible_mask(self.G)
        # The look-up tables are OODIn's model space: normalise by their best (or, "feasible",
        # by the best of what is still allowed at each re-solve).
        _check(normalise)
        self.normalise = normalise
        self._best = None if normalise == "feasible" else _best(self.F, problem.maximise)

    def resolve(self, unavailable: tuple[str, ...] = (), memory_limit_mb: float | None = None
                ) -> int | None:
        """Search the tables again for the best design that avoids the unavailable processors
        (and fits the memory limit). Returns the combination's flat index, or None."""
        ok = self.feasible.copy()
        for p in unavailable:
            if p in self.problem.processors:
                ok &= ~np.any(self.proc == self.problem.processors.index(p), axis=1)
        if memory_limit_mb is not None:
            ok &= np.nan_to_num(self.MF, nan=np.inf) <= memory_limit_mb
        if not ok.any():
            return None
        idx = np.flatnonzero(ok)
        scores = weighted_sum_scores(self.F[idx], self.problem.maximise, self.problem.weights,
                                     best=self._best)
        return int(self.index[idx[int(np.argmax(scores))]])
