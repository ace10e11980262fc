"""Atomic file writes: a reader never sees a half-written profile, report or bundle."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def _mode_for(path: Path) -> int:
    """Keep an existing file's permissions; new files get the usual 0o666 minus the umask."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` via a temporary file in the same folder and an atomic rename.

    If anything fails, the previous file (if any) is left untouched and no temporary remains.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def dumps_json(data: Any, *, row_lists: tuple[str, ...] = ()) -> str:
    """JSON text with one-space indentation, except that lists under the keys ``row_lists`` hold
    one compact object per line (diff-friendly tables). NaN and infinities are rejected."""
    if not isinstance(data, dict) or not row_lists:
        return json.dumps(data, indent=1, allow_nan=False, ensure_ascii=False)
    parts = []
    for key, value in data.items():
        k = json.dumps(key)
        if key in row_lists and isinstance(value, list) and value:
            rows = ",\n  ".join(json.dumps(v, allow_nan=False, ensure_ascii=False,
                                            separators=(",", ":")) for v in value)
            parts.append(f" {k}: [\n  {rows}\n ]")
        else:
            body = json.dumps(value, indent=1, allow_nan=False, ensure_ascii=False)
            parts.append(f" {k}: " + body.replace("\n", "\n "))
    return "{\n" + ",\n".join(parts) + "\n}"


def atomic_write_json(path: str | os.PathLike, data: Any, *,
                      row_lists: tuple[str, ...] = ()) -> Path:
    """Serialise ``data`` as JSON (see :func:`dumps_json`) and write it atomically."""
    return atomic_write_text(path, dumps_json(data, row_lists=row_lists) + "\n")
