"""CARIn's evaluation notebooks run (quick mode) and record what a reader relies on."""

import json

import pytest

pytest.importorskip("papermill")

from workbench.lab.reports import run_report  # noqa: E402

pytestmark = pytest.mark.notebook


def _metrics(name, tmp_path, **params):
    run = run_report(name, reports_dir=tmp_path, quick=True, progress=False, parameters=params)
    return json.loads(run.metrics.read_text())


def test_carin_designs(tmp_path):
    m = _metrics("carin_designs", tmp_path, devices=["s20fe", "a71"])
    assert m["source"] == "modelled"
    assert m["use_cases"]["uc1"]["d0"]["s20fe"] == "EfficientNet Lite0 FFX8, CPU_{4,T}"
    # CARIn Table 7's processor designs are reproduced on the modelled S20 FE.
    match = m["policies"]["uc1_s20fe"]["match"]
    assert all(match[r] for r in ("d0", "d1", "d2", "dw"))
    assert m["policies"]["uc1_s20fe"]["triggers"] == ["CPU", "GPU", "NPU"]
    # Every gain over a baseline is >= 1: RASS's d0 maximises optimality.
    for row in m["gains_vs_paper"]:
        if row["workbench_mean"] is not None:
            assert row["workbench_mean"] >= 1 and row["paper_mean"] > 1
    assert m["per_mapping"]["uc3"][0]["carin"] >= m["per_mapping"]["uc3"][-1]["carin"]


def test_oodin_solve_time(tmp_path):
    m = _metrics("oodin_solve_time", tmp_path, devices=["s20fe"], sizes=[500, 2000])
    assert [r["space"] for r in m["rows"]] == [500, 2000]
    assert [r["paper_avg_ms"] for r in m["rows"]] == [0.55, 1.70]  # CARIn Table 9, S20
    assert m["min_speedup"] > 10  # a lookup is far cheaper than a re-solve


def test_rass_vs_nsga2(tmp_path):
    m = _metrics("rass_vs_nsga2", tmp_path, pop_size=30)
    s = m["summary"]
    assert 0 < s["min_optimality_ratio"] <= s["mean_optimality_ratio"] <= 1 + 1e-9
    assert all(r["evaluations"] > 0 for r in m["rows"])
