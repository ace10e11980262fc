"""Text a user supplied, made safe: names checked where they enter (no control characters) and
anything user-supplied escaped before it reaches a terminal. Standard library only.

A terminal obeys escape sequences: a model, device or session name holding ``ESC [2J`` would
clear the screen, and one holding ``ESC ]8;;`` would plant a link. So names are refused at the
door, and every message that quotes user text goes through :func:`printable` on its way out.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import InputError

#: C0 and C1 controls (tab and newline included: a name has no use for them), DEL, and the
#: Unicode controls that reorder or hide text (bidi overrides and isolates, line/paragraph
#: separators, zero-width characters): each can make printed text say something it does not.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
#: The same, less newline and tab, for printing multi-line messages (an SLO caret excerpt).
_CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e"
                              "\u2060-\u2069\ufeff]")

#: The longest name anything takes (a model, task, device, use case or session).
MAX_NAME = 128


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def printable(text: Any, *, multiline: bool = False) -> str:
    """``text`` with every control character written as an escape (``\\x1b``), so it prints as
    what it is; newlines and tabs are kept when ``multiline``."""
    return (_CONTROL_IN_TEXT if multiline else _CONTROL).sub(_escape, str(text))


def has_control(text: str) -> bool:
    """True when ``text`` holds a character :func:`printable` would escape."""
    return _CONTROL.search(text) is not None


def check_name(value: Any, *, what: str, file: Any = None, where: str | None = None,
               max_len: int = MAX_NAME) -> str:
    """A user-supplied name (model, task, device, use case, session), or an InputError naming
    ``what`` and where it came from: a non-empty string of at most ``max_len`` characters with
    no control characters and no surrounding spaces."""
    if not isinstance(value, str):
        raise InputError(f"a {what} name must be text", file=file, where=where, value=value)
    if not value:
        raise InputError(f"the {what} name is empty", file=file, where=where)
    if len(value) > max_len:
        raise InputError(f"a {what} name has at most {max_len} characters (got {len(value)})",
                         file=file, where=where)
    if has_control(value):
        raise InputError(f"a {what} name may not hold control characters",
                         file=file, where=where, value=printable(value))
    if value != value.strip():
        raise InputError(f"a {what} name may not start or end with a space", file=file,
                         where=where, value=value)
    return value
