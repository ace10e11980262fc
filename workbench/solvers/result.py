"""What every solver returns: plain data, JSON-ready, independent of how it was found."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..moo.problem import DiscreteProblem

#: Design roles in the order CARIn lists them (Tables 7-8).
ROLES = ("d0", "d1", "d2", "dw", "dwm", "dm")


@dataclass(frozen=True)
class Design:
    """One chosen combination (one configuration per task) and its role."""

    role: str
    index: int
    configs: tuple[str, ...]
    labels: tuple[str, ...]
    processors: tuple[str, ...]
    optimality: float
    objectives: dict[str, float]
    W: float | None = None
    MF: float | None = None
    trigger: str | None = None
    #: Half-widths of the objectives' 95% intervals (objective -> H; absent: exact or unknown).
    intervals: dict[str, float] = field(default_factory=dict)
    #: When the design tied with others within the intervals: how the tie was broken.
    tie: str | None = None

    @classmethod
    def of(cls, problem: DiscreteProblem, role: str, flat: int, *, optimality: float | None = None,
           trigger: str | None = None, tie: str | None = None) -> "Design":
        return cls.many(problem, [dict(role=role, flat=flat, optimality=optimality,
                                       trigger=trigger, tie=tie)])[0]

    @classmethod
    def many(cls, problem: DiscreteProblem, picks: list[dict[str, Any]]) -> list["Design"]:
        """Designs of several combinations, described in one pass over the problem; each pick
        holds :meth:`of`'s arguments (``role``, ``flat``, optional ``optimality``, ``trigger``,
        ``tie``)."""
        if not picks:
            return []
        flats = [int(p["flat"]) for p in picks]
        described = problem.describe_many(flats)
        missing = [i for i, p in enumerate(picks) if p.get("optimality") is None]
        opts: list[float] = [float(p.get("optimality") or 0.0) for p in picks]
        if missing:
            scored = problem.optimality_of(np.array([flats[i] for i in missing]))
            for i, v in zip(missing, scored):
                opts[i] = float(v)
        return [cls(role=p["role"], index=f, configs=tuple(d["configs"]),
                    labels=tuple(d["labels"]), processors=tuple(d["processors"]),
                    optimality=float(o), objectives=d["objectives"], W=d["W"], MF=d["MF"],
                    trigger=p.get("trigger"), intervals=d.get("intervals", {}),
                    tie=p.get("tie"))
                for p, f, d, o in zip(picks, flats, described, opts)]

    def value_text(self, name: str, fmt=lambda v: f"{v:.4g}") -> str:
        """An objective for people: its value, and its 95% interval's half-width when known
        (``±?``: measured on too few samples for an interval)."""
        v = self.objectives[name]
        h = self.intervals.get(name)
        if not h:
            return fmt(v)
        return f"{fmt(v)} ±?" if math.isinf(h) else f"{fmt(v)} ±{h:.2g}"

    def row(self) -> dict[str, Any]:
        """One flat row (CSV, a table): role, configuration(s), optimality, every objective."""
        out = {"role": self.role, "design": " + ".join(self.labels),
               "optimality": self.optimality, **self.objectives}
        for k, h in self.intervals.items():  # only where a profile has intervals
            out[f"{k} ±95%"] = h
        if self.tie:
            out["tie"] = self.tie
        return out

    def to_dict(self) -> dict[str, Any]:
        out = {"config": self.configs[0] if len(self.configs) == 1 else list(self.configs),
               "configs": list(self.configs), "labels": list(self.labels),
               "processors": list(self.processors), "optimality": _json_float(self.optimality),
               "objectives": {k: _json_float(v) for k, v in self.objectives.items()},
               "W": self.W, "MF": self.MF}
        if self.trigger is not None:
            out["trigger"] = self.trigger
        if self.intervals:
            out["intervals"] = {k: _json_float(v) for k, v in self.intervals.items()}
        if self.tie is not None:
            out["tie"] = self.tie
        return out


@dataclass(frozen=True)
class PolicyRule:
    """A switching rule: when the processor and memory flags are ``when``, run ``design``."""

    when: dict[str, bool]
    design: str | None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"when": dict(self.when), "design": self.design}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Violation:
    """A near-feasible combination and the constraints it breaks (value above the bound)."""

    index: int
    labels: tuple[str, ...]
    broken: dict[str, float]
    distance: float

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "labels": list(self.labels), "broken": dict(self.broken),
                "distance": self.distance}


@dataclass
class SolveResult:
    """The outcome of a solver on a problem.

    Attributes:
        solver: Which solver produced it.
        status: ``"ok"`` or ``"infeasible"``.
        designs: Chosen designs by role (``d0`` is the initial/best design for every solver).
        timing_ms: Wall time of the solver's stages.
        n_total: Size of the decision space.
        n_feasible: Feasible combinations (for exhaustive solvers; -1 if unknown).
        triggers: RASS: the trigger processors t_0..t_{T-1}.
        policy: RASS: one rule per combination of trigger and memory flags.
        nearest: When infeasible: the closest combinations and what they break.
        extra: Solver-specific numbers (evaluations, fronts, indicators).
        ranking: RASS: a function returning the feasible space sorted by optimality (built
            on first use of :attr:`sorted_index`: RASS itself never sorts the space).
        raw: The library's own result object (pymoo Result, Optuna Study), not serialised.
    """

    solver: str
    status: str
    designs: dict[str, Design]
    timing_ms: dict[str, float]
    n_total: int
    n_feasible: int
    triggers: list[str] = field(default_factory=list)
    policy: list[PolicyRule] = field(default_factory=list)
    nearest: list[Violation] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    ranking: Any = field(default=None, repr=False)
    #: The library's own result, for the caller (not in to_dict): pymoo's ``Result`` (history,
    #: evaluations) for its algorithms, the Optuna ``Study`` (every trial) for Optuna's samplers.
    raw: Any = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def sorted_index(self) -> np.ndarray | None:
        """RASS: the feasible space X_s, flat indices best first (not in to_dict)."""
        return None if self.ranking is None else self.ranking().index

    @property
    def sorted_optimality(self) -> np.ndarray | None:
        """RASS: the optimality of :attr:`sorted_index`, aligned with it."""
        return None if self.ranking is None else self.ranking().optimality

    @property
    def d0(self) -> Design | None:
        return self.designs.get("d0")

    def design(self, role: str = "d0") -> Design:
        """A design that must exist (after checking :attr:`ok`).

        Raises:
            InputError: The result has no such design (e.g. it is infeasible).
        """
        d = self.designs.get(role)
        if d is None:
            raise InputError(f"{self.solver} result has no design {role!r} (status "
                             f"{self.status})", value=role)
        return d

    def decide(self, flags: dict[str, bool]) -> str | None:
        """The design role the switching policy picks for these flags (absent flags are False)."""
        return self.decide_bits(self.flag_bits(flags))

    def flag_bits(self, flags: dict[str, bool]) -> int:
        """Flags as the bit mask :meth:`decide_bits` takes: bit k = trigger k, the next bit =
        memory."""
        bits = 0
        for k, t in enumerate(self.triggers):
            if flags.get(t):
                bits |= 1 << k
        if flags.get("memory"):
            bits |= 1 << len(self.triggers)
        return bits

    def decide_bits(self, bits: int) -> str | None:
        """The policy as one list index: what a runtime holding its flags as a bit mask calls on
        every change (it never re-solves)."""
        return self.policy_vector[bits]

    @property
    def policy_vector(self) -> list[str | None]:
        """The design role for every flag bit mask (see :meth:`flag_bits`)."""
        vec = self.__dict__.get("_policy_vector")
        if vec is None:
            vec = [("d0" if self.ok else None)] * (1 << (len(self.triggers) + 1))
            for r in self.policy:
                vec[self.flag_bits(r.when)] = r.design
            self.__dict__["_policy_vector"] = vec
        return vec

    def policy_table(self) -> list[dict[str, Any]]:
        """The policy compressed into rows shaped like CARIn Table 7 ('T', 'F' or '-')."""
        T = len(self.triggers)
        if not T:
            return []
        rows = []
        for k in range(T):
            flags = ["T"] * k + ["F"] + ["-"] * (T - k - 1)
            rows.append({"flags": flags + ["F"], "design": f"d{k}"})
        rows.append({"flags": ["T"] * T + ["F"], "design": "dw"})
        rows.append({"flags": ["T"] * T + ["T"], "design": "dwm"})
        rows.append({"flags": ["-"] * T + ["T"], "design": "dm"})
        return rows

    def to_dict(self) -> dict[str, Any]:
        """The JSON form printed by ``workbench solve --json``."""
        out: dict[str, Any] = {
            "solver": self.solver, "status": self.status,
            "designs": {r: d.to_dict() for r, d in self.designs.items()},
            "triggers": list(self.triggers),
            "policy": [r.to_dict() for r in self.policy],
            "timing_ms": {k: round(v, 4) for k, v in self.timing_ms.items()},
            "n_total": self.n_total, "n_feasible": self.n_feasible,
        }
        if self.nearest:
            out["nearest"] = [v.to_dict() for v in self.nearest]
        if self.extra:
            out["extra"] = jsonable(self.extra)
        return out


def _json_float(x: float) -> float | str:
    # JSON has no infinity; "inf"/"-inf" keep the sign (an unbounded objective is either).
    return ("inf" if x > 0 else "-inf") if math.isinf(x) else x


def jsonable(x: Any) -> Any:
    """``x`` with numpy values made plain and non-finite floats spelt "inf"/"-inf" (NaN: null),
    so strict JSON (no Infinity/NaN tokens) can hold it."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return jsonable(x.tolist())
    if isinstance(x, (np.floating, float)):
        return _json_float(float(x)) if x == x else None
    if isinstance(x, np.integer):
        return int(x)
    return x


def nearest_violations(problem: DiscreteProblem, *, k: int = 5) -> list[Violation]:
    """The k combinations closest to feasibility: smallest sum of constraint excess, each excess
    relative to its bound (so a 10% miss of a latency bound weighs like a 10% miss of memory)."""
    if not problem.limits:
        return []
    scale = np.array([max(abs(b.value), 1e-9) for b in problem.limits])
    best_idx = np.empty(0, dtype=np.int64)
    best_d = np.empty(0)
    for ev in problem.chunks():
        d = (np.maximum(ev.G, 0) / scale).sum(axis=1)
        take = np.argsort(d, kind="stable")[:k]
        best_idx = np.concatenate([best_idx, ev.index[take]])
        best_d = np.concatenate([best_d, d[take]])
        keep = np.argsort(best_d, kind="stable")[:k]
        best_idx, best_d = best_idx[keep], best_d[keep]
    out = []
    G = problem.evaluate_flat(best_idx).G
    for flat, dist, g in zip(best_idx, best_d, G):
        broken = {b.name: float(x) for b, x in zip(problem.limits, g) if x > 0}
        labels = tuple(c.label() for c in problem.configs_of(int(flat)))
        out.append(Violation(int(flat), labels, broken, float(dist)))
    return out
