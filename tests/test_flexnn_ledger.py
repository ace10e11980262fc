"""FlexNN's ledger measurements (benchmarks/bench_flexnn_ledger.py): the committed JSON agrees with
itself, and the "w.o. mem" runner computes what the planned runner does without its buffer."""

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from workbench.lab.experiments.flexnn import NativeAllocRunner
from workbench.memory import flexnn as F
from workbench.memory.graph import Layer, LayerGraph

BENCH = Path(__file__).resolve().parents[1] / "reports" / "bench" / "flexnn_ledger.json"


@pytest.fixture(scope="module")
def data():
    return json.loads(BENCH.read_text())


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def test_the_file_says_what_it_is(data):
    assert data["source"].startswith("measured on this machine")
    assert data["fig1_source"].startswith("measured on this machine")
    assert data["cpu"] and data["what"]
    for section in ("fig1", "table2", "fig13", "fig14", "fig11", "fig2"):
        assert section in data["load"] and section in data["seconds"]
        assert data["cpu_by_section"][section]  # the machine changes: each section says its CPU
        assert data["load"][section]["gave_up"] == (data["load"][section]["load1_at_start"]
                                                    >= 1.3)


def test_fig1_shares_are_the_counts_of_the_layer_rows(data):
    for s in data["fig1_summary"]:
        rows = [r for r in data["fig1_layers"] if r["model"] == s["model"]]
        assert len(rows) == s["layers"] > 0
        for r in rows:
            assert r["total_bytes"] == (r["input_bytes"] + r["output_bytes"] + r["weight_bytes"]
                                        + r["intermediate_bytes"])
        mb = [r["total_bytes"] / 1e6 for r in rows]
        assert s["le_5mb"] == sum(v <= 5 for v in mb)
        assert s["le_20mb"] == sum(v <= 20 for v in mb)
        assert s["gt_70mb"] == sum(v > 70 for v in mb)
        for k in ("le_5mb", "le_20mb", "gt_70mb"):
            assert close(s[f"share_{k}_pct"], 100 * s[k] / s["layers"])
        assert close(s["max_layer_mb"], max(mb))
    resnet = next(s for s in data["fig1_summary"] if s["model"] == "ResNet-152")
    assert resnet["layers"] == 210  # 155 conv, 50 add, 2 zero-pad, pool, gap, dense


def test_table2_derived_numbers_equal_their_inputs(data):
    assert {r["model"] for r in data["table2"]} == {"VGG-19", "ResNet-152", "ViT"}
    for r in data["table2"]:
        assert close(r["storage_ratio"], r["storage_mb"] / r["original_mb"])
        assert close(r["slicing_ms"], r["slice_decision_ms"]["median"]
                     + r["slice_write_ms"]["median"])
        for key, samples in (("planning", "planning"), ("profiling", "profiling")):
            assert close(r[f"{key}_ms"], statistics.median(r["samples_ms"][samples]))
            assert r[key]["n"] == len(r["samples_ms"][samples]) >= 3
            assert r[key]["q1"] <= r[key]["median"] <= r[key]["q3"]
        assert r["buffer_mb"] <= r["budget_mb"]


def test_fig13_points_summarise_their_rounds(data):
    rows, points = data["fig13_rows"], data["fig13_points"]
    assert {p["mode"] for p in points} == set(data["ablation_modes"])
    for p in points:
        rs = [r for r in rows if (r["model"], r["mode"], r["budget_mb"])
              == (p["model"], p["mode"], p["budget_mb"])]
        assert len(rs) == p["rounds"] >= 3
        assert close(p["latency_ms"], statistics.median(r["latency_ms"] for r in rs))
        assert close(p["model_mb"], max(r["model_mb"] for r in rs))
        assert p["within_budget"] == all(r["model_mb"] <= p["budget_mb"] for r in rs)
        ref = {r["round"]: r["latency_ms"] for r in rows if r["mode"] == "flexnn"
               and (r["model"], r["budget_mb"]) == (p["model"], p["budget_mb"])}
        assert close(p["latency_vs_flexnn_pct"], 100 * (statistics.median(
            r["latency_ms"] / ref[r["round"]] for r in rs) - 1))
        # The per-round values the ledger's noise rule reads, paired with FlexNN's round.
        assert all(close(x, 100 * (r["latency_ms"] / ref[r["round"]] - 1)) for x, r in
                   zip(p["latency_vs_flexnn_rounds_pct"], rs, strict=True))
        for r in rs:
            assert close(r["latency_ms"], statistics.median(r["latency_samples_ms"]))


def test_fig14_segments_summarise_their_inferences(data):
    segs, infs = data["fig14_segments"], data["fig14_inferences"]
    assert [s["budget_mb"] for s in segs] == data["fig14_budgets_mb"]
    assert len(infs) == len(segs) * data["fig14_loops"]
    assert [s["initial"] for s in segs] == [True] + [False] * (len(segs) - 1)
    for s in segs:
        lat = [i["latency_ms"] for i in infs if i["budget_mb"] == s["budget_mb"]]
        assert close(s["first_ms"], lat[0])
        assert close(s["latency_ms"], statistics.median(lat[1:]))
        assert s["latency_n"] == len(lat) - 1
        assert close(s["over_budget_pct"], 100 * (s["model_mb"] / s["budget_mb"] - 1))
        assert s["buffer_mb"] <= s["budget_mb"]
        assert s["budget"] == f"{s['budget_mb']:g} MB"


def test_fig11_and_fig2_rows(data):
    fc = data["fig11_fc"]
    assert len(fc) == 2 * len({r["budget"] for r in fc})
    assert all(r["n"] >= 10 and r["latency_q1_ms"] <= r["latency_ms"] <= r["latency_q3_ms"]
               for r in fc)
    conv = data["fig11_conv"]
    assert [r["band_rows"] for r in conv] == sorted(r["band_rows"] for r in conv)
    assert [r["intermediate_mb"] for r in conv] == sorted(r["intermediate_mb"] for r in conv)
    assert {r["kernel"] for r in data["fig2_kernels"]} == {"im2col", "direct"}


def _toy() -> LayerGraph:
    """A small graph by hand (no TensorFlow): two convs whose outputs are added (an activation
    read by two layers), a strided conv, then two dense layers."""
    rng = np.random.default_rng(0)

    def w(*shape):
        return (rng.normal(size=shape) * 0.2).astype(np.float32)

    conv = {"k": (3, 3), "s": 1, "padding": "same", "act": "relu"}
    layers = [
        Layer("c1", "conv", ["input"], (12, 12, 8), dict(conv), {"w": w(27, 8), "b": w(8)},
              [(12, 12, 3)]),
        Layer("c2", "conv", ["c1"], (12, 12, 8), dict(conv), {"w": w(72, 8), "b": w(8)},
              [(12, 12, 8)]),
        Layer("sum", "add", ["c1", "c2"], (12, 12, 8), {"act": None}, {},
              [(12, 12, 8), (12, 12, 8)]),
        Layer("c3", "conv", ["sum"], (6, 6, 16), {**conv, "s": 2},
              {"w": w(72, 16), "b": w(16)}, [(12, 12, 8)]),
        Layer("flat", "flatten", ["c3"], (576,), {}, {}, [(6, 6, 16)]),
        Layer("d1", "dense", ["flat"], (256,), {"act": "relu"}, {"w": w(576, 256), "b": w(256)},
              [(576,)]),
        Layer("d2", "dense", ["d1"], (10,), {"act": None}, {"w": w(256, 10), "b": w(10)},
              [(256,)]),
    ]
    return LayerGraph("toy", (12, 12, 3), layers)


def test_the_ablation_probe_runs_the_native_allocator_not_flexnn(tmp_path):
    """'w.o. mem' is measured in a fresh process with the runner swapped: the measurement says
    which class ran, so a probe that stops honouring the swap fails instead of measuring FlexNN."""
    from workbench.lab.experiments.flexnn import measure_without_static_memory
    from workbench.memory.measure import measure

    g = _toy()
    budget = round((F.min_budget(g) + F.EXECUTOR_RESERVE) / 1e6 * 1.5, 3)
    assert measure_without_static_memory(g, budget_mb=budget, reps=1).runner == "NativeAllocRunner"
    assert measure(g, budget_mb=budget, reps=1).runner == "FlexRunner"
    assert measure(g, reps=1).runner is None  # bulk: no plan


def test_without_static_memory_computes_what_the_plan_does(tmp_path):
    g = _toy()
    x = np.random.default_rng(1).normal(size=(1, 12, 12, 3)).astype(np.float32)
    ref = g.run(x)
    lo = F.min_budget(g)
    for budget in (lo, (lo + g.bulk_peak_bytes()) // 2, 4 * g.bulk_peak_bytes()):
        p = F.plan(F.slice_graph(g, budget), budget)
        for preload in (True, False):
            r = NativeAllocRunner(p, tmp_path, preload=preload)
            assert not hasattr(r, "buf")  # no static buffer: every tensor from the allocator
            for _ in range(2):  # twice: nothing of the first inference is reused wrongly
                np.testing.assert_allclose(r.run(x), ref, rtol=1e-4, atol=1e-5)
            r.close()
    assert len(F.plan(F.slice_graph(g, lo), lo).slicing.steps) > len(g.layers)  # sliced
