"""The Pareto explorer's computation: a :class:`Session` keeps a profile's tables and re-solves
a variant of its problem on every edit (a constraint bound, an objective toggle, a weight),
returning an :class:`Exploration`: plain data that :mod:`.figures` draws. Also the limits of
what a page may ask (:data:`MAX_POINTS`, :data:`MAX_SLO`, :data:`MAX_WEIGHT`) and the rows a
page downloads (:func:`export_rows`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError
from ...metrics import accuracy_unit
from ...metrics import unit as metric_unit
from ...moo.front import exact_front
from ...moo.optimality import feasible_mask
from ...moo.problem import DiscreteProblem
from ...moo.slo import MAX_SLO_CHARS, SLO, Objective
from ...profiles import Profile, load_profile, resolve_profile
from ...solvers import oodin, rass
from ...solvers.evolutionary import evolutionary
from ...solvers.result import Design, SolveResult

#: Above this many combinations the scatter shows a sample (plus the front and the designs).
MAX_POINTS = 20_000

#: The longest SLO the explorer takes, in characters. A use case's SLO is under 100; a megabyte
#: typed or linked stalled the page's kernel for 20 s, so longer text is refused unparsed.
MAX_SLO = MAX_SLO_CHARS

#: The largest objective weight the page offers (its sliders' end).
MAX_WEIGHT = 5.0


def check_slo_length(text: str, *, where: str = "SLO", file: Any = None) -> str:
    """``text`` when it is at most :data:`MAX_SLO` characters, else an InputError naming the
    limit (and not quoting the text)."""
    if len(text) > MAX_SLO:
        raise InputError(f"an SLO has at most {MAX_SLO} characters (got {len(text)})",
                         file=file, where=where)
    return text


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
    #: Units of the plotted metrics ("" for ratios and counts).
    x_unit: str = ""
    y_unit: str = ""
    #: Constraints on a plotted metric: {"axis": "x"|"y", "op": "<="|">=", "value": v}.
    bounds: list[dict[str, Any]] = field(default_factory=list)
    #: The edited SLO's objectives; the front is theirs, so it is a 2-D front only when they
    #: are exactly the two plotted metrics.
    objective_names: list[str] = field(default_factory=list)
    #: The edited SLO's objectives of weight 0 (optimality ignores them).
    unweighted: list[str] = field(default_factory=list)
    #: Each point's hover: its configuration(s) and every metric of the problem with its unit.
    hover: list[str] = field(default_factory=list)
    #: Set when NSGA-II was stopped before its last generation (its front is partial).
    nsga2_note: str = ""
    #: OODIn's choice as a design of the same problem (optimality on RASS's scale), or None.
    oodin_design: Design | None = None
    #: Every axis metric of each point (rows aligned with ``index``; columns ``axis_names``),
    #: for views of more than two objectives.
    metrics: np.ndarray | None = None
    axis_names: list[str] = field(default_factory=list)
    axis_units: list[str] = field(default_factory=list)

    @property
    def front_is_2d(self) -> bool:
        """The front drawn is the front of the two plotted metrics (not a projection)."""
        return sorted(self.objective_names) == sorted({self.x_name, self.y_name}) and \
            len(self.objective_names) == 2

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
        if isinstance(slo, str):
            check_slo_length(slo)
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
            o = Objective("min" if c.op == "<=" else "max", c.metric, c.stat, c.task,
                          alias=c.alias)
            if all((o.metric, o.stat, o.task) != (t.metric, t.stat, t.task) for t in terms):
                terms.append(o)
        self.display = self.base.variant(slo=SLO(tuple(terms), ()))
        self._F = self.display.evaluate_flat(self.points).F
        self.axis_names = list(self.display.objective_names)
        self._labels = [" + ".join(c.label() for c in self.base.configs_of(int(f)))
                        for f in self.points]
        # Built once: a point's metrics never change with an edit, and strings sent as the
        # traces' text cost far less per update than a (points x metrics) customdata array.
        metric_of = {t.name: t.metric for t in self.profile.tasks}
        names = [ts.name for ts in self.base.tasks]
        only = metric_of.get(names[0], "") if len(names) == 1 else ""
        # Accuracy's unit is its task's metric (% top1, MAE, ...), which the profile states.
        # (A term's task is an index into the problem's tasks, None for the only one.)
        self._units = [accuracy_unit(metric_of.get(names[t.task], "") if t.task is not None
                                     else only) if t.metric == "A"
                       else metric_unit(t.metric) for t in self.display.objective_terms]
        self._hover = self._hover_of(self._labels, self._F)

    def _hover_of(self, labels: list[str], F: np.ndarray) -> list[str]:
        parts = [(n, (" " + u) if u else "") for n, u in zip(self.axis_names, self._units)]
        return [lab + "".join(f"<br>{n}: {v:.4g}{u}" for (n, u), v in zip(parts, row))
                for lab, row in zip(labels, F.tolist())]

    @property
    def flag_names(self) -> list[str]:
        """The device flags a view can raise: each processor the tasks run on, then ``memory``."""
        return sorted({c.processor for ts in self.base.tasks for c in ts.configs}) + ["memory"]

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
                nsga2_generations: int = 40, nsga2_pop: int = 40,
                nsga2_progress: Any = None) -> Exploration:
        """Re-solve with the edited SLO and return what to draw.

        Args:
            enabled: Objectives switched on (aligned with ``self.objectives``).
            weights: Objective weights (aligned with ``self.objectives``).
            bounds: Constraint values (aligned with ``self.constraints``).
            flags: Processor and ``memory`` flags: which design would the runtime run?
            x, y: Objective names for the axes (default: a latency-like one and accuracy).
            nsga2: Also run pymoo's NSGA-II and overlay its front (slower: seconds).
            nsga2_progress: Called after each NSGA-II generation with (done, total); False
                stops it (see :func:`workbench.solvers.evolutionary.evolutionary`).
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
        # OODIn's choice as a design of this problem: its optimality on RASS's scale and its
        # objectives, so the designs table fills its row like the others'.
        oodin_design = (Design.of(pb, "OODIn", od.d0.index) if od.ok and od.d0 and res.ok
                        else None)
        t4 = time.perf_counter()
        nsga_pos, nsga_note = None, ""
        if nsga2:
            nsga_pos, nsga_note = self._nsga2(pb, pos, extra, generations=nsga2_generations,
                                              pop_size=nsga2_pop, progress=nsga2_progress)
        t5 = time.perf_counter()
        index, xs, labels, hover = self.points, self._F, self._labels, self._hover
        if extra:  # designs outside the drawn sample: append them
            index, xs, labels, hover, feasible, pareto = self._appended(
                pb, np.array(extra, dtype=np.int64), front, feasible, pareto)
        xi, yi = self._axes(x, y)
        flags = dict(flags or {})
        picked = res.decide(flags) if res.ok else None
        return Exploration(
            x_unit=self._units[xi], y_unit=self._units[yi],
            bounds=self._bounds_on_axes(pb, xi, yi), objective_names=list(pb.objective_names),
            unweighted=pb.unweighted, hover=hover,
            metrics=xs, axis_names=list(self.axis_names), axis_units=list(self._units),
            index=index, x=xs[:, xi], y=xs[:, yi], x_name=self.axis_names[xi],
            y_name=self.axis_names[yi], labels=labels, feasible=feasible, pareto=pareto,
            nsga2_note=nsga_note,
            designs=designs, oodin=oodin_pos, oodin_design=oodin_design, nsga2=nsga_pos,
            policy=self.policy_rows(res),
            triggers=list(res.triggers), picked=picked, flags=flags, slo=str(slo), result=res,
            timing_ms={"variant": (t1 - t0) * 1e3, "rass": (t2 - t1) * 1e3,
                       "front": (t3 - t2) * 1e3, "oodin": (t4 - t3) * 1e3,
                       "nsga2": (t5 - t4) * 1e3, "total": (time.perf_counter() - t0) * 1e3})

    def _nsga2(self, pb: DiscreteProblem, pos: dict[int, int], extra: list[int], *,
               generations: int, pop_size: int, progress: Any) -> tuple[np.ndarray, str]:
        """NSGA-II's front as positions in the drawn points (its points outside the sample
        appended to ``extra``), and a note when it was stopped early."""
        ev = evolutionary(pb, algorithm="nsga2", pop_size=pop_size, n_gen=generations, seed=1,
                          compare=False, progress=progress)
        nsga_pos = np.array([self._position(pos, f, extra)
                             for f in ev.extra.get("front", [])], dtype=np.int64)
        note = ""
        if ev.extra.get("cancelled"):
            note = (f"NSGA-II stopped after {ev.extra['generations_done']} of "
                    f"{generations} generations")
        return nsga_pos, note

    def _appended(self, pb: DiscreteProblem, add: np.ndarray, front: np.ndarray,
                  feasible: np.ndarray, pareto: np.ndarray) -> tuple[
                      np.ndarray, np.ndarray, list[str], list[str], np.ndarray, np.ndarray]:
        """The drawn points with ``add`` (designs outside the sample) appended: their flat
        indices, metrics, labels, hover texts, feasibility and front membership."""
        index = np.concatenate([self.points, add])
        F_add = self.display.evaluate_flat(add).F
        xs = np.vstack([self._F, F_add])
        more = [" + ".join(c.label() for c in self.base.configs_of(int(f))) for f in add]
        labels = self._labels + more
        hover = self._hover + self._hover_of(more, F_add)
        G2 = pb.evaluate_flat(add).G
        feasible = np.concatenate([feasible, np.all(G2 <= 0, axis=1) if pb.limits else
                                   np.ones(len(add), bool)])
        pareto = np.concatenate([pareto, np.isin(add, front)])
        return index, xs, labels, hover, feasible, pareto

    def _bounds_on_axes(self, pb: DiscreteProblem, xi: int, yi: int) -> list[dict[str, Any]]:
        """The SLO's bounds on the metrics the axes show (drawn as lines)."""
        terms = self.display.objective_terms
        return [{"axis": axis, "op": b.op, "value": float(b.value)}
                for b in pb.limits for axis, i in (("x", xi), ("y", yi))
                if (b.term.metric, b.term.stat, b.term.task)
                == (terms[i].metric, terms[i].stat, terms[i].task)]

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
        # Default: two of the SLO's objectives (they come first among the axes), accuracy up
        # the y axis when it is one of them; a lone objective goes against the first
        # constrained metric.
        metrics = [t.metric for t in self.display.objective_terms]
        n_obj = len(self.objectives)
        objs = list(range(n_obj)) if n_obj >= 2 else list(range(len(names)))
        if y:
            yi = names.index(y)
        else:
            yi = next((i for i in objs if metrics[i] == "A"), objs[0])
        if x:
            xi = names.index(x)
        else:
            xi = next((i for i in objs if i != yi), next((i for i in range(len(names))
                                                          if i != yi), yi))
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


def export_rows(e: Exploration, what: str) -> list[dict[str, Any]]:
    """Rows to download: ``feasible`` (every feasible combination), ``front`` (the exact Pareto
    front of the edited SLO) or ``designs`` (RASS's designs and OODIn's choice), each with its
    configuration(s) and the displayed metrics in natural units."""
    if what not in ("feasible", "front", "designs"):
        raise InputError("export feasible, front or designs", where="export", value=what)
    if what == "designs":
        rows = [d.row() for d in e.result.designs.values()]
        if e.oodin_design is not None:
            rows.append(e.oodin_design.row())
        elif e.oodin is not None:
            rows.append({"role": "OODIn", "design": e.labels[e.oodin]})
        return rows
    assert e.metrics is not None  # Session.explore fills it
    pos = np.flatnonzero(e.feasible if what == "feasible" else e.pareto)
    return [{"configuration": e.labels[p], **dict(zip(e.axis_names, e.metrics[p].tolist()))}
            for p in pos]
