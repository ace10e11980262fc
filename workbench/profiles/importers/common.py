"""What every importer shares: the workbench's configuration ids, numbers read exactly (ASCII
digits, a ``.`` decimal point, thousands commas only where a log groups digits), the device a
table is for, and imported rows wrapped in a profile."""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import ValidationError

from ...errors import InputError
from ..schema import PRECISIONS, Config, Device, Engine, Profile, Provenance, Source, Task
from ..store import error_from_validation


def slug(text: str) -> str:
    """Lower-case id fragment: ``'EfficientNet Lite0'`` -> ``'efficientnet-lite0'``."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def config_id(model: str, precision: str, processor: str, *, task: str | None = None,
              threads: int | None = None, xnnpack: bool | None = None,
              extra: str | None = None) -> str:
    """The workbench's id for a configuration, e.g. ``uc1:efficientnet-lite0:FFX8:CPU:t4:xnn``."""
    parts = [slug(task)] if task and task != "default" else []
    parts += [slug(model), precision, processor]
    if threads is not None:
        parts.append(f"t{threads}")
    if xnnpack is not None:
        parts.append("xnn" if xnnpack else "noxnn")
    if extra:
        parts.append(extra)
    return ":".join(parts)


#: A number as the importers read it: ASCII digits only (``float()`` and ``\d`` also take other
#: scripts' digits: full-width, Arabic-Indic, ...), an optional sign, fraction and exponent; no
#: ``_`` (``float("1_000")`` is 1000), no ``inf``/``nan`` spelled out.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: Thousands grouped by commas with a ``.`` decimal point, as a locale-aware printer writes
#: benchmark_model's numbers: ``5,741.6``, ``21,771``, ``1,234,567``.
_GROUPED = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?")


def _decimal(text: str, *, grouped: bool = False) -> float:
    """``text`` as a float, or a ValueError saying why not.

    ``grouped``: a comma between groups of three digits is a thousands separator (``5,741.6`` is
    5741.6). Any other comma inside a number (``5741,6``, ``5.741,6``, ``57,41``) is a decimal
    comma or something worse, and is refused rather than guessed. Without ``grouped`` every comma
    is refused: in a CSV table ``"5,741"`` may as well be 5.741 ms written with a decimal comma.
    """
    t = text.strip()
    if grouped and _GROUPED.fullmatch(t):
        t = t.replace(",", "")
    if _DECIMAL.fullmatch(t):
        return float(t)
    if not t.isascii():
        raise ValueError("not a number (digits must be ASCII 0-9)")
    if "," in t:
        raise ValueError("not a number (',' is read only as a thousands separator between "
                         "groups of three digits, with '.' as the decimal point: 5,741.6)"
                         if grouped else
                         "not a number (write '.' for the decimal point and no thousands "
                         "separators)")
    raise ValueError("not a number")


def _num(text: str, *, file: Any, line: int, what: str, positive: bool = False) -> float:
    """A number of the log, or an InputError naming the line (``1.2.3``, ``--``, ``1e400``,
    ``5741,6``, digits other than ASCII 0-9); ``5,741.6`` is 5741.6 (see _decimal)."""
    try:
        v = _decimal(text, grouped=True)
    except ValueError as exc:
        raise InputError(f"{what}: {exc}", file=file, where=f"line {line}",
                         value=text) from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise InputError(f"{what} must be a finite number {'> 0' if positive else '>= 0'}",
                         file=file, where=f"line {line}", value=text)
    return v


def _device(device: Device | str | None, name_hint: str) -> Device:
    if isinstance(device, Device):
        return device
    from ...names import check_name

    # --device is typed by the user: one error naming it, not the schema's traceback.
    return Device(name=check_name(device or name_hint, what="device", where="--device"))


def _assemble(configs: list[Config], *, device: Device, source: Source, provenance: Provenance,
              file: Any) -> Profile:
    """Wrap imported rows in a Profile whose engines and tasks are the ones the rows use."""
    engines: dict[str, Engine] = {}
    for c in configs:
        e = engines.setdefault(c.processor, Engine(name=c.processor, kind=c.kind, precisions=[]))
        if c.precision not in e.precisions:
            e.precisions = sorted({*e.precisions, c.precision}, key=PRECISIONS.index)
    tasks = [Task(name=t) for t in dict.fromkeys(c.task for c in configs)]
    try:
        return Profile(device=device, source=source, provenance=provenance,
                       engines=list(engines.values()), tasks=tasks, configs=configs)
    except ValidationError as exc:
        raise error_from_validation(exc, file=file) from None
