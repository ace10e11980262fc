"""RASS, CARIn's runtime-aware sort-and-search solver (CARIn 4.3, SPEC section 6), vectorised.

1. X' = feasible combinations; empty -> an "infeasible" result naming the nearest combinations.
2-4. Sort X' by optimality (ties: lower workload, lower memory, input order).
5. Processor-switching designs: d_0 = X_s[0]; its trigger processor runs the largest workload of
   its models. d_k = the best design using none of the triggers so far; at most T = 3.
6. d_m = argmin MF and d_w = argmin W over the union of the X_i (combinations with the same
   model-to-processor mapping as some d_i), ties by optimality; d_wm = the one of d_w, d_m with
   the lower min-max-normalised MF + W (normalised over X').
7. The switching policy: one rule per combination of the trigger flags and the memory flag.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np

from ..moo.confidence import break_tie, overlapping
from ..moo.problem import DiscreteProblem
from .result import Design, PolicyRule, SolveResult, nearest_violations

MAX_PROCESSOR_DESIGNS = 3


def _first(mask: np.ndarray) -> int | None:
    return int(np.argmax(mask)) if mask.any() else None


def rass(problem: DiscreteProblem, *, max_designs: int = MAX_PROCESSOR_DESIGNS) -> SolveResult:
    """Solve a problem with RASS.

    Args:
        problem: The discrete MOO problem.
        max_designs: T, the most processor-switching designs (CARIn: 3).

    Returns:
        SolveResult with designs d0..d{T-1}, dm, dw, dwm, the triggers and the policy; or, if no
        combination is feasible, status "infeasible" and the nearest combinations.
    """
    t0 = time.perf_counter()
    n_feasible = len(problem.feasible.index)
    t1 = time.perf_counter()
    if n_feasible == 0:
        nearest = nearest_violations(problem)
        return SolveResult("rass", "infeasible", {}, {"evaluate": (t1 - t0) * 1e3,
                           "total": (time.perf_counter() - t0) * 1e3}, problem.size, 0,
                           nearest=nearest)
    rk = problem.ranking
    t2 = time.perf_counter()

    flat, opt = rk.index, rk.optimality
    rows = problem.unravel(flat)
    procs = [ts.proc[r] for ts, r in zip(problem.tasks, rows)]
    uses = np.zeros(len(flat), dtype=np.int64)
    for p in procs:
        uses |= np.left_shift(np.int64(1), p)
    mapping = np.ravel_multi_index(tuple(procs), (len(problem.processors),) * len(procs)) \
        if len(procs) > 1 else procs[0]
    W_task = [ts.col("W")[r] for ts, r in zip(problem.tasks, rows)]
    L_task = [ts.col("L")[r] for ts, r in zip(problem.tasks, rows)]
    tot = problem.metrics(flat)
    W, MF = tot["W"], tot["MF"]

    def trigger_of(pos: int) -> str:
        # The processor running the design's largest workload (latency where W is unknown).
        w = np.array([x[pos] for x in W_task])
        if np.isnan(w).any():
            w = np.array([x[pos] for x in L_task])
        return problem.processors[int(procs[int(np.nanargmax(w))][pos])]

    designs: dict[str, Design] = {}
    triggers: list[str] = []
    chosen: list[int] = []
    trig_bits = np.int64(0)
    if problem.noisy:
        # F and H in the sorted order (the feasible rows are in ascending flat order).
        perm = np.searchsorted(problem.feasible.index, flat)
        F_s, H_s = problem.feasible.F[perm], problem.feasible_noise[perm]
    for k in range(max_designs):
        eligible = (uses & trig_bits) == 0
        pos = _first(eligible)
        if pos is None:
            break
        tie = None
        if problem.noisy:
            pos, tie = _within_noise(problem, F_s, H_s, pos, eligible, flat, W, MF)
        trig = trigger_of(pos)
        chosen.append(pos)
        triggers.append(trig)
        designs[f"d{k}"] = Design.of(problem, f"d{k}", int(flat[pos]), optimality=float(opt[pos]),
                                     trigger=trig, tie=tie)
        trig_bits |= np.int64(1) << np.int64(problem.processors.index(trig))

    union = np.isin(mapping, mapping[chosen])
    notes: dict[str, str] = {}
    for role, col in (("dm", MF), ("dw", W)):
        vals = np.where(union, col, np.nan)
        if np.isnan(vals).all():
            notes[role] = (f"absent: the profile has no {'MF' if role == 'dm' else 'W'} values "
                           "for these designs")
            continue
        pos = _first(vals == np.nanmin(vals))  # sorted by optimality: first = best of the ties
        designs[role] = Design.of(problem, role, int(flat[pos]), optimality=float(opt[pos]))
    if "dm" in designs and "dw" in designs:
        def cost(d: Design) -> float:
            c = 0.0
            for v, col in ((d.MF, MF), (d.W, W)):
                lo, hi = np.nanmin(col), np.nanmax(col)
                c += 0.0 if hi <= lo else (v - lo) / (hi - lo)
            return c
        pick = designs["dw"] if cost(designs["dw"]) < cost(designs["dm"]) else designs["dm"]
        designs["dwm"] = Design.of(problem, "dwm", pick.index, optimality=pick.optimality)
    elif "dm" in designs or "dw" in designs:
        pick = designs.get("dm") or designs["dw"]
        designs["dwm"] = Design.of(problem, "dwm", pick.index, optimality=pick.optimality)
        notes["dwm"] = f"only {pick.role} is available"
    policy = switching_policy(triggers, designs, notes)
    t3 = time.perf_counter()
    timing = {"evaluate": (t1 - t0) * 1e3, "sort": (t2 - t1) * 1e3, "search": (t3 - t2) * 1e3,
              "total": (t3 - t0) * 1e3}
    extra: dict[str, Any] = {"notes": notes} if notes else {}
    if problem.dropped:
        extra["dropped_rows"] = dict(problem.dropped)
    if problem.multi:
        extra["contention"] = problem.contention_source
    return SolveResult("rass", "ok", designs, timing, problem.size, n_feasible, triggers=triggers,
                       policy=policy, extra=extra, sorted_index=flat, sorted_optimality=opt)


def _label(problem: DiscreteProblem, flat: int) -> str:
    return " + ".join(c.label() for c in problem.configs_of(int(flat)))


def _within_noise(problem: DiscreteProblem, F: np.ndarray, H: np.ndarray, pos: int,
                  eligible: np.ndarray, flat: np.ndarray, W: np.ndarray, MF: np.ndarray
                  ) -> tuple[int, str | None]:
    """The design at sorted position ``pos``, reconsidered with the values' intervals
    (:func:`workbench.moo.confidence.break_tie`); when nothing tied outright, a sentence naming
    the objectives on which the runner-up was within the noise, and those that decided."""
    names = problem.objective_names
    pick, tie = break_tie(F, H, pos, W=W, MF=MF, names=names, eligible=eligible,
                          label=lambda k: _label(problem, flat[k]))
    if tie is not None:
        return pick, tie
    rest = np.flatnonzero(eligible)
    rest = rest[rest != pos]
    if not rest.size:
        return pos, None
    runner = int(rest[0])
    overlap = overlapping(F, H, pos, runner)
    if not overlap.any():
        return pos, None
    same = [n for n, o in zip(names, overlap) if o]
    decided = [n for n, o in zip(names, overlap) if not o]
    return pos, (f"the runner-up {_label(problem, flat[runner])} is within the 95% intervals on "
                 f"{', '.join(same)}; decided by {', '.join(decided)}")


def switching_policy(triggers: list[str], designs: dict, notes: dict[str, str] | None = None
                     ) -> list[PolicyRule]:
    """One rule for every combination of trigger-processor flags and the memory flag.

    Rules (SPEC 6.7): memory fine and triggers 0..k-1 flagged but k not -> d_k; every trigger
    flagged -> d_w (d_wm when memory is flagged too); memory flagged otherwise -> d_m. A rule
    whose design is absent says why.
    """
    notes = notes or {}
    out = []
    for flags in itertools.product((False, True), repeat=len(triggers) + 1):
        *proc, mem = flags
        k = next((i for i, f in enumerate(proc) if not f), None)
        if mem:
            role = "dwm" if k is None else "dm"
        else:
            role = "dw" if k is None else f"d{k}"
        when = dict(zip(triggers, proc)) | {"memory": mem}
        if role in designs:
            out.append(PolicyRule(when, role))
        else:
            out.append(PolicyRule(when, None, notes.get(role, f"{role} is absent")))
    return out
