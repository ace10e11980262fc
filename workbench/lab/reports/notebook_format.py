"""Notebooks and their executed copies in a stable form, so that a one-line change is a one-line
diff. Standard library only (notebooks are JSON).

* Source notebooks (``notebooks/*.ipynb``) are kept normalised: no outputs or execution counts,
  cell ids derived from the notebook's name and the cell's position (``quickstart-03``), only
  the ``tags`` of cell metadata, a fixed notebook metadata block. ``python -m
  workbench.lab.reports.notebook_format notebooks/*.ipynb`` (``make notebooks``) rewrites them;
  ``tests/test_notebook_format.py`` checks that the committed ones already are.
* Executed copies (``reports/<name>/<name>.ipynb``) are scrubbed of what changes on every run
  without meaning anything: papermill's timestamps, durations and absolute paths, Jupyter's
  execution timestamps, the Python patch version.
* ``metrics.json`` floats are rounded to 4 significant digits (what a measurement on this machine
  means; the full values stay in the executed notebook's outputs).
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import Any

from ...fileio import atomic_write_json, atomic_write_text

#: Notebook metadata of every source notebook.
SOURCE_METADATA = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}
SIGNIFICANT = 4


def cell_ids(stem: str, n: int) -> list[str]:
    """Deterministic cell ids: the report name and the position (``quickstart-00``)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "-", stem.partition("_")[2] or stem)[:56]
    return [f"{name}-{k:02d}" for k in range(n)]


def normalise_source(nb: dict[str, Any], stem: str) -> dict[str, Any]:
    """A source notebook with no outputs, deterministic ids and only cell tags kept."""
    cells = []
    for cid, cell in zip(cell_ids(stem, len(nb["cells"])), nb["cells"]):
        out: dict[str, Any] = {"cell_type": cell["cell_type"], "id": cid}
        tags = cell.get("metadata", {}).get("tags")
        out["metadata"] = {"tags": tags} if tags else {}
        src = cell.get("source", "")
        out["source"] = src if isinstance(src, list) else src.splitlines(keepends=True)
        if cell["cell_type"] == "code":
            out["execution_count"] = None
            out["outputs"] = []
        cells.append(out)
    return {"cells": cells, "metadata": dict(SOURCE_METADATA), "nbformat": 4,
            "nbformat_minor": 5}


def scrub_executed(nb: dict[str, Any]) -> dict[str, Any]:
    """An executed notebook without per-run noise (timestamps, durations, paths)."""
    meta = nb.get("metadata", {})
    pm = meta.get("papermill")
    if isinstance(pm, dict):
        meta["papermill"] = {k: v for k, v in pm.items()
                             if k in ("parameters", "default_parameters", "exception")}
    info = meta.get("language_info")
    if isinstance(info, dict) and isinstance(info.get("version"), str):
        info["version"] = ".".join(info["version"].split(".")[:2])
    figure_ids: dict[str, str] = {}
    for cell in nb.get("cells", []):
        cm = cell.get("metadata", {})
        cm.pop("execution", None)
        if isinstance(cm.get("papermill"), dict):
            cm["papermill"] = {k: v for k, v in cm["papermill"].items()
                               if k in ("exception", "status")}
        if "injected-parameters" in cm.get("tags", ()):
            cell["id"] = "injected-parameters"  # papermill draws a random one every run
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "text/html" in data:
                data["text/html"] = _stable_figure_ids(data["text/html"], figure_ids)
    return nb


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _stable_figure_ids(html: str | list[str], ids: dict[str, str]) -> str | list[str]:
    """plotly names each figure's div with a random UUID (the div and the script that draws
    into it); numbered in order of appearance instead, the same figure gets the same id on
    every run and a regenerated report differs only where its content does."""
    def stable(m: re.Match[str]) -> str:
        return ids.setdefault(m.group(0), f"{len(ids) + 1:08d}-0000-4000-8000-000000000000")

    if isinstance(html, list):
        return [_UUID.sub(stable, line) for line in html]
    return _UUID.sub(stable, html)


def round_floats(value: Any, digits: int = SIGNIFICANT) -> Any:
    """``value`` with every float rounded to ``digits`` significant digits (recursively)."""
    if isinstance(value, float):
        if value == 0 or not math.isfinite(value):
            return value
        return round(value, digits - 1 - int(math.floor(math.log10(abs(value)))))
    if isinstance(value, dict):
        return {k: round_floats(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [round_floats(v, digits) for v in value]
    return value


def dumps(nb: dict[str, Any]) -> str:
    """Notebook JSON as Jupyter writes it (one-space indent, sorted keys, trailing newline)."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def normalise_file(path: str | Path) -> bool:
    """Normalise a source notebook in place; True when it changed."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    new = dumps(normalise_source(json.loads(text), path.stem))
    if new == text:
        return False
    atomic_write_text(path, new)
    return True


def round_metrics_file(path: str | Path) -> None:
    """Round the floats of a ``metrics.json`` in place."""
    path = Path(path)
    atomic_write_json(path, round_floats(json.loads(path.read_text(encoding="utf-8"))))


def main(argv: list[str] | None = None) -> int:
    changed = [p for p in (argv if argv is not None else sys.argv[1:]) if normalise_file(p)]
    for p in changed:
        print(f"normalised {p}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
