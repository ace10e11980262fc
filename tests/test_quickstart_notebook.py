"""The quickstart notebook executes with papermill and records what it found in metrics.json."""

import json

import pytest

pytest.importorskip("papermill")

from workbench.lab.reports import run_report  # noqa: E402


@pytest.mark.notebook
def test_quickstart_report(tmp_path):
    run = run_report("quickstart", reports_dir=tmp_path, quick=True, progress=False)
    m = json.loads(run.metrics.read_text())
    assert m["profile_source"] == "modelled"
    assert m["n_feasible"] > 0 and m["n_pareto"] >= 1
    assert m["d0"]["label"] == "EfficientNet Lite0 FFX8, CPU_{4,T}"
    assert m["matches_carin_table7_d0"] is True
    html = run.html.read_text()
    # One shared plotly.js for every report, not a 4.8 MB copy inside each page.
    assert "../assets/plotly.min.js" in html and len(html) < 1_500_000
    assert (tmp_path / "assets" / "plotly.min.js").exists()
    # ...and one shared stylesheet instead of ~260 KB of inline CSS per page.
    (css,) = (tmp_path / "assets").glob("notebook-*.css")
    assert f'href="../assets/{css.name}"' in html and "<style" not in html.split("</head>")[0]
    assert len(html) < 300_000
    assert not list(tmp_path.glob("quickstart/.*"))  # no partial files left
    # The page reads as an evaluation: no code cells (the notebook beside it keeps them).
    assert "jp-CodeMirrorEditor" not in html and "import " in run.notebook.read_text()
    shown = run_report("quickstart", reports_dir=tmp_path / "code", quick=True, progress=False,
                       show_code=True)
    assert "jp-CodeMirrorEditor" in shown.html.read_text()


@pytest.mark.notebook
def test_other_parameters_reach_the_notebook(tmp_path):
    run = run_report("00_quickstart", reports_dir=tmp_path, progress=False,
                     parameters={"device": "a71", "max_latency_ms": 20.0})
    m = json.loads(run.metrics.read_text())
    assert m["device"] == "a71" and m["d0"]["L_max"] <= 20.0


def test_unknown_report_name(tmp_path):
    from workbench.errors import InputError

    with pytest.raises(InputError, match="no notebook named 'nope'"):
        run_report("nope", reports_dir=tmp_path)


@pytest.mark.notebook
def test_render_only_rewrites_the_html_from_the_executed_notebook(tmp_path, capsys):
    from workbench.cli import main

    run = run_report("quickstart", reports_dir=tmp_path, quick=True, progress=False,
                     show_code=True)
    before = run.notebook.read_text()
    assert main(["report", "--render-only", "--reports-dir", str(tmp_path)]) == 0
    assert "jp-CodeMirrorEditor" not in run.html.read_text()
    assert run.notebook.read_text() == before  # nothing ran again
    assert (tmp_path / "index.html").exists() and "rendered" in capsys.readouterr().out
