"""Designs whose values lie inside each other's 95% intervals are ties (workbench.moo.confidence):
RASS and OODIn break them by what is exact and say so; point estimates restore the old ranking;
profiles without intervals solve exactly as before."""

import numpy as np
import pytest
from conftest import make_profile

from workbench.moo.problem import DiscreteProblem
from workbench.solvers.oodin import oodin
from workbench.solvers.rass import rass


def _row(id, A, L, W, *, half=1.0, L_std=0.5, n=100, **kw):
    return dict(id=id, model=id, A=A, A_lo=A - half, A_hi=A + half, A_n=500, L=L, L_std=L_std,
                L_n=n, TP=1000 / L, W=W, **kw)


def test_rass_calls_two_overlapping_designs_a_tie_and_breaks_it_by_workload():
    # "a" is ahead by 2e-5 points of accuracy and 0.05 ms: both far inside the intervals
    # (A +-1 on 500 samples, L +-0.1 ms on 100 runs). "b" does half the work.
    prof = make_profile([_row("a", 97.10002, 10.0, 2e9), _row("b", 97.1, 10.05, 1e9),
                         _row("c", 90.0, 30.0, 5e8)])
    exact = rass(DiscreteProblem(prof, "max A; max TP", point_estimates=True))
    assert exact.d0.configs == ("a",) and exact.d0.tie is None
    res = rass(DiscreteProblem(prof, "max A; max TP"))
    d0 = res.d0
    assert d0.configs == ("b",)
    assert "ties with 1 other combination within the 95% intervals" in d0.tie
    assert "by lower workload W" in d0.tie
    assert d0.intervals["A"] == pytest.approx(1.0)
    assert d0.intervals["TP"] == pytest.approx(1000 / 10.05 * 1.96 * 0.5 / 10 / 10.05, rel=1e-3)
    assert res.to_dict()["designs"]["d0"]["tie"] == d0.tie


def test_a_tie_on_one_objective_is_decided_by_the_next_and_said():
    # Accuracy overlaps; latency does not (10 ms vs 14 ms, +-0.1 ms).
    prof = make_profile([_row("a", 97.2, 14.0, 1e9), _row("b", 97.0, 10.0, 1e9),
                         _row("c", 80.0, 40.0, 1e9)])
    res = rass(DiscreteProblem(prof, "max A; max TP"))
    assert res.d0.configs == ("b",)
    assert "within the 95% intervals on A; decided by TP" in res.d0.tie


def test_noise_is_not_amplified_into_the_ranking():
    # One model, two schemes: A differs by 2e-5 on 500 samples (interval +-1.5). The spread of
    # A over the space is 1e-5, so scaling by it made the 2e-5 outweigh a 20% latency gain.
    prof = make_profile([_row("fp32", 97.10002, 12.0, 1e9, half=1.5, L_std=0.1),
                         _row("fp16", 97.1, 10.0, 1e9, half=1.5, L_std=0.1)])
    assert rass(DiscreteProblem(prof, "max A; max TP")).d0.configs == ("fp16",)
    # Without the intervals, each wins one objective: CARIn's optimality ties them, and the
    # input order keeps fp32 first.
    exact = rass(DiscreteProblem(prof, "max A; max TP", point_estimates=True))
    assert exact.d0.configs == ("fp32",)


def test_an_a_on_too_few_samples_for_an_interval_ties_instead_of_ranking():
    # MAE-like bootstrap metrics give no interval under 10 samples: 5 samples cannot tell
    # 97.3 from 97.1, so the solver must not rank on it; W decides, and the output says A is
    # unknown to within an interval.
    few = dict(A_lo=None, A_hi=None, A_n=5)
    prof = make_profile([{**_row("a", 97.3, 10.0, 2e9), **few},
                         {**_row("b", 97.1, 10.02, 1e9), **few}])
    assert rass(DiscreteProblem(prof, "max A; max TP", point_estimates=True)).d0.configs == ("a",)
    d0 = rass(DiscreteProblem(prof, "max A; max TP")).d0
    assert d0.configs == ("b",) and "by lower workload W" in d0.tie
    assert d0.value_text("A") == "97.1 ±?"
    # When no row's A has an interval, A's differences are unknown: latency decides, even
    # where the latencies do not tie (the outside check found A still ranking here).
    prof = make_profile([{**_row("a", 97.3, 12.0, 1e9), **few},
                         {**_row("b", 97.1, 10.0, 1e9), **few}])
    assert rass(DiscreteProblem(prof, "max A; max TP", point_estimates=True)).d0.configs == ("a",)
    assert rass(DiscreteProblem(prof, "max A; max TP")).d0.configs == ("b",)
    # A precise row is not pulled into a tie by a vague one: its own interval decides.
    prof = make_profile([{**_row("a", 99.0, 10.0, 1e9, half=0.5)},
                         {**_row("b", 97.0, 10.0, 5e8), **few}])
    assert rass(DiscreteProblem(prof, "max A; max TP")).d0.configs == ("a",)


def test_oodin_breaks_ties_the_same_way():
    prof = make_profile([_row("a", 97.10002, 10.0, 2e9), _row("b", 97.1, 10.05, 1e9)])
    assert oodin(DiscreteProblem(prof, "max A; max TP", point_estimates=True)).d0.configs == ("a",)
    res = oodin(DiscreteProblem(prof, "max A; max TP"))
    assert res.d0.configs == ("b",) and "lower workload W" in res.d0.tie


def test_profiles_without_intervals_solve_as_before(hand_profile):
    p = DiscreteProblem(hand_profile, "max A; max TP; max L <= 30ms")
    assert not p.noisy and np.all(p.noise_flat(np.arange(p.size)) == 0)
    res = rass(p)
    assert all(d.tie is None and not d.intervals for d in res.designs.values())
    assert "intervals" not in res.to_dict()["designs"]["d0"]


def test_multi_dnn_values_carry_their_tasks_intervals():
    rows = [dict(_row("a1", 90, 10, 1e9, task="x", half=3.0), E=10.0),
            dict(_row("b1", 80, 20, 1e9, task="y", half=4.0, processor="GPU"), E=20.0)]
    p = DiscreteProblem(make_profile(rows), "max A; min E[total]", tasks=["x", "y"])
    assert p.objective_names == ["A[x]", "A[y]", "E[total]"]
    H = p.noise_flat(np.array([0]))[0]
    assert H[:2] == pytest.approx([3.0, 4.0])
    # E follows L: each task's share of the mean latency's interval, added in quadrature.
    vals, _ = p._per_task(p.unravel(np.array([0])), np.array([0]), {"E"})
    rel = [1.96 * 0.5 / 10 / 10, 1.96 * 0.5 / 10 / 20]
    want = np.hypot(vals[0]["E"][0] * rel[0], vals[1]["E"][0] * rel[1])
    assert H[2] == pytest.approx(want, rel=1e-3) and H[2] > 0


def test_solve_prints_intervals_ties_and_noisy_rows(tmp_path, capsys):
    from workbench.cli import main
    from workbench.profiles.store import save_profile

    prof = make_profile([_row("a", 97.10002, 10.0, 2e9), _row("b", 97.1, 10.05, 1e9),
                         _row("c", 90.0, 30.0, 5e8, L_std=9.0)])
    save_profile(prof, tmp_path / "p.json")
    assert main(["solve", "--profile", str(tmp_path / "p.json"), "--slo", "max A; max TP"]) == 0
    out = capsys.readouterr().out
    assert "97.1 ±1" in out and "half-width of the value's 95% interval" in out
    assert "d0: ties with 1 other combination" in out
    assert "warning: 1 row measured with a latency CV above 0.25, so its mean" in out and "c (CV 0.30)" in out
    assert main(["solve", "--profile", str(tmp_path / "p.json"), "--slo", "max A; max TP",
                 "--point-estimates", "--json"]) == 0
    import json

    d0 = json.loads(capsys.readouterr().out)["designs"]["d0"]
    assert d0["config"] == "a" and "tie" not in d0 and "intervals" not in d0


def test_a_row_measured_on_another_cpu_is_measured_again():
    from pathlib import Path

    from workbench.host.profiling import Option, Variant, _row_key

    v = Variant("t", "m", "m", "FP32", Path("x.tflite"), "abc", 1.0, 1, 1, None)
    o = Option("CPU[0]", (0,), 1, True)
    assert _row_key(v, o, 5, 100, "AMD EPYC") != _row_key(v, o, 5, 100, "Intel Xeon")
    assert _row_key(v, o, 5, 100, "AMD EPYC") == _row_key(v, o, 5, 100, "AMD EPYC")


def test_the_explorer_shows_intervals_and_ties(tmp_path, monkeypatch):
    pytest.importorskip("ipywidgets")
    pytest.importorskip("anywidget")
    from workbench.lab.explorer import export_rows
    from workbench.lab.explorer.widget import Explorer
    from workbench.profiles.store import save_profile

    prof = make_profile([_row("a", 97.10002, 10.0, 2e9), _row("b", 97.1, 10.05, 1e9),
                         _row("c", 90.0, 30.0, 5e8)])
    save_profile(prof, tmp_path / "mine.json")
    monkeypatch.chdir(tmp_path)
    ex = Explorer("mine.json", slo="max A; max TP")
    assert ex.last.design_label("d0").startswith("b ")
    assert "97.1 ±1" in ex.w_designs.value and "ties with 1 other combination" in ex.w_designs.value
    d0 = export_rows(ex.last, "designs")[0]
    assert d0["A ±95%"] == pytest.approx(1.0) and "lower workload W" in d0["tie"]


def test_slos_name_a_by_the_tasks_metric():
    from workbench.errors import InputError
    from workbench.moo.slo import SLO

    rows = [dict(id="a", model="a", A=0.5, L=10.0, W=1e9, task="depth-mae"),
            dict(id="b", model="b", A=0.2, L=20.0, W=1e9, task="depth-mae")]
    prof = make_profile(rows, tasks=["depth-mae"])
    prof.tasks[0].metric = "MAE"
    assert str(SLO.parse("min MAE; min L")) == "min MAE; min L"
    p = DiscreteProblem(prof, "min mae; min L")  # case does not matter
    assert p.objective_names == ["MAE", "L"] and not p.maximise[0]
    assert rass(DiscreteProblem(prof, "min MAE")).d0.configs == ("b",)
    assert rass(DiscreteProblem(prof, "max A")).d0.configs == ("b",)  # "max A" = best error
    assert rass(DiscreteProblem(prof, "min L; MAE <= 0.3")).d0.configs == ("b",)
    with pytest.raises(InputError) as e:
        DiscreteProblem(prof, "max mIoU; min L")
    assert "task 'depth-mae' measures A as 'MAE', not mIoU" in str(e.value)
    with pytest.raises(InputError):
        SLO.parse("max p99 mIoU")
    # `--metric accuracy` names top-1; an SLO may use that name too.
    assert str(SLO.parse("max accuracy; min L")) == "max top1; min L"


def test_a_noisy_row_cannot_pull_a_precise_better_one_into_a_tie():
    # "slow" is 2.3x slower with a wide interval (CV 1.5) that covers "fast", and does less
    # work: overlap alone would call them a tie and pick "slow" by W. A tie needs each value
    # inside the other's interval, and "slow" is far outside "fast"'s.
    prof = make_profile([_row("fast", 45.0, 2.19, 2e9, L_std=0.05),
                         _row("slow", 45.0, 5.11, 1e9, L_std=7.8)])
    res = rass(DiscreteProblem(prof, "max A; min L"))
    assert res.d0.configs == ("fast",) and "ties with" not in (res.d0.tie or "")
    assert res.d0.tie.endswith("within the 95% intervals on A; decided by L")


def test_a_missed_lower_bound_says_short_by(tmp_path, capsys):
    from workbench.cli import main
    from workbench.profiles.store import save_profile

    save_profile(make_profile([_row("a", 86.5, 10.0, 1e9)]), tmp_path / "p.json")
    assert main(["solve", "--profile", str(tmp_path / "p.json"), "--slo", "A >= 90; min L"]) == 0
    assert "breaks A >= 90 (short by 3.5)" in capsys.readouterr().out
