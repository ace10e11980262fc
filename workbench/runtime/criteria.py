"""Delen's exit-selection criteria (Table 1), their boolean combinations, text and JSON forms.

A criterion is ``(parameter OP threshold)`` with parameter one of ``response_time`` (ms),
``confidence`` (0..1), ``accuracy`` (of the exit, 0..1 or %), ``energy_used`` (mJ), ``flops_used``
and ``exit_number`` (1-based), and OP one of ``<``, ``==``, ``>``; ``null`` (false) forces full
execution. Criteria combine with ``&&`` / ``||`` / ``!`` (or ``and`` / ``or`` / ``not``). The
runtime evaluates the criteria after each exit with the partial state and takes the exit when they
hold; when they never hold the last exit answers.

Criteria compile to nested closures, so evaluating one after an exit costs about a microsecond
(Delen: 100 us). Standard library only: it lives in the runtime, which evaluates it on the
device for multi-exit designs; ``workbench.multiexit`` builds and tunes criteria with it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, NoReturn

from ..errors import InputError

PARAMETERS = ("response_time", "confidence", "accuracy", "energy_used", "flops_used",
              "exit_number")
OPS = ("<", "==", ">")
#: Units accepted after a threshold, converted to the parameter's unit.
_UNITS = {"response_time": {"ms": 1.0, "s": 1000.0, "us": 1e-3},
          "energy_used": {"mj": 1.0, "j": 1000.0, "uj": 1e-3},
          "flops_used": {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "mflops": 1e6, "gflops": 1e9},
          "confidence": {"%": 0.01}, "accuracy": {"%": 0.01}}


class ExitState(NamedTuple):
    """What the runtime knows after an exit: cumulative response time (ms), the exit's top
    softmax value, the exit's profiled accuracy, cumulative energy (mJ) and FLOPs, the exit's
    1-based number."""

    response_time: float
    confidence: float
    accuracy: float
    energy_used: float
    flops_used: float
    exit_number: int


class CriteriaError(InputError):
    """A criterion that cannot be used; the message names the offending part."""


@dataclass(frozen=True)
class Node:
    def evaluate(self, state: ExitState) -> bool:
        return self.compile()(state)

    def compile(self) -> Callable[[ExitState], bool]:
        raise NotImplementedError

    def __and__(self, other: "Node") -> "Node":
        return And(self, other)

    def __or__(self, other: "Node") -> "Node":
        return Or(self, other)

    def __invert__(self) -> "Node":
        return Not(self)


@dataclass(frozen=True)
class Criterion(Node):
    """``(parameter OP threshold)``."""

    parameter: str
    op: str
    threshold: float

    def __post_init__(self) -> None:
        if self.parameter not in PARAMETERS:
            raise CriteriaError(f"unknown parameter; use one of {', '.join(PARAMETERS)}",
                                where="criteria", value=self.parameter)
        if self.op not in OPS:
            raise CriteriaError("operator must be <, == or >", where="criteria", value=self.op)
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or t != t:
            raise CriteriaError(f"threshold of {self.parameter} must be a number",
                                where="criteria", value=t)
        if self.parameter == "exit_number" and (t != int(t) or t < 0):
            raise CriteriaError("exit_number compares with a whole exit number (1, 2, ...)",
                                where="criteria", value=t)
        if self.parameter == "confidence" and not 0 <= t <= 1:
            raise CriteriaError("confidence thresholds lie in [0, 1]", where="criteria", value=t)

    def compile(self) -> Callable[[ExitState], bool]:
        k = PARAMETERS.index(self.parameter)
        t = self.threshold
        if self.op == "<":
            return lambda s: s[k] < t
        if self.op == ">":
            return lambda s: s[k] > t
        return lambda s: s[k] == t

    def __str__(self) -> str:
        return f"({self.parameter} {self.op} {self.threshold:g})"


@dataclass(frozen=True)
class Null(Node):
    """``false``: never exit early (full execution)."""

    def compile(self) -> Callable[[ExitState], bool]:
        return lambda s: False

    def __str__(self) -> str:
        return "null"


@dataclass(frozen=True)
class And(Node):
    left: Node
    right: Node

    def compile(self) -> Callable[[ExitState], bool]:
        a, b = self.left.compile(), self.right.compile()
        return lambda s: a(s) and b(s)

    def __str__(self) -> str:
        return f"({self.left} && {self.right})"


@dataclass(frozen=True)
class Or(Node):
    left: Node
    right: Node

    def compile(self) -> Callable[[ExitState], bool]:
        a, b = self.left.compile(), self.right.compile()
        return lambda s: a(s) or b(s)

    def __str__(self) -> str:
        return f"({self.left} || {self.right})"


@dataclass(frozen=True)
class Not(Node):
    inner: Node

    def compile(self) -> Callable[[ExitState], bool]:
        a = self.inner.compile()
        return lambda s: not a(s)

    def __str__(self) -> str:
        return f"!{self.inner}"


def specify_criteria(parameter: str, op: str, threshold: float) -> Criterion:
    """Delen's ``specify_criteria()``: one criterion."""
    return Criterion(parameter, op, threshold)


def combine_criteria(op: str, *nodes: Node) -> Node:
    """Delen's ``combine_criteria()``: ``and`` / ``or`` over criteria, or ``not`` of one."""
    if op == "not":
        if len(nodes) != 1:
            raise CriteriaError("'not' takes one criterion", where="criteria", value=len(nodes))
        return Not(nodes[0])
    if op not in ("and", "or") or len(nodes) < 2:
        raise CriteriaError("combine with 'and' or 'or' over two or more criteria",
                            where="criteria", value=op)
    out = nodes[0]
    for n in nodes[1:]:
        out = And(out, n) if op == "and" else Or(out, n)
    return out


def confidence_thresholds(thresholds: list[float] | tuple[float, ...]) -> Node:
    """The Pareto policy's per-request criteria: ``exit i and confidence > pi_i`` for each of the
    given exits (the last exit answers regardless)."""
    terms = [And(Criterion("exit_number", "==", i + 1), Criterion("confidence", ">", float(t)))
             for i, t in enumerate(thresholds)]
    return combine_criteria("or", *terms) if len(terms) > 1 else (terms[0] if terms else Null())


# --- text ------------------------------------------------------------------------------------

# A unit may follow a number after spaces ("20 ms"), but a following "and"/"or"/"not" is the
# next operator, not a unit.
_TOKEN = re.compile(r"\s*(?:(\(|\)|&&|\|\||!|==|<|>)|([A-Za-z_]+)|([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
                    r"|[-+]?\.\d+(?:[eE][-+]?\d+)?)\s*((?!(?i:and|or|not)\b)[A-Za-z%]*))")


def parse_criteria(text: str) -> Node:
    """Parse ``(response_time > 20ms) || (confidence > 0.7)``; errors point at the token."""
    toks: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            _fail(text, pos, "unexpected character")
        start = m.start() + (len(m.group(0)) - len(m.group(0).lstrip()))
        if m.group(1):
            toks.append(("op", m.group(1), start))
        elif m.group(2):
            word = m.group(2).lower()
            kind = {"and": "op", "or": "op", "not": "op"}.get(word, "word")
            toks.append((kind, {"and": "&&", "or": "||", "not": "!"}.get(word, word), start))
        else:
            toks.append(("num", m.group(3) + "|" + m.group(4), start))
        pos = m.end()
    if not toks:
        _fail(text, 0, "empty criteria")
    node, k = _or(toks, 0, text)
    if k != len(toks):
        _fail(text, toks[k][2], "unexpected token")
    return node


def _fail(text: str, pos: int, msg: str) -> NoReturn:
    raise CriteriaError(f"{msg}\n  {text}\n  {' ' * pos}^", where="criteria")


def _or(t, k, text):
    node, k = _and(t, k, text)
    while k < len(t) and t[k][1] == "||":
        right, k = _and(t, k + 1, text)
        node = Or(node, right)
    return node, k


def _and(t, k, text):
    node, k = _unary(t, k, text)
    while k < len(t) and t[k][1] == "&&":
        right, k = _unary(t, k + 1, text)
        node = And(node, right)
    return node, k


def _unary(t, k, text):
    if k >= len(t):
        _fail(text, len(text), "criteria ends too early")
    kind, val, pos = t[k]
    if val == "!":
        inner, k = _unary(t, k + 1, text)
        return Not(inner), k
    if val == "(":
        node, k = _or(t, k + 1, text)
        if k >= len(t) or t[k][1] != ")":
            _fail(text, t[k][2] if k < len(t) else len(text), "missing ')'")
        return node, k + 1
    if kind == "word" and val in ("null", "false"):
        return Null(), k + 1
    if kind == "word":
        if val not in PARAMETERS:
            _fail(text, pos, f"unknown parameter; use one of {', '.join(PARAMETERS)}")
        if k + 1 >= len(t) or t[k + 1][1] not in OPS:
            _fail(text, t[k + 1][2] if k + 1 < len(t) else len(text), "expected <, == or >")
        if k + 2 >= len(t) or t[k + 2][0] != "num":
            _fail(text, t[k + 2][2] if k + 2 < len(t) else len(text), "expected a number")
        num, unit = t[k + 2][1].split("|")
        units = _UNITS.get(val, {})
        if unit.lower() not in units and unit != "":
            _fail(text, t[k + 2][2], f"unknown unit {unit!r} for {val}")
        scale = units.get(unit.lower(), 1.0)
        try:
            return Criterion(val, t[k + 1][1], float(num) * scale), k + 3
        except CriteriaError as e:
            _fail(text, pos, e.message)
    _fail(text, pos, "expected a criterion, '(' or '!'")
    raise AssertionError  # unreachable


# --- JSON --------------------------------------------------------------------------------------

def to_dict(node: Node) -> dict[str, Any]:
    """A JSON-ready form (``{"param": ..., "op": ..., "value": ...}``, ``{"and": [a, b]}``, ...)."""
    if isinstance(node, Criterion):
        return {"param": node.parameter, "op": node.op, "value": node.threshold}
    if isinstance(node, Null):
        return {"null": True}
    if isinstance(node, And):
        return {"and": [to_dict(node.left), to_dict(node.right)]}
    if isinstance(node, Or):
        return {"or": [to_dict(node.left), to_dict(node.right)]}
    if isinstance(node, Not):
        return {"not": to_dict(node.inner)}
    raise TypeError(f"not a criteria node: {node!r}")


def from_dict(data: Any, where: str = "criteria") -> Node:
    """Read :func:`to_dict`'s form; a bad node names its JSON path."""
    if not isinstance(data, dict) or len(data) == 0:
        raise CriteriaError("expected an object", where=where, value=data)
    if "param" in data:
        extra = set(data) - {"param", "op", "value"}
        if extra or not {"op", "value"} <= set(data):
            raise CriteriaError("a criterion has exactly param, op and value", where=where,
                                value=sorted(data))
        try:
            return Criterion(data["param"], data["op"], data["value"])
        except CriteriaError as e:
            raise CriteriaError(e.message, where=where, value=e.value) from None
    if data.get("null") is True and len(data) == 1:
        return Null()
    if len(data) == 1 and next(iter(data)) in ("and", "or"):
        op = next(iter(data))
        items = data[op]
        if not isinstance(items, list) or len(items) < 2:
            raise CriteriaError(f"'{op}' takes a list of two or more", where=f"{where}.{op}",
                                value=items)
        nodes = [from_dict(x, f"{where}.{op}[{i}]") for i, x in enumerate(items)]
        return combine_criteria(op, *nodes)
    if len(data) == 1 and "not" in data:
        return Not(from_dict(data["not"], f"{where}.not"))
    raise CriteriaError("unknown criteria node (param/op/value, and, or, not, null)", where=where,
                        value=sorted(data))


def dumps(node: Node) -> str:
    return json.dumps(to_dict(node))


def loads(text: str) -> Node:
    from ..fileio import parse_json

    return from_dict(parse_json(text))


class CriteriaTable:
    """Delen's per-application criteria table: set and update criteria at run time."""

    def __init__(self) -> None:
        self._nodes: dict[str, Node] = {}
        self._compiled: dict[str, Callable[[ExitState], bool]] = {}

    def set(self, app: str, criteria: Node | str) -> None:
        node = parse_criteria(criteria) if isinstance(criteria, str) else criteria
        self._compiled[app] = node.compile()  # compile first: a bad node changes nothing
        self._nodes[app] = node

    def get(self, app: str) -> Node:
        return self._nodes.get(app, Null())

    def should_exit(self, app: str, state: ExitState) -> bool:
        fn = self._compiled.get(app)
        return False if fn is None else bool(fn(state))
