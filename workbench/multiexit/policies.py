"""Delen's adaptation policies (section 4.1) over an exit profile.

An :class:`ExitProfile` holds, per exit, the cumulative FLOPs, latency and energy to reach and
run it, and, per sample of a held-out set, each exit's top softmax value (confidence) and whether
its answer is right. A policy chooses an exit for every sample and returns an :class:`Outcome`
(accuracy, mean energy and latency, exit distribution) and the criteria a runtime would apply:

- ``per_request``: any criteria (:mod:`workbench.runtime.criteria`), evaluated after each exit;
- ``static_exit``: Delen Alg. 1, the first exit whose error meets a target (else the last);
- ``dynamic_exit``: per-workload dynamic, the deepest exit whose latency fits the time each
  request may take at the observed rate;
- :class:`ParetoPolicy`: Delen Alg. 2, 1000 confidence-threshold vectors on a grid, their
  (cost, error) Pareto front, and an O(log n) look-up of the cheapest vector meeting an error
  target (cost = energy or latency);
- ``oracle`` (the first exit that is right, else the first) and ``full`` (the last exit).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..runtime.criteria import Criterion, ExitState, Node, Null, confidence_thresholds


@dataclass
class ExitProfile:
    """Per-exit costs (cumulative, 1-D, one per exit) and per-sample confidences/correctness
    (2-D, samples x exits). ``source`` says whether it was measured or modelled."""

    flops: np.ndarray
    latency_ms: np.ndarray
    energy_mj: np.ndarray
    confidence: np.ndarray
    correct: np.ndarray
    source: str = "measured"
    name: str = ""

    def __post_init__(self) -> None:
        self.flops = np.asarray(self.flops, float)
        self.latency_ms = np.asarray(self.latency_ms, float)
        self.energy_mj = np.asarray(self.energy_mj, float)
        self.confidence = np.asarray(self.confidence, float)
        self.correct = np.asarray(self.correct, bool)
        n = len(self.flops)
        for name in ("latency_ms", "energy_mj"):
            if getattr(self, name).shape != (n,):
                raise InputError(f"needs one value per exit ({n})", where=f"exit profile.{name}",
                                 value=getattr(self, name).shape)
        for name in ("confidence", "correct"):
            a = getattr(self, name)
            if a.ndim != 2 or a.shape[1] != n:
                raise InputError(f"needs samples x {n} exits", where=f"exit profile.{name}",
                                 value=a.shape)
        if self.confidence.shape != self.correct.shape:
            raise InputError("confidence and correct differ in shape", where="exit profile",
                             value=(self.confidence.shape, self.correct.shape))
        if n < 1 or len(self.confidence) < 1:
            raise InputError("an exit profile needs exits and samples", where="exit profile")

    @property
    def n_exits(self) -> int:
        return len(self.flops)

    @property
    def accuracy(self) -> np.ndarray:
        return self.correct.mean(axis=0)

    def cost(self, metric: str) -> np.ndarray:
        if metric not in ("energy", "latency", "flops"):
            raise InputError("cost metric is energy, latency or flops", where="metric",
                             value=metric)
        return {"energy": self.energy_mj, "latency": self.latency_ms, "flops": self.flops}[metric]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source,
                "exits": [{"exit": i + 1, "flops": float(self.flops[i]),
                           "latency_ms": float(self.latency_ms[i]),
                           "energy_mj": float(self.energy_mj[i]),
                           "accuracy": float(self.accuracy[i]),
                           "confidence_mean": float(self.confidence[:, i].mean())}
                          for i in range(self.n_exits)]}


@dataclass(frozen=True)
class Outcome:
    """What a policy did over the profile's samples."""

    policy: str
    exits: np.ndarray                # 0-based exit per sample
    accuracy: float
    energy_mj: float
    latency_ms: float
    criteria: Node
    distribution: tuple[float, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"policy": self.policy, "accuracy": self.accuracy, "energy_mj": self.energy_mj,
                "latency_ms": self.latency_ms, "criteria": str(self.criteria),
                "distribution": list(self.distribution)}


def _outcome(p: ExitProfile, name: str, exits: np.ndarray, criteria: Node) -> Outcome:
    exits = np.asarray(exits, dtype=np.int64)
    rows = np.arange(len(exits))
    dist = np.bincount(exits, minlength=p.n_exits) / len(exits)
    return Outcome(name, exits, float(p.correct[rows, exits].mean()),
                   float(p.energy_mj[exits].mean()), float(p.latency_ms[exits].mean()),
                   criteria, tuple(float(x) for x in dist))


def run_criteria(p: ExitProfile, criteria: Node, *, name: str = "per-request") -> Outcome:
    """Evaluate criteria after every exit of every sample, as the runtime does."""
    fn = criteria.compile()
    acc = p.accuracy
    last = p.n_exits - 1
    exits = np.full(len(p.confidence), last, dtype=np.int64)
    lat, en, fl, conf = (p.latency_ms.tolist(), p.energy_mj.tolist(), p.flops.tolist(),
                         p.confidence.tolist())
    for s, row in enumerate(conf):
        for i in range(last):
            if fn(ExitState(lat[i], row[i], acc[i], en[i], fl[i], i + 1)):
                exits[s] = i
                break
    return _outcome(p, name, exits, criteria)


def per_request(p: ExitProfile, criteria: Node) -> Outcome:
    """Per-request adaptation: ``criteria`` decides after each exit."""
    return run_criteria(p, criteria)


def static_exit(p: ExitProfile, target_error: float) -> Outcome:
    """Delen Alg. 1: the first exit whose error is at most ``target_error``, else the last."""
    err = 1.0 - p.accuracy
    ok = np.flatnonzero(err <= target_error)
    k = int(ok[0]) if ok.size else p.n_exits - 1
    return _outcome(p, "per-workload static", np.full(len(p.confidence), k),
                    Criterion("exit_number", "==", k + 1))


def dynamic_exit(p: ExitProfile, budget_ms: float) -> Outcome:
    """Per-workload dynamic: the deepest exit whose latency fits ``budget_ms`` (the time a
    request may take at the observed rate), at least the first."""
    fits = np.flatnonzero(p.latency_ms <= budget_ms)
    k = int(fits[-1]) if fits.size else 0
    return _outcome(p, "per-workload dynamic", np.full(len(p.confidence), k),
                    Criterion("exit_number", "==", k + 1))


def oracle(p: ExitProfile) -> Outcome:
    """The first exit that answers right, else the first exit (Delen 6.2.2)."""
    right = p.correct
    exits = np.where(right.any(axis=1), right.argmax(axis=1), 0)
    return _outcome(p, "oracle", exits, Null())


def full(p: ExitProfile) -> Outcome:
    """Always the last exit."""
    return _outcome(p, "full", np.full(len(p.confidence), p.n_exits - 1), Null())


def threshold_exits(p: ExitProfile, thresholds: np.ndarray) -> np.ndarray:
    """Exit per sample for each threshold vector: the first exit i < N with confidence > pi_i,
    else the last. ``thresholds`` is (vectors, N-1); returns (vectors, samples)."""
    T = np.atleast_2d(np.asarray(thresholds, float))
    n = p.n_exits
    if n == 1:
        return np.zeros((len(T), len(p.confidence)), dtype=np.int64)
    passed = p.confidence[None, :, :n - 1] > T[:, None, :]       # vectors x samples x N-1
    any_pass = passed.any(axis=2)
    return np.where(any_pass, passed.argmax(axis=2), n - 1)


def threshold_grid(n_exits: int, n: int = 1000, *, lo: float = 0.0, hi: float = 1.0
                   ) -> np.ndarray:
    """About ``n`` threshold vectors on a regular grid over the first ``n_exits - 1`` exits
    (Delen: 1000 vectors, grid search)."""
    d = max(1, n_exits - 1)
    per = max(2, int(round(n ** (1.0 / d))))
    axis = np.linspace(lo, hi, per)
    mesh = np.meshgrid(*([axis] * d), indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


@dataclass
class ParetoPolicy:
    """Delen Alg. 2: the (cost, error) Pareto front over threshold vectors, with O(log n) look-up.

    Build with :meth:`fit`. ``front_cost`` rises and ``front_error`` falls along the front.
    """

    metric: str
    thresholds: np.ndarray       # all sampled vectors
    cost: np.ndarray             # mean cost per vector
    error: np.ndarray            # error rate per vector
    front: np.ndarray            # indices of the Pareto-optimal vectors, cheapest first
    _neg_err: list[float] = field(default_factory=list, repr=False)

    @classmethod
    def fit(cls, p: ExitProfile, *, metric: str = "energy", n: int = 1000) -> "ParetoPolicy":
        T = threshold_grid(p.n_exits, n)
        exits = threshold_exits(p, T)
        rows = np.arange(exits.shape[1])
        cost = p.cost(metric)[exits].mean(axis=1)
        error = 1.0 - p.correct[rows[None, :], exits].mean(axis=1)
        order = np.lexsort((error, cost))     # cheapest first, then lowest error
        best, keep = np.inf, []
        for i in order:                       # strictly better error than anything cheaper
            if error[i] < best - 1e-12:
                keep.append(int(i))
                best = error[i]
        front = np.array(keep, dtype=np.int64)
        return cls(metric, T, cost, error, front, [-float(e) for e in error[front]])

    @property
    def front_cost(self) -> np.ndarray:
        return self.cost[self.front]

    @property
    def front_error(self) -> np.ndarray:
        return self.error[self.front]

    def lookup(self, target_error: float) -> int | None:
        """The cheapest front vector with error < ``target_error`` (Alg. 2), or None:
        a binary search, since error falls as cost rises along the front."""
        k = bisect.bisect_right(self._neg_err, -target_error)
        return int(self.front[k]) if k < len(self.front) else None

    def lookup_budget(self, budget: float) -> int:
        """The most accurate front vector whose mean cost fits ``budget`` (else the cheapest):
        per-workload dynamic on top of the Pareto front."""
        k = bisect.bisect_right(self.front_cost.tolist(), budget) - 1
        return int(self.front[max(k, 0)])

    def criteria(self, index: int) -> Node:
        return confidence_thresholds([round(float(t), 6) for t in self.thresholds[index]])

    def outcome(self, p: ExitProfile, index: int, name: str = "Pareto frontier") -> Outcome:
        return _outcome(p, name, threshold_exits(p, self.thresholds[index])[0],
                        self.criteria(index))
