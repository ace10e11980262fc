"""Notebooks stay diff-friendly: committed sources are normalised, executed copies lose per-run
noise, metrics are rounded."""

import json
import re
from pathlib import Path

from workbench.lab.reports import notebook_format as nf

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def test_committed_notebooks_are_normalised():
    stale = [p.name for p in sorted(NOTEBOOKS.glob("*.ipynb"))
             if nf.dumps(nf.normalise_source(json.loads(p.read_text()), p.stem)) != p.read_text()]
    assert stale == [], "run `make notebooks`"


def test_normalising_is_deterministic_and_idempotent(tmp_path):
    nb = {"cells": [{"cell_type": "code", "id": "random1", "source": "x = 1\n", "outputs": [1],
                     "execution_count": 7, "metadata": {"tags": ["parameters"], "x": 1}},
                    {"cell_type": "markdown", "id": "random2", "source": ["# t\n"],
                     "metadata": {}}],
          "metadata": {"kernelspec": {}, "widgets": {"state": 1}}, "nbformat": 4,
          "nbformat_minor": 4}
    p = tmp_path / "05_demo.ipynb"
    p.write_text(json.dumps(nb))
    assert nf.normalise_file(p) is True
    first = p.read_text()
    assert nf.normalise_file(p) is False and p.read_text() == first
    out = json.loads(first)
    assert [c["id"] for c in out["cells"]] == ["demo-00", "demo-01"]
    assert out["cells"][0]["outputs"] == [] and out["cells"][0]["execution_count"] is None
    assert out["cells"][0]["metadata"] == {"tags": ["parameters"]}
    assert "widgets" not in out["metadata"]


def test_executed_copies_lose_timestamps_paths_and_durations():
    nb = {"metadata": {"papermill": {"start_time": "2026", "duration": 4.4, "input_path": "/abs",
                                     "parameters": {"quick": True}, "exception": None},
                       "language_info": {"version": "3.11.7"}},
          "cells": [{"metadata": {"execution": {"iopub.status.busy": "2026"},
                                  "papermill": {"duration": 0.1, "status": "completed"}}}]}
    out = nf.scrub_executed(nb)
    assert out["metadata"]["papermill"] == {"parameters": {"quick": True}, "exception": None}
    assert out["metadata"]["language_info"]["version"] == "3.11"
    assert out["cells"][0]["metadata"] == {"papermill": {"status": "completed"}}
    assert nf.scrub_executed(json.loads(json.dumps(out))) == out


def test_executed_copies_get_the_same_ids_on_every_run():
    """papermill's parameters cell and plotly's figure divs get random ids per run; scrubbed,
    two runs of the same report are identical and each figure's div still matches its script."""
    def run(a: str, b: str, cell: str) -> dict:
        fig = (f'<div id="{a}"></div><script>Plotly.newPlot("{a}", [])</script>'
               f'<div id="{b}"></div><script>Plotly.newPlot("{b}", [])</script>')
        return {"metadata": {}, "cells": [
            {"id": cell, "metadata": {"tags": ["injected-parameters"]}, "outputs": []},
            {"id": "report-01", "metadata": {},
             "outputs": [{"data": {"text/html": [fig], "text/plain": ["<Figure>"]}}]}]}

    first = nf.scrub_executed(run("5e0c036c-a711-446f-b4df-7a2717cb3b11",
                                  "81f1377b-9d64-4065-bbcd-89d5e551b131", "1c0e8057"))
    second = nf.scrub_executed(run("489bcd92-db15-4b61-8f5f-dd5c3f7c12aa",
                                   "d746d842-f4b1-4d72-89e5-1ad8b5492d4b", "99a702cb"))
    assert first == second and first["cells"][0]["id"] == "injected-parameters"
    html = first["cells"][1]["outputs"][0]["data"]["text/html"][0]
    ids = re.findall(r'id="([^"]+)"', html)
    assert len(set(ids)) == 2 and all(f'newPlot("{i}"' in html for i in ids)


def test_metrics_floats_are_rounded_to_four_significant_digits():
    data = {"a": 3.6450547481609576, "b": [0.000123456, 152.89, 7.9296], "c": 2, "d": "x",
            "e": 0.0}
    assert nf.round_floats(data) == {"a": 3.645, "b": [0.0001235, 152.9, 7.93], "c": 2, "d": "x",
                                     "e": 0.0}


def _static_text(node) -> str:
    """The literal text of a caption expression: string constants, f-string parts and `+`."""
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_static_text(v) for v in node.values)
    if isinstance(node, ast.BinOp):
        return _static_text(node.left) + _static_text(node.right)
    if isinstance(node, ast.IfExp):
        return _static_text(node.body) + _static_text(node.orelse)
    return ""


def test_every_report_figure_has_a_caption_naming_its_data():
    """A report figure says what it shows and whether that is measured, modelled, simulated or
    the paper's: a reader must never take a modelled number for a measurement."""
    import ast

    from workbench.lab.reports import available
    from workbench.lab.viz import data_kinds

    missing = []
    for stem in available(NOTEBOOKS):
        nb = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            for node in ast.walk(ast.parse("".join(cell["source"]))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "show" and getattr(node.func.value, "id", "") == "viz"):
                    cap = next((k.value for k in node.keywords if k.arg == "caption"), None)
                    if cap is None or not data_kinds(_static_text(cap)):
                        missing.append(f"{stem}: line {node.lineno} of a cell")
    assert missing == []


def test_committed_reports_name_no_machine_paths():
    """The committed reports are read on other machines: a path into someone's checkout, home
    or temporary folder means a result that names where it was made instead of what it is."""
    import re

    reports = NOTEBOOKS.parent / "reports"
    pattern = re.compile(r"(/home/|/root/|/tmp/|/work/|/Users/|C:\\\\)")
    bad = [str(p.relative_to(reports)) for p in sorted(reports.glob("*/*"))
           if p.suffix in (".json", ".ipynb", ".html") and pattern.search(p.read_text("utf-8", "replace"))]
    assert bad == []
