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
import math
import time
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from ..moo.confidence import break_tie, overlapping
from ..moo.optimality import best_of
from ..moo.problem import DiscreteProblem
from .result import Design, PolicyRule, SolveResult, nearest_violations

MAX_PROCESSOR_DESIGNS = 3


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
    fe = problem.feasible
    n_feasible = len(fe.index)
    t1 = time.perf_counter()
    if n_feasible == 0:
        nearest = nearest_violations(problem)
        return SolveResult("rass", "infeasible", {}, {"evaluate": (t1 - t0) * 1e3,
                           "total": (time.perf_counter() - t0) * 1e3}, problem.size, 0,
                           nearest=nearest)
    # Steps 2-4 without sorting X': each design below is the best of a subset in the sort's
    # order (optimality, then lower W, lower MF, lower flat index), found by a pass over the
    # subset; the sorted space is built only if the caller reads result.sorted_index.
    opt = problem.scores.optimality
    W, MF = problem.tie_keys  # NaN read as +inf: an unknown value never wins a tie
    t2 = time.perf_counter()

    flat = fe.index
    rows = problem.unravel(flat, check=False)  # X': the problem's own indices
    procs = [ts.proc[r] for ts, r in zip(problem.tasks, rows)]
    picks, triggers, chosen = _processor_designs(problem, rows, procs, opt, W, MF, max_designs)

    # The X_i: combinations mapping models to processors as a chosen design does (at most T
    # mappings: a comparison each, cheaper than np.isin's sort).
    mapping = np.ravel_multi_index(tuple(procs), (len(problem.processors),) * len(procs)) \
        if len(procs) > 1 else procs[0]
    union = np.zeros(len(flat), dtype=bool)
    for m in set(mapping[chosen].tolist()):
        union |= mapping == m
    notes: dict[str, str] = {}
    found = _lightest(union, flat, opt, W, MF, picks, notes)
    designs = {d.role: d for d in Design.many(problem, picks)}
    if found:
        designs["dwm"] = replace(designs[_lighter(found, MF, W, notes)], role="dwm")
    policy = switching_policy(triggers, designs, notes)
    t3 = time.perf_counter()
    # "sort": scoring X' (RASS no longer sorts it; the name is kept for --json readers).
    timing = {"evaluate": (t1 - t0) * 1e3, "sort": (t2 - t1) * 1e3, "search": (t3 - t2) * 1e3,
              "total": (t3 - t0) * 1e3}
    extra: dict[str, Any] = {"notes": notes} if notes else {}
    if problem.dropped:
        extra["dropped_rows"] = dict(problem.dropped)
    if problem.multi:
        extra["contention"] = problem.contention_source
    return SolveResult("rass", "ok", designs, timing, problem.size, n_feasible, triggers=triggers,
                       policy=policy, extra=extra, ranking=partial(_ranking, problem))


def _processor_designs(problem: DiscreteProblem, rows: tuple[np.ndarray, ...],
                       procs: list[np.ndarray], opt: np.ndarray, W: np.ndarray, MF: np.ndarray,
                       max_designs: int) -> tuple[list[dict[str, Any]], list[str], list[int]]:
    """Step 5: d_0 is the best feasible combination; each d_k the best using none of the
    trigger processors so far. The picks (role, flat index, optimality, trigger, tie), the
    triggers and the designs' feasible rows."""
    flat = problem.feasible.index
    uses = np.zeros(len(flat), dtype=np.int64)  # the processors of each combination, as bits
    for p in procs:
        uses |= np.left_shift(np.int64(1), p)
    picks: list[dict[str, Any]] = []
    triggers: list[str] = []
    chosen: list[int] = []
    trig_bits = np.int64(0)
    for k in range(max_designs):
        eligible = None if k == 0 else (uses & trig_bits) == 0
        pos = best_of(opt, eligible, W, MF)
        if pos is None:
            break
        tie = None
        if problem.noisy:
            pos, tie = _within_noise(problem, pos, eligible, flat, opt, W, MF)
        trig = _trigger(problem, rows, procs, pos)
        chosen.append(pos)
        triggers.append(trig)
        picks.append(dict(role=f"d{k}", flat=int(flat[pos]), optimality=float(opt[pos]),
                          trigger=trig, tie=tie))
        trig_bits |= np.int64(1) << np.int64(problem.processors.index(trig))
    return picks, triggers, chosen


def _trigger(problem: DiscreteProblem, rows: tuple[np.ndarray, ...], procs: list[np.ndarray],
             pos: int) -> str:
    """The processor running the design's largest workload (latency where W is unknown)."""
    r = [int(x[pos]) for x in rows]
    w = [float(ts.col("W")[i]) for ts, i in zip(problem.tasks, r)]
    if any(x != x for x in w):
        w = [float(ts.col("L")[i]) for ts, i in zip(problem.tasks, r)]
    w = [-math.inf if x != x else x for x in w]  # unknown: never the largest
    k = max(range(len(w)), key=lambda j: w[j])  # the first of equal workloads
    return problem.processors[int(procs[k][pos])]


def _lightest(union: np.ndarray, flat: np.ndarray, opt: np.ndarray, W: np.ndarray,
              MF: np.ndarray, picks: list[dict[str, Any]], notes: dict[str, str]
              ) -> dict[str, int]:
    """Step 6: d_m (least MF) and d_w (least W) over the X_i, ties by optimality, appended to
    ``picks``; a role whose values are all unknown is noted absent. Their feasible rows."""
    found: dict[str, int] = {}
    for role, col in (("dm", MF), ("dw", W)):
        vals = np.where(union, col, np.inf)
        low = vals.min()
        if not np.isfinite(low):
            notes[role] = (f"absent: the profile has no {'MF' if role == 'dm' else 'W'} values "
                           "for these designs")
            continue
        pos = best_of(opt, vals == low, W, MF)  # the best-ranked of the ties
        assert pos is not None
        found[role] = pos
        picks.append(dict(role=role, flat=int(flat[pos]), optimality=float(opt[pos])))
    return found


def _lighter(found: dict[str, int], MF: np.ndarray, W: np.ndarray, notes: dict[str, str]) -> str:
    """d_wm: the one of d_w and d_m with the lower MF + W, each min-max normalised over X'
    (unknown values left out); the one there is when only one is."""
    if "dm" in found and "dw" in found:
        span = [(col.min(), np.where(np.isfinite(col), col, -np.inf).max()) for col in (MF, W)]

        def cost(pos: int) -> float:
            return sum(0.0 if hi <= lo else (col[pos] - lo) / (hi - lo)
                       for col, (lo, hi) in zip((MF, W), span))
        return "dw" if cost(found["dw"]) < cost(found["dm"]) else "dm"
    pick = next(iter(found))
    notes["dwm"] = f"only {pick} is available"
    return pick


def _ranking(problem: DiscreteProblem):
    """The sorted feasible space of a RASS result, built on first read (a module function, so
    that a result pickles)."""
    return problem.ranking


def _label(problem: DiscreteProblem, flat: int) -> str:
    return " + ".join(c.label() for c in problem.configs_of(int(flat)))


def _within_noise(problem: DiscreteProblem, pos: int, eligible: np.ndarray | None,
                  flat: np.ndarray, opt: np.ndarray, W: np.ndarray, MF: np.ndarray
                  ) -> tuple[int, str | None]:
    """The design at feasible row ``pos``, reconsidered with the values' intervals
    (:func:`workbench.moo.confidence.break_tie`); when nothing tied outright, a sentence naming
    the objectives on which the runner-up was within the noise, and those that decided."""
    names = problem.objective_names
    F, H = problem.feasible.F, problem.feasible_noise
    pick, tie = break_tie(F, H, pos, W=W, MF=MF, names=names, eligible=eligible, order=-opt,
                          label=lambda k: _label(problem, int(flat[k])))
    if tie is not None:
        return pick, tie
    rest = np.ones(len(flat), dtype=bool) if eligible is None else eligible.copy()
    rest[pos] = False
    runner = best_of(opt, rest, W, MF)
    if runner is None:
        return pos, None
    overlap = overlapping(F, H, pos, runner)
    if not overlap.any():
        return pos, None
    same = [n for n, o in zip(names, overlap) if o]
    decided = [n for n, o in zip(names, overlap) if not o]
    return pos, (f"the runner-up {_label(problem, int(flat[runner]))} is within the 95% intervals on "
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
