"""CARIn Figs 7-8's event scripts on the host's overlapping engines (runtime.paper_events)."""

import pytest

from workbench.lab.experiments.runtime import paper_events


def _script(events):
    return [(e.at, e.kind, e.args) for e in events]


def test_fig7_overloads_the_core_of_d0s_engine_that_d1s_does_not_use_then_memory():
    # h1 on the host: d0 on CPU[0,1], d1 on CPU[0]: only core 1 loads d0's engine and not d1's.
    ev = paper_events("fig7", ["CPU[0,1]", "CPU[0]", "CPU[1]"], memory_mb=256)
    assert _script(ev) == [(2.0, "stress", ("1",)), (5.0, "memory", ("256",))]


def test_fig8_overload_memory_both_end_then_the_overload_returns():
    ev = paper_events("fig8", ["CPU[0]", "CPU[1]", "CPU[0,1]"], scale=2.0)
    assert _script(ev) == [(2.0, "stress", ("0",)), (6.0, "memory", ("512",)),
                           (10.0, "unstress", ()), (11.0, "unmemory", ()),
                           (14.0, "stress", ("0",))]


def test_when_every_core_of_d0s_engine_is_d1s_too_the_overload_stays_on_d0s():
    ev = paper_events("fig7", ["CPU[0]", "CPU[0,1]"])
    assert ev[0].args == ("0",)


def test_an_unknown_scenario_is_refused():
    with pytest.raises(ValueError, match="no paper event script"):
        paper_events("fig9", ["CPU[0]"])
