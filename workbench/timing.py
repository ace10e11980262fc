"""The one timing loop every measurement uses (profiling, memory modes, FlexNN layer times, MASA
and solver timings), so warm-up, clock and units are the same everywhere. Standard library only:
the runtime may import it."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from .errors import InputError

Clock = Callable[[], int]


def samples_ms(fn: Callable[..., Any], *args: Any, runs: int, warmup: int = 0,
               clock: Clock = time.perf_counter_ns) -> list[float]:
    """Wall milliseconds of ``runs`` calls of ``fn(*args)`` after ``warmup`` untimed ones.

    ``clock`` returns nanoseconds (a fake clock makes the loop testable without sleeping)."""
    if warmup < 0 or runs < 1:
        raise InputError("need warmup >= 0 and runs >= 1", value=(warmup, runs))
    for _ in range(warmup):
        fn(*args)
    out = []
    for _ in range(runs):
        t0 = clock()
        fn(*args)
        out.append((clock() - t0) / 1e6)
    return out


def median_ms(fn: Callable[..., Any], *args: Any, runs: int, warmup: int = 0,
              clock: Clock = time.perf_counter_ns) -> float:
    """The median of :func:`samples_ms`: robust to one preempted call on a shared machine."""
    return statistics.median(samples_ms(fn, *args, runs=runs, warmup=warmup, clock=clock))


def mean_ms(fn: Callable[..., Any], *args: Any, runs: int, warmup: int = 0,
            clock: Clock = time.perf_counter_ns) -> float:
    """Mean milliseconds per call over ``runs`` calls timed together: for calls too short
    (microseconds) to time one by one."""
    if warmup < 0 or runs < 1:
        raise InputError("need warmup >= 0 and runs >= 1", value=(warmup, runs))
    for _ in range(warmup):
        fn(*args)
    t0 = clock()
    for _ in range(runs):
        fn(*args)
    return (clock() - t0) / 1e6 / runs


class Stopwatch:
    """Elapsed milliseconds of a block: ``with Stopwatch() as sw: ...`` then ``sw.ms``; ``sw.lap()``
    reads the time so far without stopping."""

    def __init__(self, clock: Clock = time.perf_counter_ns):
        self._clock = clock
        self._t0 = 0
        self.ms = 0.0

    def __enter__(self) -> "Stopwatch":
        self._t0 = self._clock()
        return self

    def lap(self) -> float:
        return (self._clock() - self._t0) / 1e6

    def __exit__(self, *exc: object) -> None:
        self.ms = self.lap()


def probe_env(**overrides: str) -> dict[str, str]:
    """This process's environment for a child that measures itself (time or memory), with the
    C allocator at glibc's defaults: a parent's malloc tuning is left out (``MALLOC_*``,
    ``GLIBC_TUNABLES``). Dask sets ``MALLOC_TRIM_THRESHOLD_`` for its workers and it stays in
    the environment of a process that started a cluster; it fixes glibc's otherwise adaptive
    thresholds and raised a small FlexNN plan's measured peak by 0.15 MB. ``overrides`` are
    set on top."""
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("MALLOC_") or k == "GLIBC_TUNABLES")}
    env.update(overrides)
    return env


def blas_threads_env(threads: int = 1) -> dict[str, str]:
    """:func:`probe_env` with every BLAS a child may load (OpenBLAS, OpenMP, MKL) pinned to
    ``threads`` threads: a child's timings and memory are then its own work's, not a thread
    pool's."""
    n = str(threads)
    return probe_env(OPENBLAS_NUM_THREADS=n, OMP_NUM_THREADS=n, MKL_NUM_THREADS=n)
