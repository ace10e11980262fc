"""Resuming a killed profiling run: the rows measured so far, one JSON line each, keyed by what
they depend on, and the row being measured when a process died."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable

from .options import Option
from .variants import Variant


def _row_key(v: Variant, o: Option, warmup: int, runs: int, cpu: str) -> str:
    """What a measured row depends on: the model file's bytes, the option, the protocol and the
    CPU it runs on.

    Keyed per row, not per run, so adding a model to a profile (or dropping one) re-measures only
    what changed; a row measured on a different file or protocol is measured again, and so is
    one measured on another CPU (a cloud machine's CPU changes from day to day, and the profile's
    device record names the CPU that measured every row)."""
    return hashlib.sha256(json.dumps([v.sha256, o.processor, o.threads, o.xnnpack, warmup, runs,
                                      cpu]).encode()).hexdigest()[:16]


class Partial:
    """Rows measured so far, appended one JSON line at a time (flushed), for resuming.

    Each line is a row with a ``_key`` (:func:`_row_key`); a later line replaces an earlier one of
    the same id. A file of another format starts afresh."""

    FORMAT = "workbench-partial/2"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[str, dict] = {}
        if path.exists():
            lines = path.read_text().splitlines()
            try:
                ok = bool(lines) and json.loads(lines[0]).get("format") == self.FORMAT
            except (json.JSONDecodeError, AttributeError):
                ok = False
            if ok:
                for line in lines[1:]:
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        break  # a line cut by the kill: measure that row again
                    self.rows[row["id"]] = row
            else:
                path.unlink()
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"format": self.FORMAT}) + "\n")

    def done(self, cid: str, key: str) -> bool:
        row = self.rows.get(cid)
        return row is not None and row.get("_key") == key

    def add(self, row: dict, key: str) -> None:
        row = {**row, "_key": key}
        self.rows[row["id"]] = row
        with self.path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def configs(self, ids: Iterable[str]) -> list[dict]:
        """The rows of ``ids`` (in that order) without their keys."""
        return [{k: v for k, v in self.rows[i].items() if k != "_key"} for i in ids]

    # A row being measured is named in a file beside the partial one until its result is
    # appended. A process that dies inside LiteRT (a crash, not an exception) leaves the file:
    # the next run tries that row once more, and after a second death records it as failed
    # instead of dying on it for ever. An interrupt (Ctrl-C) is not the row's fault: it clears
    # the file.
    @property
    def _current(self) -> Path:
        return self.path.with_name(self.path.name + ".measuring")

    def deaths(self, cid: str, key: str) -> int:
        """How many runs died while measuring this row."""
        try:
            cur = json.loads(self._current.read_text())
        except (OSError, ValueError):
            return 0
        return int(cur.get("deaths", 0)) + 1 if cur.get("id") == cid and \
            cur.get("_key") == key else 0

    def begin(self, cid: str, key: str, deaths: int) -> None:
        """Name the row being measured, with how many runs already died on it."""
        from ...fileio import atomic_write_text

        atomic_write_text(self._current, json.dumps({"id": cid, "_key": key, "deaths": deaths}))

    def end(self) -> None:
        self._current.unlink(missing_ok=True)
