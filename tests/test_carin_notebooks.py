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
    # Per use case, with counts: UC1's smallest-model baseline breaks its constraints on both
    # phones, so a pooled UC1-UC2 gain over B-S would come from UC2 alone (quick mode runs UC1
    # and UC3: no pooled B-S number at all), and the counts say so.
    per = {(r["use_case"], r["baseline"]): r for r in m["gains_per_use_case"]}
    assert per[("uc1", "B-S")]["comparable"] == 0 and per[("uc1", "B-S")]["not_comparable"] == 2
    assert per[("uc1", "B-S")]["mean"] is None
    pooled = {r["baseline"]: r for r in m["gains_vs_paper"] if r["use_cases"] == "UC1-UC2"}
    assert pooled["B-S"]["comparable_baselines"] == sum(
        per[(uc, "B-S")]["comparable"] for uc in ("uc1", "uc2") if (uc, "B-S") in per) == 0
    assert pooled["B-S"]["workbench_mean"] is None
    for r in m["gains_per_use_case"]:
        assert r["comparable"] + r["not_comparable"] >= 1
        assert (r["mean"] is None) == (r["comparable"] == 0)
    # CARIn 7.1.2's per-objective claims, each beside the workbench's number.
    obj = {(r["use_case"], r["objective"]): r for r in m["objective_gains"]}
    assert obj[("uc1", "TP")]["paper"] == 32.7 and obj[("uc2", "L")]["paper"] == 19.9


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
    # Both libraries on the same table, with the share of the exact front each found, and the
    # hypervolume of each solver's front over its wall time.
    assert [s["solver"] for s in m["by_solver"]] == ["nsga2", "optuna-nsga2", "optuna-tpe"]
    assert all(0 <= r["front_recall"] <= 1 for r in m["rows"])
    assert {p["solver"] for p in m["trace"]} == {"nsga2", "optuna-nsga2", "optuna-tpe"}
    ms = [p["ms"] for p in m["trace"] if p["solver"] == "optuna-tpe"]
    assert ms == sorted(ms) and all(0 < p["hv_ratio"] <= 1 + 1e-9 for p in m["trace"]
                                    if p["hv_ratio"] is not None)


def test_phone_model_report(tmp_path):
    """The trust report: every held-out row, an error per engine, and the sensitivity of both
    tables to every calibrated parameter, in metrics a reader (and the index) can read back."""
    from workbench.lab.experiments.carin.phone_trust import CALIBRATED
    from workbench.profiles.validation import ENGINES, data

    m = _metrics("phone_model", tmp_path)
    assert len(m["held_out"]) == len(data()["rows"])
    assert [e["engine"] for e in m["by_engine"]] == list(ENGINES)
    assert "Table 7" in m["calibrated_on"]
    assert {(r["parameter"], r["table"]) for r in m["sensitivity"]} == {
        (".".join(p), t) for p in CALIBRATED for t in ("Table 7", "Table 8")}
    # The contention model: fitted to the host's measured co-executions, every row also held out.
    cf = m["contention_fit"]
    assert cf["rows"] and set(cf["median_abs_error_pct"]) == {"fitted", "held_out", "defaults",
                                                                "no_contention"}
    assert cf["median_abs_error_pct"]["fitted"] < cf["median_abs_error_pct"]["no_contention"]
    assert {r["use_case"] for r in m["contention_sensitivity"]} == {"uc3", "uc4"}
    html = (tmp_path / "phone_model" / "phone_model.html").read_text()
    assert "modelled" in html and "published" in html


def test_oodin_eval_report(tmp_path):
    m = _metrics("oodin_eval", tmp_path)
    assert {s["figure"] for s in m["summary"]} == {"Fig. 3", "Fig. 4", "Fig. 5", "Fig. 6"}
    assert set(m["engines_chosen"]) == {"xperia-c5", "a71", "s20fe"}


def test_sweep_report(tmp_path):
    m = _metrics("sweep", tmp_path, devices=["s20fe"])
    assert m["problems"] == sum(m["statuses"].values()) and "error" not in m["statuses"]
    assert {"uc1", "uc3", "h1"} <= set(m["by_use_case"])


def test_reports_run_as_dask_tasks_give_the_serial_outputs(tmp_path):
    """`workbench report --workers 2`: each notebook in its own kernel on a worker process; the
    metrics and the executed notebooks' outputs are the serial run's."""
    pytest.importorskip("distributed")
    from workbench.lab.reports import run_all

    names = ["quickstart", "carin_designs"]
    serial = run_all(names=names, reports_dir=tmp_path / "serial", quick=True, progress=False,
                     png=False)
    par = run_all(names=names, reports_dir=tmp_path / "par", quick=True, progress=False,
                  png=False, workers=2)
    assert [r.name for r in par] == names and not any(r.error for r in par)

    def outputs(run):
        import re

        nb = json.loads(run.notebook.read_text())
        cells = []
        for c in nb["cells"]:
            if c["cell_type"] != "code":
                continue
            # The kernel flushes stdout when it likes: one print may arrive as one stream output
            # or as two ("text" then "\n"), so adjacent stream outputs are compared joined.
            merged: list = []
            for o in c.get("outputs", []):
                if (o.get("output_type") == "stream" and merged
                        and merged[-1].get("output_type") == "stream"
                        and merged[-1]["name"] == o["name"]):
                    merged[-1] = {**merged[-1], "text": "".join(merged[-1]["text"])
                                  + "".join(o["text"])}
                else:
                    merged.append(o if o.get("output_type") != "stream"
                                  else {**o, "text": "".join(o["text"])})
            cells.append(merged)
        text = json.dumps(cells)
        text = text.replace(str(run.notebook.parents[1]), "REPORTS")  # where each run wrote
        # Solve times are measured and plotly names each figure's div with a fresh uuid (two
        # serial runs differ there too); everything else must be the same.
        text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UUID", text)
        return re.sub(r"[0-9.]+ ms", "N ms", text)

    for a, b in zip(serial, par):
        assert json.loads(a.metrics.read_text()) == json.loads(b.metrics.read_text())
        assert outputs(a) == outputs(b)
    assert (tmp_path / "par" / "index.html").exists()
