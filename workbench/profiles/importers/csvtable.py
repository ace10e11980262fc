"""CSV configuration tables: one row per configuration, columns named as the profile's fields.

CSV columns: ``config, model, precision, processor`` (required) plus any metric column of the
profile (``A, S, W, L, L_std, L_min, L_max, L_p50, L_p90, L_p99, TP, E, MF``: the metric table's,
:data:`workbench.metrics.COLUMNS`) and the optional descriptive columns ``task, arch, params,
threads, xnnpack, delegate_precision, governor, memory_mode, memory_budget_mb, batch, source,
note``. A cell has no thousands separators (``"5,741"`` could be 5.741 with a decimal comma).
"""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...errors import InputError
from ...fileio import read_text
from ...metrics import COLUMNS
from ..schema import Config, Device, Profile, Provenance, Source
from ..store import error_from_validation
from .common import _assemble, _decimal, _device
from .edit import merge

REQUIRED_COLUMNS = ("config", "model", "precision", "processor")
#: Metric columns a CSV table may have (every profile column but ``params``, which is optional).
METRIC_COLUMNS = tuple(c for c in COLUMNS if c != "params")
OPTIONAL_COLUMNS = ("task", "arch", "params", "threads", "xnnpack", "delegate_precision",
                    "governor", "recognition_rate", "memory_mode", "memory_budget_mb", "batch",
                    "source", "note")
_INT_COLUMNS = {"threads", "batch"}
_FLOAT_COLUMNS = set(METRIC_COLUMNS) | {"params", "memory_budget_mb", "recognition_rate"}
_MISSING = {"", "-", "n/a", "na", "none"}

def _parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in {"1", "true", "t", "yes", "y"}:
        return True
    if t in {"0", "false", "f", "no", "n"}:
        return False
    raise ValueError("expected true/false")


def _cell(column: str, text: str) -> Any:
    if text.strip().lower() in _MISSING:
        return None
    if column in _INT_COLUMNS:
        v = _decimal(text)
        if not v.is_integer():
            raise ValueError("expected a whole number")
        return int(v)
    if column in _FLOAT_COLUMNS:
        v = _decimal(text)
        if not math.isfinite(v) or v < 0:
            raise ValueError("must be a finite number >= 0")
        return v
    if column == "xnnpack":
        return _parse_bool(text)
    return text.strip()

def import_csv(path: str | os.PathLike, *, device: Device | str | None = None,
               source: Source = "imported") -> Profile:
    """Read a configuration table from CSV into a Profile.

    Args:
        path: The CSV file.
        device: A Device description, or just its name (default: the file's stem).
        source: ``source`` of every row that has no ``source`` column value.

    Raises:
        InputError: Unknown or missing columns, a bad cell, duplicate config ids; the message
            names the file, the row (line number) and column, and the value.
    """
    path = Path(path)
    reader = csv.DictReader(io.StringIO(read_text(path, what="CSV table"), newline=""))
    try:
        header = reader.fieldnames or []
        if not header:
            raise InputError("empty CSV: expected a header row", file=path, where="line 1")
        header = [h.strip() for h in header]
        reader.fieldnames = header
        known = set(REQUIRED_COLUMNS) | set(METRIC_COLUMNS) | set(OPTIONAL_COLUMNS)
        for col in header:
            if col not in known:
                raise InputError(
                    f"unknown column; allowed: {', '.join(REQUIRED_COLUMNS + METRIC_COLUMNS)} "
                    f"(and optionally {', '.join(OPTIONAL_COLUMNS)})",
                    file=path, where="line 1", value=col)
        if len(set(header)) != len(header):
            dup = next(h for h in header if header.count(h) > 1)
            raise InputError("duplicate column", file=path, where="line 1", value=dup)
        for col in REQUIRED_COLUMNS:
            if col not in header:
                raise InputError(f"missing required column {col!r}", file=path, where="line 1")
        configs: list[Config] = []
        seen: dict[str, int] = {}
        for row in reader:
            line = reader.line_num
            if None in row:
                raise InputError("row has more cells than the header", file=path,
                                 where=f"line {line}", value=row[None])
            if all((v or "").strip() == "" for v in row.values()):
                continue
            fields: dict[str, Any] = {}
            for col, text in row.items():
                try:
                    v = _cell(col, text or "")
                except ValueError as exc:
                    raise InputError(str(exc), file=path, where=f"line {line}, column {col}",
                                     value=text) from None
                if v is not None:
                    fields["id" if col == "config" else col] = v
            for col in REQUIRED_COLUMNS:
                key = "id" if col == "config" else col
                if key not in fields:
                    raise InputError("required cell is empty", file=path,
                                     where=f"line {line}, column {col}")
            if fields["id"] in seen:
                raise InputError(f"duplicate config id (first at line {seen[fields['id']]})",
                                 file=path, where=f"line {line}, column config", value=fields["id"])
            seen[fields["id"]] = line
            fields.setdefault("source", source)
            try:
                configs.append(Config(**fields))
            except ValidationError as exc:
                err = error_from_validation(exc, file=path)
                column = "config" if err.where == "id" else err.where
                raise InputError(err.message, file=path, where=f"line {line}, column {column}",
                                 value=err.value) from None
    except csv.Error as exc:  # a NUL byte, a cell over the csv module's size limit
        raise InputError(f"not a readable CSV: {exc}", file=path,
                         where=f"line {reader.line_num}") from None
    if not configs:
        raise InputError("the CSV has a header but no rows", file=path)
    prov = Provenance(method=f"imported from CSV {path.name}", notes=[
        "Rows imported as given; units: ms, MB, FLOPs, mJ, samples/s."])
    return _assemble(configs, device=_device(device, path.stem), source=source, provenance=prov,
                     file=path)

def import_tables(paths: list[str | Path], *, device: str = "imported") -> Profile:
    """One profile from several CSV tables (one task per table, for multi-DNN problems); a table
    without a ``task`` column becomes a task named after its file."""
    merged: Profile | None = None
    first_in: dict[str, str | Path] = {}  # config id -> the table that has it
    for path in paths:
        prof = import_csv(path, device=device)
        for c in prof.configs:  # merge() would say "use replace": no table may shadow another
            if c.id in first_in:
                raise InputError(f"config id also in {first_in[c.id]}: ids must be unique across "
                                 "the tables of one problem", file=path, where="column config",
                                 value=c.id)
        first_in.update({c.id: path for c in prof.configs})
        stem = Path(path).stem
        if {c.task for c in prof.configs} == {"default"}:
            data = prof.model_dump()
            for c in data["configs"]:
                c["task"] = stem
            data["tasks"] = [{"name": stem}]
            prof = Profile.model_validate(data)
        merged = prof if merged is None else merge(merged, prof)
    if merged is None:
        raise InputError("no tables given")
    return merged
