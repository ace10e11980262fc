"""Errors the workbench raises for bad input. Standard library only."""

from __future__ import annotations

from typing import Any


class WorkbenchError(Exception):
    """Base class of every error the workbench raises on purpose."""


class InputError(WorkbenchError, ValueError):
    """Bad input: names the file, the place in it (JSON path, row, column) and the value.

    Attributes:
        file: The file the input came from, or None for in-memory data.
        where: A JSON path such as ``configs[3].L`` or a CSV place such as ``row 4, column L``.
        value: The offending value (``...`` when there is none to show).
        message: What is wrong, in words.
    """

    def __init__(self, message: str, *, file: Any = None, where: str | None = None,
                 value: Any = ...) -> None:
        self.file = None if file is None else str(file)
        self.where = where
        self.value = value
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        parts = [p for p in (self.file, self.where) if p]
        head = ": ".join(parts)
        text = f"{head}: {self.message}" if head else self.message
        if self.value is not ...:
            text += f" (got {self.value!r})"
        return text


class MissingExtra(WorkbenchError, ImportError):
    """An optional package is not installed: names what needs it, the package and the
    ``pip install`` line of the extra that brings it (one line on the command line).

    Example:
        >>> str(MissingExtra("optuna", "tune", needs="the optuna-tpe solver"))
        "the optuna-tpe solver needs optuna: pip install 'workbench[tune]'"
    """

    def __init__(self, package: str, extra: str, *, needs: str = "this", hint: str = "") -> None:
        self.package, self.extra = package, extra
        text = f"{needs} needs {package}: pip install 'workbench[{extra}]'"
        super().__init__(f"{text} ({hint})" if hint else text)
