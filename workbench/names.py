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
#: The same, less newline, tab and carriage return, for printing multi-line text (an SLO caret
#: excerpt, a table, a progress line).
_CONTROL_IN_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e"
                              "\u2060-\u2069\ufeff]")

#: The longest name anything takes (a model, task, device, use case or session).
MAX_NAME = 128


def _escape(m: re.Match[str]) -> str:
    # JSON's escape form, so that escaped JSON output is still JSON that decodes to the text.
    return f"\\u{ord(m.group(0)):04x}"


def printable(text: Any, *, multiline: bool = False) -> str:
    """``text`` with every control character written as an escape (``\\u001b``), so it prints
    as what it is; newlines, tabs and carriage returns are kept when ``multiline``."""
    return (_CONTROL_IN_TEXT if multiline else _CONTROL).sub(_escape, str(text))


def has_control(text: str) -> bool:
    """True when ``text`` holds a character :func:`printable` would escape."""
    return _CONTROL.search(text) is not None


def first_control(text: str, *, whitespace_ok: bool = False) -> re.Match[str] | None:
    """Where the first control character of ``text`` is (tabs, newlines and carriage returns
    pass when ``whitespace_ok``), or None."""
    return (_CONTROL_IN_TEXT if whitespace_ok else _CONTROL).search(text)


def masked(text: str) -> str:
    """``text`` with each control character replaced by one U+FFFD, so an excerpt keeps its
    columns (a caret stays under its character) and cannot act on a terminal."""
    return _CONTROL.sub("\ufffd", text)


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
                         file=file, where=where, value=value)
    if value != value.strip():
        raise InputError(f"a {what} name may not start or end with a space", file=file,
                         where=where, value=value)
    return value


def validator(what: str, *, max_len: int = MAX_NAME):
    """:func:`check_name` as a schema's field check (pydantic's ``AfterValidator``): raises
    ValueError with the message alone, so the schema's error names the field's JSON path."""
    # Names repeat on every row of a profile (task, model): each distinct one is checked once.
    seen: set[str] = set()

    def check(value: Any) -> Any:
        if type(value) is str and value in seen:
            return value
        try:
            value = check_name(value, what=what, max_len=max_len)
        except InputError as e:
            raise ValueError(e.message) from None
        if len(seen) > 4096:
            seen.clear()
        seen.add(value)
        return value
    return check


class EscapingWriter:
    """A text stream that escapes control characters (keeping newlines, tabs and carriage
    returns) before they reach the stream it wraps: the command line's standard output, where
    tables and JSON quote names and values from users' files."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(printable(text, multiline=True))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
