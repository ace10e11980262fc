"""The discrete multi-objective problem over a device's configuration table (CARIn section 4.1).

Single-DNN: the decision space is the task's configuration table. Multi-DNN: the product of the
tasks' tables; a combination is addressed by its flat index (``np.ravel_multi_index`` over the
tables' sizes), and metrics are computed in vectorised chunks so that a space of 10^6
combinations never becomes 10^6 Python objects.

The problem is a pymoo ``Problem`` over an integer encoding (one variable per task: a row of that
task's table), so any pymoo algorithm can search it; ``_evaluate`` fills ``F`` (pymoo minimises,
so maximised objectives are negated) and ``G`` (G <= 0 feasible). Exact solvers use
:meth:`DiscreteProblem.evaluate` on flat indices, which returns objectives in natural units.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cached_property
from typing import Iterator

import numpy as np
from pymoo.core.problem import Problem

from ... import processors
from ...errors import InputError
from ...metrics import BY_NAME, MODEL_METRICS, SLOWDOWN_COLUMNS
from ...profiles.schema import Config, Profile
from ..confidence import noise_floor
from ..front import exact_front, minimisation
from ..optimality import OptimalityResult, feasible_mask, rank_order, scores
from ..slo import SLO
from .coexec import (
    SYSTEM_VALUES,
    co_run_latency,
    contention_parameters,
    contention_table,
    measured_coexecution,
)
from .tasks import TaskSpace, _Spaces, keep_rows_with_values
from .terms import Evaluation, Term, TermResolver

DEFAULT_CHUNK = 1 << 17


class DiscreteProblem(Problem):
    """A device-specific MOO problem: SLOs over one or more tasks of a profile.

    Args:
        profile: The device profile.
        slo: An :class:`SLO` or its string form.
        tasks: Tasks to run together (default: the profile's only task).
        weights: Objective weights, e.g. ``"A=2,TP=1"`` (see :meth:`SLO.with_weights`).
        exclude_processors: Drop configurations on these processors (e.g. to model a processor
            that is unavailable).

    Raises:
        InputError: Unknown task, a metric or statistic the profile lacks, an empty table.
    """

    def __init__(self, profile: Profile, slo: SLO | str, *, tasks: list[str] | None = None,
                 weights: dict[str, float] | str | None = None,
                 exclude_processors: tuple[str, ...] | list[str] = (),
                 rows: dict[str, list[str]] | None = None,
                 point_estimates: bool = False,
                 _spaces: _Spaces | None = None) -> None:
        self.profile = profile
        self.slo = (SLO.parse(slo) if isinstance(slo, str) else slo).with_weights(weights)
        #: Rank on the values alone, ignoring their intervals (see workbench.moo.confidence).
        self.point_estimates = bool(point_estimates)
        self._args = dict(tasks=tasks, exclude_processors=tuple(exclude_processors), rows=rows,
                          point_estimates=self.point_estimates)
        known = _spaces.known if _spaces is not None else list(dict.fromkeys(
            [t.name for t in profile.tasks] + [c.task for c in profile.configs]))
        if tasks is None:
            if len(known) != 1:
                raise InputError(f"profile {profile.device.name!r} has tasks "
                                 f"{', '.join(known)}: choose which to run", where="tasks")
            tasks = known
        for t in tasks:
            if t not in known:
                raise InputError(f"unknown task (profile {profile.device.name!r} has "
                                 f"{', '.join(known)})", where="tasks", value=t)
        if len(set(tasks)) != len(tasks):
            raise InputError("a task is listed twice", where="tasks", value=tasks)
        self.task_names = list(tasks)
        self.multi = len(tasks) > 1
        excluded = set(exclude_processors)
        if _spaces is not None:
            # A variant with other SLOs over the same rows: reuse the tables and the contention
            # parameters (the explorer re-solves on every slider move; building them is most of
            # the cost).
            self.processors = list(_spaces.processors)
            self.n_cores = _spaces.n_cores
            self._masks = {p: self.core_mask(p) for p in self.processors}
            self.tasks = list(_spaces.tasks)
        else:
            wanted = {t: set(ids) for t, ids in rows.items()} if rows is not None else None
            per_task = {t: [c for c in profile.configs if c.task == t
                            and c.processor not in excluded
                            and (wanted is None or c.id in wanted.get(t, ()))] for t in tasks}
            self.processors = sorted({c.processor for cs in per_task.values() for c in cs})
            self.n_cores = self._n_cores()
            self._masks = {p: self.core_mask(p) for p in self.processors}
            self.tasks = [TaskSpace(t, per_task[t], self.processors, self._masks) for t in tasks]
        tables = list(self.tasks)  # before rows lacking this SLO's values are dropped
        self._subsets: dict = _spaces.subsets if _spaces is not None else {}
        resolver = TermResolver(profile, tuple(self.task_names))
        self.objective_terms = resolver.objectives(self.slo)
        self.limits = resolver.constraints(self.slo)
        # Rows lacking a value an objective or constraint needs cannot be ranked.
        terms = self.objective_terms + [b.term for b in self.limits]
        system = any(t.task is None for t in terms)  # needs every model's latency
        needs = [{t.column for t in terms if t.task in (k, -1)} | ({"L"} if system else set())
                 for k in range(len(self.tasks))]
        self.dropped = keep_rows_with_values(self.tasks, needs, self._subsets,
                                             profile.device.name)
        self.shape = tuple(len(t) for t in self.tasks)
        self.size = math.prod(self.shape)
        if _spaces is not None:
            self.contention, self.contention_source = _spaces.contention, _spaces.contention_source
        else:
            self.contention, self.contention_source = contention_parameters(
                profile, multi=self.multi, core_mask=self.core_mask)
        self._spaces = _Spaces(self.processors, tables, self.contention, self.contention_source,
                               known, self.n_cores, self._subsets)
        self._coexec = (measured_coexecution(profile, self.tasks, self.shape) if self.multi
                        else {})
        super().__init__(n_var=len(self.tasks), n_obj=len(self.objective_terms),
                         n_ieq_constr=len(self.limits), xl=np.zeros(len(self.tasks)),
                         xu=np.array(self.shape, dtype=float) - 1, vtype=int)

    def variant(self, **changes) -> "DiscreteProblem":
        """The same problem with some constructor arguments changed (``slo``, ``tasks``,
        ``exclude_processors``, ``rows``), e.g. restricted to one architecture."""
        args = dict(self._args, slo=self.slo) | changes
        same_rows = all(args[k] == self._args[k] for k in self._args if k != "point_estimates")
        return DiscreteProblem(self.profile, args.pop("slo"), **args,
                               _spaces=self._spaces if same_rows else None)

    def task_slo(self, task: str) -> SLO:
        """The part of the SLO that concerns one task alone (system metrics dropped): what a
        multi-DNN-unaware design process optimises for that task."""
        positions = TermResolver(self.profile, tuple(self.task_names)).positions
        keep = lambda t: t in (None, "total") or (  # noqa: E731
            positions(t, t) == [self.task_names.index(task)])
        objs = tuple(o for o in self.slo.effective_objectives
                     if o.metric in MODEL_METRICS and keep(o.task))
        cons = tuple(c for c in self.slo.constraints if c.metric in MODEL_METRICS and keep(c.task))
        return SLO(objs, cons)

    # --- construction -------------------------------------------------------------------------
    def _n_cores(self) -> int:
        n = self.profile.device.n_cores
        if n:
            return n
        ids = [i for e in self.profile.engines for i in (e.core_ids or [])]
        ids += [c for p in self.processors for c in processors.parse(p).cores or ()]
        threads = [c.threads or 1 for c in self.profile.configs if c.kind == "CPU"]
        return max([max(ids) + 1 if ids else 0] + threads + [1])

    def core_mask(self, processor: str) -> int:
        """The CPU cores a processor id stands for on the profiled device (0: not a CPU)."""
        proc = processors.parse(processor)
        if not proc.is_cpu:
            return 0
        if proc.cores is not None:
            return proc.core_mask()
        eng = self.profile.engine(processor)
        if eng is not None and eng.core_ids:
            return sum(1 << i for i in eng.core_ids)
        # Profiles time a plain "CPU" on its fastest cores; on big.LITTLE chips co-running models
        # compete for those, not for the LITTLE cluster.
        clusters = self.profile.device.cpu_clusters
        if len(clusters) > 1:
            slowest = min(clusters, key=lambda c: c.ghz)
            return (1 << (self.n_cores - slowest.count)) - 1
        return (1 << self.n_cores) - 1

    @cached_property
    def _contention_table(self) -> tuple[tuple[int, ...], list[list[np.ndarray]]] | None:
        return contention_table(self.tasks, self.contention)

    # --- evaluation ---------------------------------------------------------------------------
    @property
    def maximise(self) -> np.ndarray:
        return np.array([t.maximise for t in self.objective_terms], dtype=bool)

    @property
    def unweighted(self) -> list[str]:
        """The objectives of weight 0 (optimality ignores them)."""
        return [t.name for t in self.objective_terms if t.weight == 0]

    @property
    def weights(self) -> np.ndarray:
        return np.array([t.weight for t in self.objective_terms], dtype=float)

    @property
    def objective_names(self) -> list[str]:
        return [t.name for t in self.objective_terms]

    @property
    def constraint_names(self) -> list[str]:
        return [b.name for b in self.limits]

    def unravel(self, flat: np.ndarray, *, check: bool = True) -> tuple[np.ndarray, ...]:
        """Per-task row indices of combinations given by flat index (``check=False``: indices
        known to be in range, e.g. the problem's own feasible ones)."""
        flat = np.asarray(flat, dtype=np.int64)
        if check and flat.size and (flat.min() < 0 or flat.max() >= self.size):
            raise InputError(f"combination index out of range 0..{self.size - 1}", where="index",
                             value=int(flat.min() if flat.min() < 0 else flat.max()))
        if len(self.shape) == 1:  # one task: the flat index is the row (unravel_index copies)
            return (flat,)
        return np.unravel_index(flat, self.shape)

    def _per_task(self, rows: tuple[np.ndarray, ...], flat: np.ndarray, cols: set[str]
                  ) -> tuple[list[dict[str, np.ndarray]], list[np.ndarray]]:
        """Per-task metric columns of the combinations, latency columns under co-execution."""
        vals = [{c: ts.col(c)[r] for c in cols | {"L"}} for ts, r in zip(self.tasks, rows)]
        if not self.multi:
            return vals, [np.ones(len(flat))]
        Ls = [v["L"] for v in vals]
        LM = co_run_latency(self.tasks, rows, flat, Ls, contention=self.contention,
                            table=self._contention_table, measured=self._coexec)
        ntt = []
        for k, (v, ts, r) in enumerate(zip(vals, self.tasks, rows)):
            with np.errstate(divide="ignore", invalid="ignore"):
                f = np.where(Ls[k] > 0, LM[k] / Ls[k], 1.0)
            ntt.append(f)
            for c in SLOWDOWN_COLUMNS:
                if c in v:
                    v[c] = v[c] * f
            if "TP" in v:
                v["TP"] = ts.batch[r] * 1000.0 / LM[k]
        return vals, ntt

    def _term_values(self, term: Term, vals: list[dict[str, np.ndarray]],
                     ntt: list[np.ndarray]) -> np.ndarray:
        if term.target is not None:
            return np.abs(self._term_values(replace(term, target=None), vals, ntt) - term.target)
        if term.task is None:
            return SYSTEM_VALUES[term.metric](np.stack(ntt), term.stat)
        if term.task == -1:
            return np.sum([v[term.column] for v in vals], axis=0)
        return vals[term.task][term.column]

    def metrics(self, flat: np.ndarray, columns: tuple[str, ...] = ("W", "MF")
                ) -> dict[str, np.ndarray]:
        """Totals over the tasks of per-model columns (e.g. workload W, memory MF) for
        combinations, NaN where a row lacks the value."""
        return self._totals(self.unravel(flat), columns)

    def _totals(self, rows: tuple[np.ndarray, ...], columns: tuple[str, ...] = ("W", "MF")
                ) -> dict[str, np.ndarray]:
        if len(self.tasks) == 1:
            return {c: self.tasks[0].col(c)[rows[0]] for c in columns}
        return {c: np.sum([ts.col(c)[r] for ts, r in zip(self.tasks, rows)], axis=0)
                for c in columns}

    def evaluate_flat(self, flat: np.ndarray) -> Evaluation:
        """Objectives in natural units and constraint values G (<= 0 feasible) of combinations.

        Args:
            flat: Flat indices into the decision space (``0 .. size-1``).
        """
        flat = np.asarray(flat, dtype=np.int64)
        if flat.size and (flat.min() < 0 or flat.max() >= self.size):
            bad = int(flat.min()) if flat.min() < 0 else int(flat.max())
            raise InputError(f"combination index out of range 0..{self.size - 1}", value=bad)
        rows = self.unravel(flat, check=False)
        terms = self.objective_terms + [b.term for b in self.limits]
        cols = {t.column for t in terms if t.task is not None}
        vals, ntt = self._per_task(rows, flat, cols)
        # Built column by column and returned as the transpose of a (terms, n) array: the same
        # (n, terms) values, laid out so that a statistic of one objective over every
        # combination reads contiguous memory (along rows of a (n, 3) C array it was 50x
        # slower, and most of a solve).
        F = _columns([self._term_values(t, vals, ntt) for t in self.objective_terms], len(flat))
        G = _columns([v - b.value if b.op == "<=" else b.value - v for b, v in (
            (b, self._term_values(b.term, vals, ntt)) for b in self.limits)], len(flat))
        return Evaluation(flat, F, G)

    def chunks(self, chunk: int = DEFAULT_CHUNK) -> Iterator[Evaluation]:
        """Evaluate the whole space in chunks of flat indices."""
        for start in range(0, self.size, chunk):
            yield self.evaluate_flat(np.arange(start, min(start + chunk, self.size), dtype=np.int64))

    def _calc_pareto_front(self, *args, **kwargs):
        # pymoo's pareto_front(): the exact front of the feasible space, in pymoo's minimisation
        # form, so that pymoo's own indicators can be given it directly.
        return minimisation(self, self.evaluate_flat(exact_front(self)).F)

    def _evaluate(self, x, out, *args, **kwargs):
        x = np.clip(np.rint(np.asarray(x, dtype=float)), 0, np.array(self.shape) - 1).astype(
            np.int64)
        flat = np.ravel_multi_index(tuple(x.T), self.shape)
        ev = self.evaluate_flat(flat)
        out["F"] = np.where(self.maximise, -ev.F, ev.F)
        if self.limits:
            out["G"] = ev.G

    # --- the feasible space and CARIn's optimality over it ------------------------------------
    @cached_property
    def feasible(self) -> Evaluation:
        """Every feasible combination (G <= 0) with its objectives, evaluated once."""
        idx, F, G = [], [], []
        for ev in self.chunks():
            ok = feasible_mask(ev.G)
            idx.append(ev.index[ok])
            # (terms, n) and C-ordered (see evaluate_flat): compress keeps the order, a boolean
            # index across axis 1 does not.
            F.append(np.compress(ok, ev.F.T, axis=1))
            G.append(np.compress(ok, ev.G.T, axis=1))
        if len(idx) == 1:
            return Evaluation(idx[0], F[0].T, G[0].T)
        return Evaluation(np.concatenate(idx), np.concatenate(F, axis=1).T,
                          np.concatenate(G, axis=1).T)

    # --- how sure the values are (workbench.moo.confidence) -----------------------------------
    @cached_property
    def noisy(self) -> bool:
        """Whether any objective value has an interval (and point estimates were not asked
        for): only then do the solvers treat overlapping designs as ties."""
        if self.point_estimates:
            return False
        return any(np.any(h > 0) for t in self.objective_terms
                   for _, h, _ in self._noise_sources(t))

    def _noise_sources(self, t: Term):
        """(task position, per-row half-widths, relative?) of what carries a term's noise (the
        metric table's ``interval``): A's half-width as it is, or the mean latency's relative one
        (TP and E follow L); nothing for the rest."""
        source = BY_NAME[t.metric].interval
        if t.task is None or not source or (source == "L" and t.stat != "avg"):
            return
        for k in (range(len(self.tasks)) if t.task == -1 else [t.task]):
            ts = self.tasks[k]
            yield (k, ts.A_half, False) if source == "A" else (k, ts.L_rel, True)

    def noise_flat(self, flat: np.ndarray) -> np.ndarray:
        """Half-widths H of the objective values of combinations (their 95% intervals are
        F +- H; 0 where a value has none), aligned with :meth:`evaluate_flat`'s F."""
        flat = np.asarray(flat, dtype=np.int64)
        H = np.zeros((len(flat), len(self.objective_terms)))
        if not self.noisy or not len(flat):
            return H
        rows = self.unravel(flat)
        cols = {t.column for t in self.objective_terms if t.task is not None}
        vals, _ = self._per_task(rows, flat, cols)
        for j, t in enumerate(self.objective_terms):
            sq = np.zeros(len(flat))
            for k, h, relative in self._noise_sources(t):
                part = h[rows[k]] * vals[k][t.column] if relative else h[rows[k]]
                sq += part ** 2
            H[:, j] = np.sqrt(sq)
        return H

    @cached_property
    def feasible_noise(self) -> np.ndarray:
        """:meth:`noise_flat` of every feasible combination (rows of :attr:`feasible`)."""
        return self.noise_flat(self.feasible.index)

    @cached_property
    def scores(self) -> OptimalityResult:
        """CARIn's optimality of every feasible combination, in :attr:`feasible`'s order
        (unsorted: RASS picks its few designs from it without sorting the space); with
        intervals, each objective's scale is at least its noise (workbench.moo.confidence)."""
        fe = self.feasible
        floor = noise_floor(self.feasible_noise) if self.noisy else None
        try:
            res = scores(fe.F, self.maximise, weights=self.weights, floor=floor)
        except InputError:
            missing = np.isnan(fe.F)
            if not missing.any():
                raise
            # Say which configuration lacks which metric, not an internal row number.
            i = int(np.flatnonzero(missing.any(axis=1))[0])
            names = [n for n, m in zip(self.objective_names, missing[i]) if m]
            ids = [c.id for c in self.configs_of(int(fe.index[i]))]
            raise InputError(f"{', '.join(names)} unknown for a feasible combination, so it "
                             "cannot be ranked: give it (or what it is computed from, such as L "
                             "under co-execution) in the profile, or leave it out of the SLO "
                             f"({int(missing.any(axis=1).sum())} combination(s))",
                             where="configs", value=" + ".join(ids)) from None
        return res._replace(index=fe.index)

    @cached_property
    def tie_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """CARIn's tie-breaks of the feasible combinations (lower workload W, then lower
        memory MF; unknown: last), aligned with :attr:`feasible`."""
        tot = self._totals(self.unravel(self.feasible.index, check=False))
        return (np.nan_to_num(tot["W"], nan=np.inf), np.nan_to_num(tot["MF"], nan=np.inf))

    @cached_property
    def ranking(self) -> OptimalityResult:
        """The feasible space sorted by CARIn's optimality (ties: lower W, then lower MF, then
        the lower flat index)."""
        sc = self.scores
        order = rank_order(sc.optimality, *self.tie_keys)
        return sc._replace(index=sc.index[order], optimality=sc.optimality[order])

    def optimality_of(self, flat: np.ndarray) -> np.ndarray:
        """Optimality of any combinations in RASS's normalisation over this problem's feasible
        space (so that every solver and baseline is compared on the same scale). Infeasible
        combinations get NaN."""
        flat = np.atleast_1d(np.asarray(flat, dtype=np.int64))
        out = np.full(len(flat), np.nan)
        if self.scores.index.size == 0:
            return out
        ev = self.evaluate_flat(flat)
        ok = feasible_mask(ev.G)
        out[ok] = self.scores.of(ev.F[ok])
        return out

    # --- describing combinations --------------------------------------------------------------
    def configs_of(self, flat: int) -> tuple[Config, ...]:
        """The configurations (one per task) of a combination."""
        rows = self.unravel(np.array([flat]))
        return tuple(ts.configs[int(r[0])] for ts, r in zip(self.tasks, rows))

    def flat_of(self, config_ids: list[str] | tuple[str, ...]) -> int:
        """The flat index of the combination of these config ids (one per task, task order)."""
        if len(config_ids) != len(self.tasks):
            raise InputError(f"need one config id per task ({len(self.tasks)})", value=config_ids)
        idx = []
        for ts, cid in zip(self.tasks, config_ids):
            hits = np.flatnonzero(ts.ids == cid)
            if hits.size == 0:
                raise InputError(f"no configuration {cid!r} for task {ts.name!r} in this problem",
                                 value=cid)
            idx.append(int(hits[0]))
        return int(np.ravel_multi_index(tuple(idx), self.shape))

    def describe(self, flat: int) -> dict:
        """A JSON-ready description of one combination: configs, objectives, constraints."""
        return self.describe_many([flat])[0]

    def describe_many(self, flats) -> list[dict]:
        """:meth:`describe` of several combinations, evaluated together (a solver describes
        its designs in one pass)."""
        flat = np.asarray(flats, dtype=np.int64).reshape(-1)
        ev = self.evaluate_flat(flat)  # checks the indices
        rows = self.unravel(flat, check=False)
        tot = self._totals(rows)
        H = self.noise_flat(flat) if self.noisy else None
        out = []
        for i in range(len(flat)):
            cfgs = [ts.configs[int(r[i])] for ts, r in zip(self.tasks, rows)]
            out.append({
                "configs": [c.id for c in cfgs],
                "labels": [c.label() for c in cfgs],
                "processors": [c.processor for c in cfgs],
                "objectives": {n: float(v) for n, v in zip(self.objective_names, ev.F[i])},
                "intervals": ({n: float(h) for n, h in zip(self.objective_names, H[i]) if h > 0}
                              if H is not None else {}),
                "constraints": {b.name: float(g) for b, g in zip(self.limits, ev.G[i])},
                "W": _num(tot["W"][i]), "MF": _num(tot["MF"][i]),
            })
        return out


def _columns(cols: list[np.ndarray], n: int) -> np.ndarray:
    """Columns as an (n, len(cols)) array in column-major order."""
    if not cols:
        return np.zeros((n, 0))
    return np.stack([np.asarray(c, dtype=float) for c in cols]).T


def _num(x: float) -> float | None:
    return None if x != x else float(x)

