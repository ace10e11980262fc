"""CARIn's optimality metric (SPEC section 6, steps 1-4), vectorised over a configuration table.

The distance of a configuration to the utopia point of the feasible space, each objective scaled by
its standard deviation over that space, normalised by the largest possible distance:

    d(x)   = sqrt(sum_i w_i^2 (f_i(x) - up_i)^2 / s_i^2)
    d_max  = sqrt(sum_i w_i^2 (max f_i - min f_i)^2 / s_i^2)
    opt(x) = d_max / d(x)          (inf at the utopia point)

Objectives whose spread over the feasible space is zero carry no information and drop out.

Every objective is divided by a power of two near its magnitude before any arithmetic: that is
exact (the same bits, shifted), so results are those of the formulas above, and values as large
as 1e300 neither overflow the standard deviation or ``hi - lo`` to inf (which dropped the
objective from every distance and made a row "best in every objective") nor lose precision.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np

from ..errors import InputError


class OptimalityResult(NamedTuple):
    """Optimality of every feasible configuration.

    Attributes:
        index: Row indices (into the input table) of the feasible configurations, best first.
        optimality: Their optimality, aligned with ``index`` (descending).
        utopia: The utopia point ``up_i`` per objective.
        scale: The standard deviation ``s_i`` per objective (0 means the objective dropped out).
        d_max: The largest possible distance over the feasible space (the numerator).
        weights: The weights ``w_i`` the ranking used.
    """

    index: np.ndarray  # type: ignore[assignment]  # a field, not tuple.index
    optimality: np.ndarray
    utopia: np.ndarray
    scale: np.ndarray
    d_max: float = float("nan")
    weights: np.ndarray | None = None

    def of(self, F: np.ndarray) -> np.ndarray:
        """Optimality of any objective vectors (natural units) in this ranking's normalisation:
        how a solver's or baseline's choice compares on the same scale."""
        F = np.atleast_2d(np.asarray(F, dtype=float))
        w = np.ones(F.shape[1]) if self.weights is None else self.weights
        return _ratio(F, self.utopia, self.scale, w, self.d_max)


def _power_of_two(magnitude: np.ndarray) -> np.ndarray:
    """Per entry, a power of two in (magnitude / 2, magnitude] (1 where the magnitude is 0):
    dividing by it is exact and brings the magnitude to [1, 2)."""
    _, e = np.frexp(magnitude)
    return np.where(magnitude > 0, np.ldexp(1.0, e - 1), 1.0)


def _ratio(F: np.ndarray, utopia: np.ndarray, scale: np.ndarray, w: np.ndarray,
           d_max: float) -> np.ndarray:
    """opt(x) = d_max / d(x) over the objectives with a spread (inf at the utopia point)."""
    use = scale > 0
    if not use.any():  # every feasible configuration is the utopia point
        return np.full(len(F), np.inf)
    m = _power_of_two(np.maximum(np.abs(utopia), scale))
    # Column by column into one buffer: the same arithmetic as the formula over the (n, k)
    # array, without its temporaries (at 10^6 combinations they were a fifth of a solve).
    d = np.zeros(len(F))
    z = np.empty(len(F))
    with np.errstate(over="ignore"):  # a point far outside the space: d = inf, opt = 0
        for j in np.flatnonzero(use):
            np.divide(F[:, j], m[j], out=z)
            z -= utopia[j] / m[j]
            z /= scale[j] / m[j]
            z *= w[j]
            z *= z
            d += z
        np.sqrt(d, out=d)
    with np.errstate(divide="ignore"):
        return np.where(d > 0, d_max / np.where(d > 0, d, 1.0), np.inf)


def optimality_text(value: float | None, spec: str = ".3g", *, infinity: str = "∞",
                    tied: bool = False, unweighted: Sequence[str] = ()) -> str:
    """An optimality for people: formatted with ``spec``, ``-`` when missing, and the utopia
    point's infinite value spelt out (a design best in every objective that varies among the
    feasible ones has distance 0, so ``d_max / d`` has no finite value). ``infinity="inf"``
    for text that must stay ASCII (a terminal's encoding is not known). ``tied``: the design
    ties with others within the values' 95% intervals, so "best" holds for the point values
    only. ``unweighted``: objectives of weight 0, which the distance ignores (a design best in
    the others is "best" without being best in these)."""
    if value is None or value != value:
        return "-"
    if np.isinf(value):
        if tied:
            return f"{infinity} (best on the values alone; tied within their intervals)"
        if unweighted:
            return (f"{infinity} (best in every weighted objective; "
                    f"{', '.join(unweighted)} weighted 0)")
        return f"{infinity} (best in every objective)"
    return format(value, spec)


def feasible_mask(G: np.ndarray) -> np.ndarray:
    """Rows whose every constraint value is <= 0 (pymoo's convention); NaN counts as violated."""
    G = np.asarray(G, dtype=float)
    if G.ndim == 1:
        G = G[:, None]
    ok = np.ones(G.shape[0], dtype=bool)
    for j in range(G.shape[1]):  # column by column: NaN <= 0 is False, so NaN is violated
        ok &= G[:, j] <= 0
    return ok


def optimality(F: np.ndarray, maximise: np.ndarray | list[bool], *,
               weights: np.ndarray | list[float] | None = None,
               feasible: np.ndarray | None = None,
               tie_break: tuple[np.ndarray, ...] = (),
               floor: np.ndarray | None = None) -> OptimalityResult:
    """Rank configurations by CARIn's optimality.

    Args:
        F: Objective values, shape (n, k), in their natural units (not negated).
        maximise: Per objective, True if higher is better.
        weights: Per-objective weights w_i (default 1).
        feasible: Boolean mask of rows to rank (default: all rows).
        tie_break: Extra sort keys, each ascending, used when optimality ties (CARIn: lower
            workload, then lower memory); the final tie-break is the input order.
        floor: Per objective, the least scale s_i (its measurement noise, see
            :func:`workbench.moo.confidence.noise_floor`): a spread below the noise is not
            amplified into the ranking; infinite: the objective does not rank at all.
            Default: none.

    Returns:
        OptimalityResult with the feasible rows sorted best first.

    Raises:
        InputError: Shapes disagree or F holds NaN in a feasible row.
    """
    res = scores(F, maximise, weights=weights, feasible=feasible, floor=floor)
    keys = [np.asarray(t, dtype=float)[res.index] for t in tie_break]
    order = rank_order(res.optimality, *keys)
    return res._replace(index=res.index[order], optimality=res.optimality[order])


def scores(F: np.ndarray, maximise: np.ndarray | list[bool], *,
           weights: np.ndarray | list[float] | None = None,
           feasible: np.ndarray | None = None,
           floor: np.ndarray | None = None) -> OptimalityResult:
    """CARIn's optimality of the (``feasible``) rows in their input order, unsorted: what a
    solver that needs only the best few reads (:func:`optimality` sorts it). Arguments as
    :func:`optimality`'s."""
    F = np.asarray(F, dtype=float)
    if F.ndim != 2:
        raise InputError(f"F must be 2-D (configs x objectives), got shape {F.shape}")
    n, k = F.shape
    maximise = np.asarray(maximise, dtype=bool)
    w = np.ones(k) if weights is None else np.asarray(weights, dtype=float)
    if maximise.shape != (k,) or w.shape != (k,):
        raise InputError(f"maximise and weights need {k} entries, got {maximise.shape}, {w.shape}")
    if feasible is None:
        idx, Fx = np.arange(n), F
    else:
        idx = np.flatnonzero(np.asarray(feasible, dtype=bool))
        Fx = F[idx]
    if idx.size == 0:
        return OptimalityResult(idx, np.empty(0), np.full(k, np.nan), np.zeros(k), float("nan"), w)
    hi, lo = Fx.max(axis=0), Fx.min(axis=0)
    if np.isnan(hi).any() or np.isnan(lo).any():  # max/min propagate NaN: one check, not n*k
        bad = idx[np.isnan(Fx).any(axis=1)][0]
        raise InputError(f"objective values missing (NaN) for feasible row {bad}")
    up = np.where(maximise, hi, lo)
    mag = np.maximum(np.abs(hi), np.abs(lo))
    m = _power_of_two(mag)
    s = (Fx / m).std(axis=0) * m  # std <= max |f|: finite whenever F is
    s = np.where(s > SPREAD_NOISE * mag, s, 0.0)
    if floor is not None:
        f = np.asarray(floor, dtype=float)
        # An infinite floor: the objective is known only to within unbounded intervals (too
        # few samples), so none of its differences is known: it does not rank (spread 0).
        s = np.where(np.isinf(f), 0.0, np.where(s > 0, np.maximum(s, f), s))
    use = s > 0
    m = _power_of_two(np.maximum(np.abs(up), s))[use]  # as _ratio scales
    d_max = float(np.sqrt((((hi[use] / m - lo[use] / m) / (s[use] / m) * w[use]) ** 2).sum()))
    return OptimalityResult(idx, _ratio(Fx, up, s, w, d_max), up, s, d_max, w)


#: Bits of an optimality's mantissa that rank designs: two designs whose optimalities agree in
#: them tie (and the tie-break keys decide). Exactly equal scores computed along different paths
#: (sqrt(2) from two objectives in another order) differ in the last bits only.
TIE_BITS = 40

#: An objective whose spread (standard deviation) over the feasible rows is below this fraction
#: of its magnitude does not vary: rounding error (a system throughput of 2/1.08 computed per
#: combination), not a difference to rank designs on.
SPREAD_NOISE = 1e-12


def tie_key(opt: np.ndarray) -> np.ndarray:
    """Optimalities rounded to :data:`TIE_BITS` bits of mantissa (inf and NaN kept): equal keys
    are a tie."""
    m, e = np.frexp(np.asarray(opt, dtype=float))
    with np.errstate(invalid="ignore"):
        return np.ldexp(np.round(m * 2.0 ** TIE_BITS), e - TIE_BITS)


def rank_order(opt: np.ndarray, *tie_break: np.ndarray) -> np.ndarray:
    """The positions of ``opt`` best first: descending optimality, ties by the ``tie_break``
    keys (each ascending), then by position.

    One argsort of the optimality, then a lexsort of the tied rows alone: a three-key lexsort
    of every row cost most of a solve, and continuous optimalities rarely tie. Optimalities
    tie when their :func:`tie_key` is equal.
    """
    opt = tie_key(opt)
    order = np.argsort(-opt, kind="stable")  # NaN (no optimality) last
    if not tie_break or len(order) < 2:
        return order
    s = opt[order]
    nan = np.isnan(s)
    same = (s[1:] == s[:-1]) | (nan[1:] & nan[:-1])
    if not same.any():
        return order
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    slots = np.flatnonzero(tied)
    rows = order[slots]
    # The tied rows keep their blocks' slots (blocks are contiguous and ordered by optimality);
    # within a block, the tie-break keys and then the position decide.
    sub = np.lexsort((rows,) + tuple(k[rows] for k in reversed(tie_break)) + (-opt[rows],))
    order[slots] = rows[sub]
    return order


def best_of(opt: np.ndarray, mask: np.ndarray | None, *tie_break: np.ndarray) -> int | None:
    """The position :func:`rank_order` would put first among the rows in ``mask`` (None: no
    row), without sorting: what a solver that picks a few designs needs."""
    if mask is None:
        cand, o = None, opt
    else:
        cand = np.flatnonzero(mask)
        o = opt[cand]
    if not o.size:
        return None
    best = o.max()
    if best != best:  # a NaN (no optimality): last, as in rank_order
        o = np.where(np.isnan(o), -np.inf, o)
        best = o.max()
    if math.isfinite(best):
        # The rows whose tie key is the best one's: those near the top (a key differs from its
        # value by at most 2^-TIE_BITS of it), then, only when there are several, their keys.
        top = np.flatnonzero(o >= best - abs(best) * 2.0 ** (1 - TIE_BITS))
        if top.size > 1:
            keys = tie_key(o[top])
            top = top[keys == keys.max()]
    else:
        top = np.flatnonzero(o == best)
    if cand is not None:
        top = cand[top]
    if top.size > 1 and tie_break:
        top = top[np.lexsort((top,) + tuple(k[top] for k in reversed(tie_break)))]
    return int(top[0])
