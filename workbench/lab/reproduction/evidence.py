"""Evidence: where the workbench's number for a ledger item lives, and what kind of data it is.

A pointer is ``<path relative to the repository>#/<key>/<key>/...``: JSON-pointer segments
(``~1`` for ``/``, ``~0`` for ``~``), where a segment inside a list selects the one element whose
fields equal the ``field=value[,field=value]`` it names (``checks/figure=Fig. 8``), so a pointer
never depends on a list's order of rows; a plain list of values (per exit, per round) takes an
index. Expressions (:class:`Ptr`, :class:`Diff`, :class:`Ratio`,
:class:`Saving`, :class:`Hits`) compute a derived number from pointers and say which they read.

The kind of data comes from the file, never from the ledger: its ``source`` field (or the field a
pointer names with ``source=``) read as measured / modelled / simulated / paper by its first such
word; files under ``reports/bench/`` are benchmarks run on this machine and count as measured
unless they state otherwise; a file that says nothing is ``unstated`` (it cannot reproduce).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import WorkbenchError

#: The checkout this package runs from (its committed profiles are evidence too).
CHECKOUT = Path(__file__).resolve().parents[3]


class EvidenceError(WorkbenchError):
    """A pointer that does not resolve: the file, the segment and why."""


def _unescape(seg: str) -> str:
    return seg.replace("~1", "/").replace("~0", "~")


def escape(seg: str) -> str:
    """A key as a pointer segment."""
    return seg.replace("~", "~0").replace("/", "~1")


class Files:
    """The evidence files, each read once. Pointers name ``reports/...`` (found in
    ``reports_dir``) or ``profiles/...`` (found in ``profiles_dir``, by default the checkout's
    committed profiles), so a ledger can be built over any reports folder."""

    def __init__(self, reports_dir: Path, profiles_dir: Path | None = None) -> None:
        self.dirs = {"reports": Path(reports_dir),
                     "profiles": Path(profiles_dir) if profiles_dir else CHECKOUT / "profiles"}
        self._cache: dict[str, Any] = {}

    def path(self, rel: str) -> Path:
        top, _, rest = rel.partition("/")
        if top not in self.dirs or not rest:
            raise EvidenceError(f"{rel}: evidence lives under reports/ or profiles/")
        base = self.dirs[top].resolve()
        path = (base / rest).resolve()
        if not path.is_relative_to(base):
            raise EvidenceError(f"{rel}: outside {top}/")
        return path

    def load(self, rel: str) -> Any:
        if rel not in self._cache:
            path = self.path(rel)
            try:
                self._cache[rel] = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise EvidenceError(f"{rel}: no such file (run the report or benchmark that "
                                    "writes it)") from None
            except (OSError, json.JSONDecodeError) as e:
                raise EvidenceError(f"{rel}: cannot read: {e}") from None
        return self._cache[rel]

    def kind(self, rel: str, source_key: str = "source") -> str:
        """What kind of data ``rel`` holds, from its own words."""
        data = self.load(rel)
        text = data.get(source_key) if isinstance(data, dict) else None
        if not isinstance(text, str) or not text.strip():
            return "measured" if rel.startswith("reports/bench/") and source_key == "source" \
                else "unstated"
        words = re.findall(r"[a-z]+", text.lower())
        for w in words:  # the first kind named leads: "measured (energy modelled)" is measured
            if w in ("measured", "modelled", "simulated"):
                return w
            if w in ("paper", "cited"):
                return "paper"
        return "unstated"


def resolve(files: Files, ref: str) -> Any:
    """The value ``ref`` (``path#/a/b``) points at."""
    if "#" not in ref:
        raise EvidenceError(f"{ref}: a pointer needs '#/key'")
    rel, _, key = ref.partition("#")
    node = files.load(rel)
    if not key.startswith("/"):
        raise EvidenceError(f"{ref}: the key must start with '/'")
    for raw in key[1:].split("/"):
        seg = _unescape(raw)
        if isinstance(node, dict):
            if seg not in node:
                raise EvidenceError(f"{ref}: no key {seg!r}")
            node = node[seg]
        elif isinstance(node, list) and seg.isdigit() and not any(isinstance(x, dict)
                                                                  for x in node):
            # A plain list of values is ordered by meaning (exit 0, 1, 2, ...): index it.
            if int(seg) >= len(node):
                raise EvidenceError(f"{ref}: index {seg} past the {len(node)} values")
            node = node[int(seg)]
        elif isinstance(node, list):
            want = dict(p.split("=", 1) for p in seg.split(",") if "=" in p)
            if not want:
                raise EvidenceError(f"{ref}: {seg!r} is not a field=value selector")
            hits = [x for x in node if isinstance(x, dict)
                    and all(k in x and str(x[k]) == v for k, v in want.items())]
            if len(hits) != 1:
                raise EvidenceError(f"{ref}: {seg!r} selects {len(hits)} elements, not one")
            node = hits[0]
        else:
            raise EvidenceError(f"{ref}: {seg!r} goes below a value")
    return node


def _number(ref: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise EvidenceError(f"{ref}: not a finite number ({v!r})")
    return float(v)


@dataclass(frozen=True)
class Ptr:
    """The value at one pointer. ``source``: the field naming the file's kind of data, when the
    file keeps several (``pressure_source``)."""

    ref: str
    source: str = "source"

    def refs(self) -> list["Ptr"]:
        return [self]

    def value(self, files: Files) -> Any:
        v = resolve(files, self.ref)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return _number(self.ref, v)
        return v


@dataclass(frozen=True)
class _Two:
    a: Ptr
    b: Ptr

    def refs(self) -> list[Ptr]:
        return [self.a, self.b]

    def _ab(self, files: Files) -> tuple[float, float]:
        return (_number(self.a.ref, resolve(files, self.a.ref)),
                _number(self.b.ref, resolve(files, self.b.ref)))


class Diff(_Two):
    """``a - b`` (an accuracy drop in points: Diff(FX8, FP32))."""

    def value(self, files: Files) -> float:
        a, b = self._ab(files)
        return a - b


class Ratio(_Two):
    """``a / b`` (a speed-up: Ratio(baseline latency, ours))."""

    def value(self, files: Files) -> float:
        a, b = self._ab(files)
        if b == 0:
            raise EvidenceError(f"{self.b.ref}: zero denominator")
        return a / b


class Saving(_Two):
    """``100 * (1 - a / b)``: how much less ``a`` is than ``b``, in percent."""

    def value(self, files: Files) -> float:
        a, b = self._ab(files)
        if b == 0:
            raise EvidenceError(f"{self.b.ref}: zero denominator")
        return 100.0 * (1.0 - a / b)


@dataclass(frozen=True)
class Hits:
    """The share of true values in a dict or list of booleans (1.0 = all)."""

    ptr: Ptr

    def refs(self) -> list[Ptr]:
        return [self.ptr]

    def value(self, files: Files) -> float:
        v = resolve(files, self.ptr.ref)
        vals = list(v.values()) if isinstance(v, dict) else v
        if not isinstance(vals, list) or not vals or not all(isinstance(x, bool) for x in vals):
            raise EvidenceError(f"{self.ptr.ref}: not a non-empty set of true/false values")
        return sum(vals) / len(vals)


def _rows(files: Files, ref: str, where: dict[str, Any]) -> list[dict[str, Any]]:
    rows = resolve(files, ref)
    if not isinstance(rows, list):
        raise EvidenceError(f"{ref}: not a list of rows")
    out = [r for r in rows if isinstance(r, dict)
           and all(k in r and r[k] == v for k, v in where.items())]
    if not out:
        raise EvidenceError(f"{ref}: no row with {where}")
    return out


@dataclass(frozen=True)
class Agg:
    """An aggregate over the rows of a list: ``fn`` (mean, geomean, median, max, min, count) of
    ``field`` over the rows whose fields equal ``where`` (rows whose ``field`` is null are left
    out and counted in the reason only if none is left)."""

    ptr: Ptr
    field: str
    fn: str = "mean"
    where: tuple[tuple[str, Any], ...] = ()

    def refs(self) -> list[Ptr]:
        return [self.ptr]

    def describe(self) -> list[str]:
        where = ",".join(f"{k}={v}" for k, v in self.where)
        return [f"{self.ptr.ref} ({self.fn} of {self.field}" + (f" where {where})" if where
                                                                  else ")")]

    def value(self, files: Files) -> float:
        rows = _rows(files, self.ptr.ref, dict(self.where))
        if self.fn == "count":
            return float(len(rows))
        vals = [_number(self.ptr.ref, r[self.field]) for r in rows
                if r.get(self.field) is not None]
        if not vals:
            raise EvidenceError(f"{self.ptr.ref}: no {self.field!r} in the rows with "
                                f"{dict(self.where)}")
        if self.fn == "mean":
            return sum(vals) / len(vals)
        if self.fn == "geomean":
            if min(vals) <= 0:
                raise EvidenceError(f"{self.ptr.ref}: a geometric mean of non-positive values")
            return math.exp(sum(math.log(v) for v in vals) / len(vals))
        if self.fn == "median":
            s = sorted(vals)
            k = len(s) // 2
            return s[k] if len(s) % 2 else (s[k - 1] + s[k]) / 2
        if self.fn in ("max", "min"):
            return max(vals) if self.fn == "max" else min(vals)
        raise EvidenceError(f"unknown aggregate {self.fn!r}")


@dataclass(frozen=True)
class Ranked:
    """Names ordered by a value, best first: from a dict of name -> number, a plain list (names
    are positions "0", "1", ...), or rows (``name`` and ``field`` of each row matching ``where``).
    ``descending``: largest first. Tied values have no order and are refused."""

    ptr: Ptr
    field: str = ""
    name: str = ""
    descending: bool = True
    where: tuple[tuple[str, Any], ...] = ()
    #: Only these names (the ones the paper orders), when not empty; each must be present.
    only: tuple[str, ...] = ()

    def refs(self) -> list[Ptr]:
        return [self.ptr]

    def describe(self) -> list[str]:
        by = f"{self.name} by {self.field}" if self.field else "keys by value"
        if self.only:
            by += f" among {', '.join(self.only)}"
        return [f"{self.ptr.ref} ({by}, {'largest' if self.descending else 'smallest'} first)"]

    def value(self, files: Files) -> list[str]:
        v = resolve(files, self.ptr.ref)
        if isinstance(v, dict) and not self.field:
            pairs = [(str(k), _number(self.ptr.ref, x)) for k, x in v.items()]
        elif isinstance(v, list) and not self.field:  # a plain list: positions are the names
            pairs = [(str(i), _number(self.ptr.ref, x)) for i, x in enumerate(v)]
        else:
            pairs = [(str(r[self.name]), _number(self.ptr.ref, r[self.field]))
                     for r in _rows(files, self.ptr.ref, dict(self.where))]
        if self.only:
            lost = [k for k in self.only if k not in {p[0] for p in pairs}]
            if lost:
                raise EvidenceError(f"{self.ptr.ref}: no {', '.join(map(repr, lost))} to rank")
            pairs = [p for p in pairs if p[0] in self.only]
        if len({v for _, v in pairs}) < len(pairs):  # a tie has no order: say so, never guess
            raise EvidenceError(f"{self.ptr.ref}: tied values, no strict order "
                                f"({', '.join(f'{k} {v:g}' for k, v in pairs)})")
        pairs.sort(key=lambda p: p[1], reverse=self.descending)
        return [k for k, _ in pairs]


@dataclass(frozen=True)
class Total:
    """The sum of a plain list of numbers (requests per exit -> requests)."""

    ptr: Ptr

    def refs(self) -> list[Ptr]:
        return [self.ptr]

    def value(self, files: Files) -> float:
        v = resolve(files, self.ptr.ref)
        if not isinstance(v, list) or not v:
            raise EvidenceError(f"{self.ptr.ref}: not a non-empty list of numbers")
        return sum(_number(self.ptr.ref, x) for x in v)


@dataclass(frozen=True)
class TwoSE:
    """Two standard errors of a difference of two accuracies measured on ``n`` requests each,
    with Agresti and Caffo's adjustment (one right and one wrong answer added to each, so an
    accuracy of 1.0 on 60 requests is not read as certain): ``2 sqrt(a'(1-a')/(na+2) +
    b'(1-b')/(nb+2))``, ``a' = (a na + 1) / (na + 2)`` (each request right or wrong,
    independent). The half-width a comparison of the difference must clear
    (``Comparison.halfwidth``)."""

    a: Any
    na: Any
    b: Any
    nb: Any

    def refs(self) -> list[Ptr]:
        return [r for e in (self.a, self.na, self.b, self.nb) for r in e.refs()]

    def value(self, files: Files) -> float:
        a, na, b, nb = (float(e.value(files)) for e in (self.a, self.na, self.b, self.nb))
        if na < 1 or nb < 1 or not (0 <= a <= 1 and 0 <= b <= 1):
            raise EvidenceError(f"{self.a.ref}: accuracies in [0, 1] on at least one request")
        a, b = (a * na + 1) / (na + 2), (b * nb + 1) / (nb + 2)
        return 2.0 * math.sqrt(a * (1 - a) / (na + 2) + b * (1 - b) / (nb + 2))


Expr = Ptr | Diff | Ratio | Saving | Hits | Agg | Ranked | Total | TwoSE
