"""The host pipeline end to end on the quick zoo: train, quantise, measure, resume, solve."""

import json

import numpy as np
import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("ai_edge_litert")

from workbench.cli import main  # noqa: E402
from workbench.host import datasets as ds  # noqa: E402
from workbench.host import profiling, zoo  # noqa: E402
from workbench.moo.problem import DiscreteProblem  # noqa: E402
from workbench.profiles import load_profile  # noqa: E402
from workbench.solvers import rass  # noqa: E402

# Quantised variants may differ from FP32 by this much (percentage points of top-1).
TOLERANCE_POINTS = 5.0


def test_fp32_models_beat_chance_clearly(quick_zoo):
    _, _, recs = quick_zoo
    assert {r["task"] for r in recs} == {"h1", "h3-audio", "h3-vision"}
    for r in recs:
        assert r["test_metric"] > r["chance"] + 25, r["model"]


def test_quantised_variants_agree_with_fp32(quick_zoo):
    _, _, recs = quick_zoo
    for r in recs:
        by = {v["precision"]: v for v in r["variants"]}
        assert set(by) == {"FP32", "FP16", "DR8", "FX8", "FFX8"}
        fp32 = by["FP32"]
        assert fp32["test_metric"] == pytest.approx(r["test_metric"], abs=0.5)  # LiteRT = Keras
        for v in by.values():
            if v["available"]:
                assert abs(v["test_metric"] - fp32["test_metric"]) <= TOLERANCE_POINTS, v
                assert v["flops"] == fp32["flops"]
            else:
                assert v["reason"]  # unavailable variants say why
        assert by["FP16"]["size_mb"] < fp32["size_mb"] and by["FFX8"]["size_mb"] < by["FP16"]["size_mb"]


def test_training_is_reproducible_from_the_seed(tmp_path, quick_zoo):
    _, data, recs = quick_zoo
    spec = next(s for s in zoo.specs(["h3-audio"], quick=True))
    again = zoo.train(spec, quick=True, root=tmp_path, data_root=data)
    first = next(r for r in recs if r["task"] == "h3-audio")
    assert again["test_metric"] == first["test_metric"]
    d = ds.load("h3-audio", quick=True, root=data)
    a = zoo.load_model(spec, tmp_path).predict(d.x_test[:16], verbose=0)
    b = zoo.load_model(spec, quick_zoo[0]).predict(d.x_test[:16], verbose=0)
    assert np.array_equal(a, b)


def test_host_profile_is_measured_and_complete(quick_profile):
    prof, path = quick_profile
    assert prof.source == "measured" and {c.source for c in prof.configs} == {"measured"}
    assert [e.name for e in prof.engines] == ["CPU[0]", "CPU[1]", "CPU[0,1]"]
    # 3 models x 5 precisions x 3 core sets x 2 thread counts x XNNPACK on/off
    assert len(prof.configs) == 3 * 5 * 3 * 2 * 2
    for c in prof.configs:
        assert 0 < c.L_min <= c.L_p50 <= c.L_max and c.MF > 0 and c.E > 0
        assert "E modelled" in c.note or "RAPL" in c.note
    assert prof.coexecution and all(len(r.configs) == 2 for r in prof.coexecution)
    assert prof.provenance.host["cpu"] and prof.provenance.created
    assert load_profile(path) == prof  # written, validates
    assert not path.with_name("host.json.partial.jsonl").exists()


def test_host_profile_solves_single_and_multi_dnn(quick_profile):
    prof, _ = quick_profile
    res = rass(DiscreteProblem(prof, "max A; max TP; max L <= 50ms", tasks=["h1"]))
    assert res.ok and res.triggers[0].startswith("CPU[")
    multi = DiscreteProblem(prof, "min L; max A; L <= 100ms", tasks=["h3-audio", "h3-vision"])
    assert multi._coexec  # measured co-execution rows are used where present
    assert rass(multi).ok


def test_a_killed_profile_run_resumes(quick_zoo, tmp_path, monkeypatch):
    root, data, _ = quick_zoo
    out = tmp_path / "host.json"
    real = profiling.measure
    calls = {"n": 0}

    def dies_after_ten(*a, **k):
        if calls["n"] == 10:
            raise KeyboardInterrupt
        calls["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(profiling.rows, "measure", dies_after_ten)
    with pytest.raises(KeyboardInterrupt):
        profiling.profile_host(root, out, tasks=["h1"], warmup=0, runs=2, coexec_seconds=0,
                               data_root=data, progress=False, quick=True)
    partial = out.with_name("host.json.partial.jsonl")
    assert len(partial.read_text().splitlines()) == 1 + 10 and not out.exists()

    counted = {"n": 0}

    def counting(*a, **k):
        counted["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(profiling.rows, "measure", counting)
    prof = profiling.profile_host(root, out, tasks=["h1"], warmup=0, runs=2, coexec_seconds=0,
                                  data_root=data, progress=False, quick=True)
    assert counted["n"] == 5 * 12 - 10  # only what the killed run had not measured
    assert len(prof.configs) == 5 * 12 and not partial.exists()


def test_a_resumed_run_with_other_options_keeps_what_was_measured(quick_zoo, tmp_path,
                                                                   monkeypatch):
    """Rows are keyed one by one: a killed run restarted with fewer options (or more models)
    measures only the rows it lacks, not everything again."""
    root, data, _ = quick_zoo
    out = tmp_path / "host.json"
    real = profiling.measure
    cpu0 = [o for o in profiling.host_options((1,)) if o.processor == "CPU[0]"]
    assert [o.xnnpack for o in cpu0] == [True, False]
    calls: list[bool] = []

    def dies_after_five(path, option, **k):
        if len(calls) == 5:
            raise KeyboardInterrupt
        calls.append(option.xnnpack)
        return real(path, option, **k)
    monkeypatch.setattr(profiling.rows, "measure", dies_after_five)
    with pytest.raises(KeyboardInterrupt):  # variants x (xnn, no-xnn): 3 xnn rows measured
        profiling.profile_host(root, out, tasks=["h1"], warmup=0, runs=2, coexec_seconds=0,
                               data_root=data, progress=False, quick=True, options=cpu0)
    assert calls.count(True) == 3

    calls.clear()
    monkeypatch.setattr(profiling.rows, "measure", lambda path, option, **k: (
        calls.append(option.xnnpack), real(path, option, **k))[1])
    prof = profiling.profile_host(root, out, tasks=["h1"], warmup=0, runs=2, coexec_seconds=0,
                                  data_root=data, progress=False, quick=True, options=cpu0[:1])
    assert calls == [True, True]  # only the two XNNPACK rows the killed run had not reached
    assert len(prof.configs) == 5 and all(c.xnnpack for c in prof.configs)


def test_an_option_that_cannot_run_is_a_failed_row_and_costs_no_measured_row(
        quick_zoo, tmp_path, monkeypatch):
    """A graph whose custom op runs only with XNNPACK (MediaPipe's segmenters): the XNNPACK rows
    are measured and kept, the others are failed rows with the reason, and the profile says so."""
    root, data, _ = quick_zoo
    out = tmp_path / "host.json"
    real = profiling.measure

    def custom_op(path, option, **k):
        if not option.xnnpack:
            raise RuntimeError("Encountered unresolved custom op: Convolution2DTransposeBias. "
                               "Node number 244 (Convolution2DTransposeBias) failed to prepare.")
        return real(path, option, **k)

    monkeypatch.setattr(profiling.rows, "measure", custom_op)
    cpu0 = [o for o in profiling.host_options((1,)) if o.processor == "CPU[0]"]
    prof = profiling.profile_host(root, out, tasks=["h1"], warmup=0, runs=2, coexec_seconds=0,
                                  data_root=data, progress=False, quick=True, options=cpu0)
    assert len(prof.configs) == 5 and all(c.xnnpack for c in prof.configs)
    assert len(prof.failed) == 5 and not any(f.xnnpack for f in prof.failed)
    assert prof.failed[0].reason == ("the graph uses the custom op Convolution2DTransposeBias, "
                                     "which LiteRT here cannot run without XNNPACK")
    assert load_profile(out).failed == prof.failed
    assert any("could not run here" in n for n in prof.provenance.notes)


def test_a_crash_mid_run_keeps_every_measured_row(quick_zoo, tmp_path):
    """The process dies inside LiteRT (os._exit, as a segfault would) on the fourth row: the
    rows before it are kept; the next run tries the row again, and after a second death it is
    a failed row and the profile is written."""
    import subprocess
    import sys
    import textwrap

    root, data, _ = quick_zoo
    out = tmp_path / "host.json"
    script = textwrap.dedent(f"""
        import os, sys
        from workbench.host import profiling
        real, calls = profiling.measure, []
        def crashes(path, option, **k):
            calls.append(1)
            if path.name == "FP16.tflite" and not option.xnnpack:
                os._exit(139)
            return real(path, option, **k)
        profiling.rows.measure = crashes
        cpu0 = [o for o in profiling.host_options((1,)) if o.processor == "CPU[0]"]
        profiling.profile_host({str(root)!r}, {str(out)!r}, tasks=["h1"], warmup=0, runs=2,
                               coexec_seconds=0, data_root={str(data)!r}, progress=False,
                               quick=True, options=cpu0)
        print("calls", len(calls))
    """)
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=600) for _ in range(3)]
    assert [r.returncode for r in runs] == [139, 139, 0], runs[-1].stderr[-500:]
    prof = load_profile(out)
    assert len(prof.configs) == 9 and [f.precision for f in prof.failed] == ["FP16"]
    assert "died twice" in prof.failed[0].reason
    # Rows: FP32 (xnn, no-xnn), FP16 xnn measured, FP16 no-xnn crashed twice; the third run
    # measured only the six after it: no measured row was lost.
    assert runs[2].stdout.split()[-2:] == ["calls", "6"]


def test_cli_profile_and_solve(quick_zoo, tmp_path, capsys):
    root, _, _ = quick_zoo
    out = tmp_path / "cli-host.json"
    assert main(["profile", "--quick", "--zoo", str(root), "--task", "h3-audio", "--runs", "3",
                 "--coexec-seconds", "0", "-o", str(out), "--quiet"]) == 0
    assert "configurations" in capsys.readouterr().out
    assert main(["solve", "--profile", str(out), "--slo", "max A; min L", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "ok"
    assert main(["profile", "--zoo", str(tmp_path / "empty"), "-o", str(out)]) == 1
    assert "no built models" in capsys.readouterr().err


@pytest.mark.notebook
def test_host_notebook_runs_on_a_measured_profile(quick_zoo, quick_profile, tmp_path):
    pytest.importorskip("papermill")
    from workbench.lab.reports import run_report

    root, _, _ = quick_zoo
    _, prof_path = quick_profile
    run = run_report("host", reports_dir=tmp_path, progress=False,
                     parameters={"profile_path": str(prof_path), "zoo_dir": str(root)})
    m = json.loads(run.metrics.read_text())
    assert m["source"] == "measured" and m["n_configs"] == 3 * 5 * 12
    assert m["use_cases"]["h1"]["status"] == "ok"
    assert m["use_cases"]["h3"]["status"] in ("ok", "infeasible")
    assert all(z["test_metric"] > z["chance"] for z in m["zoo"])
