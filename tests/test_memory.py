"""Layer graphs, FlexNN slicing/planning/execution and MASA scheduling (issue 6)."""

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorflow")

from workbench.errors import InputError  # noqa: E402
from workbench.host import zoo  # noqa: E402
from workbench.memory import flexnn as F  # noqa: E402
from workbench.memory import masa as M  # noqa: E402
from workbench.memory.graph import from_keras, read_weights, store  # noqa: E402


def _randomise_bn(model, seed=0):
    rng = np.random.default_rng(seed)
    for ly in model.layers:
        if type(ly).__name__ == "BatchNormalization":
            g, b, mu, v = ly.get_weights()
            ly.set_weights([rng.uniform(.5, 1.5, g.shape), rng.normal(0, .1, b.shape),
                            rng.normal(0, .1, mu.shape), rng.uniform(.5, 1.5, v.shape)])
    return model


@pytest.fixture(scope="module")
def models():
    return {
        "fc": zoo.fc_net((32, 32, 1), 10, convs=(8, 16, 32), fcs=(256, 128), name="fc"),
        "conv": zoo.conv_net((32, 32, 1), 10, stages=(8, 16, 32), name="conv"),
        "regnet": _randomise_bn(zoo.regnet((32, 32, 1), 10)),
        "mnv2": _randomise_bn(zoo.mobilenet_v2((32, 32, 1), 10, width=0.5)),
    }


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(1).normal(size=(1, 32, 32, 1)).astype(np.float32)


@pytest.mark.parametrize("name", ["fc", "conv", "regnet", "mnv2"])
def test_layer_graph_equals_keras(models, x, name):
    m = models[name]
    g = from_keras(m)
    ref = m(x, training=False).numpy()
    np.testing.assert_allclose(g.run(x), ref, atol=1e-5, rtol=1e-4)
    # BatchNorm and activations are folded: no standalone affine layers in these models.
    assert not [ly for ly in g.layers if ly.op == "affine"]
    t = g.table()
    assert sum(r["weight_bytes"] for r in t) == g.weight_bytes
    assert all(r["flops"] > 0 for r in t)


def test_unsupported_layer_is_named(x):
    keras = zoo._keras()
    inp = keras.Input((8,))
    out = keras.layers.LayerNormalization(name="ln")(inp)
    with pytest.raises(InputError, match="ln.*LayerNormalization"):
        from_keras(keras.Model(inp, out))


def test_weights_round_trip_per_layer(models, tmp_path):
    g = from_keras(models["fc"])
    store(g, tmp_path)
    for ly in g.layers:
        if ly.weights:
            w = read_weights(tmp_path, ly)
            for k, v in ly.weights.items():
                np.testing.assert_array_equal(w[k], v)
    (tmp_path / f"{g.layers[0].name}.bin").write_bytes(b"\0" * 12)
    with pytest.raises(InputError, match="expected"):
        read_weights(tmp_path, g.layers[0])


@pytest.mark.parametrize("name", ["fc", "conv", "regnet", "mnv2"])
@pytest.mark.parametrize("frac", [0.15, 0.4, 1.2])
def test_flexnn_plan_invariants_and_streamed_output(models, x, tmp_path, name, frac):
    g = from_keras(models[name])
    budget = max(int(g.bulk_peak_bytes() * frac), F.min_budget(g))
    p = F.plan(F.slice_graph(g, budget), budget)
    p.check()  # no two live tensors overlap in address and time; inside the budget
    assert p.buffer_bytes <= budget
    assert p.peak_live_bytes() <= budget
    for pre in (True, False):
        r = F.FlexRunner(p, tmp_path, preload=pre)
        np.testing.assert_allclose(r.run(x), g.run(x), atol=1e-5, rtol=1e-4)
        r.close()


def test_flexnn_slices_fc_weights_and_bands_im2col(models):
    g = from_keras(models["fc"])
    budget = int(g.bulk_peak_bytes() * 0.15)
    s = F.slice_graph(g, budget)
    fc = [r for r in s.summary() if r["op"] == "dense"]
    assert fc[0]["weight_slices"] > 1  # the weight-dominated FC is sliced
    assert all(r["max_weight_bytes"] + r["scratch_bytes"] < budget for r in s.summary())
    conv = from_keras(models["conv"])
    s2 = F.slice_graph(conv, int(conv.bulk_peak_bytes() * 0.3))
    # input slicing: a conv whose full im2col matrix is larger than a band runs band by band
    big = [(r, ly) for r, ly in zip(s2.summary(), conv.layers)
           if ly.op == "conv" and ly.band_bytes() > F.BAND_TARGET]
    assert big and all(r["kernel"] == "im2col" and r["band_rows"] < ly.geometry()[0]
                       for r, ly in big)


def test_flexnn_cannot_fit_names_minimum_budget(models):
    g = from_keras(models["conv"])
    mb = F.min_budget(g)
    with pytest.raises(F.CannotFit) as e:
        F.plan(F.slice_graph(g, mb // 3), mb // 3)
    assert e.value.min_budget == mb
    assert "minimum feasible budget" in str(e.value)
    F.plan(F.slice_graph(g, mb), mb).check()  # the answer really fits


def test_flexnn_adapts_without_reslicing_when_possible(models, x, tmp_path):
    g = from_keras(models["fc"])
    big = g.bulk_peak_bytes()
    f = F.FlexNN(g, tmp_path, budget=int(big * 0.3))
    y0 = f.run(x)
    a = f.adapt(int(big * 0.6))  # the old slicing still fits: plan only
    assert not a.resliced and a.total_ms >= a.plan_ms
    b = f.adapt(F.min_budget(g))  # too small for the old slices: re-slice
    assert b.resliced
    np.testing.assert_allclose(f.run(x), y0, atol=1e-6)
    assert f.plan.buffer_bytes <= b.budget
    f.close()


def test_flexnn_simulator_predicts_ordering(models, tmp_path):
    g = from_keras(models["conv"])
    lt = F.measure_layer_times(g, tmp_path, repeats=3)
    s = F.slice_graph(g, int(g.bulk_peak_bytes() * 0.3))
    p = F.plan(s, s.budget)
    with_pre = F.simulate(p, lt)
    without = F.simulate(p, lt, preload=False)
    assert 0 < with_pre <= without
    assert with_pre >= sum(F.step_seconds(s, lt)) - 1e-12  # compute is a lower bound


# --- MASA ---------------------------------------------------------------------------------------

def _toy_net(name, sizes, exec_s=0.01, load_s=0.01, act=1000):
    layers = [M.LayerCost(f"{name}{i}", "fc" if i >= len(sizes) - 2 else "conv", [i - 1], w,
                          act, 0, load_s, exec_s) for i, w in enumerate(sizes)]
    return M.NetProfile(name, layers)


@pytest.fixture
def toy():
    return {"a": _toy_net("a", [10_000, 20_000, 60_000, 30_000]),
            "b": _toy_net("b", [5_000, 5_000, 80_000, 10_000], exec_s=0.02)}


def _check_invariants(r, nets):
    done = {}
    for t in r.tasks:
        if t.start is None:
            assert t.aborted
            continue
        done[id(t)] = t
        for s in t.succ:  # dependencies respected
            if s.start is not None:
                assert s.start >= t.end - 1e-12
    # Concurrency never exceeds the worker pool.
    ev = sorted([(t.start, 1) for t in done.values()] + [(t.end, -1) for t in done.values()],
                key=lambda e: (e[0], e[1]))
    run = 0
    for _, d in ev:
        run += d
        assert run <= r.workers


@pytest.mark.parametrize("policy", M.POLICIES)
def test_scheduler_invariants_and_memory(toy, policy):
    tree = {"a": None, "b": "a"}
    jobs = M.context_jobs(tree, n=12, interval=0.05, p=0.5, seed=3)
    budget = 100_000
    r = M.simulate(toy, jobs, policy=policy, budget=budget, workers=2)
    _check_invariants(r, toy)
    assert all(j.done_at is not None for j in r.jobs)
    if policy in ("masa", "ca-wait", "ca-preempt"):
        # Budget exceeded only by tasks started under the progress rule (nothing else busy).
        for t in r.tasks:
            if t.overcommit:
                others = [u for u in r.tasks if u is not t and u.start is not None
                          and u.start < t.start < u.end]
                assert not others, "over the budget while another task was running"
    if policy == "ca-preempt":
        assert r.aborted_tasks > 0  # negative outcomes abort the downstream network
    if policy == "ca-wait":
        assert r.aborted_tasks == 0
        ran_b = {t.job.id for t in r.tasks if t.net == 1 and t.start is not None}
        assert ran_b == {j.id for j in r.jobs if j.positive[0]}


def test_aborted_networks_release_memory(toy):
    jobs = M.context_jobs({"a": None, "b": "a"}, n=5, interval=0.0, p=0.0, seed=0)
    s = M.Scheduler(toy, policy="ca-preempt", budget=10**9, workers=2)
    r = M.simulate(toy, jobs, policy="ca-preempt", budget=10**9, workers=2)
    assert r.aborted_tasks > 0
    for j in jobs:
        s.submit(M.Job(j.id, j.arrival, j.nets, j.parents, j.positive), 0.0)
    # Drive to completion by hand and check nothing stays held.
    now, running = 0.0, []
    while True:
        running += s.dispatch(now, 2 - len(running))
        if not running:
            break
        t = min(running, key=lambda t: t.start + t.duration)
        running.remove(t)
        now = t.start + t.duration
        s.complete(t, now)
    assert s.used == 0 and not s.hold


def test_masa_beats_bulk_under_a_tight_budget(toy):
    jobs = M.stochastic_jobs(["a", "b"], toy, scenario=1, intensity=1.2, n=40, seed=0)
    # Below one network's bulk memory (as 512 MB is below FaceNet's 875 MB in the paper).
    tight = int(max(p.layer_peak_bytes for p in toy.values()) * 1.2)
    assert tight < min(p.bulk_bytes for p in toy.values())
    bulk = M.simulate(toy, jobs, policy="bulk", budget=tight)
    masa = M.simulate(toy, jobs, policy="masa", budget=tight)
    assert masa.mean_response < bulk.mean_response
    assert bulk.overcommit_tasks > 0 and masa.overcommit_tasks == 0


def _first_starts(r, k):
    return [(t.job.nets[t.net], t.kind, t.req) for t in
            sorted((t for t in r.tasks if t.start is not None), key=lambda t: (t.start, t.seq))][:k]


def test_alg1_read_literally_and_the_when_idle_extension(toy):
    """Alg. 1 sorts the ready tasks of every arrived job by memory (the scheduler pulls jobs
    from the arrival queue as they come); the when-idle extension pulls the next job only when
    nothing is ready, so the first job's loads go first."""
    jobs = [M.Job(0, 0.0, ["a"]), M.Job(1, 0.0, ["b"])]
    literal = M.simulate(toy, jobs, policy="masa", budget=10**9, workers=2)
    idle = M.simulate(toy, jobs, policy="masa", budget=10**9, workers=2, admission="when-idle")
    # b's two 5 KB loads are the smallest ready tasks of all: literal MASA starts them first.
    assert _first_starts(literal, 2) == [("b", "load", 5_000), ("b", "load", 5_000)]
    # when-idle: job 1 is not pulled while job 0 has ready tasks.
    assert _first_starts(idle, 2) == [("a", "load", 10_000), ("a", "load", 20_000)]
    for r in (literal, idle):
        _check_invariants(r, toy)
        assert all(j.done_at is not None for j in r.jobs)
    with pytest.raises(InputError, match="admission"):
        M.simulate(toy, jobs, budget=10, admission="lazy")


def test_bulk_runs_one_network_at_a_time_and_deepeye_executes_one(toy):
    """MASA 5.1: Bulk loads a whole network, executes it, then the next; DeepEye overlaps
    loading with execution but executes one network at a time. More workers give neither a
    second network to run, so they cannot page themselves to a standstill with them."""
    jobs = M.periodic_jobs(["a", "b"], n=4, interval=0.0)
    for policy, kinds in (("bulk", None), ("deepeye", {"exec"})):
        r = M.simulate(toy, jobs, policy=policy, budget=10**9, workers=4)
        span = {}
        for t in r.tasks:
            if kinds is None or t.kind in kinds:
                a, b = span.get((t.job.id, t.net), (t.start, t.end))
                span[(t.job.id, t.net)] = (min(a, t.start), max(b, t.end))
        iv = sorted(span.values())
        assert all(x[1] <= y[0] + 1e-12 for x, y in zip(iv, iv[1:])), policy
        r2 = M.simulate(toy, jobs, policy=policy, budget=10**9, workers=2)
        assert r.mean_response == pytest.approx(r2.mean_response)


def test_ca_preempt_starts_upstream_networks_first(toy):
    # b (downstream of a) has the smaller loads: MASA would start them first.
    jobs = M.context_jobs({"a": None, "b": "a"}, n=1, interval=0.0, p=1.0)
    masa = M.simulate(toy, jobs, policy="masa", budget=10**9, workers=2)
    pre = M.simulate(toy, jobs, policy="ca-preempt", budget=10**9, workers=2)
    assert _first_starts(masa, 1)[0][0] == "b"
    assert [n for n, _, _ in _first_starts(pre, 2)] == ["a", "a"]
    # ...and lets the downstream network run beside it when a worker and memory are free.
    a_end = max(t.end for t in pre.tasks if t.net == 0)
    assert min(t.start for t in pre.tasks if t.net == 1) < a_end


def test_light_context_figure_varies_with_the_root_outcome(toy):
    """Fig. 11: the light tree's root (FaceNet) answers positive with probability p; only an
    intermediate network is forced positive (the heavy tree's FaceNet)."""
    from workbench.lab.experiments import masa as ma
    from workbench.lab.experiments.memory import Nets

    profiles = {"FaceNet": toy["a"], "AgeNet": toy["b"], "GenderNet": toy["b"]}
    nets = Nets({}, {}, profiles, trained=False)
    rows = ma.context(nets, ma.LIGHT, probs=(0.0, 1.0), n=10)
    ms = {(r.label_probability, r.policy): r.mean_makespan_ms for r in rows}
    assert ms[(0.0, "ca-wait")] < 0.7 * ms[(1.0, "ca-wait")]
    assert ms[(0.0, "masa")] == pytest.approx(ms[(1.0, "masa")])  # MASA runs everything


def test_bad_scheduler_input(toy):
    with pytest.raises(InputError, match="policy"):
        M.Scheduler(toy, policy="fifo", budget=1)
    with pytest.raises(InputError, match="budget"):
        M.Scheduler(toy, budget=0)
    with pytest.raises(InputError, match="unprofiled"):
        M.simulate(toy, [M.Job(0, 0.0, ["zzz"])], budget=10)
    with pytest.raises(InputError, match="intensity"):
        M.stochastic_jobs(["a"], toy, scenario=1, intensity=0, n=2)


def test_real_masa_run_matches_bulk_outputs(models, x, tmp_path):
    graphs = {"fc": from_keras(models["fc"]), "conv": from_keras(models["conv"])}
    roots = {k: tmp_path / k for k in graphs}
    profs = {k: M.profile_network(g, roots[k], repeats=2) for k, g in graphs.items()}
    jobs = [M.Job(0, 0.0, ["fc", "conv"]), M.Job(1, 0.001, ["conv"])]
    budget = max(p.layer_peak_bytes for p in profs.values()) * 2
    for policy in ("masa", "bulk", "deepeye"):
        r = M.run_real(graphs, roots, jobs, policy=policy, budget=budget, nets=profs, x=x)
        for j in r.jobs:
            for i, net in enumerate(j.nets):
                np.testing.assert_allclose(j.outputs[i], graphs[net].run(x), atol=1e-6)
        _check_invariants(r, profs)


def test_a_batched_masa_run_answers_every_image_of_the_batch(models, tmp_path):
    """MASA Fig. 12 runs for real: each layer executes on the whole batch, with the scheduler
    planning on batched estimates (activations and time x the batch, weights once)."""
    g = from_keras(models["conv"])
    root = tmp_path / "conv"
    prof = M.profile_network(g, root, repeats=1)
    xb = np.random.default_rng(2).normal(size=(3, 32, 32, 1)).astype(np.float32)
    b3 = prof.batched(3)
    assert b3.weight_bytes == prof.weight_bytes
    assert [ly.out_bytes for ly in b3.layers] == [3 * ly.out_bytes for ly in prof.layers]
    r = M.run_real({"conv": g}, {"conv": root}, [M.Job(0, 0.0, ["conv"])], policy="masa",
                   budget=b3.layer_peak_bytes * 2, nets={"conv": b3}, x=xb)
    out = r.jobs[0].outputs[0]
    assert out.shape[0] == 3
    np.testing.assert_allclose(out, g.run(xb), atol=1e-6)
    own = {(i, "conv"): xb[i:i + 1] for i in range(3)}  # each job its own image
    r = M.run_real({"conv": g}, {"conv": root}, [M.Job(i, 0.0, ["conv"]) for i in range(3)],
                   policy="masa", budget=prof.layer_peak_bytes * 2, nets={"conv": prof},
                   x={"conv": xb[:1] * 0, **own})
    for j in r.jobs:
        np.testing.assert_allclose(j.outputs[0], g.run(xb[j.id:j.id + 1]), atol=1e-6)
    wrong = prof.misestimated(0.5)
    assert wrong.weight_bytes == sum(int(ly.weight_bytes * 0.5) for ly in prof.layers)
    assert [ly.exec_s for ly in wrong.layers] == [ly.exec_s for ly in prof.layers]


# --- memory modes in the optimiser ---------------------------------------------------------------

def test_memory_mode_rows_let_dm_keep_the_accurate_model(models, tmp_path):
    from conftest import make_profile

    from workbench.memory.modes import add_memory_modes
    from workbench.moo.problem import DiscreteProblem
    from workbench.solvers import solve

    prof = make_profile([
        dict(id="big", model="fc", processor="CPU[0,1]", threads=2, A=99, L=2.0, TP=500, MF=4.0),
        dict(id="small", model="tiny", processor="CPU[0,1]", threads=2, A=90, L=1.0, TP=1000,
             MF=1.0),
        dict(id="big0", model="fc", processor="CPU[0]", threads=1, A=99, L=3.0, TP=333, MF=4.0),
    ])
    slo = "max A; max TP; avg L <= 50ms"
    before = solve(DiscreteProblem(prof, slo, tasks=["t"]), "rass")
    assert before.designs["dm"].labels[0].startswith("tiny")  # falls back to the small model
    g = from_keras(models["fc"])
    aug = add_memory_modes(prof, {"fc": g}, task="t", root=tmp_path, reps=3)
    rows = [c for c in aug.configs if c.memory_mode]
    assert {c.memory_mode for c in rows} == {"bulk", "streamed", "planned"}
    planned = [c for c in rows if c.memory_mode == "planned"]
    assert all(c.MF <= c.memory_budget_mb + 1e-9 and c.A == 99 for c in planned)
    after = solve(DiscreteProblem(aug, slo, tasks=["t"]), "rass")
    dm = after.designs["dm"]
    assert dm.objectives["A"] == 99 and "[planned@" in dm.labels[0]


@pytest.fixture(scope="module")
def memory_rows(models, tmp_path_factory):
    """Measured planned and streamed rows of the fc model (as profile dicts) and its graph."""
    from conftest import make_profile

    from workbench.memory.modes import add_memory_modes

    g = from_keras(models["fc"])
    prof = make_profile([dict(id="fc0", model="fc", processor="CPU[0]", threads=1, A=99, L=3.0,
                              MF=4.0), dict(id="other", processor="CPU[0,1]", L=1.0, A=1.0)])
    aug = add_memory_modes(prof, {"fc": g}, task="t", root=tmp_path_factory.mktemp("rows"),
                           reps=3, budgets_mb=[0.3])
    rows = [c.model_dump(mode="json", exclude_none=True) for c in aug.configs
            if c.memory_mode in ("planned", "streamed")]
    return g, rows


def _memory_bundle(memory_rows, mode, out):
    from conftest import make_profile

    from workbench.bundling import make_bundle
    from workbench.moo.problem import DiscreteProblem
    from workbench.solvers import solve

    g, rows = memory_rows
    prof = make_profile([r for r in rows if r["memory_mode"] == mode])
    prob = DiscreteProblem(prof, "max A; min MF", tasks=["t"])
    return make_bundle(solve(prob, "rass"), prob, out, models=out.parent / "no-zoo",
                       graphs={"fc": g})


@pytest.mark.parametrize("mode", ["planned", "streamed"])
def test_the_runtime_serves_a_memory_mode_bundle_without_losing_a_request(memory_rows, mode,
                                                                          tmp_path):
    from workbench.runtime import RuntimeManager, load_bundle
    from workbench.runtime.programs import Program

    g, _ = memory_rows
    m = _memory_bundle(memory_rows, mode, tmp_path / "b")
    (cfg,) = {c["memory"]["mode"] for c in m["configs"].values()}
    assert cfg == mode
    c = next(iter(m["configs"].values()))
    prog = Program.from_bytes((tmp_path / "b" / c["file"]).read_bytes())
    assert prog.budget_bytes <= c["memory"]["budget_mb"] * 1e6
    if mode == "planned":  # the per-slice weight files, each listed and checked
        assert prog.buffer_bytes <= prog.budget_bytes and len(c["memory"]["weights"]) >= 5
    b = load_bundle(tmp_path / "b")
    xs = np.random.default_rng(2).normal(size=(12, 1, 32, 32, 1)).astype(np.float32)
    with RuntimeManager(b, preload="none") as rm:
        futs = [rm.submit("t", x) for x in xs]
        ys = [f.result(timeout=60) for f in futs]
    assert rm.stats["served"] == len(xs) and rm.stats["rejected"] == 0
    for x, y in zip(xs, ys):
        np.testing.assert_allclose(y, g.run(x), atol=1e-4, rtol=1e-3)


def test_a_changed_weight_file_takes_the_memory_design_out_of_service(memory_rows, tmp_path):
    from workbench.runtime import BundleError, load_bundle

    m = _memory_bundle(memory_rows, "planned", tmp_path / "b")
    c = next(iter(m["configs"].values()))
    w = tmp_path / "b" / c["memory"]["weights"][0]
    w.write_bytes(b"\0" * w.stat().st_size)
    with pytest.raises(BundleError, match="checksum mismatch"):
        load_bundle(tmp_path / "b")  # its only design needs that file


def test_the_workbench_run_command_serves_a_planned_bundle(memory_rows, tmp_path, capsys):
    from workbench.runtime.run import main

    _memory_bundle(memory_rows, "planned", tmp_path / "b")
    assert main(["check", str(tmp_path / "b")]) == 0
    assert "[planned@0.3MB]  [ok]" in capsys.readouterr().out
    assert main(["run", str(tmp_path / "b"), "--duration", "0.5", "--rate", "20"]) == 0
    out = capsys.readouterr().out
    assert " 0 rejected, 0 lost" in out
    assert int(out.split(" served")[0].rsplit(" ", 1)[1]) > 0


def test_bundling_a_memory_row_without_a_layer_graph_names_the_configuration(memory_rows,
                                                                             tmp_path):
    from conftest import make_profile

    from workbench.bundling import make_bundle
    from workbench.moo.problem import DiscreteProblem
    from workbench.solvers import solve

    _, rows = memory_rows
    row = dict(next(r for r in rows if r["memory_mode"] == "planned"), model="nowhere-net")
    prob = DiscreteProblem(make_profile([row]), "max A", tasks=["t"])
    with pytest.raises(InputError, match="no layer graph.*nowhere-net"):
        make_bundle(solve(prob, "rass"), prob, tmp_path / "b", models=tmp_path)
    assert not (tmp_path / "b").exists()


@pytest.mark.slow  # trains AgeNet-S
def test_cli_memory_plan_says_minimum_budget(capsys):
    from workbench.cli import main

    assert main(["memory", "plan", "AgeNet-S", "--budget", "0.01"]) == 1
    assert "not trained yet: add --train" in capsys.readouterr().err  # no training behind one's back
    assert main(["memory", "plan", "AgeNet-S", "--budget", "0.01", "--train"]) == 1
    err = capsys.readouterr().err
    assert "minimum feasible budget" in err
    assert main(["memory", "modes", "--model", "AgeNet-S", "--budgets", "1,x"]) != 0
    assert "--budgets must be MB numbers" in capsys.readouterr().err


def test_conv_kernels_agree(models, x):
    """im2col (whole, banded, prepared) and direct convolution give the same outputs."""
    g = from_keras(models["regnet"])
    acts = {"input": x}
    for ly in g.layers:
        xs = [acts[n] for n in ly.inputs]
        ref = np.empty((1,) + ly.shape, np.float32)
        ly.compute(xs, ref)
        if ly.op == "conv":
            for kw in (dict(kernel="direct"), dict(rows=1), dict(rows=3)):
                o = np.empty_like(ref)
                ly.compute(xs, o, **kw)
                np.testing.assert_allclose(o, ref, atol=1e-5, rtol=1e-4)
        acts[ly.name] = ref


def _tiny_instance():
    from workbench.memory.optimal import Instance

    nets = [[{"load": 2, "exec": 1, "weight": 40, "act": 10},
             {"load": 1, "exec": 2, "weight": 60, "act": 20}],
            [{"load": 1, "exec": 1, "weight": 50, "act": 10},
             {"load": 3, "exec": 1, "weight": 30, "act": 30}]]
    return Instance(nets, budget=120)


@pytest.mark.parametrize("workers", [1, 2])
def test_exact_check_compares_with_the_scheduler_every_masa_figure_uses(workers):
    """MASA's makespan in the optimality gap is the Scheduler's own, and the MILP never does
    worse than it on the same memory model."""
    from workbench.memory.optimal import (
        check_schedule,
        masa_schedule,
        profiles_of,
        solve_milp,
    )

    inst = _tiny_instance()
    nets = profiles_of(inst)
    run = M.simulate(nets, [M.Job(0, 0.0, list(nets))], budget=inst.budget, workers=workers,
                     swap_bps=float("inf"))
    heuristic = masa_schedule(inst, workers=workers)
    assert heuristic.makespan == round(run.jobs[0].done_at)
    check_schedule(inst, heuristic, workers=workers)
    exact = solve_milp(inst, workers=workers, time_limit=30)
    check_schedule(inst, exact, workers=workers)
    assert exact.status == "optimal"
    assert exact.makespan <= heuristic.makespan
    # A lower bound any schedule meets: every task on `workers` machines.
    assert exact.makespan >= -(-sum(ly["load"] + ly["exec"] for n in inst.nets for ly in n)
                               // workers)


def test_policies_are_an_enum_with_the_groups_the_scheduler_uses():
    assert M.POLICIES == ("masa", "bulk", "deepeye", "ca-wait", "ca-preempt")
    assert [p.value for p in M.Policy if p.layerwise] == ["masa", "ca-wait", "ca-preempt"]
    assert [p.value for p in M.Policy if p.context_aware] == ["ca-wait", "ca-preempt"]
    assert M.Scheduler({}, policy="bulk", budget=1).policy is M.Policy.BULK


def test_a_skeleton_graph_holds_no_weights_and_runs_from_the_files(models, x, tmp_path):
    """What the memory probe runs: the structure alone (weights are zero-strided placeholders
    of the right shape and size) and the weight files the executor reads."""
    from workbench.memory.measure import from_skeleton, prepare, skeleton

    g = from_keras(models["conv"])
    s = from_skeleton(skeleton(g))
    assert s.table() == g.table() and s.weight_bytes == g.weight_bytes
    assert all(w.strides == (0,) * w.ndim for ly in s.layers for w in ly.weights.values())
    budget = F.min_budget(g) * 1.5 + F.EXECUTOR_RESERVE
    prepare(g, tmp_path, budget_mb=budget / 1e6)
    r = F.FlexRunner(F.plan_within(s, int(budget)), tmp_path)
    np.testing.assert_allclose(r.run(x), g.run(x), atol=1e-5, rtol=1e-4)
    r.close()


def test_memory_is_measured_in_a_fresh_process(models, tmp_path, capsys):
    """Bulk holds every weight (the reading shows them); a plan at a quarter of bulk peak
    memory reads far less. Both are readings of the process, beside what was computed."""
    from workbench.cli import main
    from workbench.memory.measure import measure

    # Big enough (17 MB of weights) that the executor's own few hundred KB do not dominate.
    net = zoo.fc_net((64, 64, 1), 10, convs=(16, 32, 64), fcs=(1024, 256), name="fc64")
    g = from_keras(net)
    bulk = measure(g, reps=2)
    assert bulk.mode == "bulk" and bulk.within_budget is None
    assert bulk.model_mb >= 0.9 * g.weight_bytes / 1e6
    assert bulk.peak_mb >= bulk.base_mb + bulk.model_mb - 0.01
    budget = max(F.min_budget(g), g.bulk_peak_bytes() // 4) / 1e6 + 0.01
    planned = measure(g, budget_mb=budget, reps=2)
    assert planned.mode == "planned" and planned.planned_mb <= budget
    assert planned.model_mb < 0.5 * bulk.model_mb
    # The executor's own objects fit the reserve a process budget keeps beside the plan.
    assert planned.within_budget
    assert planned.model_mb <= planned.planned_mb + F.EXECUTOR_RESERVE / 1e6
    keras_file = tmp_path / "fc64.keras"
    net.save(keras_file)
    assert main(["memory", "run", str(keras_file), "--budget", f"{budget:.3f}", "--reps", "1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "planned" and out["model_mb"] > 0 and out["base_mb"] > 0
    assert main(["memory", "run", str(tmp_path / "none.keras")]) == 1
    assert "none.keras" in capsys.readouterr().err


#: What the process's peak may exceed its idle reading plus the budget by: the interpreter's own
#: allocations between the two readings, not the model's (which is checked without a margin).
NOISE_MB = 0.25


@pytest.mark.parametrize("net", ["fc64", "regnet64"])
def test_measured_peak_of_a_planned_run_stays_within_its_budget(net, monkeypatch):
    """What the process reads, not what the plan says: at the smallest feasible budget, a third
    of the way to bulk and two thirds of the way, with and without preloading where it matters
    most (the tightest budget streams the most). The malloc tuning Dask leaves in a process's
    environment does not reach the measured child (it raised fc64's peak over this budget)."""
    from workbench.memory.measure import measure

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")

    model = (zoo.fc_net((64, 64, 1), 10, convs=(16, 32, 64), fcs=(1024, 256), name="fc64")
             if net == "fc64" else _randomise_bn(zoo.regnet((64, 64, 3), 10)))
    g = from_keras(model)
    lo = (F.min_budget(g) + F.EXECUTOR_RESERVE) / 1e6 + 0.002
    bulk = g.bulk_peak_bytes() / 1e6
    readings = []
    for frac, preload in ((0.0, True), (0.0, False), (1 / 3, True), (2 / 3, True)):
        budget = lo + frac * (bulk - lo)
        m = measure(g, budget_mb=budget, reps=1, preload=preload)
        assert m.within_budget, (budget, m.model_mb, m.code_mb, m.planned_mb, preload)
        # The model's memory within the budget, exactly; the process's whole peak within it
        # up to NOISE_MB (the interpreter's own small allocations between the idle reading and
        # the run: 0.03-0.05 MB over in some runs, on any load).
        assert m.model_mb <= budget and m.peak_mb <= m.base_mb + budget + NOISE_MB
        readings.append(m.model_mb)
    # The readings follow the budget: a bigger plan is seen in the process.
    assert readings[0] < readings[2] < readings[3]
    with pytest.raises(F.CannotFit, match=r"minimum feasible budget is (\d+\.\d+)") as e:
        measure(g, budget_mb=lo - 0.05)
    shown = float(e.value.message.rsplit(" ", 2)[-2])
    assert F.plan_within(g, int(shown * 1e6)).buffer_bytes + F.EXECUTOR_RESERVE <= shown * 1e6


def test_zero_padding_layers_run_as_keras_does(x):
    """ResNet-50 and MobileNetV2 pad explicitly (ZeroPadding2D) before a valid convolution."""
    keras = zoo._keras()
    inp = keras.Input((32, 32, 1))
    h = keras.layers.ZeroPadding2D(((3, 2), (1, 0)), name="pad")(inp)
    h = keras.layers.Conv2D(4, 7, strides=2, padding="valid", activation="relu", name="c")(h)
    h = keras.layers.ZeroPadding2D(1, name="pad2")(h)
    h = keras.layers.MaxPooling2D(3, strides=2, name="p")(h)
    m = keras.Model(inp, keras.layers.Dense(3, name="d")(keras.layers.Flatten()(h)))
    g = from_keras(m)
    assert [ly.op for ly in g.layers][:2] == ["zeropad", "conv"]
    np.testing.assert_allclose(g.run(x), m(x).numpy(), atol=1e-5, rtol=1e-4)
    s = F.slice_graph(g, F.min_budget(g))
    r = F.FlexRunner(F.plan(s, s.budget), Path(tempfile.mkdtemp()))
    np.testing.assert_allclose(r.run(x), m(x).numpy(), atol=1e-5, rtol=1e-4)
    r.close()


def test_under_a_real_memory_limit_bulk_is_killed_and_the_plan_runs():
    """Real pressure: the same model in the same memory cgroup. Bulk needs its weights resident
    and the kernel kills it (no swap) or pages it (swap); the FlexNN plan fits and runs."""
    from workbench.memory import pressure
    from workbench.memory.measure import KilledByLimit, measure

    have = pressure.support()
    if have.cgroup is None:
        pytest.skip(f"no memory cgroup: {have.why_not}")
    g = from_keras(zoo.fc_net((64, 64, 1), 10, convs=(16, 32, 64), fcs=(1024, 256),
                              name="fc64"))
    # What the kernel charges the group (its anonymous memory; shared libraries already cached
    # are charged elsewhere), for each way of running, under a limit far above both.
    bulk = measure(g, reps=1, limit_mb=1000)
    budget = 0.2 * bulk.model_mb
    plan = measure(g, budget_mb=budget, reps=1, limit_mb=1000)
    assert plan.group_peak_mb < bulk.group_peak_mb - 0.4 * bulk.model_mb
    limit = (bulk.group_peak_mb + plan.group_peak_mb) / 2
    with pytest.raises(KilledByLimit, match=r"killed fc64 \(bulk\).*memory limit \(no swap\)"):
        measure(g, reps=1, limit_mb=limit)
    planned = measure(g, budget_mb=budget, reps=1, limit_mb=limit, cold=True)
    assert planned.within_budget and planned.cold and planned.limit_mb == limit
    assert planned.group_peak_mb is not None and planned.group_peak_mb <= limit
    if have.swap:
        paged = measure(g, reps=1, limit_mb=limit, swap_mb=64)
        assert paged.swapped_mb > 0 and paged.major_faults > 0


def test_on_demand_loading_is_measured_between_the_plan_and_bulk():
    from workbench.lab.experiments import flexnn as fx

    g = from_keras(zoo.fc_net((64, 64, 1), 10, convs=(16, 32, 64), fcs=(1024, 256),
                              name="fc64"))
    rows = fx.measured_tradeoff(g, fracs=(0.1,), rounds=2, reps=1)
    assert [r.mode for r in rows[:4]] == ["bulk", "on-demand", "flexnn", "flexnn w.o. preload"]
    assert {r.round for r in rows} == {0, 1}
    # each mode at its smallest budget (FlexNN also runs at the smallest that fits unsliced)
    pts = {p.mode: p for p in sorted(fx.measured_points(rows), key=lambda p: -(p.budget_mb or 0))}
    # on-demand holds one layer's weights at a time: the biggest FC layer (16.8 MB), not all
    assert pts["flexnn"].model_mb < pts["on-demand"].model_mb < pts["bulk"].model_mb
    assert pts["bulk"].memory_reduction_pct == 0 and pts["bulk"].latency_increase_pct == 0
    assert pts["flexnn"].memory_reduction_pct > 75
    # FlexNN without slicing (every layer whole) runs only where the largest layer fits whole,
    # and its measured peak stays within the budget there too.
    whole = [r for r in rows if r.mode == "flexnn w.o. slicing"]
    assert whole and min(r.budget_mb for r in whole) > min(r.budget_mb for r in rows
                                                            if r.mode == "flexnn")
    assert all(r.model_mb <= r.budget_mb for r in whole)


def test_without_slicing_every_layer_is_one_whole_step(models):
    g = from_keras(models["conv"])
    low, whole = F.min_budget(g), F.min_budget(g, sliced=False)
    assert whole > low
    s = F.slice_graph(g, whole, sliced=False)
    assert len(s.steps) == len(g.layers) and not any(st.cols for st in s.steps)
    assert all(st.rows == g.layers[st.layer].geometry()[0] for st in s.steps
               if g.layers[st.layer].op == "conv")
    F.plan(s, whole)  # plans at its own minimum
    with pytest.raises(F.CannotFit, match=f"minimum feasible budget is {math.ceil(whole / 1e3) / 1e3:.3f}"):
        F.plan(F.slice_graph(g, low, sliced=False), low)


def test_masa_runs_for_real_in_a_memory_group(tmp_path):
    """A MASA run under real pressure: a fresh process in a memory cgroup, layers read from
    their files and executed, every job answered, the group's charge within its limit, and the
    same jobs per policy so their times compare."""
    import pickle
    import shutil

    from workbench.lab.experiments import masa as mp
    from workbench.lab.experiments.memory import Nets
    from workbench.memory import pressure
    from workbench.memory.measure import SKELETON, skeleton

    have = pressure.support()
    if have.cgroup is None:
        pytest.skip(f"no memory cgroup: {have.why_not}")
    g = from_keras(zoo.fc_net((64, 64, 1), 10, convs=(16, 32, 64), fcs=(1024, 256),
                              name="fc64"))
    prof = M.profile_network(g, tmp_path / "fc64", repeats=1, sample_rss=False)
    (tmp_path / "fc64" / SKELETON).write_bytes(pickle.dumps(skeleton(g)))
    for role in ("a", "b"):
        shutil.copytree(tmp_path / "fc64", tmp_path / role)
    nets = Nets({r: g for r in "ab"}, {r: tmp_path / r for r in "ab"},
                {r: M.NetProfile(r, prof.layers) for r in "ab"}, trained=False)
    jobs = M.periodic_jobs(["a", "b"], n=3, interval=0.0)
    budget = int(prof.layer_peak_bytes * 1.5)
    assert budget < 2 * prof.bulk_bytes
    for variant in ("bulk", "masa"):
        r = mp.run_limited(nets, jobs, variant, budget=budget, swap_mb=0, workdir=tmp_path,
                           timeout=120)
        assert r.finished, r
        assert r.policy == variant and r.mean_response_ms > 0 and r.makespan_s > 0
        assert r.limit_mb == pytest.approx(budget / 1e6 + mp.ALLOWANCE_MB)
        assert r.group_peak_mb is not None and 0 < r.group_peak_mb <= r.limit_mb
        assert r.base_mb > 0
        assert (r.failure, r.jobs, r.scenario) == (None, 3, 1)
    late = mp.run_limited(nets, jobs, "bulk", budget=budget, swap_mb=0, workdir=tmp_path,
                          timeout=0.05)
    assert not late.finished and late.failure == "timeout"  # the row says why
    assert not list(tmp_path.glob("spec-*"))  # the job file is removed


def test_the_simulator_paging_fit_recovers_known_parameters(toy):
    """fit_paging on runs made by the simulator itself at known paging parameters finds them
    again, with no error: the fit searches what it claims to, and the measured slack beside
    the budget reaches the simulator."""
    from workbench.lab.experiments import masa as mp
    from workbench.lab.experiments.masa import run
    from workbench.lab.experiments.memory import Nets

    nets = Nets({}, {}, toy, trained=False)
    jobs = mp.jobs_for(nets, n=20)
    tight = int(max(p.layer_peak_bytes for p in toy.values()) * 1.1)
    slack, base = 0.05, 0.01  # MB: limit - base - budget
    rows = []
    for pol in ("bulk", "deepeye", "masa"):
        ms = run(toy, jobs, pol, budget=tight, swap_bps=2e6, cache_factor=1.0, anon_share=0.5,
                 slack_bytes=int(slack * 1e6)).mean_response
        for rnd in (0, 1):  # two rounds: one row per configuration, against their median
            rows.append(mp.PressureRun("by total", 512, tight / 1e6, tight / 1e6 + slack + base,
                                       0, pol, rnd, True, ms * 1e3, None, 0, None, None, None,
                                       base, None))
    grid = {"swap_mb_per_s": (0.5, 2.0, 8.0), "cache_factor": (0.0, 1.0),
            "anon_share": (0.5, 1.0)}
    fit = mp.fit_paging(nets, rows, n=20, grid=grid)
    assert len(fit) == 3 and {f.rounds for f in fit} == {2}
    assert {(f.swap_mb_per_s, f.cache_factor, f.anon_share) for f in fit} == {(2.0, 1.0, 0.5)}
    assert all(abs(f.error_pct) < 1e-6 for f in fit)
    assert fit[0].slack_mb == pytest.approx(slack, abs=1e-6)
    assert mp.fit_paging(nets, [], n=20) == []


def test_paging_charges_idle_memory_over_the_budget_once():
    """The residency model: memory over the capacity that no task touches is paged out once;
    tasks that touch only resident memory pay nothing; touching paged-out memory pages it back
    (and something else out); clean page cache goes first, for free, as anon_share allows."""
    from workbench.memory.masa.paging import Residency

    m = Residency(100)
    assert m.use([("new", "a", 80)]) == (0, 0)
    assert m.use([("new", "b", 50)]) == (0, 30)  # a's oldest 30 bytes go out
    assert m.swapped == {"a": 30}
    for _ in range(3):
        assert m.use([("touch", "b", 0)]) == (0, 0)  # idle overcommit is not charged again
    assert m.use([("touch", "a", 0)]) == (30, 30)  # a back in, b's oldest out
    assert (m.paged_in, m.paged_out) == (30, 60)
    m.free("a")
    m.free("b")
    assert m.anon_bytes == 0 and not m.swapped

    c = Residency(100, anon_share=0.0)
    c.use([("new", "w1", 60), ("file", "f1", 30)])
    assert c.use([("new", "w2", 30)]) == (0, 0)  # the page cache is dropped, not paged out
    assert c.cache_bytes == 10 and c.anon_bytes == 90
    both = Residency(100, anon_share=1.0)
    both.use([("new", "w1", 60), ("file", "f1", 30)])
    assert both.use([("new", "w2", 30)]) == (0, 20)  # anon goes first while cache remains


def test_a_working_set_larger_than_memory_pays_for_what_it_pushes_out():
    from workbench.memory.masa.paging import Residency

    m = Residency(100)
    # 70 then 60: 30 of the task's own first allocation goes out and comes back in.
    assert m.use([("new", "w", 70), ("new", "out", 60)]) == (30, 30)
