"""Service-level objectives (CARIn section 4.1): a Python API and a one-line string form.

Broad SLOs are objectives, narrow SLOs are constraints::

    "max A; max TP; max L <= 41.67ms"                      # CARIn UC1
    "min L; min std L; max A; avg L <= 100; std L <= 10"    # UC3
    "min L; min S; max A; MF <= 90MB"                       # UC2

Grammar (items separated by ``;``)::

    objective  := (min|max) [stat] METRIC[task]
                | target [stat] METRIC[task] = VALUE [unit]   (as close as possible to VALUE)
    constraint := [stat] METRIC[task] (<=|>=) VALUE [unit]
    stat       := avg | mean | std | min | max | pNN
    METRIC     := S W A L TP E MF  (per model)  |  NTT STP F  (multi-DNN system metrics)
                | top1 top5 mIoU pixelacc MAE RMSE agreement cosine
                  (A, named by what the task measures: checked against the profile's task,
                  and taken literally: "min MAE" minimises, where "max A" asks for the best)
    VALUE      := digits 0-9, an optional decimal point and exponent (``41.67``, ``2e9``); a
                  space may separate it from its unit (``41.67 ms``), never split it

Strict comparisons (``<``, ``>``) are refused with a hint to write ``<=`` / ``>=``: every solver
compares non-strictly, and ``L < 8ms`` read as ``L <= 8ms`` kept the designs at 8 ms. A
bound prints back with every digit it has (``str(SLO.parse(s))`` parses to the same SLO), so
a session, a bundle or the explorer's link keeps the SLO as it was given.

``[task]`` restricts a per-model metric to one task (``L[uc3-vision]``) or, with ``[total]``,
sums it over the tasks (``MF[total] <= 200MB``); ``[2]`` is the task named "2", never a
position. Without it, a per-model metric applies to every
task. With no objective at all, the constrained metrics become the objectives. A target
objective (OODIn section III-C: "the average, median or nth percentile should be as close as
possible to a target value") is minimised as the distance |f - VALUE|, e.g. ``target TP = 30``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal, localcontext

from ..errors import InputError
from ..metrics import BY_NAME, MODEL_METRICS, STAT_SUFFIX, SUMMABLE, SYSTEM_METRICS
from ..metrics import unit as metric_unit
from ..names import first_control, masked

#: The longest SLO text read: real ones are a line; a megabyte stalled the explorer for 20 s.
MAX_SLO_CHARS = 4096
#: The longest number literal (``float`` reads any length; a float has 17 significant digits).
MAX_NUMBER_CHARS = 64

#: Metrics of one model (CARIn F_single) and of a multi-DNN system (NTT, STP, F): see
#: :mod:`workbench.metrics`, the one table of names, units and directions.
METRICS = MODEL_METRICS + SYSTEM_METRICS
# ASCII digits only: Python's \d and float() also take '４', '٤' and other Unicode digits.
_PERCENTILE = r"p[0-9]{1,2}"
#: The statistics an SLO names in words (the metric table's: avg, std, min, max); ``mean`` is
#: avg, and any percentile pNN parses (whether profiles hold it is the problem's to say).
_NAMED_STATS = tuple(s for s in STAT_SUFFIX if not re.fullmatch(_PERCENTILE, s))
_STAT_RE = re.compile(rf"^({'|'.join(_NAMED_STATS)}|mean|{_PERCENTILE})$", re.I)
_TOKEN_RE = re.compile(r"\s*(<=|>=|<|>|=|[^\s<>=]+)")
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_UNIT_RE = re.compile(r"[A-Za-z%/]+")
_METRIC_RE = re.compile(r"^([A-Za-z][A-Za-z0-9]*)(?:\[([^\]]+)\])?$")


class SLOError(InputError):
    """A malformed SLO string; the message shows the string with a caret under the bad token."""

    def __init__(self, message: str, text: str, start: int, end: int) -> None:
        self.text, self.start, self.end = text, start, end
        pointer = " " * start + "^" * max(1, end - start)
        # A control character shows as one replacement character, so the caret stays under it
        # and nothing in the excerpt acts on a terminal or splits the message.
        shown = masked(text)
        super().__init__(f"{message}\n  {shown}\n  {pointer}", where="SLO", value=...)


@dataclass(frozen=True)
class Objective:
    """A broad SLO ``<min|max|target, stat metric[task]>``; a target objective minimises the
    distance to ``target`` (in the metric's base unit)."""

    sense: str                  # "min" | "max" | "target"
    metric: str                 # one of METRICS
    stat: str = "avg"           # avg | std | min | max | pNN
    task: str | None = None     # None: every task; "total": summed over tasks
    weight: float = 1.0
    target: float | None = None
    #: The task metric's SLO name when A was named by it (``max mIoU``): see taskmetrics.
    alias: str | None = None

    def __str__(self) -> str:
        term = _term(self.stat, self.alias or self.metric, self.task)
        if self.sense == "target":
            return f"target {term} = {number_text(self.target)}{metric_unit(self.metric)}"
        return f"{self.sense} {term}"


@dataclass(frozen=True)
class Constraint:
    """A narrow SLO ``<stat, metric[task], value>`` with its direction."""

    metric: str
    op: str                     # "<=" | ">="
    value: float
    stat: str = "avg"
    task: str | None = None
    alias: str | None = None

    def __post_init__(self) -> None:
        # Every consumer reads an op that is not "<=" as ">=": anything else would be solved
        # as the wrong constraint, silently.
        if self.op not in ("<=", ">="):
            raise InputError("a constraint compares with <= or >=", where="SLO", value=self.op)

    def __str__(self) -> str:
        unit = metric_unit(self.metric)
        value = number_text(self.value)
        return f"{_term(self.stat, self.alias or self.metric, self.task)} {self.op} {value}{unit}"


def number_text(value: float | None) -> str:
    """A number as the SLO grammar reads it back to the same float: the shortest digits that
    round-trip (``repr``'s), positional for ordinary magnitudes (``41.6666667``, ``100``,
    ``0.000001``) and with an exponent only beyond them (``1e+300``, ``5e-324``)."""
    value = float(value)  # type: ignore[arg-type]
    text = repr(value)
    if value == 0 or 1e-6 <= abs(value) < 1e16:
        text = format(Decimal(text), "f")  # the same digits, no exponent
    return text[:-2] if text.endswith(".0") else text


def _term(stat: str, metric: str, task: str | None) -> str:
    s = "" if stat == "avg" else f"{stat} "
    return f"{s}{metric}" + (f"[{task}]" if task else "")


@dataclass(frozen=True)
class SLO:
    """Objectives and constraints of an application. Build with :meth:`parse` or directly."""

    objectives: tuple[Objective, ...] = field(default_factory=tuple)
    constraints: tuple[Constraint, ...] = field(default_factory=tuple)

    @property
    def effective_objectives(self) -> tuple[Objective, ...]:
        """The objectives, or, when none is given, the constrained metrics (CARIn 4.1).

        A metric constrained from above (``L <= 100``) becomes ``min``; from below, ``max``.
        """
        if self.objectives:
            return self.objectives
        seen, out = set(), []
        for c in self.constraints:
            key = (c.stat, c.metric, c.task)
            if key not in seen:
                seen.add(key)
                out.append(Objective("min" if c.op == "<=" else "max", c.metric, c.stat, c.task,
                                     alias=c.alias))
        return tuple(out)

    def with_weights(self, weights: dict[str, float] | str | None) -> "SLO":
        """A copy whose objectives carry weights, e.g. ``{"A": 2, "TP": 1}`` or ``"A=2,TP=1"``.

        A key names a metric (every objective on it) or an objective's text (``"std L"``,
        ``"L[uc3-audio]"``).
        """
        if not weights:
            return self
        if isinstance(weights, str):
            weights = parse_weights(weights)
        for key, w in weights.items():
            if not _valid_weight(w):
                raise InputError(f"a weight must be a number 0..{MAX_WEIGHT:g}",
                                 where=f"weights[{key!r}]", value=w)
        objs = list(self.effective_objectives)
        used = set()
        for i, o in enumerate(objs):
            keys = [_term(o.stat, o.metric, o.task), _term(o.stat, o.metric, None), o.metric]
            if o.alias:
                keys += [_term(o.stat, o.alias, o.task), o.alias]
            for key in keys:
                if key in weights:
                    objs[i] = Objective(o.sense, o.metric, o.stat, o.task, float(weights[key]),
                                        o.target, o.alias)
                    used.add(key)
                    break
        unknown = set(weights) - used
        if unknown:
            raise InputError(f"weight for {sorted(unknown)[0]!r} matches no objective "
                             f"(objectives: {', '.join(str(o) for o in objs)})", where="weights")
        if objs and all(o.weight == 0 for o in objs):
            raise InputError("every objective has weight 0: nothing would be optimised",
                             where="weights", value=dict(weights))
        return SLO(tuple(objs), self.constraints)

    def __str__(self) -> str:
        return "; ".join([str(o) for o in self.objectives] + [str(c) for c in self.constraints])

    @classmethod
    def parse(cls, text: str) -> "SLO":
        """Parse the string form; raises SLOError pointing at the offending token."""
        return parse_slo(text)


#: Weights above this make the optimality sum overflow or swamp every other objective.
MAX_WEIGHT = 1e6


def _valid_weight(w: object) -> bool:
    return (isinstance(w, (int, float)) and not isinstance(w, bool)
            and 0 <= w <= MAX_WEIGHT)  # also refuses nan and inf


def parse_weights(text: str) -> dict[str, float]:
    """``"A=2, TP=1"`` -> ``{"A": 2.0, "TP": 1.0}``."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, val = part.partition("=")
        try:
            w = float(val)
        except ValueError:
            w = float("nan")
        if not sep or not key.strip() or not _valid_weight(w):
            raise InputError(f"expected METRIC=WEIGHT with a weight 0..{MAX_WEIGHT:g}",
                             where="weights", value=part)
        if key.strip() in out:
            raise InputError("weight given twice", where="weights", value=key.strip())
        out[key.strip()] = w
    return out


def _tokens(item: str, offset: int, text: str) -> list[tuple[str, int, int]]:
    """The tokens of one ``;``-separated item; text that is not a token (a lone ``=``, ``=>``)
    is an error pointing at it, never dropped."""
    out, pos = [], 0
    while pos < len(item):
        m = _TOKEN_RE.match(item, pos)
        if not m or not m.group(1):
            rest = item[pos:]
            if rest.strip():
                a = offset + pos + len(rest) - len(rest.lstrip())
                raise SLOError("unexpected text here (comparisons are <= and >=)", text,
                               a, a + 1)
            break
        tok = m.group(1)
        if tok in ("<", ">"):
            raise SLOError(f"strict '{tok}' is not supported: write '{tok}=' (a bound is met "
                           "when the value equals it)", text, offset + m.start(1),
                           offset + m.end(1))
        out.append((tok, offset + m.start(1), offset + m.end(1)))
        pos = m.end()
    return out


def _non_ascii(text: str, start: int, end: int) -> None:
    """Refuse, with a caret under it, the first non-ASCII character of ``text[start:end]``
    (a Unicode digit such as '４', '²' or '٤' that would otherwise read as a number)."""
    for i in range(start, end):
        if not text[i].isascii():
            raise SLOError(f"{text[i]!r} is not an ASCII character: numbers are written with "
                           "the digits 0-9", text, i, i + 1)


def _metric(tok: tuple[str, int, int], text: str) -> tuple[str, str | None, str | None]:
    """(metric, task, alias): a task metric's SLO name (``mIoU``) is A with that alias."""
    from ..taskmetrics import BY_SLO, TABLE

    word, a, b = tok
    m = _METRIC_RE.match(word)
    if not m:
        _non_ascii(text, a, a + len(word.split("[")[0]))
        raise SLOError(f"expected a metric ({', '.join(METRICS)}), got {word!r}", text, a, b)
    name = {x.upper(): x for x in METRICS}.get(m.group(1).upper())
    alias = None
    if name is None and m.group(1).lower() in BY_SLO:
        name, alias = "A", BY_SLO[m.group(1).lower()].slo
    if name is None:
        raise SLOError(f"unknown metric {m.group(1)!r}; known: {', '.join(METRICS)} (and A by "
                       f"its task's metric: {', '.join(t.slo for t in TABLE)})", text, a,
                       a + len(m.group(1)))
    task = m.group(2).strip() if m.group(2) else None
    if task == "total" and name not in SUMMABLE:
        raise SLOError(f"{name}[total] is not defined: only {', '.join(sorted(SUMMABLE))} add up "
                       "over tasks", text, a, b)
    if task is not None and name in SYSTEM_METRICS:
        raise SLOError(f"{name} is a system metric of the whole multi-DNN run and takes no task",
                       text, a, b)
    return name, task, alias


def _stat(word: str) -> str:
    w = word.lower()
    return "avg" if w == "mean" else w


def _stat_metric(toks: list[tuple[str, int, int]], text: str, shape_error: str
                 ) -> tuple[str, str, str | None, str | None]:
    """``[stat] METRIC[task]`` from one or two tokens."""
    if len(toks) > 2:
        raise SLOError(shape_error, text, toks[0][1], toks[-1][2])
    stat = "avg"
    if len(toks) == 2:
        if not _STAT_RE.match(toks[0][0]):
            _non_ascii(text, toks[0][1], toks[0][2])
            raise SLOError(f"expected a statistic ({', '.join(_NAMED_STATS)}, pNN)", text,
                           toks[0][1], toks[0][2])
        stat = _stat(toks[0][0])
    metric, task, alias = _metric(toks[-1], text)
    if alias and stat not in BY_NAME[metric].stats:
        raise SLOError(f"profiles hold no {stat} of {alias} (A)", text, toks[0][1], toks[0][2])
    return stat, metric, task, alias


def _value(metric: str, rhs: list[tuple[str, int, int]], text: str) -> float:
    """``VALUE [unit]`` after a comparison or a target's ``=``, in the metric's base unit.

    The value is one token (``41.67ms``) or a number and a unit (``41.67 ms``); a space inside
    the number (``4 1ms``) is an error, never read as 41."""
    word, a, b = rhs[0]
    _non_ascii(text, a, rhs[-1][2])
    m = _NUMBER_RE.match(word)
    if not m:
        raise SLOError(f"expected a number with an optional unit, got {word!r}", text, a, b)
    if m.end() > MAX_NUMBER_CHARS:
        raise SLOError(f"a number of {m.end()} characters is too long (at most "
                       f"{MAX_NUMBER_CHARS} characters)", text, a, a + m.end())
    unit, ua, ub = word[m.end():], a + m.end(), b
    if len(rhs) > 1:
        if unit or len(rhs) > 2 or not _NUMBER_RE.fullmatch(word) or \
                not _UNIT_RE.fullmatch(rhs[1][0]):
            raise SLOError("expected one number and an optional unit (no space inside a "
                           "number: '41.67ms' or '41.67 ms')", text, rhs[1][1], rhs[-1][2])
        unit, ua, ub = rhs[1]
    elif unit and not _UNIT_RE.fullmatch(unit):
        raise SLOError(f"expected a number with an optional unit, got {word!r}", text, a, b)
    value = float(m.group(0))
    if not math.isfinite(value):
        raise SLOError("the value is too large (not a finite number)", text, a, a + m.end())
    if Decimal(m.group(0)) != Decimal(repr(value)):
        # More digits than a float holds (about 17), or below its smallest: it would be read
        # as another number (41.67000000000000000001 as 41.67, 1e-400 as 0) and printed so.
        raise SLOError(f"{m.group(0)} cannot be held exactly (a float keeps about 17 "
                       f"significant digits); it would be read as {number_text(value)}", text,
                       a, a + m.end())
    if value < 0:  # every metric is >= 0: such a bound is always or never met
        raise SLOError(f"{metric} is never negative: the value must be >= 0", text,
                       a, rhs[-1][2])
    if unit:
        factors = BY_NAME[metric].units
        f = factors.get(unit.lower())
        if f is None:
            allowed = ", ".join(factors) or "none"
            raise SLOError(f"unit {unit!r} does not fit {metric} (allowed: {allowed})",
                           text, ua, ub)
        # In decimal, rounded once: 0.7 s is 700 ms, not 0.7 * 1000.0 = 700.0000000000001.
        with localcontext() as ctx:
            ctx.prec = 2 * MAX_NUMBER_CHARS
            value = float(Decimal(m.group(0)) * Decimal(repr(f)))
        if not math.isfinite(value):  # 1e306GB is a finite number of GB but not of MB
            raise SLOError(f"the value is too large in {metric_unit(metric) or 'its unit'} "
                           "(not a finite number)", text, a, rhs[-1][2])
    return value


def parse_slo(text: str) -> SLO:
    """Parse ``"max A; max TP; max L <= 41.67ms"`` into an :class:`SLO`.

    Raises:
        SLOError: The string is empty or a token is not understood; the message points at it.
    """
    if isinstance(text, str) and len(text) > MAX_SLO_CHARS:
        # Refused before any work, and not repeated in the message.
        raise InputError(f"an SLO of {len(text)} characters is too long (at most "
                         f"{MAX_SLO_CHARS} characters)", where="SLO")
    if not isinstance(text, str) or not text.strip():
        raise SLOError("empty SLO: give at least one objective or constraint", str(text), 0, 1)
    bad = first_control(text, whitespace_ok=True)
    if bad:
        raise SLOError(f"a control character ({bad.group(0)!r}) has no place in an SLO", text,
                       bad.start(), bad.end())
    objectives: list[Objective] = []
    constraints: list[Constraint] = []
    offset = 0
    for item in text.split(";"):
        toks = _tokens(item, offset, text)
        offset += len(item) + 1
        if not toks:
            continue
        eq = [i for i, t in enumerate(toks) if t[0] == "="]
        if toks[0][0].lower() == "target":
            if len(eq) != 1 or eq[0] < 2:
                t = toks[eq[1]] if len(eq) > 1 else toks[0]
                raise SLOError("a target objective reads 'target [stat] METRIC = VALUE', e.g. "
                               "'target TP = 30'", text, t[1], t[2])
            k = eq[0]
            stat, metric, task, alias = _stat_metric(toks[1:k], text,
                                                     "expected target [stat] METRIC = VALUE")
            if not toks[k + 1:]:
                raise SLOError("a target needs a value after '='", text, toks[k][1], toks[k][2])
            objectives.append(Objective("target", metric, stat, task,
                                        target=_value(metric, toks[k + 1:], text), alias=alias))
            continue
        if eq:
            t = toks[eq[0]]
            raise SLOError("'=' sets a target ('target METRIC = VALUE'); a constraint compares "
                           "with <= or >=", text, t[1], t[2])
        ops = [i for i, t in enumerate(toks) if t[0] in ("<=", ">=")]
        if len(ops) > 1:
            t = toks[ops[1]]
            raise SLOError("one comparison per constraint", text, t[1], t[2])
        if ops:
            k = ops[0]
            lhs, rhs = toks[:k], toks[k + 1:]
            op = toks[k][0]
            if not lhs:
                raise SLOError("a constraint needs a metric before the comparison", text,
                               toks[k][1], toks[k][2])
            stat, metric, task, alias = _stat_metric(lhs, text, "expected [stat] METRIC before "
                                                     "the comparison")
            if not rhs:
                raise SLOError("a constraint needs a value after the comparison", text,
                               toks[k][1], toks[k][2])
            value = _value(metric, rhs, text)
            constraints.append(Constraint(metric, op, value, stat, task, alias))
        else:
            head = toks[0]
            if head[0].lower() not in ("min", "max"):
                raise SLOError("an objective starts with min, max or target (or write a "
                               "constraint such as 'L <= 40ms')", text, head[1], head[2])
            rest = toks[1:]
            if not rest:
                raise SLOError("expected a metric after min/max", text, head[1], head[2])
            stat, metric, task, alias = _stat_metric(rest, text, "expected min|max [stat] METRIC")
            objectives.append(Objective(head[0].lower(), metric, stat, task, alias=alias))
    if not objectives and not constraints:
        raise SLOError("empty SLO: give at least one objective or constraint", text, 0,
                       max(1, len(text)))
    return SLO(tuple(objectives), tuple(constraints))
