"""The source papers' published tables, as data with their citations.

The tables live in ``workbench/data/papers/<paper>.json`` (transcribed from the papers in
``shared/seeds``); this module only reads them. Nothing here is measured by the workbench.

Example:
    >>> from workbench import papers
    >>> papers.model_table("uc1")["table"]
    'Table 2'
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from .errors import InputError

PAPERS = ("carin", "oodin", "delen", "masa", "flexnn")
#: CARIn's use cases (its section 6), the names every layer uses for them.
USE_CASES = ("uc1", "uc2", "uc3", "uc4")


@lru_cache(maxsize=None)
def _load(paper: str) -> dict[str, Any]:
    text = resources.files("workbench.data.papers").joinpath(f"{paper}.json").read_text("utf-8")
    return json.loads(text)


def paper(name: str) -> dict[str, Any]:
    """The whole transcription of one paper (``'carin'``, ``'oodin'``, ``'delen'``); a deep copy."""
    if name not in PAPERS:
        raise InputError(f"unknown paper; known: {', '.join(PAPERS)}", value=name)
    return json.loads(json.dumps(_load(name)))


def citation(name: str) -> str:
    """How to cite a paper whose data a report shows."""
    if name not in PAPERS:
        raise InputError(f"unknown paper; known: {', '.join(PAPERS)}", value=name)
    return _load(name)["citation"]


def model_tables() -> list[dict[str, Any]]:
    """CARIn Tables 2-5: one entry per task, with models, FLOPs, params and accuracy per precision."""
    return paper("carin")["model_tables"]


def model_table(task: str) -> dict[str, Any]:
    """The CARIn model table of one task (``uc1``, ``uc2``, ``uc3-vision``, ``uc3-audio``,
    ``uc4-gender``, ``uc4-age``, ``uc4-ethnicity``)."""
    for t in model_tables():
        if t["task"] == task:
            return t
    known = ", ".join(t["task"] for t in model_tables())
    raise InputError(f"no CARIn model table for this task; known: {known}", value=task)


def use_case_tasks(use_case: str) -> list[str]:
    """The tasks of a CARIn use case (``uc1`` .. ``uc4``)."""
    ucs = _load("carin")["use_cases"]
    if use_case not in ucs or use_case == "section":
        raise InputError(f"unknown use case; known: {', '.join(USE_CASES)}", value=use_case)
    return list(ucs[use_case]["tasks"])


def device_rows() -> dict[str, dict[str, Any]]:
    """Device specs by short name, from CARIn Table 6 and OODIn Table I (CARIn's wins on overlap)."""
    rows = {r["device"]: dict(r, table="oodin Table I") for r in paper("oodin")["devices"]["rows"]}
    for r in paper("carin")["devices"]["rows"]:
        rows[r["device"]] = dict(r, table="carin Table 6")
    return rows


def parse_clocked(text: str | None) -> tuple[str | None, float | None]:
    """``'Mali-G77 MP11 @800 MHz'`` -> ``('Mali-G77 MP11', 800.0)``; a name alone keeps clock None."""
    if not text:
        return None, None
    m = re.match(r"^(.*?)\s*@\s*([0-9.]+)\s*MHz\s*$", text)
    if m:
        return m.group(1).strip(), float(m.group(2))
    return text.strip(), None


def parse_ram(text: str) -> tuple[float, float | None]:
    """``'6 GB @2750 MHz'`` -> ``(6.0, 2750.0)``."""
    m = re.match(r"^\s*([0-9.]+)\s*GB\s*(?:@\s*([0-9.]+)\s*MHz)?\s*$", text)
    if not m:
        raise InputError("cannot read RAM spec", value=text)
    return float(m.group(1)), (float(m.group(2)) if m.group(2) else None)
