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

from typing import NamedTuple

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
    m = _power_of_two(np.maximum(np.abs(utopia[use]), scale[use]))
    with np.errstate(over="ignore"):  # a point far outside the space: d = inf, opt = 0
        z = (F[:, use] / m - utopia[use] / m) / (scale[use] / m) * w[use]
        d = np.sqrt((z ** 2).sum(axis=1))
    with np.errstate(divide="ignore"):
        return np.where(d > 0, d_max / np.where(d > 0, d, 1.0), np.inf)


def optimality_text(value: float | None, spec: str = ".3g", *, infinity: str = "∞",
                    tied: bool = False) -> str:
    """An optimality for people: formatted with ``spec``, ``-`` when missing, and the utopia
    point's infinite value spelt out (a design best in every objective that varies among the
    feasible ones has distance 0, so ``d_max / d`` has no finite value). ``infinity="inf"``
    for text that must stay ASCII (a terminal's encoding is not known). ``tied``: the design
    ties with others within the values' 95% intervals, so "best" holds for the point values
    only."""
    if value is None or value != value:
        return "-"
    if np.isinf(value):
        return (f"{infinity} (best on the values alone; tied within their intervals)" if tied
                else f"{infinity} (best in every objective)")
    return format(value, spec)


def feasible_mask(G: np.ndarray) -> np.ndarray:
    """Rows whose every constraint value is <= 0 (pymoo's convention); NaN counts as violated."""
    G = np.asarray(G, dtype=float)
    if G.ndim == 1:
        G = G[:, None]
    if G.shape[1] == 0:
        return np.ones(G.shape[0], dtype=bool)
    return np.all(np.nan_to_num(G, nan=np.inf) <= 0, axis=1)


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
    F = np.asarray(F, dtype=float)
    if F.ndim != 2:
        raise InputError(f"F must be 2-D (configs x objectives), got shape {F.shape}")
    n, k = F.shape
    maximise = np.asarray(maximise, dtype=bool)
    w = np.ones(k) if weights is None else np.asarray(weights, dtype=float)
    if maximise.shape != (k,) or w.shape != (k,):
        raise InputError(f"maximise and weights need {k} entries, got {maximise.shape}, {w.shape}")
    mask = np.ones(n, dtype=bool) if feasible is None else np.asarray(feasible, dtype=bool)
    idx = np.flatnonzero(mask)
    Fx = F[idx]
    if np.isnan(Fx).any():
        bad = idx[np.isnan(Fx).any(axis=1)][0]
        raise InputError(f"objective values missing (NaN) for feasible row {bad}")
    if idx.size == 0:
        return OptimalityResult(idx, np.empty(0), np.full(k, np.nan), np.zeros(k), float("nan"), w)
    hi, lo = Fx.max(axis=0), Fx.min(axis=0)
    up = np.where(maximise, hi, lo)
    m = _power_of_two(np.maximum(np.abs(hi), np.abs(lo)))
    s = (Fx / m).std(axis=0) * m  # std <= max |f|: finite whenever F is
    if floor is not None:
        f = np.asarray(floor, dtype=float)
        # An infinite floor: the objective is known only to within unbounded intervals (too
        # few samples), so none of its differences is known: it does not rank (spread 0).
        s = np.where(np.isinf(f), 0.0, np.where(s > 0, np.maximum(s, f), s))
    use = s > 0
    m = _power_of_two(np.maximum(np.abs(up), s))[use]  # as _ratio scales
    d_max = float(np.sqrt((((hi[use] / m - lo[use] / m) / (s[use] / m) * w[use]) ** 2).sum()))
    opt = _ratio(Fx, up, s, w, d_max)
    # lexsort is stable, so full ties keep the input order; the last key is the primary one.
    keys = [np.asarray(t, dtype=float)[idx] for t in reversed(tie_break)]
    order = np.lexsort(tuple(keys) + (-opt,))
    return OptimalityResult(idx[order], opt[order], up, s, d_max, w)
