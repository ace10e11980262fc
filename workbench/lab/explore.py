"""The Pareto explorer's computation: edit SLOs, re-solve, and return plain data to draw.

The widget (:mod:`workbench.lab.widgets`) and the dashboard only wire controls to
:meth:`Session.explore` and draw its :class:`Exploration` with :func:`workbench.lab.viz.explorer_figure`.
A session keeps the profile's tables, so an edit (a constraint bound, an objective toggle, a
weight) re-solves a variant of the same problem: ~10-40 ms for 10^4 configurations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..moo.front import exact_front
from ..moo.optimality import feasible_mask
from ..moo.problem import DiscreteProblem
from ..moo.slo import SLO, Objective
from ..profiles import Profile, load_profile, resolve_profile
from ..solvers import oodin, rass
from ..solvers.evolutionary import evolutionary
from ..solvers.result import SolveResult

#: Above this many combinations the scatter shows a sample (plus the front and the designs).
MAX_POINTS = 20_000


@dataclass(frozen=True)
class Exploration:
    """One solved state of the explorer, ready to draw (arrays are aligned: one entry per point).

    Attributes:
        index: Flat combination index of each point.
        x, y: The two plotted objectives (natural units) and their names.
        labels: Each point's configuration(s).
        feasible: Meets every constraint of the edited SLO.
        pareto: On the exact Pareto front of the feasible space (edited objectives).
        designs: RASS's designs: role -> point position.
        oodin: OODIn's choice (point position) or None.
        nsga2: NSGA-II's front (point positions) when asked for, else None.
        policy: The switching policy as rows shaped like CARIn Table 7.
        triggers: The trigger processors (policy columns).
        picked: The design the runtime would run under ``flags`` (role), or None.
        flags: The flags it was asked about.
        slo: The edited SLO as text.
        result: RASS's full result.
        timing_ms: Where the time went.
    """

    index: np.ndarray
    x: np.ndarray
    y: np.ndarray
    x_name: str
    y_name: str
    labels: list[str]
    feasible: np.ndarray
    pareto: np.ndarray
    designs: dict[str, int]
    oodin: int | None
    nsga2: np.ndarray | None
    policy: list[dict[str, Any]]
    triggers: list[str]
    picked: str | None
    flags: dict[str, bool]
    slo: str
    result: SolveResult
    timing_ms: dict[str, float] = field(default_factory=dict)

    @property
    def n_feasible(self) -> int:
        return int(self.result.n_feasible)

    def design_label(self, role: str) -> str | None:
        d = self.result.designs.get(role)
        return None if d is None else " + ".join(d.labels)


class Session:
    """An explorer session over one profile and task set.

    Args:
        profile: A Profile, a profile file, or a name in ``profiles/`` (``s20fe``, ``host``).
        slo: The starting SLO text.
        tasks: The tasks run together (default: the profile's only task).
        sample_seed: Seed of the sample drawn when the space exceeds :data:`MAX_POINTS`.
    """

    def __init__(self, profile: Profile | str | Path, slo: str, *,
                 tasks: list[str] | None = None, sample_seed: int = 0) -> None:
        self.profile = profile if isinstance(profile, Profile) else load_profile(
            resolve_profile(profile))
        self.base = DiscreteProblem(self.profile, slo, tasks=tasks)
        self.slo = self.base.slo
        self.objectives = list(self.slo.effective_objectives)
        self.constraints = list(self.slo.constraints)
        # Points to draw: the whole space, or a sample of it for huge multi-DNN products.
        if self.base.size <= MAX_POINTS:
            self.points = np.arange(self.base.size, dtype=np.int64)
        else:
            rng = np.random.default_rng(sample_seed)
            self.points = np.sort(rng.choice(self.base.size, MAX_POINTS, replace=False))
        # The axes: every objective, and every constrained metric (latency is usually one).
        terms = list(self.objectives)
        for c in self.constraints:
            o = Objective("min" if c.op == "<=" else "max", c.metric, c.stat, c.task)
            if all((o.metric, o.stat, o.task) != (t.metric, t.stat, t.task) for t in terms):
                terms.append(o)
        self.display = self.base.variant(slo=SLO(tuple(terms), ()))
        self._F = self.display.evaluate_flat(self.points).F
        self.axis_names = list(self.display.objective_names)
        self._labels = [" + ".join(c.label() for c in self.base.configs_of(int(f)))
                        for f in self.points]

    # --- what the controls edit -------------------------------------------------------------
    def constraint_range(self, k: int) -> tuple[float, float]:
        """A slider range for constraint k: the metric's spread over the space, padded."""
        c = self.constraints[k]
        probe = self.base.variant(slo=SLO(self.slo.effective_objectives, (c,)))
        vals = probe.evaluate_flat(self.points).G[:, 0]
        # G = value - bound (<=) or bound - value (>=): recover the metric's values.
        metric = vals + c.value if c.op == "<=" else c.value - vals
        lo, hi = float(np.nanmin(metric)), float(np.nanmax(metric))
        pad = 0.05 * (hi - lo or abs(hi) or 1.0)
        return (max(0.0, lo - pad) if lo >= 0 else lo - pad), hi + pad

    def edited_slo(self, *, enabled: list[bool] | None = None,
                   weights: list[float] | None = None,
                   bounds: list[float] | None = None) -> SLO:
        objs = []
        for k, o in enumerate(self.objectives):
            if enabled is not None and not enabled[k]:
                continue
            objs.append(replace(o, weight=float(weights[k])) if weights is not None else o)
        if not objs:
            raise InputError("keep at least one objective switched on", where="objectives")
        cons = tuple(replace(c, value=float(bounds[k])) if bounds is not None else c
                     for k, c in enumerate(self.constraints))
        return SLO(tuple(objs), cons)

    # --- solving ----------------------------------------------------------------------------
    def explore(self, *, enabled: list[bool] | None = None, weights: list[float] | None = None,
                bounds: list[float] | None = None, flags: dict[str, bool] | None = None,
                x: str | None = None, y: str | None = None, nsga2: bool = False,
                nsga2_generations: int = 40, nsga2_pop: int = 40) -> Exploration:
        """Re-solve with the edited SLO and return what to draw.

        Args:
            enabled: Objectives switched on (aligned with ``self.objectives``).
            weights: Objective weights (aligned with ``self.objectives``).
            bounds: Constraint values (aligned with ``self.constraints``).
            flags: Processor and ``memory`` flags: which design would the runtime run?
            x, y: Objective names for the axes (default: a latency-like one and accuracy).
            nsga2: Also run pymoo's NSGA-II and overlay its front (slower: ~1 s).
        """
        t0 = time.perf_counter()
        slo = self.edited_slo(enabled=enabled, weights=weights, bounds=bounds)
        pb = self.base.variant(slo=slo)
        t1 = time.perf_counter()
        res = rass(pb)
        t2 = time.perf_counter()
        pos = {int(f): i for i, f in enumerate(self.points)}
        G = pb.evaluate_flat(self.points).G
        feasible = feasible_mask(G)
        pareto = np.zeros(len(self.points), bool)
        designs: dict[str, int] = {}
        extra: list[int] = []
        front = exact_front(pb) if res.ok else np.empty(0, dtype=np.int64)
        if res.ok:
            pareto[[pos[int(f)] for f in front if int(f) in pos]] = True
            for role, d in res.designs.items():
                designs[role] = self._position(pos, d.index, extra)
        t3 = time.perf_counter()
        od = oodin(pb)
        oodin_pos = self._position(pos, od.d0.index, extra) if od.ok and od.d0 else None
        t4 = time.perf_counter()
        nsga_pos = None
        if nsga2:
            ev = evolutionary(pb, algorithm="nsga2", pop_size=nsga2_pop,
                              n_gen=nsga2_generations, seed=1, compare=False)
            nsga_pos = np.array([self._position(pos, f, extra)
                                 for f in ev.extra.get("front", [])], dtype=np.int64)
        t5 = time.perf_counter()
        index, xs, labels = self.points, self._F, self._labels
        if extra:  # designs outside the drawn sample: append them
            add = np.array(extra, dtype=np.int64)
            index = np.concatenate([self.points, add])
            xs = np.vstack([self._F, self.display.evaluate_flat(add).F])
            labels = labels + [" + ".join(c.label() for c in self.base.configs_of(int(f)))
                               for f in add]
            G2 = pb.evaluate_flat(add).G
            feasible = np.concatenate([feasible, np.all(G2 <= 0, axis=1) if pb.limits else
                                       np.ones(len(add), bool)])
            pareto = np.concatenate([pareto, np.isin(add, front)])
        xi, yi = self._axes(x, y)
        flags = dict(flags or {})
        picked = res.decide(flags) if res.ok else None
        return Exploration(
            index=index, x=xs[:, xi], y=xs[:, yi], x_name=self.axis_names[xi],
            y_name=self.axis_names[yi], labels=labels, feasible=feasible, pareto=pareto,
            designs=designs, oodin=oodin_pos, nsga2=nsga_pos, policy=self.policy_rows(res),
            triggers=list(res.triggers), picked=picked, flags=flags, slo=str(slo), result=res,
            timing_ms={"variant": (t1 - t0) * 1e3, "rass": (t2 - t1) * 1e3,
                       "front": (t3 - t2) * 1e3, "oodin": (t4 - t3) * 1e3,
                       "nsga2": (t5 - t4) * 1e3, "total": (time.perf_counter() - t0) * 1e3})

    def _position(self, pos: dict[int, int], flat: int, extra: list[int]) -> int:
        flat = int(flat)
        if flat in pos:
            return pos[flat]
        if flat not in extra:
            extra.append(flat)
        return len(self.points) + extra.index(flat)

    def _axes(self, x: str | None, y: str | None) -> tuple[int, int]:
        names = self.axis_names
        for n in (x, y):
            if n is not None and n not in names:
                raise InputError(f"not an objective of this SLO ({', '.join(names)})",
                                 where="axis", value=n)
        metrics = [t.metric for t in self.display.objective_terms]
        xi = names.index(x) if x else next((i for i, m in enumerate(metrics) if m == "L"),
                                           next((i for i, m in enumerate(metrics)
                                                 if m not in ("A",)), 0))
        yi = names.index(y) if y else next((i for i, m in enumerate(metrics) if m == "A"
                                            and i != xi), 1 if xi == 0 and len(names) > 1 else 0)
        return xi, yi

    @staticmethod
    def policy_rows(res: SolveResult) -> list[dict[str, Any]]:
        """The policy as Table 7's rows, each with its design's configuration(s)."""
        rows = []
        for r in res.policy_table():
            d = res.designs.get(r["design"])
            rows.append({**{f"c_{t}": f for t, f in zip(res.triggers, r["flags"])},
                         "c_m": r["flags"][-1], "design": r["design"],
                         "configuration": "absent" if d is None else " + ".join(d.labels)})
        return rows
