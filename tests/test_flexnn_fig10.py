"""FlexNN Figure 10 on the paper's terms (benchmarks/bench_flexnn_fig10.py): the pieces it needs
(SqueezeNet's concatenation, the direct-kernel baseline, memory sampled from outside as FlexNN's
artifact reads it, the page cache counted under a limit), and the committed JSON agreeing with
its own raw runs."""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from workbench.errors import InputError
from workbench.memory import pressure
from workbench.memory.graph import Layer, LayerGraph, from_keras
from workbench.memory.measure import measure

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "reports" / "bench" / "flexnn_fig10.json"


def _bench_module():
    spec = importlib.util.spec_from_file_location(
        "bench_flexnn_fig10", ROOT / "benchmarks" / "bench_flexnn_fig10.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def conv_graph(c=8, size=24, dense_mb=0.0) -> LayerGraph:
    """Two 3x3 convs (one strided, one 'valid') and, optionally, an FC of ``dense_mb`` MB."""
    rng = np.random.default_rng(3)
    layers = [
        Layer("c1", "conv", ["input"], (size // 2, size // 2, c),
              {"k": (3, 3), "s": 2, "padding": "same", "act": "relu"},
              {"w": rng.normal(size=(27, c)).astype(np.float32) * 0.2,
               "b": rng.normal(size=c).astype(np.float32)}, [(size, size, 3)]),
        Layer("c2", "conv", ["c1"], (size // 2 - 2, size // 2 - 2, c),
              {"k": (3, 3), "s": 1, "padding": "valid", "act": None},
              {"w": rng.normal(size=(9 * c, c)).astype(np.float32) * 0.2}, [(size // 2, size // 2, c)]),
        Layer("gap", "gap", ["c2"], (c,), {}, {}, [(size // 2 - 2, size // 2 - 2, c)]),
    ]
    if dense_mb:  # a 1024-wide FC, then one of dense_mb MB
        n = int(dense_mb * 1e6 / 4 / 1024)
        layers.append(Layer("fc1", "dense", ["gap"], (1024,), {"act": "relu"},
                            {"w": rng.normal(size=(c, 1024)).astype(np.float32)}, [(c,)]))
        layers.append(Layer("fc2", "dense", ["fc1"], (n,), {"act": None},
                            {"w": rng.normal(size=(1024, n)).astype(np.float32) * 0.05},
                            [(1024,)]))
    return LayerGraph("convs", (size, size, 3), layers)


def test_squeezenet_v1_1_converts_and_computes_what_keras_does():
    from workbench.lab.experiments.flexnn import squeezenet

    m = squeezenet(size=96)
    assert m.count_params() == 1_235_496  # SqueezeNet v1.1's published size
    g = from_keras(m, name="SqueezeNet")
    assert sum(ly.op == "concat" for ly in g.layers) == 8  # one per fire module
    x = np.random.default_rng(0).normal(size=(2, 96, 96, 3)).astype(np.float32)
    np.testing.assert_allclose(g.run(x), m(x).numpy(), rtol=1e-4, atol=1e-6)


def test_concatenate_on_another_axis_is_refused_naming_the_layer():
    from workbench.host import zoo

    keras = zoo._keras()
    inp = keras.Input((8, 8, 4))
    a = keras.layers.Conv2D(4, 1)(inp)
    out = keras.layers.Concatenate(axis=1, name="rows_cat")([a, a])
    with pytest.raises(InputError, match="rows_cat"):
        from_keras(keras.Model(inp, out))


def test_the_direct_baseline_computes_what_im2col_does():
    g = conv_graph()
    x = np.random.default_rng(1).normal(size=(2, 24, 24, 3)).astype(np.float32)
    np.testing.assert_allclose(g.run(x, kernel="direct"), g.run(x), rtol=1e-5, atol=1e-5)


def test_memory_sampled_from_outside_reads_the_run_as_flexnn_does():
    g = conv_graph(c=16, size=64)
    m = measure(g, reps=3, warmup=2, idle_s=0.3, sample_ms=10)
    assert len(m.latency_samples_ms) == 3 and m.warmup == 2
    ph = m.phases
    assert ph["idle"] < ph["load"] < ph["timed"] < ph["end"]
    assert m.load_ms >= 0 and ph["load"] - ph["idle"] >= 0.3
    assert m.samples >= 20  # 10 ms apart over at least the 0.3 s idle phase
    # The sampled peak cannot exceed the kernel's own peak (VmHWM), and the idle reading is the
    # process before the model: the model's cost is the difference, as the artifact computes.
    assert m.idle_mb <= m.sampled_peak_mb <= m.peak_mb + 0.1  # the last stamp is after VmHWM
    assert math.isclose(m.pmap_mb, m.sampled_peak_mb - m.idle_mb)
    if m.pmap_check_kb is not None:  # pmap -x's total is the rollup's Rss
        assert abs(m.pmap_check_kb) <= 64


def test_a_plan_with_more_weight_files_than_it_keeps_open_runs(tmp_path):
    from workbench.memory import flexnn as F
    from workbench.runtime.programs import _Files

    g = LayerGraph("wide", (64,), [
        Layer("fc", "dense", ["input"], (60_000,), {"act": None},
              {"w": np.random.default_rng(4).normal(size=(64, 60_000)).astype(np.float32)},
              [(64,)])])
    p = F.slice_and_plan(g, F.min_budget(g))
    r = F.FlexRunner(p, tmp_path)
    try:
        assert len(r.program.files) > _Files.KEEP_OPEN  # more than a process may hold open
        x = np.random.default_rng(5).normal(size=(1, 64)).astype(np.float32)
        np.testing.assert_allclose(r.run(x), g.run(x), rtol=1e-4, atol=1e-4)
    finally:
        r.close()


def test_measure_refuses_options_that_do_not_go_together():
    g = conv_graph()
    with pytest.raises(InputError, match="direct kernel"):
        measure(g, budget_mb=5.0, kernel="direct")
    with pytest.raises(InputError, match="kernel"):
        measure(g, kernel="winograd")
    with pytest.raises(InputError, match="sampling"):
        measure(g, sample_ms=10, limit_mb=100)
    with pytest.raises(InputError, match="cold"):
        measure(g, cold="yes")
    with pytest.raises(InputError, match="warmup"):
        measure(g, warmup=0)


@pytest.mark.skipif(not pressure.support().cgroup, reason="needs a memory cgroup")
def test_a_limit_that_counts_the_page_cache_makes_every_inference_read_its_weights(tmp_path):
    from workbench.memory import flexnn as F

    g = conv_graph(c=16, size=32, dense_mb=48.0)
    budget = round((F.min_budget(g) + F.EXECUTOR_RESERVE) / 1e6 * 1.001, 3)
    free = measure(g, budget_mb=budget, reps=1, root=tmp_path, limit_mb=1e6 - 1)
    limit = round(free.group_peak_mb * 1.15 + 8, 1)
    warm = measure(g, budget_mb=budget, reps=3, root=tmp_path, limit_mb=limit)
    cold = measure(g, budget_mb=budget, reps=3, root=tmp_path, limit_mb=limit, cold="weights")
    roomy = measure(g, budget_mb=budget, reps=3, root=tmp_path, limit_mb=limit + 80,
                    cold="weights")
    assert limit < free.group_peak_mb + 48  # the weights do not fit beside the run
    assert warm.read_mb_per_inference < 1  # the writer's cached pages serve every read
    assert cold.read_mb_per_inference > 40  # the limit evicts what each inference read
    assert roomy.read_mb_per_inference < 1  # read once (first inference), then cached
    assert cold.cold == "weights" and cold.group_peak_mb <= limit + 0.1


@pytest.fixture(scope="module")
def data():
    if not BENCH.exists():
        pytest.skip("benchmarks/bench_flexnn_fig10.py has not run")
    return json.loads(BENCH.read_text())


def test_committed_summaries_are_what_the_raw_runs_give(data):
    b = _bench_module()
    runs = data["runs"]
    assert data["points"] == json.loads(json.dumps(b.points(runs)))
    assert data["comparisons"] == json.loads(json.dumps(b.comparisons(runs)))
    assert data["best90"] == json.loads(json.dumps(b.best90(runs)))
    # The target's point is chosen by memory alone (the largest budget at least 90% below
    # Default), never as the fastest of noisy medians that are then checked.
    for best in data["best90"]:
        if best["budget_mb"] is None:
            continue
        d = next(p for p in data["points"] if p["model"] == best["model"]
                 and p["mode"] == "default")
        ok = [p["budget_mb"] for p in data["points"] if p["model"] == best["model"]
              and p["mode"] == "flexnn" and p["pmap_mb"] <= 0.1 * d["pmap_mb"]]
        assert best["budget_mb"] == max(ok)
        assert len(best["latency_vs_default_rounds_pct"]) >= 3
    if "pagecache_runs" in data:
        assert data["pagecache_points"] == json.loads(json.dumps(
            b.pagecache_points(data["pagecache_runs"], data["disk"])))


def test_committed_runs_were_measured_the_artifacts_way(data):
    assert data["source"].startswith("measured on this machine") and data["cpu"]
    assert data["method"] == {"warmup": 4, "loops": 8, "idle_s": 1.0, "sample_ms": 10.0,
                              "rounds": data["method"]["rounds"]}
    assert all(n >= 3 for sec in data["method"]["rounds"].values() for n in sec.values())
    models = {r["model"] for r in data["runs"]}
    assert models == {"VGG-19", "ResNet-152", "MobileNetV2", "SqueezeNet", "ViT", "GPT-2"}
    assert set(data["substituted"]) == {"ViT", "GPT-2"}  # said how they differ
    for r in data["runs"]:
        assert len(r["latency_samples_ms"]) == 8 and r["warmup"] == 4
        if r["mode"] == "flexnn":  # a budget holds in the artifact's own reading, but for
            # what the executor's fixed 64 kB reserve does not cover: about 1 kB of program
            # objects per step and NumPy's transient arrays in the kernels. The CNNs (<= 219
            # steps) stay within 0.35 MB of their budget; ViT at its floor (3,630 steps) does
            # not, and the ledger and README say so.
            over = r["pmap_mb"] - r["budget_mb"]
            assert over <= 0.35 or (r["model"] == "ViT" and over <= 4.0), r
        # every mode of a model ran in every round
    for m in models:
        per_round = {}
        for r in data["runs"]:
            if r["model"] == m:
                per_round.setdefault(r["round"], set()).add((r["mode"], r["budget_mb"]))
        assert len({frozenset(v) for v in per_round.values()}) == 1


def test_every_budget_above_the_minimum_plans_and_runs(tmp_path):
    """The slicing chosen for a budget can fail to place where a smaller budget's slicing does
    (ResNet-50 at 96x96 between about 2.4 and 2.8 MB; ResNet-152 at 224x224 at 13 MB, where
    the Figure 10 benchmark met it): a finer slicing is planned in the whole budget instead."""
    from workbench.host import zoo
    from workbench.memory import flexnn as F
    from workbench.memory.flexnn.planning import _plan
    from workbench.memory.flexnn.slicing import _slice

    apps = zoo._keras().applications
    g = from_keras(apps.ResNet50(weights=None, input_shape=(96, 96, 3)), name="ResNet-50-96")
    low = F.min_budget(g)
    budgets = [int(b) for b in np.linspace(low, 2 * low, 40)]

    def own_slicing_places(b):
        try:
            _plan(_slice(g, b), b)
            return True
        except F.CannotFit:
            return False

    needed = [b for b in budgets if not own_slicing_places(b)]
    assert needed  # the case exists: the test would fail without the finer retry
    for b in budgets:
        p = F.slice_and_plan(g, b)
        p.check()
        assert p.buffer_bytes <= b
    x = np.random.default_rng(2).normal(size=(1, 96, 96, 3)).astype(np.float32)
    p = F.slice_and_plan(g, needed[0])
    r = F.FlexRunner(p, tmp_path)
    try:
        np.testing.assert_allclose(r.run(x), g.run(x), rtol=1e-4, atol=1e-5)
    finally:
        r.close()
