"""Rows as tables: snake_case fields shown with display labels (applied only here, when
drawing), numbers rounded."""

from __future__ import annotations

from typing import Any, Sequence

#: Words of snake_case field names written differently in a table header.
_WORDS = {"ms": "ms", "mb": "MB", "us": "us", "s": "s", "pct": "%", "rss": "RSS", "milp": "MILP",
          "masa": "MASA", "id": "id", "d0": "d0", "hv": "HV", "igd": "IGD", "l": "L", "a": "A"}


def label(name: str) -> str:
    """The display label of a snake_case field: ``mean_response_ms`` -> ``mean response ms``,
    ``gain_vs_bulk_pct`` -> ``gain vs bulk %``."""
    return " ".join(_WORDS.get(w, w) for w in name.split("_"))


def frame(rows: Sequence[Any]) -> Any:
    """Typed rows (dataclasses) as a pandas DataFrame with their field names, for computing."""
    import dataclasses

    import pandas as pd

    return pd.DataFrame([dataclasses.asdict(r) if dataclasses.is_dataclass(r) and not isinstance(r, type)
                         else dict(r)
                         for r in rows])


def table(rows: Sequence[Any], *, columns: Sequence[str] | None = None, digits: int = 3) -> Any:
    """Typed rows as a DataFrame for display: chosen ``columns`` (fields), display labels, and
    floats rounded to ``digits`` decimals. Computation uses :func:`frame`; this only draws."""
    df = frame(rows)
    if columns is not None:
        df = df[list(columns)]
    return df.round(digits).rename(columns=label)
