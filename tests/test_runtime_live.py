"""The runtime running real LiteRT models from the quick zoo: correct outputs, multi-DNN,
batching, switch storms without lost requests, fault fallback, a real CPU stress, OODIn's
re-solving policy and the CLI."""

import json

import numpy as np
import pytest
from conftest import H1_SLO

pytest.importorskip("ai_edge_litert")

from workbench.bundling import make_bundle  # noqa: E402
from workbench.cli import main  # noqa: E402
from workbench.host import datasets as ds  # noqa: E402
from workbench.lab.experiments.runtime import OodinPolicy  # noqa: E402
from workbench.moo.problem import DiscreteProblem  # noqa: E402
from workbench.runtime import Event, Rejected, RuntimeManager, load_bundle  # noqa: E402
from workbench.runtime.bundle import cores_of  # noqa: E402
from workbench.runtime.run import run  # noqa: E402
from workbench.solvers import rass  # noqa: E402

SLO = H1_SLO


def _cores(b, role):
    return set().union(*(set(cores_of(b.configs[c].processor)) for c in b.designs[role].configs))


def test_outputs_equal_the_model_run_directly(h1_bundle, quick_zoo):
    from workbench.host.quantise import predict

    path, res = h1_bundle
    b = load_bundle(path)
    d = ds.load("h1", quick=True, root=quick_zoo[1])
    x = d.x_test[:6]
    with RuntimeManager(b, preload="none") as rm:
        got = np.concatenate([rm.submit("h1", x[i:i + 1]).result(timeout=10) for i in range(6)])
        assert rm.current.name == "d0"
    want = predict(b.path_of(b.designs["d0"].configs[0]), x, batch=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_unknown_task_and_stopped_runtime_are_rejected_not_lost(h1_bundle):
    b = load_bundle(h1_bundle[0])
    rm = RuntimeManager(b, preload="none").start()
    with pytest.raises(Rejected, match="unknown task"):
        rm.submit("nope").result(timeout=5)
    rm.stop()
    with pytest.raises(Rejected, match="not running"):
        rm.submit("h1").result(timeout=5)
    assert rm.stats["submitted"] == rm.stats["served"] + rm.stats["rejected"]


def test_batched_configurations_batch_requests_and_answer_each(h1_bundle):
    path, _ = h1_bundle
    m = json.loads((path / "manifest.json").read_text())
    for c in m["configs"].values():
        c["batch"] = 4
    (path / "manifest.json").write_text(json.dumps(m))
    b = load_bundle(path)
    with RuntimeManager(b, preload="none", batch_wait_ms=50) as rm:
        futs = [rm.submit("h1") for _ in range(10)]
        outs = [f.result(timeout=10) for f in futs]
    assert all(o.shape[0] == 1 for o in outs)
    assert max(s[4] for s in rm.served_log) > 1


def test_a_switch_storm_loses_no_request(h1_bundle):
    path, res = h1_bundle
    b = load_bundle(path)
    events = []
    for k in range(40):  # flip every trigger and the memory flag, 25 ms apart
        t = 0.2 + 0.025 * k
        trig = res.triggers[k % len(res.triggers)]
        events.append(Event(t, "flag" if k % 2 == 0 else "unflag", (trig,)))
        if k % 5 == 0:
            events.append(Event(t, "memflag" if k % 10 == 0 else "unmemflag"))
    events.sort(key=lambda e: e.at)
    out = run(b, duration=1.6, rate=400, events=events, period_s=0.01)
    assert out.lost == 0
    assert out.stats["submitted"] == out.stats["served"] > 300
    assert out.stats["rejected"] == 0
    assert out.summary["switches"] >= 10
    assert len(set(out.summary["designs"])) >= 3


def test_a_model_that_fails_to_load_is_removed_and_the_policy_falls_back(h1_bundle):
    path, res = h1_bundle
    b = load_bundle(path)  # checksums pass now; d0's file breaks afterwards
    d0_file = b.path_of(b.designs["d0"].configs[0])
    if all(b.path_of(d.configs[0]) == d0_file for d in b.designs.values()):
        pytest.skip("every design uses d0's model file")
    d0_file.write_bytes(b"not a model")
    out = run(b, duration=0.8, rate=200, preload="none",
              events=[Event(0.3, "flag", (res.triggers[0],)), Event(0.5, "unflag",
                                                                    (res.triggers[0],))])
    faults = out.summary["faults"]
    assert faults and faults[0]["config"] == b.designs["d0"].configs[0]
    assert "d0" in faults[0]["removed"] and "d0" in b.problems
    serving = {s["to"] for s in out.timeline["switches"]}
    assert serving and all(b.path_of(b.designs[r].configs[0]) != d0_file for r in serving)
    assert out.lost == 0 and out.stats["rejected"] == 0 and out.stats["served"] > 100


def test_a_real_cpu_stress_moves_the_design_off_the_loaded_core(h1_bundle):
    path, res = h1_bundle
    b = load_bundle(path)
    core = min(_cores(b, "d0"))
    out = run(b, duration=2.5, rate=100, events=[Event(0.5, "stress", (str(core),))])
    moved = [s for s in out.timeline["switches"] if s["t"] > 0.5 and s["reason"] == "flags"]
    assert moved, out.timeline["switches"]
    assert core not in _cores(b, moved[0]["to"])
    assert out.lost == 0


def test_memory_pressure_from_a_real_process_selects_the_memory_design(h1_bundle):
    from workbench.runtime.monitor import anon_mb

    path, res = h1_bundle
    if "dm" not in res.designs:
        pytest.skip("no memory design")
    b = load_bundle(path)
    # The hog takes about 0.8 s for its 512 MB (paced, so it is not a CPU load as well).
    out = run(b, duration=2.4, rate=100, memory_used_high_mb=anon_mb() + 256,
              events=[Event(0.4, "memory", ("512",)), Event(1.6, "unmemory")])
    to = [(s["to"], s["flags"]) for s in out.timeline["switches"]]
    assert any(r == res.decide({"memory": True}) and "memory" in f for r, f in to), to
    assert to[-1][0] == "d0"  # back once the memory is freed
    assert out.lost == 0


def test_multi_dnn_bundle_runs_both_tasks_concurrently(quick_profile, quick_zoo, tmp_path):
    prof, _ = quick_profile
    pb = DiscreteProblem(prof, "max A[h3-vision]; max A[h3-audio]; max STP",
                         tasks=["h3-vision", "h3-audio"])
    make_bundle(rass(pb), pb, tmp_path / "h3", models=quick_zoo[0])
    out = run(tmp_path / "h3", duration=1.0, rate=100)
    tasks = out.to_dict()["served"]["task"]
    assert {"h3-vision", "h3-audio"} <= set(tasks) and out.lost == 0


def test_oodin_policy_re_solves_on_every_change(h1_problem, quick_zoo, tmp_path):
    res = rass(h1_problem)
    make_bundle(res, h1_problem, tmp_path / "all", models=quick_zoo[0], include="all")
    b = load_bundle(tmp_path / "all")
    pol = OodinPolicy(h1_problem)
    # Flag the processor the policy's own first choice runs on (not RASS's d0, nor oodin()'s:
    # solvers may pick different core sets on a near-tie, and a flag elsewhere rightly changes
    # nothing; CI once flagged CPU[1] while the policy ran on CPU[0,1]).
    d0_proc = h1_problem.configs_of(pol.manager.resolve(()))[0].processor
    # Only the injected flags may change the device state: a memory issue read from this busy
    # machine (MemAvailable recovers slowly after the memory-pressure test) would make OODIn
    # trade memory for the flag.
    out = run(b, duration=1.0, rate=100, policy=pol, memory_low_mb=0.0,
              events=[Event(0.3, "flag", (d0_proc,)), Event(0.6, "unflag", (d0_proc,))])
    sw = out.timeline["switches"]
    assert len(sw) >= 3 and len(pol.solve_ms) >= 3, (sw, out.timeline["events"])
    assert sw[0]["to"].startswith("oodin:")
    assert d0_proc not in {b.configs[c].processor for c in
                           next(s for s in sw if s["t"] > 0.3)["configs"]}
    assert out.lost == 0


def test_cli_bundle_check_and_run(quick_profile, quick_zoo, tmp_path, capsys):
    _, prof_path = quick_profile
    out = tmp_path / "cli"
    assert main(["bundle", "--profile", str(prof_path), "--task", "h1", "--slo", SLO,
                 "--models", str(quick_zoo[0]), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Table 10" in text and "smaller" in text
    assert main(["bundle", "--profile", str(prof_path), "--task", "h1", "--slo", SLO,
                 "--models", str(quick_zoo[0]), "-o", str(out)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["run", str(out), "--duration", "1", "--inject", "0.3:flag:CPU[0]",
                 "--timeline", str(tmp_path / "tl.json")]) == 0
    text = capsys.readouterr().out
    assert "0 lost" in text and "-> d0" in text
    # Per task: request latency percentiles and the SLO's latency bound, the switches counted.
    assert "switches: " in text and " p50 " in text and " p99 " in text
    tl = json.loads((tmp_path / "tl.json").read_text())
    assert tl["lost"] == 0 and tl["timeline"]["rows"]["t"]
    assert tl["requests"]["h1"]["n"] > 0
    # --json: one document a script reads, nothing else on stdout.
    assert main(["run", str(out), "--duration", "0.5", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["lost"] == 0 and rep["served"] == rep["requests"]["h1"]["n"] > 0
    assert rep["requests"]["h1"]["p50_ms"] <= rep["requests"]["h1"]["p99_ms"]
    assert main(["run", str(out), "--inject", "soon:stress:0"]) == 1
    assert "--inject item" in capsys.readouterr().err
    # Refused before the run starts, each naming the option.
    for bad, where in [(["--rate", "nan"], "--rate"), (["--rate", "-1"], "--rate"),
                       (["--duration", "inf"], "--duration"), (["--duration", "0"], "--duration"),
                       (["--period-ms", "0"], "--period-ms"),
                       (["--memory-low-mb", "nan"], "--memory-low-mb"),
                       (["--timeline", str(tmp_path)], "--timeline"),
                       (["--timeline", str(tmp_path / "no" / "t.json")], "--timeline")]:
        assert main(["run", str(out), *bad]) == 1, bad
        err = capsys.readouterr().err
        assert where in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.notebook
def test_runtime_notebook_runs_both_managers_without_losing_requests(quick_zoo, quick_profile,
                                                                    tmp_path):
    pytest.importorskip("papermill")
    from workbench.lab.reports import run_report

    _, prof_path = quick_profile
    rep = run_report("runtime", reports_dir=tmp_path, progress=False, quick=True,
                     parameters={"profile_path": str(prof_path), "zoo_dir": str(quick_zoo[0])})
    m = json.loads(rep.metrics.read_text())
    assert m["source"] == "measured"
    runs = {(r["policy"], r["scenario"]): r for r in m["runs"]}
    assert set(runs) == {("rass", "single"), ("oodin", "single"), ("rass", "multi")}
    for r in runs.values():
        assert r["lost"] == 0 and r["served"] == r["submitted"] > 0
    single = runs[("rass", "single")]
    stress = next(d for d in single["detections"] if d["event"].startswith("stress"))
    assert stress["switch_to"] not in (None, "d0")  # the real stress moved the design
    assert all(x.startswith("oodin:") for x in runs[("oodin", "single")]["designs_visited"])
    assert m["paper"]["oodin"]["throttling"]["detection_ms"] == [800, 1150]
    table10 = [r for r in m["storage_modelled"] if r["status"] == "ok"]
    assert len(table10) == 12 and all(r["reduction"] > 1 and r["paper_reduction"] for r in table10)


def _drive(rm, task, seconds, x=None):
    """Back-to-back requests of ``task`` (closed loop) for ``seconds``; their futures."""
    import time as _t

    futs, end = [], _t.monotonic() + seconds
    while _t.monotonic() < end:
        f = rm.submit(task, x)
        f.exception()
        futs.append(f)
    return futs


def _busy_fraction(rm, task, t0, t1):
    """The share of [t0, t1] (runtime seconds) ``task``'s served batches kept the device busy."""
    return sum(ms / 1e3 for t, k, ms, *_ in rm.served_log if k == task and t0 <= t < t1) / (t1 - t0)


def test_work_conserving_shares_lend_an_idle_tasks_share_and_take_it_back(quick_profile, quick_zoo,
                                                                          tmp_path):
    """Two tasks limited to 0.15 each: with one idle, ``fixed`` keeps the busy one at its limit;
    ``work-conserving`` lends it the idle one's share (it runs at about twice its limit), and
    the idle one takes its share back the moment it has requests again. Nothing is lost."""
    prof, _ = quick_profile
    pb = DiscreteProblem(prof, "max A[h3-vision]; max A[h3-audio]; max STP",
                         tasks=["h3-vision", "h3-audio"])
    make_bundle(rass(pb), pb, tmp_path / "h3", models=quick_zoo[0])
    b = load_bundle(tmp_path / "h3")
    limits = {"h3-vision": 0.15, "h3-audio": 0.15}
    with pytest.raises(Exception, match="shares"):
        RuntimeManager(b, limits={"h3-vision": 0.15}, shares="work-conserving")
    got = {}
    for mode in ("fixed", "work-conserving"):
        rm = RuntimeManager(b, limits=limits, shares=mode, share_window_s=0.3,
                            limit_burst_s=0.02).start()
        try:
            t0 = rm.now()
            futs = _drive(rm, "h3-vision", 2.0)
            t1 = rm.now()
            shares = [v for v in rm.timeline.rows["share[h3-vision]"] if v is not None]
            audio = _drive(rm, "h3-audio", 0.3)
            audio_share = rm._buckets["h3-audio"].share
        finally:
            stats = rm.stop()
        assert all(f.exception() is None for f in futs + audio), stats["rejected_reasons"]
        # Skip the first window (the loan starts after one): the rest of the run.
        got[mode] = (_busy_fraction(rm, "h3-vision", t0 + 0.6, t1), max(shares), audio_share)
    fixed, wc = got["fixed"], got["work-conserving"]
    assert fixed[1] == pytest.approx(0.15) and fixed[0] <= 0.15 + 0.05, got
    assert wc[1] == pytest.approx(0.30, abs=0.01), got  # its own 0.15 and the idle one's
    assert wc[0] > fixed[0] + 0.05, got
    assert wc[2] == pytest.approx(0.15), got  # the lender took its share back when held
