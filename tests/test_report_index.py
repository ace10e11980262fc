"""`workbench report`: the index page, PNG figures, and which notebooks are reports."""

import json

import pytest

from workbench.lab import reports
from workbench.lab.reports.index import write_index


def test_only_numbered_notebooks_are_reports():
    names = reports.available()
    assert "explorer" not in names and "00_quickstart" in names
    assert all(n.partition("_")[0].isdigit() for n in names)


def _quickstart_metrics(**change):
    from workbench.lab.reports.metrics import DesignSummary, QuickstartMetrics

    m = QuickstartMetrics(device="s20fe", task="uc1", profile_source="modelled", n_configs=10,
                          n_feasible=5, n_pareto=3,
                          d0=DesignSummary("c1", "EfficientNet Lite0 FFX8, CPU_{4,T}", 0.9),
                          designs={"d0": "x"}, matches_carin_table7_d0=True)
    for k, v in change.items():
        setattr(m, k, v)
    return m


def test_the_index_links_reports_and_renders_the_ledger(tmp_path):
    from workbench.lab.reports.metrics import write_metrics

    q = tmp_path / "quickstart"
    q.mkdir()
    (q / "quickstart.html").write_text("<html></html>")
    write_metrics(q, _quickstart_metrics())
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "x.json").write_text(json.dumps(
        {"targets": {"speed": {"target": 1, "measured": 2, "met": False},
                     "size": {"target": 1, "measured": 2, "q1": 0.5, "q3": 3, "met": None}}}))
    page = write_index(tmp_path).read_text()
    assert "<a href='quickstart/quickstart.html'>" in page
    assert "not run yet" in page  # carin_designs and others are absent
    # An undecided target is not a miss: the verdicts are the benchmark page's.
    assert "speed: 2 (not met); size: 2 (not shown)" in page
    # With no report run, the ledger still has every item; only items whose every number is in
    # the checkout's committed profiles (not in a reports folder) can be reproduced, and the
    # page shows the ledger's count.
    ledger = json.loads((tmp_path / "reproduction.json").read_text())
    assert len(ledger["items"]) == 58
    reproduced = [e for e in ledger["items"] if e["status"] == "reproduced"]
    assert all(ev.startswith("profiles/") for e in reproduced for ev in e["evidence"])
    assert len(reproduced) == ledger["counts"]["reproduced"] <= 1
    assert f"<span class='st-reproduced'>{len(reproduced)} reproduced</span>" in page
    assert "Fig. 7" in page and "Table II" in page and "Figure 16" in page
    assert "no such file" in page  # why an item has no number


def test_report_ledger_rebuilds_the_ledger_and_index_from_what_is_there(tmp_path, capsys):
    from workbench.cli import main

    assert main(["report", "--ledger", "--reports-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "54 result figures and tables" in out
    ledger = json.loads((tmp_path / "reproduction.json").read_text())
    assert f"{ledger['counts']['reproduced']} reproduced" in out
    assert (tmp_path / "index.html").exists() and (tmp_path / "reproduction.json").exists()


def test_a_renamed_metrics_field_is_named_not_silently_blank(tmp_path):
    from workbench.errors import InputError
    from workbench.lab.reports.metrics import QuickstartMetrics, read_metrics, write_metrics

    path = write_metrics(tmp_path, _quickstart_metrics())
    assert read_metrics(path, QuickstartMetrics).d0.label.startswith("EfficientNet")
    data = json.loads(path.read_text())
    data["d0"]["display label"] = data["d0"].pop("label")
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"metrics.json: d0.label: metrics do not match"):
        read_metrics(path, QuickstartMetrics)
    with pytest.raises(InputError, match="not a report's metrics class"):
        write_metrics(tmp_path, {"d0": 1})


@pytest.mark.parametrize("name", ["quickstart", "carin_designs", "oodin_solve_time",
                                  "rass_vs_nsga2", "host", "runtime", "delen", "masa", "flexnn"])
def test_every_committed_report_reads_back_through_its_metrics_class(name):
    """The contract between the notebooks that write metrics.json and the index that reads it."""
    from pathlib import Path

    from workbench.lab.reports.metrics import METRICS, read_metrics

    path = Path(__file__).resolve().parents[1] / "reports" / name / "metrics.json"
    assert isinstance(read_metrics(path, METRICS[name]), METRICS[name])


@pytest.mark.notebook
@pytest.mark.timeout(600)
def test_workbench_report_quick_writes_reports_and_the_index(tmp_path, capsys):
    pytest.importorskip("papermill")
    from workbench.cli import main

    assert main(["report", "--quick", "--only", "quickstart", "--png", "--quiet",
                 "--reports-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "quickstart" in out and "index:" in out
    assert (tmp_path / "index.html").exists()
    assert (tmp_path / "quickstart" / "metrics.json").exists()
    assert (tmp_path / "assets" / "plotly.min.js").exists()
    if reports.chromium():
        pngs = list((tmp_path / "quickstart" / "figures").glob("*.png"))
        assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert not list(tmp_path.rglob(".*partial*"))


def test_a_failing_report_is_one_line_and_the_others_still_run(tmp_path, monkeypatch, capsys):
    from workbench.cli import main

    class NotebookError(Exception):  # shaped like papermill's PapermillExecutionError
        ename, evalue, exec_count = "InputError", "profiles/x.json: no such profile file", 3

    ran = []

    def fake(name, *, reports_dir, **_kw):
        ran.append(name)
        if name == "masa":
            raise NotebookError("a 60-line traceback")
        d = reports_dir / name
        d.mkdir(parents=True, exist_ok=True)
        return reports.ReportRun(name, d / f"{name}.ipynb", d / f"{name}.html", None, [], 1.0)

    monkeypatch.setattr("workbench.lab.reports.run.run_report", fake)
    rc = main(["report", "--only", "masa", "--only", "flexnn", "--reports-dir", str(tmp_path),
               "--quiet", "--no-png"])
    out = capsys.readouterr().out
    assert rc == 1 and ran == ["masa", "flexnn"]
    assert "masa: FAILED after" in out and \
        "InputError: profiles/x.json: no such profile file (cell [3])" in out
    assert "traceback" not in out and "1 of 2 reports failed" in out
    assert (tmp_path / "index.html").exists()


@pytest.mark.parametrize("value, text", [(100, "100"), (1611.2, "1,611"), (2, "2"), (0, "0"),
                                         (0.01234, "0.0123"), (25.83, "25.8"), (None, "n/a"),
                                         (2.5e7, "2.5e+07")])
def test_index_numbers_read_as_numbers(value, text):
    from workbench.lab.reports.index import _fmt, _pct_change

    assert _fmt(value) == text
    assert _pct_change(-3.87) == "3.87% higher" and _pct_change(63.2) == "63.2% lower"


def test_a_figures_folder_holding_a_users_files_is_refused_before_the_run(tmp_path):
    """`workbench report --png` replaces <reports>/<name>/figures whole: a folder holding
    anything but PNGs (a reports dir pointed at one's own files) is refused, nothing deleted."""
    from workbench.errors import InputError
    from workbench.lab.reports import run_report

    figures = tmp_path / "quickstart" / "figures"
    figures.mkdir(parents=True)
    (figures / "thesis.tex").write_text("years of work\n")
    (figures / "old.png").write_bytes(b"\x89PNG")
    with pytest.raises(InputError, match="thesis.tex"):
        run_report("quickstart", reports_dir=tmp_path, png=True, progress=False)
    assert (figures / "thesis.tex").read_text() == "years of work\n"


def test_report_ledger_refuses_a_folder_that_is_not_there_and_warns_about_unreadable_evidence(
        tmp_path, capsys):
    from workbench.cli import main

    assert main(["report", "--ledger", "--reports-dir", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert "--reports-dir" in err and "not a folder" in err and "Traceback" not in err
    assert not (tmp_path / "nope").exists()
    (tmp_path / "bench").mkdir()
    # A benchmark file whose number is the wrong type: a warning names it, the ledger is written.
    (tmp_path / "bench" / "throttle.json").write_text(json.dumps(
        {"source": "measured", "by_step": {"first_throttle_ms_median": "343",
                                           "second_throttle_ms_median": None}}))
    assert main(["report", "--ledger", "--reports-dir", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "warning: no number for" in err and "Traceback" not in err
    ledger = json.loads((tmp_path / "reproduction.json").read_text())
    (fig8,) = [e for e in ledger["items"] if e["paper"] == "oodin" and e["id"] == "Fig. 8"]
    assert fig8["status"] == "not-reproduced" and "not a number: '343'" in fig8["reason"]


def test_no_report_ends_in_a_raw_object_dump():
    """A report reads as a paper to its end: no notebook's last code cell leaves a bare value
    (a dataclass, a dict, a name) for Jupyter to print as its repr."""
    import ast

    from conftest import ROOT

    dumps = (ast.Name, ast.Attribute, ast.Dict, ast.DictComp, ast.Subscript, ast.List,
             ast.Tuple, ast.Constant, ast.ListComp)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        if path.name == "explorer.ipynb":
            continue  # the explorer page ends by showing its widget, as it should
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        if not cells:
            continue
        body = ast.parse("".join(cells[-1]["source"])).body
        last = body[-1] if body else None
        assert not (isinstance(last, ast.Expr) and isinstance(last.value, dumps)), path.name
