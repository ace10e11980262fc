"""Multi-DNN contention model: latency of each model when M models run concurrently (SPEC 5).

Used where a profile has no measured co-execution row for a combination. Its parameters live in
the profile's ``contention`` field (modelled profiles copy them from the phone model's parameter
file, which documents their source):

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

import numpy as np

#: The parameter names the model reads from a profile's ``contention`` field.
PARAMETERS = ("same_processor_share", "cpu_oversubscription", "cross_processor")


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
        P = np.maximum(np.bitwise_count(pool_mask.astype(np.uint64)), 1).astype(float)
        over = T > P
        cpu_lat = np.where(over, L[i] * (T / P) * (1 + o * (T - P) / P), L[i])
        lat = np.where(is_cpu[i], cpu_lat, L[i] + s * wait)
        # Sharing cores without oversubscription still interferes like another processor does.
        lat = lat * (1 + c) ** (n_other + np.where(over, 0, n_shared))
        out.append(lat)
    return out
