"""How sure a problem's objective values are, and when two designs are a tie.

Each objective value of a combination gets a half-width H (its 95% interval is F +- H):

* ``A``: half the width of the row's interval (``A_lo``..``A_hi``: Wilson or bootstrap, see
  :mod:`workbench.taskmetrics`);
* the mean latency ``L``, and ``TP`` and ``E`` which follow from it: the interval of the mean,
  ``1.96 L_std / sqrt(L_n)``, as a share of ``L``, applied to the value (under co-execution, to the
  slowed-down value);
* a sum over tasks (``[total]``): the root of the summed squares (independent measurements);
* everything else (``S``, ``W``, ``params`` are exact; ``MF``, the latency percentiles and the
  multi-DNN system metrics carry no interval in a profile): 0.

A row without ``A_lo``/``A_hi`` or ``L_std``/``L_n`` (modelled and imported profiles) has H = 0:
its values are taken as exact, and nothing below changes how such a problem is solved. An A
measured on fewer samples than an interval needs (``A_n`` under
:data:`workbench.taskmetrics.MIN_BOOTSTRAP`) has H = infinity: it ties on A with any design whose
A lies inside that design's own interval, and with every other such design.

Two combinations **tie** on an objective when each value lies inside the other's interval
(|F_x - F_y| <= min(H_x, H_y)), and tie outright when they do so on every objective. Mere overlap
(<= H_x + H_y) would let a noisy row's wide interval pull in a precise, clearly better one, and
the tie-break would then reward the noise. The solvers use this in two places:

* CARIn's optimality scales each objective by its spread over the feasible space; an objective
  whose spread is below its own noise would have its noise amplified into the ranking (two
  schemes of one model, 2e-5 apart in accuracy, decided the design). The scale is therefore at
  least the objective's mean half-width (:func:`noise_floor`): differences inside the noise move
  the ranking no more than they should, and the next objective decides.
* A design that ties outright with others is chosen among them by what is exact: the lower
  workload W, then the lower memory MF (CARIn's own tie-break), and the result says so.
"""

from __future__ import annotations

import numpy as np


def noise_floor(H: np.ndarray) -> np.ndarray:
    """Per objective, the least scale an objective may have: its mean finite half-width over
    the rows (0 where no row has an interval). Infinite half-widths (an A on too few samples
    for an interval) are left out of the mean: one such row must not flatten the objective for
    all. Where every row's is infinite, the floor is infinite: no difference in that objective
    is known, so it does not rank (:func:`workbench.moo.optimality.optimality` drops it)."""
    H = np.nan_to_num(np.asarray(H, dtype=float), nan=0.0, posinf=np.inf)
    if H.size == 0:
        return np.zeros(H.shape[1] if H.ndim == 2 else 0)
    finite = np.isfinite(H)
    n = finite.sum(axis=0)
    mean = np.where(finite, H, 0.0).sum(axis=0) / np.maximum(n, 1)
    return np.where(n == 0, np.inf, mean)


def tied(F: np.ndarray, H: np.ndarray, pos: int, rows: np.ndarray | None = None) -> np.ndarray:
    """Which rows tie outright with row ``pos`` (on every objective, each value inside the
    other's interval); ``rows`` restricts the answer to those rows (a boolean mask). Row ``pos``
    ties with itself."""
    diff = np.abs(F - F[pos])
    ok = np.all(diff <= np.minimum(H, H[pos]) + 1e-12 * np.maximum(np.abs(F), 1.0), axis=1)
    return ok if rows is None else ok & rows


def break_tie(F: np.ndarray, H: np.ndarray, pos: int, *, W: np.ndarray, MF: np.ndarray,
              names: list[str], label, eligible: np.ndarray | None = None,
              best: str = "best-ranked", order: np.ndarray | None = None
              ) -> tuple[int, str | None]:
    """A solver's pick at row ``pos`` reconsidered with the values' intervals: among the
    (``eligible``) rows that tie with it outright, the one with the lowest workload W, then
    memory MF, then the solver's own order; and a sentence saying what decided (None when
    nothing tied). ``label(row)`` names a row for people. The solver's order is ``order``
    (ascending: better; then the row index) or, without it, the rows' own (best first)."""
    group = np.flatnonzero(tied(F, H, pos, eligible))
    if len(group) < 2:
        return pos, None
    Wg, MFg = np.nan_to_num(W[group], nan=np.inf), np.nan_to_num(MF[group], nan=np.inf)
    own = (group,) if order is None else (group, order[group])
    k = int(np.lexsort(own + (MFg, Wg))[0])
    pick = int(group[k])
    n = len(group) - 1
    head = (f"ties with {n} other combination{'s' * (n != 1)} within the 95% intervals on every "
            f"objective ({', '.join(names)})")
    if pick != pos:
        by = ("lower workload W" if W[pick] < W[pos] else "lower memory MF"
              if MF[pick] < MF[pos] else "rank")
        return pick, f"{head}: chose {label(pick)} by {by} over the {best} {label(pos)}"
    others = np.arange(len(group)) != k
    if np.all(Wg[k] < Wg[others]):
        why = "which has the lowest workload W"
    elif np.all(Wg[k] <= Wg[others]) and np.all(MFg[k] < MFg[others & (Wg == Wg[k])]):
        why = "which has the lowest memory MF of those with the lowest workload W"
    else:
        why = f"the {best} (workload W and memory MF do not tell them apart)"
    return pos, f"{head}: kept {label(pos)}, {why}"


def overlapping(F: np.ndarray, H: np.ndarray, a: int, b: int) -> np.ndarray:
    """Per objective, whether rows ``a`` and ``b`` tie (each inside the other's interval)."""
    return np.abs(F[a] - F[b]) <= np.minimum(H[a], H[b])
