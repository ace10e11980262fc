"""Editing imported profiles: accuracy attached by hand (cited or measured elsewhere) and rows
of one profile added to another."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...errors import InputError
from ...fileio import read_text
from ..schema import PRECISIONS, Profile
from ..store import error_from_validation
from .common import _decimal


def accuracy_table(specs: list[str]) -> dict[tuple[str, str | None], float]:
    """Accuracy to attach to imported rows: each spec is ``MODEL=VALUE``, ``MODEL:PRECISION=VALUE``
    or a CSV file with columns ``model``, optionally ``precision``, and ``A`` (or ``accuracy``).
    Keys are (model, precision or None for every precision)."""
    out: dict[tuple[str, str | None], float] = {}

    def put(model: str, prec: str | None, value: str, where: Any, file: Any = None) -> None:
        if prec is not None and prec not in PRECISIONS:
            raise InputError(f"unknown precision; expected one of {', '.join(PRECISIONS)}",
                             file=file, where=where, value=prec)
        try:
            v = _decimal(value)
        except ValueError as exc:
            raise InputError("accuracy must be a number" + str(exc).removeprefix("not a number"),
                             file=file, where=where, value=value) from None
        if not math.isfinite(v):
            raise InputError("accuracy must be finite", file=file, where=where, value=value)
        out[(model, prec)] = v

    for spec in specs:
        if spec.lower().endswith(".csv"):
            path = Path(spec)
            try:
                rows = list(csv.DictReader(io.StringIO(read_text(path, what="accuracy table"),
                                                       newline="")))
            except csv.Error as exc:
                raise InputError(f"not a readable CSV: {exc}", file=path) from None
            if not rows or "model" not in rows[0] or not ({"A", "accuracy"} & set(rows[0])):
                raise InputError("an accuracy table needs columns model, A (or accuracy) and "
                                 "optionally precision", file=path)
            for k, row in enumerate(rows):
                put(row["model"], row.get("precision") or None,
                    row.get("A") or row.get("accuracy") or "", f"row {k + 2}", path)
            continue
        key, sep, value = spec.partition("=")
        if not sep or not key:
            raise InputError("expected MODEL=VALUE, MODEL:PRECISION=VALUE or a .csv file",
                             where="accuracy", value=spec)
        model, _, prec = key.partition(":")
        put(model, prec or None, value, "accuracy")
    return out


def attach_accuracy(profile: Profile, table: dict[tuple[str, str | None], float], *,
                    metric: str | None = None) -> Profile:
    """The profile with A set on the rows each entry names (a precision-specific entry wins over
    a model-wide one); ``metric`` names what A is for the tasks touched.

    Raises:
        InputError: An entry names a model (or model and precision) that no row has.
    """
    for (model, prec) in table:
        if not any(c.model == model and (prec is None or c.precision == prec)
                   for c in profile.configs):
            have = ", ".join(sorted({f"{c.model}:{c.precision}" for c in profile.configs}))
            raise InputError(f"no imported row of this model/precision (rows: {have})",
                             where="accuracy", value=f"{model}:{prec}" if prec else model)
    data = profile.model_dump()
    touched = set()
    for c in data["configs"]:
        v = table.get((c["model"], c["precision"]), table.get((c["model"], None)))
        if v is not None:
            c["A"] = v
            touched.add(c["task"])
    if metric:
        names = {t["name"] for t in data["tasks"]}
        for t in data["tasks"]:
            if t["name"] in touched:
                t["metric"] = metric
        data["tasks"] += [{"name": t, "metric": metric} for t in sorted(touched - names)]
    data["provenance"]["notes"].append(
        "A attached by hand (workbench profiles import --accuracy): cited or measured elsewhere, "
        "not measured by this import")
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise error_from_validation(exc) from None


def merge(base: Profile, extra: Profile, *, replace: bool = False) -> Profile:
    """Add ``extra``'s rows (and any engines and tasks it uses) to ``base``.

    Args:
        replace: Replace rows whose id already exists in ``base`` instead of raising.

    Raises:
        InputError: A row id exists in both and ``replace`` is false.
    """
    ids = {c.id for c in base.configs}
    clash = [c.id for c in extra.configs if c.id in ids]
    if clash and not replace:
        raise InputError("config ids already in the profile (use replace)", value=clash[0])
    new_ids = {c.id for c in extra.configs}
    configs = [c for c in base.configs if c.id not in new_ids] + list(extra.configs)
    engines = list(base.engines) + [e for e in extra.engines
                                    if e.name not in {b.name for b in base.engines}]
    tasks = list(base.tasks) + [t for t in extra.tasks if t.name not in {b.name for b in base.tasks}]
    data = base.model_dump()
    data.update(configs=[c.model_dump() for c in configs],
                engines=[e.model_dump() for e in engines], tasks=[t.model_dump() for t in tasks])
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise error_from_validation(exc) from None

