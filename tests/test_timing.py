"""The one timing loop: warm-up calls are not timed, units are milliseconds, bad counts are a
user error, and the stopwatch reads laps without stopping."""

import pytest

from workbench.errors import InputError
from workbench.timing import Stopwatch, mean_ms, median_ms, samples_ms


class ScriptedClock:
    """A clock in ns that each call of ``work`` advances by the next scripted duration (ms)."""

    def __init__(self, durations_ms):
        self.durations, self.now, self.calls = list(durations_ms), 0, 0

    def __call__(self):
        return self.now

    def work(self, *args):
        self.now += int(self.durations[self.calls] * 1e6)
        self.calls += 1


def test_warmup_calls_run_but_are_not_timed():
    c = ScriptedClock([500, 500, 1, 2, 3])
    assert samples_ms(c.work, runs=3, warmup=2, clock=c) == [1.0, 2.0, 3.0]
    assert c.calls == 5


def test_arguments_reach_the_timed_call_and_median_ignores_one_outlier():
    seen = []
    c = ScriptedClock([1, 100, 2])

    def call(a, b):
        seen.append((a, b))
        c.work()

    assert median_ms(call, "x", 7, runs=3, clock=c) == 2.0
    assert seen == [("x", 7)] * 3


def test_mean_times_short_calls_together():
    c = ScriptedClock([0.001] * 1000)
    assert mean_ms(c.work, runs=1000, clock=c) == pytest.approx(0.001)


@pytest.mark.parametrize("runs, warmup", [(0, 0), (3, -1)])
def test_bad_counts_are_user_errors(runs, warmup):
    with pytest.raises(InputError, match="runs >= 1"):
        samples_ms(lambda: None, runs=runs, warmup=warmup)
    with pytest.raises(InputError, match="runs >= 1"):
        mean_ms(lambda: None, runs=runs, warmup=warmup)


def test_stopwatch_laps_and_total():
    c = ScriptedClock([4, 6])
    with Stopwatch(clock=c) as sw:
        c.work()
        lap = sw.lap()
        c.work()
    assert (lap, sw.ms) == (4.0, 10.0)


def test_a_measuring_child_gets_the_allocator_defaults_and_pinned_blas(monkeypatch):
    """A parent's malloc tuning (Dask leaves MALLOC_TRIM_THRESHOLD_ behind once it has started a
    cluster) would change what a memory probe reads; the child's environment leaves it out and
    keeps everything else."""
    from workbench.timing import blas_threads_env, probe_env

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4096")
    monkeypatch.setenv("WB_KEEP_ME", "1")
    for env in (probe_env(OMP_NUM_THREADS="1"), blas_threads_env(2)):
        assert "MALLOC_TRIM_THRESHOLD_" not in env and "GLIBC_TUNABLES" not in env
        assert env["WB_KEEP_ME"] == "1"
    assert probe_env(OMP_NUM_THREADS="1")["OMP_NUM_THREADS"] == "1"
    assert blas_threads_env(2)["OPENBLAS_NUM_THREADS"] == "2"
