"""A sweep's journal (JSON lines of finished rows) and which of its rows an unchanged task on
an unchanged profile may reuse."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from .grid import SweepTask
from .profile_files import profile_digest
from .task import input_key


def read_journal(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The rows an earlier (interrupted) run wrote, by task key; a torn last line is ignored."""
    out: dict[str, dict[str, Any]] = {}
    p = Path(path)
    if not p.exists():
        return out
    for line in p.read_text("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line a kill cut short
        if isinstance(row, dict) and "key" in row:
            out[row["key"]] = row
    return out


def reusable(tasks: Iterable[SweepTask], journal: str | os.PathLike | None
             ) -> dict[str, dict[str, Any]]:
    """The journal's rows that answer ``tasks`` as they are now, by task key: a row written for
    the same task on a profile of the same content. Rows of other options or of a profile since
    changed are left out (and computed again)."""
    done = read_journal(journal) if journal else {}
    if not done:
        return {}
    digests: dict[str, str | None] = {}
    out = {}
    for t in tasks:
        row = done.get(t.key())
        if row is None:
            continue
        if t.profile not in digests:
            digests[t.profile] = profile_digest(t.profile)
        if row.get("input_key") == input_key(t, digests[t.profile]):
            out[t.key()] = row
    return out
