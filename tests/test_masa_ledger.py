"""MASA's ledger measurements (benchmarks/bench_masa_ledger.py): the committed JSON agrees with
itself, and the functions the benchmark added to workbench.lab.experiments.masa work (per-layer memory; Bulk
instances in one memory cgroup)."""

import importlib.util
import json
import math
import statistics
import tempfile
from pathlib import Path

import pytest

from workbench.lab.experiments import masa as mp

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "reports" / "bench" / "masa_ledger.json"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_masa_ledger",
                                                  ROOT / "benchmarks" / "bench_masa_ledger.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def data():
    return json.loads(BENCH.read_text())


@pytest.fixture(scope="module")
def bench():
    return _bench()


def close(a, b, rel=2e-3):
    """Equal up to the file's rounding (four significant digits, rounded twice)."""
    if a is None or b is None:
        return a is b
    if isinstance(a, list):
        return a == b
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-6)


def test_the_file_says_what_it_is(data):
    assert data["source"].startswith("measured on this machine")
    assert data["cpu"] and data["what"]
    for part in ("fig8", "fig2", "fig3b", "fig3c"):
        assert data[part]["source"].startswith("measured on this machine")
        assert data[part]["seconds"] > 0 and data[part]["quick"] is False


def _same_median(summary_row, values):
    assert summary_row["finished"] == len(values)
    if values:
        v = sorted(values)
        assert close(summary_row["median_ms"], statistics.median(v))
        assert summary_row["q1_ms"] <= summary_row["median_ms"] <= summary_row["q3_ms"]


def test_fig8_summary_and_derived_numbers_equal_their_runs(data, bench):
    f = data["fig8"]
    assert f["jobs"] == len(f["images_networks"]) and len(f["networks"]) == 8
    keys = {(r["paper_budget_mb"], r["intensity"], r["policy"]) for r in f["rows"]}
    assert keys == {(s["paper_budget_mb"], s["intensity"], s["policy"]) for s in f["summary"]}
    for s in f["summary"]:
        rs = [r for r in f["rows"]
              if (r["paper_budget_mb"], r["intensity"], r["policy"])
              == (s["paper_budget_mb"], s["intensity"], s["policy"])]
        assert s["runs"] == len(rs)
        _same_median(s, [r["mean_response_ms"] for r in rs if r["finished"]])
        assert all(r["scaling"] == "by total" and r["swap_mb"] == f["swap_mb"] for r in rs)
        assert all(close(r["budget_mb"], f["budgets_mb"][str(r["paper_budget_mb"])])
                   for r in rs)
    for k, v in bench.fig8_derived(f["summary"]).items():
        assert close(f["derived"][k], v), k
    # every policy of the main point ran the same rounds back to back
    main = [s for s in f["summary"] if (s["paper_budget_mb"], s["intensity"]) == (512, 1.2)]
    assert {s["policy"] for s in main} == set(mp.POLICIES)
    assert len({s["runs"] for s in main}) == 1 and main[0]["runs"] >= 2


def test_fig2_network_summaries_equal_their_layers(data, bench):
    nets = data["fig2"]["networks"]
    assert [n["architecture"] for n in nets] == list(bench.ARCHS)
    for n in nets:
        assert {x["kind"] for x in n["layers"]} <= {"conv", "fc", "other"}
        for k, v in bench.layer_summary(n["layers"]).items():
            assert close(n[k], v), (n["architecture"], k)
    assert close(data["fig2"]["min_largest_over_smallest_rss"],
                 min(n["largest_over_smallest_rss"] for n in nets))
    alex = next(n for n in nets if n["architecture"] == "AlexNet")
    assert (alex["conv_layers"], alex["fc_layers"]) == (5, 3)
    # AlexNet's first FC layer: 9216 x 4096 weights + 4096 biases, fp32
    fc6 = next(x for x in alex["layers"] if x["kind"] == "fc")
    assert fc6["weight_bytes"] == (9216 * 4096 + 4096) * 4


def test_fig3b_and_fig3c_summaries_equal_their_runs(data, bench):
    b = data["fig3b"]
    for s in b["summary"]:
        rs = [r for r in b["rows"] if r["paper_budget_mb"] == s["paper_budget_mb"]]
        assert s["runs"] == len(rs) >= 10
        _same_median(s, [r["mean_response_ms"] for r in rs if r["finished"]])
        assert all(close(r["limit_mb"], r["budget_mb"] + mp.ALLOWANCE_MB) for r in rs)
    for k, v in bench.fig3b_derived(b["summary"]).items():
        assert close(b["derived"][k], v), k
    c = data["fig3c"]
    for s in c["summary"]:
        rs = [r for r in c["rows"] if (r["paper_budget_mb"], r["parallel"])
              == (s["paper_budget_mb"], s["parallel"])]
        assert s["runs"] == len(rs) and s["finished"] == sum(r["finished"] for r in rs)
        assert s["instances"] == sum(len(r["exec_ms"]) for r in rs if r["finished"])
        v = sorted(x for r in rs if r["finished"] for x in r["exec_ms"])
        assert close(s["median_ms"], statistics.median(v))
        assert all(r["instances"] == 2 and r["images"] == c["images_per_instance"]
                   for r in rs)
    for k, v in bench.fig3c_derived(c["summary"]).items():
        assert close(c["derived"][k], v), k


def test_scenario_two_jobs_and_budgets_at_other_sizes():
    from workbench.lab.experiments.memory import Nets
    from workbench.memory import masa as M

    prof = {k: M.NetProfile(k, [M.LayerCost("l", "fc", [-1], 10 ** 8, 4, 0, 0.1, 0.1)])
            for k in ("AgeNet", "FaceNet", "TinyYOLO")}
    nets = Nets({}, {}, prof, trained=False)
    jobs = mp.jobs_for(nets, n=6, intensity=1.0, scenario=2)
    assert all(1 <= len(j.nets) <= 3 and len(set(j.nets)) == len(j.nets) for j in jobs)
    gaps = {round(b.arrival - a.arrival, 9) for a, b in zip(jobs, jobs[1:])}
    assert len(gaps) == 1  # periodic images
    b = mp.budgets(nets, ["FaceNet"], (256,))
    assert set(b["by total"]) == {256}
    assert b["by total"][256] == int(256e6 * prof["FaceNet"].bulk_bytes / 875e6)


def test_layer_sizes_reads_every_layer():
    with tempfile.TemporaryDirectory() as root:
        rows = mp.layer_sizes("Levi-Hassner-2", root, repeats=1)
    g = mp.table1_graph("Levi-Hassner-2")
    assert len(rows) == len(g.layers)  # (Keras numbers layer names per build)
    assert [r["weight_bytes"] for r in rows] == [ly.weight_bytes for ly in g.layers]
    assert sum(r["weight_bytes"] for r in rows) == g.weight_bytes
    assert [r["kind"] for r in rows if r["kind"] != "other"] == ["conv"] * 3 + ["fc"] * 3
    assert all(r["rss_peak_bytes"] >= 0 for r in rows)


def test_googlenet_runs_as_keras_does():
    """Table 1's fifth architecture: nine inception modules (concatenated branches), 7.0M
    parameters as in Szegedy et al. without the auxiliary heads; the layer executor that MASA's
    runs use gives Keras's output."""
    import numpy as np

    m = mp.table1_model("GoogLeNet")
    assert m.count_params() == 6_998_552
    g = mp.table1_graph("GoogLeNet")
    assert sum(ly.kind == "conv" for ly in g.layers) == 57
    x = np.random.default_rng(0).standard_normal((1, 224, 224, 3)).astype(np.float32)
    ref = m(x).numpy()
    np.testing.assert_allclose(g.run(x), ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())


def test_run_instances_in_one_cgroup():
    from workbench.memory import pressure

    if pressure.support().cgroup is None:
        pytest.skip(pressure.support().why_not)
    with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as work:
        nets = mp.prepare(root, roles=("GenderNet",), repeats=1)
        for parallel in (True, False):
            r = mp.run_instances(nets, "GenderNet", limit_mb=1024, swap_mb=0, images=2,
                                 parallel=parallel, timeout=60, workdir=Path(work))
            assert r.finished and len(r.exec_ms) == 2 and all(x > 0 for x in r.exec_ms)
            assert r.parallel is parallel and r.group_peak_mb <= 1024
        assert not list(Path(work).iterdir())  # spec and outputs removed
