"""Profiler statistics on synthetic workloads with known timings."""

import time

import numpy as np
import pytest

from workbench.errors import InputError
from workbench.host.profiling import Pinned, latency_stats, time_invocations


class FakeClock:
    """A clock that advances by scripted durations: each invoke 'takes' the next one."""

    def __init__(self, durations_ms):
        self.durations = list(durations_ms)
        self.now = 0
        self.calls = 0

    def clock(self):
        return self.now

    def invoke(self):
        self.now += int(self.durations[self.calls % len(self.durations)] * 1e6)
        self.calls += 1


def test_statistics_are_exact_on_a_scripted_workload():
    # 5 warm-up runs of 100 ms are not timed; then 100 runs of 1..100 ms.
    fc = FakeClock([100] * 5 + list(range(1, 101)))
    s = time_invocations(fc.invoke, warmup=5, runs=100, clock=fc.clock)
    assert fc.calls == 105
    assert s.tolist() == [float(x) for x in range(1, 101)]
    st = latency_stats(s, batch=4)
    assert st["L"] == 50.5 and st["L_min"] == 1 and st["L_max"] == 100
    assert st["L_std"] == pytest.approx(np.sqrt((100 ** 2 - 1) / 12))
    assert st["L_p50"] == 50.5 and st["L_p90"] == pytest.approx(90.1)
    assert st["L_p99"] == pytest.approx(99.01)
    assert st["TP"] == pytest.approx(4 * 1000 / 50.5)


def test_real_busy_wait_workload_is_timed_within_tolerance():
    def busy(ms=2.0):
        end = time.perf_counter() + ms / 1000
        while time.perf_counter() < end:
            pass

    with Pinned([0]):
        s = time_invocations(busy, warmup=2, runs=30)
    st = latency_stats(s)
    assert 2.0 <= st["L_min"] and st["L_p50"] == pytest.approx(2.0, rel=0.25)


def test_bad_protocol_and_samples():
    with pytest.raises(InputError):
        time_invocations(lambda: None, warmup=1, runs=0)
    with pytest.raises(InputError):
        latency_stats(np.array([1.0, np.nan]))
    with pytest.raises(InputError):
        latency_stats(np.array([]))
