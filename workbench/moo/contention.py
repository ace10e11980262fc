"""Multi-DNN contention model: latency of each model when M models run concurrently (SPEC 5).

Used where a profile has no measured co-execution row for a combination. Its parameters come from
the profile's ``contention`` field (modelled profiles copy them from the phone model's parameter
file, which documents their source); a profile without them but with measured co-execution rows
gets them fitted to those rows (:func:`fit`); otherwise :data:`DEFAULTS` apply:

* ``same_processor_share`` (s): models on the same accelerator time-share it. Each waits, per
  inference, for s x the latency of every other model there:
  ``L_i^M = L_i^S + s * sum_j L_j^S``.
* ``cpu_oversubscription`` (o): models on overlapping CPU cores share a pool of P cores (for a
  plain ``CPU`` on a big.LITTLE phone, its non-LITTLE cores, on which its latencies were taken). While
  their threads T fit (T <= P) each keeps its cores and only pays the cross-interference below;
  beyond, every thread gets P/T of a core and context switches cost o per extra thread share:
  ``L_i^M = L_i^S * (T / P) * (1 + o * (T - P) / P)``.
* ``cross_processor`` (c): any other concurrently running model (on another processor, or on
  other cores of the same CPU) slows a model by a factor (1 + c) through shared DRAM bandwidth
  and caches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import processors

if TYPE_CHECKING:
    from ..profiles.schema import CoExecution, Config

#: The parameter names the model reads from a profile's ``contention`` field.
PARAMETERS = ("same_processor_share", "cpu_oversubscription", "cross_processor")
#: An estimate for a device nothing was measured on: accelerators are time-shared, CPU threads
#: beyond the cores cost 15% per extra share, other running models cost 8% through DRAM and caches.
DEFAULTS: dict[str, float] = {"same_processor_share": 1.0, "cpu_oversubscription": 0.15,
                              "cross_processor": 0.08}


def mask_array(masks: list[int]) -> np.ndarray:
    """Core bit masks as an array: int64 while they fit, Python ints (object) on hosts with
    more than 63 cores, so a many-core profile works instead of overflowing."""
    if all(0 <= m < (1 << 63) for m in masks):
        return np.array(masks, dtype=np.int64)
    return np.array(masks, dtype=object)


def popcount(masks: np.ndarray) -> np.ndarray:
    """The number of cores in each mask."""
    if masks.dtype == object:
        return np.vectorize(lambda m: int(m).bit_count(), otypes=[np.int64])(masks)
    return np.bitwise_count(masks.astype(np.uint64)).astype(np.int64)


def co_latency(L: list[np.ndarray], proc: list[np.ndarray], is_cpu: list[np.ndarray],
               coremask: list[np.ndarray], threads: list[np.ndarray],
               params: dict[str, float]) -> list[np.ndarray]:
    """Per-model latency under co-execution, vectorised over combinations.

    Args:
        L: Single-mode mean latency of each model, one array per task (same length n).
        proc: Processor id of each model's configuration.
        is_cpu: Whether that processor is a CPU (core set).
        coremask: Bit mask of the CPU cores the configuration may use (0 for accelerators).
        threads: Threads the configuration runs (1 for accelerators).
        params: ``same_processor_share``, ``cpu_oversubscription``, ``cross_processor``.

    Returns:
        L^M per task, one array each.
    """
    s = params["same_processor_share"]
    o = params["cpu_oversubscription"]
    c = params["cross_processor"]
    M = len(L)
    out = []
    for i in range(M):
        wait = np.zeros_like(L[i])
        T = threads[i].astype(float)
        pool_mask = coremask[i].copy()
        n_shared = np.zeros(L[i].shape, dtype=np.int64)
        n_other = np.zeros(L[i].shape, dtype=np.int64)
        for j in range(M):
            if j == i:
                continue
            same_acc = (proc[j] == proc[i]) & ~is_cpu[i]
            cpu_share = is_cpu[i] & is_cpu[j] & ((coremask[i] & coremask[j]) != 0)
            wait += np.where(same_acc, L[j], 0.0)
            T += np.where(cpu_share, threads[j], 0)
            pool_mask = np.where(cpu_share, pool_mask | coremask[j], pool_mask)
            n_shared += cpu_share
            n_other += ~(same_acc | cpu_share)
        P = np.maximum(popcount(np.asarray(pool_mask)), 1).astype(float)
        over = T > P
        cpu_lat = np.where(over, L[i] * (T / P) * (1 + o * (T - P) / P), L[i])
        lat = np.where(is_cpu[i], cpu_lat, L[i] + s * wait)
        # Sharing cores without oversubscription still interferes like another processor does.
        lat = lat * (1 + c) ** (n_other + np.where(over, 0, n_shared))
        out.append(lat)
    return out


def linear_coefficients(proc: list[np.ndarray], is_cpu: list[np.ndarray],
                        coremask: list[np.ndarray], threads: list[np.ndarray],
                        params: dict[str, float]) -> list[list[np.ndarray]]:
    """:func:`co_latency` as coefficients: the model is linear in the single-mode latencies,
    ``L_i^M = sum_j C[i][j] * L_j``, and C depends only on where the models run (processor,
    cores, threads). A solver computes C once per placement combination (a handful) instead of
    the model's dozen array passes per combination (10^6 of them)."""
    M, n = len(proc), len(proc[0])
    C: list[list[np.ndarray]] = [[np.empty(0)] * M for _ in range(M)]
    for j in range(M):
        unit = [np.full(n, 1.0 if k == j else 0.0) for k in range(M)]
        for i, col in enumerate(co_latency(unit, proc, is_cpu, coremask, threads, params)):
            C[i][j] = col
    return C


def _batches(configs: list[Config], coexec: list[CoExecution],
             core_mask: Callable[[str], int]) -> list[tuple]:
    """Co-execution rows as vectorised batches (rows with the same number of models together),
    each with the rows' positions in ``coexec`` and their measured log latencies."""
    by_id = {c.id: c for c in configs}
    procs = sorted({c.processor for c in configs})
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(coexec):
        groups.setdefault(len(r.configs), []).append(i)
    batches = []
    for M, idx in groups.items():
        cs = [[by_id[i] for i in coexec[j].configs] for j in idx]
        col = lambda f, dt: [np.array([f(row[k]) for row in cs], dtype=dt) for k in range(M)]  # noqa: E731
        masks = [mask_array([core_mask(row[k].processor) for row in cs]) for k in range(M)]
        batches.append((idx, col(lambda c: c.L, float),
                        col(lambda c: procs.index(c.processor), np.int64),
                        col(lambda c: c.kind == "CPU", bool), masks,
                        col(lambda c: c.threads or 1, np.int64),
                        np.log(np.array([coexec[j].L for j in idx], dtype=float)).T))
    return batches


def _default_mask(p: str) -> int:
    return processors.parse(p).core_mask()


def predict(configs: list[Config], coexec: list[CoExecution], params: dict[str, float], *,
            core_mask: Callable[[str], int] | None = None) -> list[list[float]]:
    """The model's latency (ms) of every model of every co-execution row, in row order."""
    out: list[list[float]] = [[] for _ in coexec]
    for idx, L, P, C, K, T, _ in _batches(configs, coexec, core_mask or _default_mask):
        pred = np.stack(co_latency(L, P, C, K, T, params))  # models x rows
        for col, j in enumerate(idx):
            out[j] = [float(x) for x in pred[:, col]]
    return out


def fit(configs: list[Config], coexec: list[CoExecution], *,
        base: dict[str, float] | None = None,
        core_mask: Callable[[str], int] | None = None) -> dict[str, float]:
    """Fit the CPU parameters (``cpu_oversubscription``, ``cross_processor``) to measured
    co-execution rows: a grid search on the squared log error of every co-run latency.

    Args:
        configs: The profile's configuration rows (the co-executions name them by id).
        coexec: Measured co-execution rows.
        base: Parameters to start from (default :data:`DEFAULTS`); returned as they are when
            there is no row to fit.
        core_mask: The CPU cores a processor id stands for on the profiled device (the problem
            knows: a plain ``CPU`` is the device's cores, not this machine's); default: the id's
            own core set.
    """
    base = dict(DEFAULTS if base is None else base)
    if not coexec:
        return base
    batches = _batches(configs, coexec, core_mask or _default_mask)
    best, best_err = base, np.inf
    for o in np.linspace(0, 1.0, 21):
        for cp in np.linspace(0, 0.5, 26):
            params = dict(base, cpu_oversubscription=float(o), cross_processor=float(cp))
            err = 0.0
            for _, L, P, C, K, T, target in batches:
                pred = np.log(np.stack(co_latency(L, P, C, K, T, params)))
                err += float(((pred - target) ** 2).sum())
            if err < best_err:
                best, best_err = params, err
    return {k: round(v, 4) for k, v in best.items()}
