"""The committed benchmark outputs (``reports/bench/*.json``, written by ``benchmarks/``): reports
read their measured sections from here instead of measuring again."""

from __future__ import annotations

import json
from pathlib import Path

from ... import workspace
from ...errors import InputError


def bench_file(name: str) -> Path:
    """``reports/bench/<name>`` of the checkout (the committed one), else of the workspace."""
    src = workspace.checkout()
    return (src if src is not None else workspace.home()) / "reports" / "bench" / name


def bench_section(name: str, section: str | None = None, path: str | Path | None = None
                  ) -> dict | None:
    """The benchmark output ``name`` (e.g. ``memory.json``), or one ``section`` of it; None when
    there is none (not run here, or the run was skipped)."""
    path = Path(path) if path is not None else bench_file(name)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"cannot read the benchmark's output: {e}", file=path) from None
    if section is None:
        return data if isinstance(data, dict) else None
    part = data.get(section) if isinstance(data, dict) else None
    return part if isinstance(part, dict) and "skipped" not in part else None
