"""Work-conserving shares inside the runtime (``RuntimeManager(shares=...)``), on a manager's
share state with a hand-driven clock: what a lender keeps, who never lends, and the checks on
the limits. The live run on real models is in test_runtime_live."""

import threading

import pytest

from workbench.errors import InputError
from workbench.runtime.limiter import TokenBucket
from workbench.runtime.manager import RuntimeManager, _number, check_shares


class _Clock:
    t = 0.0


def _manager(limits, *, burst=0.1, mode="work-conserving"):
    """The share state of a RuntimeManager (no bundle, no threads), on a hand-driven clock."""
    m = object.__new__(RuntimeManager)
    clock = _Clock()
    m._lock, m._bucket_lock = threading.Lock(), threading.Lock()
    m._stop, m._accepting = threading.Event(), True
    m._buckets = {t: TokenBucket(s, interval=burst / s) for t, s in limits.items()}
    m.share_mode, m.share_window_s = mode, 1.0
    m._entitled, m._entitled_now = dict(limits), dict(limits)
    m._window = {t: {"busy": 0.0, "held": False, "arrived": 0} for t in limits}
    m._waiting, m._lent, m._share_t = set(), False, 0.0
    m.stats = {"limited": {"delayed": 0, "dropped": 0, "capped": 0}, "rejected": 0,
               "rejected_reasons": {}}
    m.now = lambda: clock.t
    return m, clock


class _Design:
    class spec:  # noqa: N801 - stands in for an executor's spec
        expected = {"L": 50.0}


def test_an_idle_task_lends_its_share_but_keeps_its_burst_and_takes_the_share_back():
    m, clock = _manager({"a": 0.3, "b": 0.3})
    clock.t = 0.5
    m._held("b")                       # b was held back in the first window, a was idle
    clock.t = 1.0
    m._reshare(1.0)
    a, b = m._buckets["a"], m._buckets["b"]
    assert b.share == pytest.approx(0.6) and a.share < 0.01  # a's unused share is lent to b
    # a's next request starts at once on its whole burst (0.1 s), not cut to its lent share.
    clock.t = 1.2
    assert m._admit("a", a, _Design(), [None]) == pytest.approx(100.0)
    a.charge(0.09, 1.2)
    clock.t = 1.25                     # its next one is short: a takes its share back now
    m._held("a")
    assert a.share == pytest.approx(0.3) and b.share == pytest.approx(0.3)


def test_a_task_waiting_for_tokens_never_lends_its_share():
    m, clock = _manager({"a": 0.05, "b": 0.3})
    m._waiting.add("a")                # a batch of a's waits across the window boundary
    m._held("b")
    clock.t = 1.0
    m._reshare(1.0)
    assert m._buckets["a"].share == pytest.approx(0.05) and not m._lent


def test_cooperative_shares_follow_the_request_rates_within_the_limits_total():
    m, clock = _manager({"a": 0.4, "b": 0.4}, mode="cooperative")
    m._window["a"]["arrived"], m._window["b"]["arrived"] = 30, 10
    m._held("a")
    m._held("b")
    clock.t = 1.0
    m._reshare(1.0)
    assert m._buckets["a"].share == pytest.approx(0.6) and m._buckets["b"].share == pytest.approx(0.2)


@pytest.mark.parametrize("limits, mode, match", [
    ({"a": 0.6, "b": 0.6}, "work-conserving", "add up to 1.2"),
    ({"a": 0.5}, "cooperative", "at least two limited tasks"),
])
def test_limits_that_cannot_move_are_refused(limits, mode, match):
    with pytest.raises(InputError, match=match):
        check_shares(limits, mode)
    check_shares(limits, "fixed")      # fixed limits are each task's own business


@pytest.mark.parametrize("value", ["0.3x", None, float("nan"), float("inf"), 0, -1, 1.5])
def test_a_share_or_window_that_is_not_a_finite_positive_number_is_named(value):
    with pytest.raises(InputError) as e:
        _number(value, "limits[h1]", upper=1.0)
    assert "limits[h1]" in str(e.value)


@pytest.mark.parametrize("argv, match", [
    (["--limit", "a=0.6", "--limit", "b=0.6", "--shares", "work-conserving"], "add up to 1.2"),
    (["--limit", "a=0.3", "--shares", "cooperative"], "at least two limited tasks"),
    (["--limit", "a=0.3", "--limit", "a=0.2"], "limited twice"),
])
def test_the_cli_refuses_shares_it_cannot_move_before_loading_anything(tmp_path, capsys, argv,
                                                                      match):
    from workbench.cli import main

    assert main(["run", str(tmp_path / "no-bundle-here"), *argv]) != 0
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
