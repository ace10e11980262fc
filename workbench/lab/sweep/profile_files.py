"""The profile files a sweep solves on: each read and parsed once per content in a process (a
worker solves many problems on the same few profiles), and their sha256, which a journal row is
reused by."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ...profiles.store import MAX_PROFILE_BYTES

#: Parsed profiles by (path, sha256 of the text): one parse per profile content per process (a
#: worker solves many problems on the same few profiles), an edited file is parsed again.
_PARSED: dict[tuple[str, str], Any] = {}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_profile(path: Path) -> tuple[Any, str]:
    """A profile file parsed, and the sha256 of the very text that was parsed."""
    from ...fileio import read_text

    return _parse_profile(read_text(path, what="profile file", limit=MAX_PROFILE_BYTES), path)


def _parse_profile(text: str, path: Any) -> tuple[Any, str]:
    """A profile's text parsed (cached by name and content), and the text's sha256."""
    from ...fileio import parse_json
    from ...profiles.store import profile_from_dict

    sha = _digest(text)
    prof = _PARSED.get((str(path), sha))
    if prof is None:
        prof = profile_from_dict(parse_json(text, file=path), file=path)
        if len(_PARSED) >= 16:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[(str(path), sha)] = prof
    return prof, sha


def profile_digest(profile: str) -> str | None:
    """The sha256 of a task's profile file as it is now (None: it cannot be read)."""
    from ...fileio import read_text
    from ...profiles import resolve_profile

    try:
        return _digest(read_text(resolve_profile(profile), what="profile file", limit=MAX_PROFILE_BYTES))
    except (OSError, ValueError):  # InputError is a ValueError: the task's row will say why
        return None
