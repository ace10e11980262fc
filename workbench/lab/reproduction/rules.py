"""The one place a reproduction status is decided: from one item's own numbers, never another's.

A ledger item (:class:`Item`) states the paper's checkable claim and one or more
:class:`Comparison`\\ s, each an expression for the workbench's number (read from a committed
evidence file) and a :class:`Rule` saying when it matches the paper's. :func:`decide` turns the
outcomes and the kind of data into a status and a reason; the reason is generated here from the
numbers, never typed.

The rules (docs/reproduction.md states them for readers):

- ``reproduced`` needs data measured on this machine and every comparison of the item holding,
  in more than one run where the measurement is a timed trace (``Item.single_run``).
- ``modelled``, ``simulated`` and ``paper`` data are at most ``partial``, however well they match.
- ``partial``: measured data where some comparisons hold and some do not; a claim only part of
  which has a number (``missing`` beside comparisons); or non-measured data where at least one
  comparison holds.
- ``not-reproduced``: nothing holds, the evidence is missing, or nothing was measured.
- ``not-applicable``: a setup table (devices, schemes): there is no result to reproduce.
- Gains and reductions (:class:`Gain`) compare the gain itself: the same direction and a size
  within one third of the paper's (a 43.9% saving needs 29.3-58.5%; a 1.59x ratio, whose gain is
  0.59, needs 1.39x-1.79x).
- Orderings (:class:`Order`) need the whole ordering, element for element.
- A number that is a statistic of noisy rounds (a median latency) names its rounds
  (``Comparison.rounds``): it holds only if the rule holds for the median and for the rounds'
  spread too: the quartiles with 5 or more rounds, every round with fewer (:func:`spread`); it
  fails only if the rule fails for the median and the whole spread. Between the two (the spread
  straddles the tolerance) it is *not shown*: no evidence either way, so it does not hold, and
  the reason says so apart from the failures. A number of one run whose sampling error is known
  (an accuracy over n requests) names it instead (``Comparison.halfwidth``: two standard
  errors), and the interval is its spread.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence, Union

STATUSES = ("reproduced", "partial", "not-reproduced", "not-applicable")
#: Kinds of data, strongest first: only ``measured`` can reproduce.
DATA_KINDS = ("measured", "modelled", "simulated", "paper")

Value = Union[float, str, list, bool]


def _number(v: object) -> float:
    """``v`` as a number for a numeric rule; anything else (a string such as "4.06", a bool,
    None, a list) is a TypeError, which the ledger reports as the evidence's problem."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"not a number: {v!r}")
    return float(v)


def _num(x: Any) -> str:
    """A number as people read it: up to four significant digits, no exponent for the usual."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return str(x)
    v = float(x)
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    if abs(v) >= 1e5:
        return f"{v:,.0f}"
    return f"{v:.4g}"


# --- rules: when does the workbench's number match the paper's? -----------------------------
@dataclass(frozen=True)
class Gain:
    """A gain or reduction compared on the gain itself. ``form="ratio"``: a speed-up or saving
    written as a ratio (1.59x; the gain is 0.59). ``form="pct"``: a percentage (43.9% saving).
    Holds when the sign is the paper's and the size within ``share`` (one third) of the paper's."""

    paper: float
    form: Literal["ratio", "pct"] = "pct"
    share: float = 1 / 3

    def _gain(self, x: float) -> float:
        return x - 1.0 if self.form == "ratio" else x

    def bounds(self) -> tuple[float, float]:
        g = self._gain(self.paper)
        lo, hi = sorted((g * (1 - self.share), g * (1 + self.share)))
        back = 1.0 if self.form == "ratio" else 0.0
        return lo + back, hi + back

    def holds(self, ours: Value) -> bool:
        o = _number(ours)
        g, go = self._gain(self.paper), self._gain(o)
        if g == 0:
            return False  # no gain to compare against: use Near
        lo, hi = self.bounds()
        return (go > 0) == (g > 0) and go != 0 and lo <= o <= hi

    def paper_text(self) -> str:
        return _num(self.paper) + ("x" if self.form == "ratio" else "%")

    def tolerance(self) -> str:
        lo, hi = self.bounds()
        unit = "x" if self.form == "ratio" else "%"
        return (f"same direction, gain within a third of the paper's: [{_num(lo)}{unit}, "
                f"{_num(hi)}{unit}]")


@dataclass(frozen=True)
class Near:
    """A quantity within ``tol`` (absolute, in ``unit``) of the paper's."""

    paper: float
    tol: float
    unit: str = ""

    def holds(self, ours: Value) -> bool:
        return abs(_number(ours) - self.paper) <= self.tol

    def paper_text(self) -> str:
        return f"{_num(self.paper)}{self.unit}"

    def tolerance(self) -> str:
        return (f"within {_num(self.tol)}{self.unit} of the paper's: "
                f"[{_num(self.paper - self.tol)}, {_num(self.paper + self.tol)}]{self.unit}")


@dataclass(frozen=True)
class Within:
    """A quantity inside the paper's own range (``lo``-``hi``), e.g. the spread it reports over
    devices when the workbench has one device of its own."""

    lo: float
    hi: float
    unit: str = ""

    def holds(self, ours: Value) -> bool:
        return self.lo <= _number(ours) <= self.hi

    def paper_text(self) -> str:
        return f"[{_num(self.lo)}, {_num(self.hi)}]{self.unit}"

    def tolerance(self) -> str:
        return f"inside the paper's range {self.paper_text()}"


@dataclass(frozen=True)
class Order:
    """A whole ordering or sequence, element for element."""

    paper: tuple[str, ...]

    def holds(self, ours: Value) -> bool:
        return isinstance(ours, (list, tuple)) and [str(x) for x in ours] == list(self.paper)

    def paper_text(self) -> str:
        return " > ".join(self.paper) if len(self.paper) > 1 else self.paper[0]

    def tolerance(self) -> str:
        return "the whole ordering, element for element"


@dataclass(frozen=True)
class Bound:
    """At most (``side="max"``) or at least (``side="min"``) a threshold. Only for claims that are
    themselves bounds ("under 1 ms", "never above the limit"); gains use :class:`Gain`."""

    limit: float
    side: Literal["max", "min"] = "max"
    unit: str = ""
    strict: bool = False  # "better", "fewer": a tie does not hold

    def holds(self, ours: Value) -> bool:
        o = _number(ours)
        if self.strict:
            return o < self.limit if self.side == "max" else o > self.limit
        return o <= self.limit if self.side == "max" else o >= self.limit

    def paper_text(self) -> str:
        op = {("max", False): "<= ", ("min", False): ">= ", ("max", True): "< ",
              ("min", True): "> "}[(self.side, self.strict)]
        return op + f"{_num(self.limit)}{self.unit}"

    def tolerance(self) -> str:
        word = {("max", False): "at most ", ("min", False): "at least ",
                ("max", True): "less than ", ("min", True): "more than "}[(self.side, self.strict)]
        return word + f"{_num(self.limit)}{self.unit}"


@dataclass(frozen=True)
class Is:
    """An exact value (a design's name, a boolean outcome)."""

    paper: str | bool

    def holds(self, ours: Value) -> bool:
        if isinstance(self.paper, bool):
            return ours is self.paper
        return str(ours) == self.paper

    def paper_text(self) -> str:
        return str(self.paper)

    def tolerance(self) -> str:
        return "exactly"


Rule = Union[Gain, Near, Within, Order, Bound, Is]


# --- what an item is ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """One checkable quantity: ``label`` (what is compared), ``ours`` (an expression over evidence
    pointers, :mod:`.evidence`), the paper's value and when they match (``rule``)."""

    label: str
    ours: Any            # an evidence expression: Ptr, Diff, Ratio, Saving, ...
    rule: Rule
    unit: str = ""       # printed after our number
    #: An expression for the per-round values ``ours`` summarises (a median over rounds): the
    #: comparison then also needs the rounds' spread inside the tolerance (:func:`spread`).
    rounds: Any = None
    #: An expression for the sampling error's half-width of ``ours`` (two standard errors, e.g.
    #: :class:`~.evidence.TwoSE` of an accuracy change): the interval ``ours`` +- it is then the
    #: spread that must fit the tolerance (one run, but its sampling error is known).
    halfwidth: Any = None


#: From this many rounds on, the spread is the inclusive quartiles; below it, every round.
QUARTILE_ROUNDS = 5


def spread(values: Sequence[float]) -> tuple[float, float, str]:
    """The part of the rounds a noisy comparison must keep inside its tolerance: the inclusive
    quartiles (the middle half) of 5 or more rounds, or the lowest and highest of fewer (with
    2-4 rounds the quartiles are interpolations between a handful of values, no estimate)."""
    xs = sorted(_number(v) for v in values)
    if not xs:
        raise ValueError("no rounds")
    if len(xs) >= QUARTILE_ROUNDS:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
        return q1, q3, f"quartiles of {len(xs)} rounds"
    return xs[0], xs[-1], (f"all {len(xs)} rounds" if len(xs) > 1 else "1 round")


@dataclass(frozen=True)
class Item:
    """One figure or table of a paper.

    ``claim``: the paper's checkable quantity in words and numbers (with ``reading`` saying how a
    plotted value was read off). ``data``: the kind of data the comparisons use, at most as strong
    as the evidence file's own ``source`` (a measured file's modelled energy says ``modelled``).
    ``missing``: the part of the claim with no number here (what measurement would be needed);
    with comparisons it caps the status at partial, without any it is the reason for
    not-reproduced.
    """

    paper: str
    id: str
    what: str
    claim: str
    comparisons: tuple[Comparison, ...] = ()
    kind: Literal["result", "setup"] = "result"
    data: str = "measured"
    reading: str = ""
    missing: str = ""
    note: str = ""
    #: Set (to what the one run is) when the evidence is a single run of a timed process with no
    #: rounds (a served trace): its run-to-run noise is unknown, so it can be at most partial.
    single_run: str = ""


@dataclass
class Outcome:
    """A comparison's outcome: our value (None when the evidence is missing) and whether it holds."""

    label: str
    ours: Value | None
    holds: bool
    paper: str
    tolerance: str
    evidence: list[str]
    unit: str = ""
    error: str | None = None
    #: With per-round values: (low, high, what they are), e.g. (5.2, 15.5, "quartiles of 5
    #: rounds"); the comparison holds only if the rule holds at both ends too.
    spread: tuple[float, float, str] | None = None
    #: The rounds straddle the tolerance: neither held nor failed (it does not hold).
    not_shown: bool = False


@dataclass
class Decision:
    status: str
    reason: str
    outcomes: list[Outcome] = field(default_factory=list)


def weaker(a: str, b: str) -> str:
    """The weaker of two data kinds (``measured`` < ``modelled`` < ``simulated`` < ``paper`` in
    strength order; an unknown kind counts as the weakest)."""
    ia = DATA_KINDS.index(a) if a in DATA_KINDS else len(DATA_KINDS)
    ib = DATA_KINDS.index(b) if b in DATA_KINDS else len(DATA_KINDS)
    return a if ia >= ib else b


def spread_text(sp: tuple[float, float, str], unit: str = "") -> str:
    """A comparison's spread in words: ``quartiles of 5 rounds: 5.2 to 15.5%``, or for
    orderings ``1 of 3 rounds hold``."""
    if sp[2].startswith("rounds holding"):
        return f"{int(sp[0])} of {int(sp[1])} rounds hold"
    return f"{sp[2]}: {_num(sp[0])} to {_num(sp[1])}{unit}"


def _show(o: Outcome) -> str:
    if o.ours is None:
        return f"{o.label}: no number ({o.error})"
    ours = (" > ".join(map(str, o.ours)) if isinstance(o.ours, (list, tuple))
            else _num(o.ours) + o.unit)
    if o.spread is not None:
        ours += f" ({spread_text(o.spread, o.unit)})"
    return f"{o.label}: ours {ours}, paper {o.paper}"


def decide(item: Item, outcomes: Sequence[Outcome], data: str) -> Decision:
    """The status of ``item`` from its own comparisons' outcomes and the kind of ``data``."""
    outs = list(outcomes)
    if item.kind == "setup":
        return Decision("not-applicable", f"a setup table ({item.what}): no result to reproduce",
                        outs)
    if not outs:
        return Decision("not-reproduced", f"not measured: {item.missing or 'no comparison'}", outs)
    missing = [o for o in outs if o.ours is None]
    held = [o for o in outs if o.ours is not None and o.holds]
    unsure = [o for o in outs if o.ours is not None and not o.holds and o.not_shown]
    failed = [o for o in outs if o.ours is not None and not o.holds and not o.not_shown]
    n = len(outs)
    parts = []
    if failed:
        parts.append("does not hold: " + "; ".join(f"{_show(o)} (needs {o.tolerance})"
                                                   for o in failed))
    if unsure:
        parts.append("not shown (the spread, of rounds or two standard errors, straddles the "
                     "tolerance: no evidence either way): "
                     + "; ".join(f"{_show(o)} (needs {o.tolerance})" for o in unsure))
    if missing:
        parts.append("; ".join(_show(o) for o in missing))
    if item.missing:  # part of the claim has no number: the item cannot be reproduced whole
        parts.append(f"not measured: {item.missing}")
    if not held:
        return Decision("not-reproduced", "; ".join(parts), outs)
    if len(held) == n and item.missing:
        return Decision("partial", f"{'all ' if n > 1 else ''}{n} measured comparison"
                        f"{'s hold' if n > 1 else ' holds'} on {data} data, but the claim is only "
                        f"partly measured; not measured: {item.missing}", outs)
    if len(held) == n:
        if data == "measured" and item.single_run:
            return Decision("partial", f"{'all ' if n > 1 else ''}{n} comparison"
                            f"{'s hold' if n > 1 else ' holds'} on data measured here, but in a "
                            f"single run ({item.single_run}): with no repeat its run-to-run "
                            "noise is unknown, so it cannot reproduce", outs)
        if data == "measured":
            return Decision("reproduced", f"all {n} comparison{'s' * (n > 1)} hold on data "
                            "measured here", outs)
        return Decision("partial", f"the claim holds in {n} of {n}, but on {data} data "
                        "(only data measured here can reproduce)", outs)
    return Decision("partial", f"{len(held)} of {n} comparisons hold; " + "; ".join(parts), outs)
