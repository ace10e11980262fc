"""Load, validate and save device profiles as JSON (atomic writes, clear errors)."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import workspace
from ..errors import InputError
from ..fileio import atomic_write_json, parse_json, read_text
from .schema import PathError, Profile

#: Where the committed profiles live (``profiles/`` at the top of a checkout).


def _json_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def error_from_validation(exc: ValidationError, *, file: Any = None, what: str | None = None,
                          where: str | None = None) -> InputError:
    """Turn pydantic's report into one InputError naming the file, JSON path and value.
    ``what`` opens the message (e.g. "not an explorer session"); ``where`` names what the
    JSON path is in (e.g. "URL")."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = tuple(p for p in first["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    msg = first["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    path = _json_path(loc) if loc else None
    value = first.get("input", ...)
    err = (first.get("ctx") or {}).get("error")
    if isinstance(err, PathError):  # a whole-profile check knows its own JSON path
        prefix = (path + ".") if path else ""
        path, msg, value = prefix + err.where, err.message, err.value
    elif isinstance(err, InputError):  # its text already ends with the value: say it once
        msg = err.message
        value = value if err.value is ... else err.value
    elif first["type"] == "missing":
        msg, value = "required field is missing", ...
    elif first["type"] == "extra_forbidden":
        msg = "unknown field (check its spelling)"
    elif isinstance(value, (dict, list)) or not loc:
        value = ...  # a whole object is no help in a one-line error
    if len(errors) > 1:
        msg += f" [and {len(errors) - 1} more error(s)]"
    if what:
        msg = f"{what}: {msg}"
    if where:
        path = f"{where}: {path}" if path else where
    return InputError(msg, file=file, where=path, value=value)


def profile_from_dict(data: Any, *, file: Any = None) -> Profile:
    """Validate a parsed JSON document as a Profile, raising InputError on bad input."""
    if not isinstance(data, dict):
        raise InputError("a profile must be a JSON object", file=file, where="(top level)",
                         value=type(data).__name__)
    # The cyclic garbage collector paused while the rows are built: validation makes no
    # cycles, and a 10^6-row profile spent a quarter of its validation in collections
    # triggered by its own new objects.
    paused = gc.isenabled()
    gc.disable()
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise error_from_validation(exc, file=file) from None
    finally:
        if paused:
            gc.enable()


#: The largest profile file read: a 10^6-row table is about 0.5 GB of JSON (and some 5 GB of
#: rows in memory once read); beyond 1 GiB a table wants splitting by task.
MAX_PROFILE_BYTES = 1 << 30


def load_profile(path: str | os.PathLike) -> Profile:
    """Read and validate a profile: a JSON file, or a name such as ``s20fe`` or ``host`` (see
    :func:`resolve_profile`).

    Raises:
        InputError: The file is missing, is not JSON, or does not fit the schema; the message
            names the file, the JSON path and the value.
    """
    path = resolve_profile(path)
    data = parse_json(read_text(path, what="profile file", limit=MAX_PROFILE_BYTES), file=path)
    return profile_from_dict(data, file=path)


def save_profile(profile: Profile, path: str | os.PathLike) -> Path:
    """Validate and write a profile atomically (None fields are omitted to keep files small)."""
    # Re-validating catches objects mutated into an invalid state after construction.
    data = profile.model_dump(mode="json", exclude_none=True)
    for key in ("multi_exit", "failed"):
        if not data.get(key):
            data.pop(key, None)  # keep profiles without them as they were
    profile_from_dict(data, file=path)
    return atomic_write_json(path, data, row_lists=("configs", "coexecution", "failed"))


def resolve_profile(name_or_path: str | os.PathLike, *, directory: str | os.PathLike | None = None
                    ) -> Path:
    """A profile path from a path or a short name such as ``s20fe``, looked up in ``directory``
    or else in the workspace's profiles and then the checkout's committed ones."""
    p = Path(name_or_path)
    if p.suffix == ".json" or p.exists():
        return p
    dirs = [Path(directory)] if directory else workspace.profile_dirs()
    for d in dirs:
        cand = d / f"{name_or_path}.json"
        if cand.exists():
            return cand
    known = ", ".join(sorted({x.stem for d in dirs for x in d.glob("*.json")}))
    raise InputError(f"no profile named {str(name_or_path)!r} (known: {known or 'none'})",
                     file=dirs[0] / f"{name_or_path}.json")


def list_profiles(directory: str | os.PathLike | None = None) -> list[Path]:
    """Profile files in a folder (default: every folder names are looked up in; where two hold
    the same name, the one a look-up finds), sorted by name."""
    dirs = [Path(directory)] if directory else workspace.profile_dirs()
    found: dict[str, Path] = {}
    for d in dirs:
        for x in sorted(d.glob("*.json")):
            found.setdefault(x.stem, x)
    return [found[k] for k in sorted(found)]
