"""`workbench report`: the index page, PNG figures, and which notebooks are reports."""

import json

import pytest

from workbench.lab import reports
from workbench.lab.report_index import write_index


def test_only_numbered_notebooks_are_reports():
    names = reports.available()
    assert "explorer" not in names and "00_quickstart" in names
    assert all(n.partition("_")[0].isdigit() for n in names)


def test_the_index_links_reports_and_sets_paper_beside_workbench(tmp_path):
    q = tmp_path / "quickstart"
    q.mkdir()
    (q / "quickstart.html").write_text("<html></html>")
    (q / "metrics.json").write_text(json.dumps({
        "profile_source": "modelled", "matches_carin_table7_d0": True,
        "d0": {"label": "EfficientNet Lite0 FFX8, CPU_{4,T}"}}))
    r = tmp_path / "runtime"
    r.mkdir()
    (r / "runtime.html").write_text("<html></html>")
    (r / "metrics.json").write_text(json.dumps({"source": "measured"}))  # lacks the run data
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "x.json").write_text(json.dumps(
        {"targets": {"speed": {"target": 1, "measured": 2, "met": False}}}))
    page = write_index(tmp_path).read_text()
    assert "<a href='quickstart/quickstart.html'>" in page
    assert "EfficientNet Lite0 FFX8, CPU_{4,T} (matches the paper)" in page
    assert "not run yet" in page  # carin_designs and others are absent
    assert "measured" in page and "modelled" in page
    assert "speed: 2 (MISSED)" in page
    assert "Fig. 7" in page and "d0 (EfficientNet Lite0 FFX8" in page  # the paper's side


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
