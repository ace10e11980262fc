"""Latency under co-execution: the per-model latencies of multi-DNN combinations, from the
profile's measured co-execution rows where it has them and from the contention model otherwise
(tabulated per combination of placement groups when that pays), the parameters that model runs
with, and the multi-DNN system metrics computed from it."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ...profiles.schema import Profile
from ..contention import DEFAULTS as CONTENTION_DEFAULTS
from ..contention import PARAMETERS as CONTENTION_PARAMETERS
from ..contention import co_latency, linear_coefficients
from ..contention import fit as fit_contention
from .tasks import TaskSpace


def contention_parameters(profile: Profile, *, multi: bool, core_mask: Callable[[str], int]
                          ) -> tuple[dict[str, float], str]:
    """The contention model's parameters and where they come from: the profile's own (all of
    them), else fitted to its measured co-execution rows (a multi-DNN problem), else the
    model's defaults (under any the profile gives)."""
    params = {k: v for k, v in profile.contention.items() if k in CONTENTION_PARAMETERS}
    if len(params) == len(CONTENTION_PARAMETERS):
        return params, "profile"
    if profile.coexecution and multi:
        return (fit_contention(profile.configs, profile.coexecution,
                               base=dict(CONTENTION_DEFAULTS, **params), core_mask=core_mask),
                f"fitted to the profile's {len(profile.coexecution)} measured co-execution rows")
    return (dict(CONTENTION_DEFAULTS, **params),
            "the contention model's defaults (workbench.moo.contention)")


def measured_coexecution(profile: Profile, tasks: list[TaskSpace], shape: tuple[int, ...]
                         ) -> dict[int, np.ndarray]:
    """The profile's measured co-execution rows of these tasks: flat index -> each model's
    latency (ms)."""
    out: dict[int, np.ndarray] = {}
    pos = [{cid: i for i, cid in enumerate(ts.ids)} for ts in tasks]
    for row in profile.coexecution:
        if len(row.configs) != len(tasks):
            continue
        idx: list[int | None] = [None] * len(tasks)
        lat: list[float | None] = [None] * len(tasks)
        for cid, L in zip(row.configs, row.L):
            for k, p in enumerate(pos):
                if cid in p and idx[k] is None:
                    idx[k], lat[k] = p[cid], L
                    break
        if None not in idx:
            flat = int(np.ravel_multi_index(tuple(i for i in idx if i is not None), shape))
            out[flat] = np.array(lat, dtype=float)
    return out


def contention_table(tasks: list[TaskSpace], contention: dict[str, float]
                     ) -> tuple[tuple[int, ...], list[list[np.ndarray]]] | None:
    """The contention model's coefficients for every combination of the tasks' placement
    groups (:func:`workbench.moo.contention.linear_coefficients`); None when there are
    too many combinations of groups for a table to pay."""
    groups = [ts.placements[1] for ts in tasks]
    shape = tuple(len(g) for g in groups)
    if math.prod(shape) > (1 << 16):
        return None
    combo = np.indices(shape).reshape(len(shape), -1)
    first = [g[c] for g, c in zip(groups, combo)]
    return shape, linear_coefficients([ts.proc[r] for ts, r in zip(tasks, first)],
                                      [ts.is_cpu[r] for ts, r in zip(tasks, first)],
                                      [ts.coremask[r] for ts, r in zip(tasks, first)],
                                      [ts.threads[r] for ts, r in zip(tasks, first)],
                                      contention)


def co_run_latency(tasks: list[TaskSpace], rows: tuple[np.ndarray, ...], flat: np.ndarray,
                   Ls: list[np.ndarray], *, contention: dict[str, float],
                   table: tuple[tuple[int, ...], list[list[np.ndarray]]] | None,
                   measured: dict[int, np.ndarray]) -> list[np.ndarray]:
    """Each model's latency when the combinations (``rows`` per task, ``flat`` indices) run
    together, from their solo latencies ``Ls``: measured where the profile has the row, else
    the contention model (through ``table`` when there is one)."""
    if table is None:
        LM = co_latency(Ls, [ts.proc[r] for ts, r in zip(tasks, rows)],
                        [ts.is_cpu[r] for ts, r in zip(tasks, rows)],
                        [ts.coremask[r] for ts, r in zip(tasks, rows)],
                        [ts.threads[r] for ts, r in zip(tasks, rows)], contention)
    else:
        shape, C = table
        at = np.ravel_multi_index(tuple(ts.placements[0][r] for ts, r in zip(tasks, rows)), shape)
        LM = [_combined([_weighted(C[i][j][at], Ls[j]) for j in range(len(Ls))
                         if C[i][j].any()], len(flat)) for i in range(len(Ls))]
    if measured:
        keys = np.fromiter(measured, dtype=np.int64)
        hit = np.isin(flat, keys)
        for pos in np.flatnonzero(hit):
            m = measured[int(flat[pos])]
            for k in range(len(LM)):
                LM[k][pos] = m[k]
    return LM


def _combined(parts: list[np.ndarray], n: int) -> np.ndarray:
    """The sum of a model's latency terms (zeros when none applies)."""
    out = parts[0] if parts else np.zeros(n)
    for p in parts[1:]:
        out = out + p
    return out


def _weighted(c: np.ndarray, L: np.ndarray) -> np.ndarray:
    """c * L, with a missing latency (NaN) counting only where its coefficient does: another
    model's unknown L must not make a latency unknown that does not depend on it."""
    out = c * L
    return np.where(c != 0, out, 0.0) if np.isnan(L).any() else out



#: A statistic of each combination's values over its models (N: models x combinations).
_OVER_MODELS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "avg": lambda N: N.mean(0), "max": lambda N: N.max(0), "min": lambda N: N.min(0)}

def _ntt(N: np.ndarray, stat: str) -> np.ndarray:
    return _OVER_MODELS[stat](N)


def _stp(N: np.ndarray, stat: str) -> np.ndarray:
    return (1.0 / N).sum(0)


def _fairness(N: np.ndarray, stat: str) -> np.ndarray:
    NP = 1.0 / N
    return NP.min(0) / NP.max(0)  # F = min_{i,j} NP_i / NP_j


#: How each system metric of the metric table is computed from the models' normalised turnaround
#: times N (co-run over solo latency; models x combinations), for a statistic: NTT itself, system
#: throughput STP (the sum of normalised progress 1/N) and fairness F (min over max progress).
SYSTEM_VALUES: dict[str, Callable[[np.ndarray, str], np.ndarray]] = {
    "NTT": _ntt, "STP": _stp, "F": _fairness}
