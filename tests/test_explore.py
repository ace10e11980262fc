"""The explorer's computation and its widget, headless: SLO edits re-solve, flags pick designs,
bad input is shown rather than raised."""

import numpy as np
import pytest

from workbench.errors import InputError
from workbench.lab import explore
from workbench.lab.explore import Session
from workbench.solvers import rass

UC1 = "max A; max TP; max L <= 41.67ms"


@pytest.fixture(scope="module")
def a71():
    return Session("a71", UC1, tasks=["uc1"])


def test_exploration_matches_rass_and_is_aligned(a71):
    e = a71.explore()
    n = len(e.index)
    assert len(e.x) == len(e.y) == len(e.labels) == len(e.feasible) == len(e.pareto) == n
    assert e.x_name == "max L" and e.y_name == "A"
    res = rass(a71.base)
    for role, d in res.designs.items():
        assert e.index[e.designs[role]] == d.index
    assert e.pareto.sum() >= 1 and not (e.pareto & ~e.feasible).any()
    assert e.feasible.sum() == res.n_feasible
    assert e.oodin is not None and e.feasible[e.oodin]


def test_tightening_the_latency_bound_moves_d0(a71):
    before = a71.explore().design_label("d0")
    e = a71.explore(bounds=[16.0])
    assert e.slo.endswith("max L <= 16ms")
    assert e.design_label("d0") != before and "DSP" in e.design_label("d0")
    assert (e.x[e.feasible] <= 16.0).all()


def test_an_impossible_bound_is_infeasible_with_the_nearest_designs(a71):
    e = a71.explore(bounds=[0.5])
    assert not e.result.ok and e.designs == {} and not e.feasible.any()
    assert e.result.nearest and e.picked is None


def test_flags_pick_what_the_switching_policy_says(a71):
    e = a71.explore()
    for flags in ({}, {e.triggers[0]: True}, {e.triggers[0]: True, e.triggers[1]: True},
                  {"memory": True}):
        got = a71.explore(flags=flags)
        assert got.picked == e.result.decide(flags)
    assert a71.explore(flags={e.triggers[0]: True}).picked == "d1"


def test_objective_toggles_and_weights_edit_the_slo(a71):
    e = a71.explore(enabled=[True, False], weights=[2.0, 1.0])
    assert str(e.slo).startswith("max A;") and "TP" not in str(e.slo).split(";")[1]
    assert e.result.ok
    with pytest.raises(InputError, match="at least one objective"):
        a71.explore(enabled=[False, False])
    with pytest.raises(InputError, match="not an objective"):
        a71.explore(x="nonsense")


def test_huge_spaces_are_sampled_but_keep_the_designs(monkeypatch):
    monkeypatch.setattr(explore, "MAX_POINTS", 200)
    s = Session("a71", "max STP; max A[uc3-vision]; max A[uc3-audio]; avg L <= 100ms",
                tasks=["uc3-vision", "uc3-audio"])
    assert s.base.size > 200 and len(s.points) == 200
    e = s.explore()
    for role, d in e.result.designs.items():
        assert e.index[e.designs[role]] == d.index
    assert len(e.index) == len(e.x) == len(e.labels) >= 200


def test_the_widget_rewires_on_every_control(tmp_path):
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.widgets import Explorer

    ex = Explorer("a71", "uc1")
    d0 = ex.last.design_label("d0")
    assert "d0 = " + d0 in ex.w_designs.value
    ex.w_bounds[0].value = 16.0
    assert ex.last.design_label("d0") != d0 and "DSP" in ex.w_designs.value
    assert len(ex.fig.data) == 7 and len(ex.fig.data[1].x) == ex.last.feasible.sum()
    trig = ex.last.triggers[0]
    ex.w_flags[trig].value = True
    assert ex.last.picked == "d1" and "runtime runs: <b>d1</b>" in ex.w_pick.value
    ex.w_enabled[1].value = False
    assert "TP" not in ex.last.slo
    ex.w_slo.value = "max A; max TP; bogus <= 3"
    assert "unknown metric" in ex.w_status.value and "^" in ex.w_status.value
    ex.w_scenario.value = "uc3"
    assert set(ex.w_tasks.value) == {"uc3-vision", "uc3-audio"} and ex.last.result.ok
    ex.w_slo.value = "max A; min L"
    ex.w_tasks.value = ("uc3-audio",)
    assert ex.session.base.task_names == ["uc3-audio"] and ex.last.slo == "max A; min L"
    ex.w_profile.value = "host"
    assert set(ex.w_scenario.options) <= {"h1", "h2", "h3", "h4"}
    assert ex.last.result.ok and np.isfinite(ex.update_ms)


def test_a_profile_of_ones_own_models_opens_by_path(tmp_path, minimal_profile, write_json,
                                                     monkeypatch):
    """`workbench explore --profile mine.json`: a path (relative to where the user is) with
    tasks no use case knows opens with one case per task."""
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.widgets import Explorer
    from workbench.moo.usecases import scenarios_for
    from workbench.profiles import load_profile

    path = write_json(minimal_profile, "mine.json")
    assert scenarios_for(load_profile(path)) == {"cls": (("cls",), "max A; min L")}
    monkeypatch.chdir(path.parent)
    ex = Explorer("mine.json")
    assert ex.w_profile.value == "mine.json" and ex.last.result.ok
    assert ex.w_slo.value == "max A; min L"


def test_explore_command_passes_an_absolute_profile_path(tmp_path, minimal_profile, write_json,
                                                         monkeypatch, capsys):
    from workbench.cli import main

    path = write_json(minimal_profile, "mine.json")
    monkeypatch.chdir(path.parent)
    seen = {}
    monkeypatch.setattr("os.execve", lambda cmd, argv, env: seen.update(env, argv=argv))
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object())
    assert main(["explore", "--profile", "mine.json"]) == 0
    assert seen["WORKBENCH_EXPLORE_PROFILE"] == str(path.resolve())
    # Behind a token printed with the URL, kernels of closed pages culled, no spare kernel.
    token = capsys.readouterr().out.split("?token=", 1)[1].split()[0]
    argv = seen["argv"]
    assert len(token) >= 24 and f"--Voila.token={token}" in argv
    assert "--Voila.ip=127.0.0.1" in argv and "--VoilaConfiguration.default_pool_size=0" in argv
    assert any(a.startswith("--MappingKernelManager.cull_idle_timeout=") for a in argv)
    assert main(["explore", "--profile", "nope.json"]) == 1
    assert "nope.json" in capsys.readouterr().err
