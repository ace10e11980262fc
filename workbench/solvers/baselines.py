"""The papers' baselines (CARIn 7.1.1, SPEC section 7), each scored in RASS's normalisation.

* B-A / B-S: a single architecture, the one with the best accuracy (B-A) or the fewest
  parameters (B-S), solved inside its own variants (precisions x processors x options).
* Transferred: the design solved on another device, run unchanged on this one: "N/A" when this
  device lacks its processor (or configuration), "!" when it breaks this device's constraints.
* Multi-DNN-unaware: every task solved alone, the answers combined and evaluated under
  co-execution.

Each returns a :class:`Baseline`: its outcome and, when it has one, the design with its
optimality in the target problem's normalisation, so it can stand beside RASS's d0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import InputError
from ..moo.problem import DiscreteProblem
from .rass import rass
from .result import Design, SolveResult

OK, FAILS, NA = "ok", "!", "N/A"


@dataclass(frozen=True)
class Baseline:
    """A baseline's outcome on a problem: ``ok``, ``!`` (constraints fail) or ``N/A``."""

    name: str
    outcome: str
    design: Design | None = None
    reason: str | None = None

    @property
    def optimality(self) -> float | None:
        return self.design.optimality if self.design and self.outcome == OK else None

    def to_dict(self) -> dict:
        return {"name": self.name, "outcome": self.outcome, "reason": self.reason,
                "optimality": self.optimality,
                "design": self.design.to_dict() if self.design else None}


def _score(problem: DiscreteProblem, name: str, flat: int, reason: str | None = None
           ) -> Baseline:
    ev = problem.evaluate_flat(np.array([flat]))
    design = Design.of(problem, name, flat)
    if problem.limits and np.any(ev.G[0] > 0):
        broken = [b.name for b, g in zip(problem.limits, ev.G[0]) if g > 0]
        return Baseline(name, FAILS, design, "breaks " + ", ".join(broken))
    return Baseline(name, OK, design, reason)


def _pick_architecture(problem: DiscreteProblem, task_pos: int, by: str) -> str:
    ts = problem.tasks[task_pos]
    models = list(dict.fromkeys(ts.models))
    if by == "accuracy":
        hib = problem.profile.task(ts.name).higher_is_better
        A = ts.col("A")
        best = {m: (np.nanmax if hib else np.nanmin)(A[ts.models == m]) for m in models}
        return (max if hib else min)(models, key=lambda m: best[m])
    P = ts.col("params")
    if np.isnan(P).all():
        P = ts.col("S")
    size = {m: np.nanmin(P[ts.models == m]) for m in models}
    return min(models, key=lambda m: size[m])


def single_architecture(problem: DiscreteProblem, *, by: str = "accuracy",
                        solver: Callable[[DiscreteProblem], SolveResult] = rass) -> Baseline:
    """B-A (``by="accuracy"``) or B-S (``by="size"``): one architecture per task, solved inside
    its own variants, scored in the full problem."""
    if by not in ("accuracy", "size"):
        raise InputError("by must be 'accuracy' or 'size'", value=by)
    name = "B-A" if by == "accuracy" else "B-S"
    archs = [_pick_architecture(problem, k, by) for k in range(len(problem.tasks))]
    rows = {ts.name: [c.id for c in ts.configs if c.model == a]
            for ts, a in zip(problem.tasks, archs)}
    res = solver(problem.variant(rows=rows))
    if not res.ok:
        return Baseline(name, FAILS, None, f"no variant of {', '.join(archs)} meets the SLOs")
    return _score(problem, name, problem.flat_of(res.design().configs), ", ".join(archs))


def transferred(problem: DiscreteProblem, source: DiscreteProblem, *, name: str | None = None,
                solver: Callable[[DiscreteProblem], SolveResult] = rass) -> Baseline:
    """The design solved on ``source``'s device, run as it is on ``problem``'s device."""
    name = name or f"T_{source.profile.device.name}"
    res = solver(source)
    if not res.ok:
        return Baseline(name, NA, None, f"no feasible design on {source.profile.device.name}")
    missing_proc = [p for p in res.design().processors if p not in problem.processors]
    if missing_proc:
        return Baseline(name, NA, None, f"{problem.profile.device.name} has no "
                        f"{', '.join(missing_proc)}")
    try:
        flat = problem.flat_of(res.design().configs)
    except InputError:
        return Baseline(name, NA, None, f"{problem.profile.device.name} has no configuration "
                        f"{', '.join(res.design().labels)}")
    return _score(problem, name, flat, f"solved on {source.profile.device.name}")


def multi_dnn_unaware(problem: DiscreteProblem, *,
                      solver: Callable[[DiscreteProblem], SolveResult] = rass) -> Baseline:
    """Each task solved alone (its own objectives and constraints), the designs combined and
    evaluated together under co-execution."""
    picks = []
    for task in problem.task_names:
        res = solver(problem.variant(slo=problem.task_slo(task), tasks=[task]))
        if not res.ok:
            return Baseline("multi-DNN-unaware", FAILS, None, f"task {task} alone is infeasible")
        picks.append(res.design().configs[0])
    return _score(problem, "multi-DNN-unaware", problem.flat_of(picks))
