"""The explorer's computation and its widget, headless: SLO edits re-solve, flags pick designs,
bad input is shown rather than raised."""

import json

import numpy as np
import pytest

from workbench.errors import InputError
from workbench.lab.explorer import Session
from workbench.solvers import rass

UC1 = "max A; max TP; max L <= 41.67ms"


@pytest.fixture(scope="module")
def a71():
    return Session("a71", UC1, tasks=["uc1"])


def test_exploration_matches_rass_and_is_aligned(a71):
    e = a71.explore()
    n = len(e.index)
    assert len(e.x) == len(e.y) == len(e.labels) == len(e.feasible) == len(e.pareto) == n
    assert e.x_name == "TP" and e.y_name == "A"  # the objectives, accuracy up the y axis
    res = rass(a71.base)
    for role, d in res.designs.items():
        assert e.index[e.designs[role]] == d.index
    assert e.pareto.sum() >= 1 and not (e.pareto & ~e.feasible).any()
    assert e.feasible.sum() == res.n_feasible
    assert e.oodin is not None and e.feasible[e.oodin]


def test_tightening_the_latency_bound_moves_d0(a71):
    before = a71.explore().design_label("d0")
    e = a71.explore(bounds=[10.0], x="max L")
    assert e.slo.endswith("max L <= 10ms")
    assert e.design_label("d0") != before and e.x[e.designs["d0"]] <= 10.0
    assert (e.x[e.feasible] <= 10.0).all()


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
    monkeypatch.setattr("workbench.lab.explorer.session.MAX_POINTS", 200)
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
    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc1")
    d0 = ex.last.design_label("d0")
    assert "d0 = " + d0 in ex.w_designs.value
    ex.w_bounds[0].value = 10.0
    assert ex.last.design_label("d0") != d0
    assert "d0 = " + ex.last.design_label("d0") in ex.w_designs.value
    # Here d0 is best in every objective among the few feasible rows: its optimality has no
    # finite value, and the table says why instead of printing "inf".
    assert ex.last.result.designs["d0"].optimality == float("inf")
    assert "∞ (best in every objective)" in ex.w_designs.value and ">inf<" not in ex.w_designs.value
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
    from workbench.lab.explorer.widget import Explorer
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
    assert len(token) >= 24 and seen["JUPYTER_TOKEN"] == token  # not in argv: any user reads it
    assert not any(token in a for a in argv)
    assert "--Voila.ip=127.0.0.1" in argv and "--VoilaConfiguration.default_pool_size=0" in argv
    assert any(a.startswith("--MappingKernelManager.cull_idle_timeout=") for a in argv)
    assert main(["explore", "--profile", "nope.json"]) == 1
    assert "nope.json" in capsys.readouterr().err


def test_an_slo_error_takes_down_stale_results_and_goes_when_a_valid_slo_returns():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc1")
    good = ex.w_slo.value
    ex.w_slo.value = "max A; max TP; bogus <= 3"
    assert ex.failed and "unknown metric" in ex.w_status.value
    # Nothing solved for another SLO stays on the page under the error.
    assert ex.fig_box.layout.display == "none" and ex.w_designs.value == ""
    assert "fix the error" in ex.w_pick.value
    # The caret stays under the typo: one monospace font, spaces kept.
    assert "font-family:monospace" in ex.w_status.value and "white-space:pre" in ex.w_status.value
    ex.w_slo.value = good  # the SLO the session already holds: the error must go
    assert not ex.failed and "feasible" in ex.w_status.value and "d0 = " in ex.w_designs.value
    assert ex.fig_box.layout.display is None


def test_the_slo_box_follows_the_bounds_so_it_shows_what_is_solved():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc1")
    typed, session = ex.w_slo.value, ex.session
    ex.w_bounds[0].value = 16.0
    assert ex.w_slo.value == ex.last.slo == typed.replace("41.67ms", "16ms")
    assert ex.session is session  # the box's new text did not start another session
    # A typo, then the box's text back: the same session solves again at the moved bound.
    ex.w_slo.value = "max A; max TP; bogus <= 3"
    assert ex.failed
    ex.w_slo.value = typed.replace("41.67ms", "16ms")
    assert not ex.failed and ex.session is session and ex.w_bounds[0].value == 16.0
    # Weights are not part of the SLO language: they stay in their controls.
    ex.w_weights[0].value = 2.5
    assert ex.w_slo.value == typed.replace("41.67ms", "16ms")
    # The SLO as first typed brings its bound back (box and solve agree), weights kept.
    ex.w_slo.value = typed
    assert ex.w_bounds[0].value == 41.67 and ex.last.slo == typed == ex.w_slo.value
    assert ex.session is session and ex.w_weights[0].value == 2.5


def test_changing_the_device_keeps_a_typed_slo_and_says_when_it_cannot():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc1")
    ex.w_slo.value = "max A; min L; max L <= 30ms"
    assert ex.last.slo == "max A; min L; max L <= 30ms"
    ex.w_profile.value = "s20fe"
    assert ex.profile.device.name != "a71" and ex.last.slo == "max A; min L; max L <= 30ms"
    # The task list offers the use case's tasks, not every task of the profile.
    assert set(ex.w_tasks.options) == {"uc1"}
    ex.w_scenario.value = "uc3"
    assert set(ex.w_tasks.options) == {"uc3-vision", "uc3-audio"}
    ex.w_slo.value = "max A[uc3-vision]; min L[uc3-audio]"
    ex.w_profile.value = "host"  # its use cases have no uc3 tasks: the typed SLO cannot fit
    assert not ex.failed and "does not fit" in ex.w_status.value and ex.last.result.ok
    assert set(ex.session.base.task_names) <= {"h1", "h2", "h3-vision", "h3-audio", "h4"}


def test_a_saved_session_brings_the_same_view_back(tmp_path):
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc1")
    ex.w_bounds[0].value = 16.0
    ex.w_weights[0].value = 2.5
    ex.w_flags[ex.last.triggers[0]].value = True
    want = (ex.last.design_label("d0"), ex.last.picked, ex.last.slo)
    path = ex.save(tmp_path / "view.json")
    other = Explorer("s20fe", "uc2")
    other.w_x.value = "MF"  # a view with a constraint's shading (MF <= 90MB) on its x axis
    assert any(sh.type == "rect" for sh in other.fig.layout.shapes)
    other.load(path)
    assert (other.last.design_label("d0"), other.last.picked, other.last.slo) == want
    assert other.session_state() == ex.session_state()
    # Everything drawn comes from the loaded session: no shading, axis or trace of the old view.
    from workbench.lab.explorer.figures import explorer_figure

    fresh = explorer_figure(other.last)
    assert other.fig.layout.shapes == fresh.layout.shapes
    assert other.fig.layout.xaxis.range == fresh.layout.xaxis.range
    assert other.fig.layout.xaxis.title.text == fresh.layout.xaxis.title.text
    assert [list(t.x) for t in other.fig.data] == [list(t.x) for t in fresh.data]
    # The same state travels in a URL.
    from workbench.lab.explorer import ExplorerState

    assert ExplorerState.from_query(ex.session_state().to_query()) == ex.session_state()


def test_bad_sessions_name_the_file_and_field_and_keep_the_view(tmp_path):
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.errors import InputError
    from workbench.lab.explorer import ExplorerState, load_state
    from workbench.lab.explorer.widget import Explorer

    bad = tmp_path / "bad.json"
    bad.write_text('{"profile": "a71", "slo": "max A", "weights": [1, "heavy"]}')
    with pytest.raises(InputError) as e:
        load_state(bad)
    assert "bad.json" in str(e.value) and "weights[1]" in str(e.value)
    bad.write_text('{"profile": "a71", "slo": "max A", "colour": "red"}')
    with pytest.raises(InputError, match="colour"):
        load_state(bad)
    with pytest.raises(InputError, match="URL: bounds"):
        ExplorerState.from_query("profile=a71&slo=max+A&bounds=1,x")
    ex = Explorer("a71", "uc1")
    before = ex.last.design_label("d0")
    with pytest.raises(InputError, match="bounds"):
        ex.apply_state(ExplorerState(profile="a71", use_case="uc1", slo=ex.last.slo,
                                     bounds=[1.0, 2.0, 3.0, 4.0, 5.0]))
    with pytest.raises(InputError, match="flags"):
        ex.apply_state(ExplorerState(profile="a71", use_case="uc1", slo=ex.last.slo,
                                     flags={"TPU": True}))
    assert ex.last.design_label("d0") == before
    # A state for another device that does not fit: the explorer goes back to its own view.
    with pytest.raises(InputError, match="bounds"):
        ex.apply_state(ExplorerState(profile="s20fe", use_case="uc1", slo=ex.last.slo,
                                     bounds=[1.0, 2.0, 3.0, 4.0, 5.0]))
    assert ex.w_profile.value == "a71" and ex.last.design_label("d0") == before


def test_exports_hold_the_feasible_set_the_front_and_the_designs(tmp_path):
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    import csv as _csv

    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc1")
    feas = list(_csv.DictReader((ex.export("feasible", tmp_path / "f.csv")).splitlines()))
    front = list(_csv.DictReader(ex.export("front").splitlines()))
    designs = list(_csv.DictReader(ex.export("designs").splitlines()))
    assert len(feas) == ex.last.n_feasible and (tmp_path / "f.csv").read_text().startswith(
        "configuration,")
    assert 0 < len(front) <= len(feas) and len(front) == int(ex.last.pareto.sum())
    assert {r["configuration"] for r in front} <= {r["configuration"] for r in feas}
    assert designs[0]["role"] == "d0" and designs[0]["design"] == ex.last.design_label("d0")
    # OODIn's row is filled like RASS's: its optimality on the same scale and every objective.
    od = next(r for r in designs if r["role"] == "OODIn")
    assert od["optimality"] and all(od[k] for k in ex.last.objective_names)
    assert float(od["optimality"]) <= float(designs[0]["optimality"]) + 1e-9
    table = ex.w_designs.value
    oodin_row = table[table.index("OODIn"):].split("</tr>")[0]
    assert oodin_row.count("<td></td>") == 0 and od["A"][:4] in oodin_row
    assert set(ex.session.axis_names) <= set(feas[0])
    ex._prepare_downloads()
    assert ex.w_downloads.value.count("wb-download") == 5 and "front.csv" in ex.w_downloads.value


def test_json_exports_are_strict_json_when_a_metric_is_unbounded():
    """An infinite metric (e.g. an unbounded throughput) must not write `Infinity`, which strict
    JSON readers (browsers' JSON.parse, jq) reject; the sign survives as a string."""
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc1")
    first = int(np.flatnonzero(ex.last.feasible)[0])
    ex.last.metrics[first, 0], ex.last.metrics[first, 1] = np.inf, -np.inf

    def strict(token):
        raise AssertionError(f"non-standard JSON token {token}")

    rows = json.loads(ex.export("feasible", fmt="json"), parse_constant=strict)
    name0, name1 = ex.last.axis_names[:2]
    assert (rows[0][name0], rows[0][name1]) == ("inf", "-inf")
    with pytest.raises(InputError, match="csv or json"):
        ex.export("feasible", fmt="xlsx")


def test_the_plot_shows_the_objectives_with_units_and_draws_constraints(a71):
    pytest.importorskip("plotly")
    from workbench.lab.explorer.figures import explorer_figure

    s = a71
    e = s.explore()
    # Default axes: the SLO's objectives (A up the y axis), and the front is their front.
    assert {e.x_name, e.y_name} == set(e.objective_names) and e.y_name == "A"
    assert e.front_is_2d and e.bounds == []
    fig = explorer_figure(e)
    assert fig.data[2].name == "Pareto front" and fig.data[2].mode == "lines+markers"
    assert fig.layout.xaxis.title.text == f"{e.x_name} ({e.x_unit})" and e.x_unit
    # Accuracy's unit is what the profile says its task measures.
    assert fig.layout.yaxis.title.text == "A (% top1)"
    multi = Session("a71", "max STP; max A[uc3-vision]; max A[uc3-audio]; avg L <= 100ms",
                    tasks=["uc3-vision", "uc3-audio"]).explore()
    assert dict(zip(multi.axis_names, multi.axis_units))["A[uc3-audio]"] == "% mAP"
    # Plot the constrained latency: its bound is a line, the infeasible side shaded, the
    # front is labelled a projection and drawn without a line (it would zig-zag).
    lat = next(n for n in s.axis_names if "L" in n and n not in e.objective_names)
    e = s.explore(x=lat)
    assert e.bounds == [{"axis": "x", "op": "<=", "value": s.constraints[0].value}]
    fig = explorer_figure(e)
    lines = [sh for sh in fig.layout.shapes if sh.type == "line"]
    assert len(lines) == 1 and len(fig.layout.shapes) == 2
    assert "projected" in fig.data[2].name and fig.data[2].mode == "markers"
    # UC1's latencies on the A71 span less than two decades: a linear axis, the line at the bound.
    assert np.nanmax(e.x) / np.nanmin(e.x) < 100 and fig.layout.xaxis.type == "linear"
    assert lines[0].x0 == pytest.approx(s.constraints[0].value)
    # The axes span the points, not the shading: the infeasible side is shaded up to the axis's
    # end, and every point is inside the range (it once ran to 1e6 ms, every point in a corner).
    lo, hi = fig.layout.xaxis.range
    x = e.x[np.isfinite(e.x)]
    assert lo <= x.min() and x.max() <= hi and hi - lo <= 1.2 * (x.max() - x.min())
    rect = next(sh for sh in fig.layout.shapes if sh.type == "rect")
    assert rect.x0 == pytest.approx(s.constraints[0].value) and rect.x1 == pytest.approx(hi)
    assert lo >= 0  # latencies: the margin never runs below zero
    ylo, yhi = fig.layout.yaxis.range
    assert ylo <= np.nanmin(e.y) and np.nanmax(e.y) <= yhi
    # A bound far outside the points draws no line and does not stretch the axis.
    far = Session("a71", "max A; max TP; max L <= 100000ms", tasks=["uc1"]).explore(x=lat)
    ffig = explorer_figure(far)
    assert not [sh for sh in ffig.layout.shapes if sh.type == "line"]
    assert ffig.layout.xaxis.range[1] <= 1.2 * np.nanmax(far.x[np.isfinite(far.x)])
    # Hover: the configuration and every metric with its unit.
    tip = fig.data[1].text[0]
    assert tip.startswith(e.labels[int(np.flatnonzero(e.feasible)[0])])
    assert all(f"<br>{n}: " in tip for n in s.axis_names) and " ms" in tip
    # UC2's (BERT-L2 to MobileBERT) span more: a log axis, the line at log10 of the bound.
    uc2 = Session("a71", "max A; min S; max L <= 300ms", tasks=["uc2"]).explore(x="max L")
    assert np.nanmax(uc2.x) / np.nanmin(uc2.x) > 100
    fig2 = explorer_figure(uc2)
    assert fig2.layout.xaxis.type == "log"
    line = next(sh for sh in fig2.layout.shapes if sh.type == "line")
    # Plotly places a shape on a log axis by its data value (only the axis range is in log10):
    # the line is at 300 ms, not at 10^2.48.
    assert line.x0 == pytest.approx(300.0)
    assert fig2.layout.xaxis.range[0] <= np.log10(300.0) <= fig2.layout.xaxis.range[1]
    # Coinciding designs share one star labelled with all their roles.
    stars = fig.data[5]
    assert sorted(r for t in stars.text for r in t.split(", ")) == sorted(e.designs)
    assert len(set(zip(stars.x, stars.y))) == len(stars.x)


def test_the_nsga2_overlay_runs_in_the_background_and_can_be_cancelled():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    import time

    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc1")
    ex.nsga2_generations = 15
    ex.w_nsga2.value = True
    assert ex.nsga2_thread is not None
    ex.nsga2_thread.join(120)
    assert len(ex.fig.data[3].x) > 0 and "points on its front" in ex.w_status.value
    assert "last:" in ex.w_nsga2.description  # the label says what it really took
    # A long run: the controls stay live, and cancel stops it after its current generation.
    ex.nsga2_generations = 100_000
    ex.w_bounds[0].value = 20.0
    first = ex.nsga2_thread
    deadline = time.monotonic() + 60
    while ex.w_nsga2_bar.value < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ex.w_nsga2_bar.value >= 2 and ex.w_nsga2_box.layout.display is None
    ex.w_bounds[0].value = 25.0  # a new view supersedes the running overlay
    second = ex.nsga2_thread
    assert second is not first
    first.join(60)
    assert not first.is_alive()
    ex.cancel_nsga2()
    second.join(60)
    assert not second.is_alive() and "stopped after" in ex.nsga2_note
    assert len(ex.fig.data[3].x) == 0 and ex.w_nsga2_box.layout.display == "none"
    assert ex.last.slo.endswith("max L <= 25ms")


def test_a_link_to_the_view_reopens_it():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc1")
    ex.w_bounds[0].value = 16.0
    q = ex.view_query()
    assert f'href="?{q.replace("&", "&amp;")}"' in ex.w_link.value
    other = Explorer("s20fe", "uc2")
    other.apply_query(q)
    assert other.last.design_label("d0") == ex.last.design_label("d0")
    assert other.last.slo == ex.last.slo
    bad = Explorer("a71", "uc1")
    assert bad.apply_query("profile=a71&slo=max+A&weights=1,x") is None
    assert bad.failed and "URL: weights" in bad.w_status.value
    assert bad.apply_query("token=abc") is None and not Explorer("a71", "uc1").failed


def test_every_metric_at_once_in_parallel_coordinates():
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.explorer.widget import Explorer

    ex = Explorer("a71", "uc3")  # multi-DNN: per-task accuracy and the system metrics
    ex.w_view.value = "every metric"
    par = ex.fig_box.children[0]
    assert par is ex.fig_parallel and par.data[0].type == "parcoords"
    dims = par.data[0].dimensions
    assert [d.label.split(" (")[0] for d in dims] == ex.session.axis_names
    assert len(dims[0].values) == ex.last.n_feasible  # small space: every feasible line
    colours = list(par.data[0].line.color)
    assert sum(colours) == int(ex.last.pareto.sum())  # the front in its own colour
    ex.w_bounds[0].value = ex.w_bounds[0].value / 2  # edits redraw this view
    assert ex.fig_box.children[0] is ex.fig_parallel and ex.fig_parallel is not par
    ex.w_view.value = "two axes"
    assert ex.fig_box.children[0] is ex.fig
