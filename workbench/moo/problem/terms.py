"""The problem's functions: an SLO's objectives and constraints resolved against the tasks a
problem runs (metric, statistic and task position checked against the metric table and the
profile's tasks, direction from the metric or the task), a bound on a term, and what evaluating
combinations returns."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ...errors import InputError
from ...metrics import BY_NAME, HIGHER_IS_BETTER, MODEL_METRICS, SYSTEM_METRICS
from ...metrics import unit as metric_unit
from ...profiles.schema import Profile
from ..slo import SLO, number_text


@dataclass(frozen=True)
class Term:
    """One resolved objective or constraint function f(x) of the problem.

    ``task`` is a task position, ``None`` for a system metric (NTT, STP, F) and ``-1`` for a
    per-model metric summed over the tasks (``[total]``).
    """

    name: str
    metric: str
    stat: str
    task: int | None
    maximise: bool = False
    weight: float = 1.0
    #: A target objective's value: the term is then the distance |f - target| (minimised).
    target: float | None = None

    @property
    def column(self) -> str:
        return BY_NAME[self.metric].column(self.stat)


@dataclass(frozen=True)
class Bound:
    """A resolved constraint ``term op value``; ``g = term - value`` (or ``value - term``)."""

    term: Term
    op: str
    value: float

    @property
    def name(self) -> str:
        # Every digit: two bounds that differ in the 7th digit are two constraints, not one.
        unit = metric_unit(self.term.metric)
        return f"{self.term.name} {self.op} {number_text(self.value)}{unit}"


class Evaluation(NamedTuple):
    """Objectives F (natural units, one column per objective term) and constraints G (G <= 0
    feasible) of a set of combinations given by flat index."""

    index: np.ndarray  # type: ignore[assignment]  # a field, not tuple.index
    F: np.ndarray
    G: np.ndarray



@dataclass(frozen=True)
class TermResolver:
    """Resolves an SLO's items against the tasks a problem runs (in order) on a profile: each
    becomes one term per task it applies to."""

    profile: Profile
    task_names: tuple[str, ...]

    @property
    def multi(self) -> bool:
        return len(self.task_names) > 1

    def positions(self, task: str | None, where: str) -> list[int | None]:
        """The task positions an SLO item's ``[task]`` names: every task (none named), -1
        (``[total]``) or the named one."""
        if task is None:
            return list(range(len(self.task_names)))
        if task == "total":
            return [-1]
        if task in self.task_names:
            return [self.task_names.index(task)]
        # [N] is never a position: L[1] read as "the first task" bound a task the user did not
        # name (and, with tasks named by numbers, the wrong one).
        raise InputError(f"{where}: task {task!r} is not part of this problem "
                         f"(tasks: {', '.join(self.task_names)}; [...] names a task)",
                         where="SLO", value=task)

    def term(self, metric: str, stat: str, task: int | None, *, where: str, sense: str | None,
             weight: float = 1.0, alias: str | None = None) -> Term:
        """One term, its statistic checked against the metric table."""
        if metric in SYSTEM_METRICS:
            if not self.multi:
                raise InputError(f"{where}: {metric} is a multi-DNN metric; this problem runs one "
                                 "task", where="SLO", value=metric)
            if stat not in BY_NAME[metric].stats:
                raise InputError(f"{where}: no {stat} statistic for {metric}", where="SLO",
                                 value=stat)
            name = ("" if stat == "avg" else f"{stat} ") + metric
            return Term(name, metric, stat, None, metric in HIGHER_IS_BETTER if sense is None
                        else sense == "max", weight)
        if stat not in BY_NAME[metric].stats:
            raise InputError(f"{where}: profiles hold no {stat!r} statistic of {metric} "
                             f"(available: {', '.join(BY_NAME[metric].stats)})", where="SLO",
                             value=stat)
        if alias is not None:
            self.check_alias(alias, task, where)
        label = ("" if stat == "avg" else f"{stat} ") + (alias or metric)
        if task == -1:
            name = f"{label}[total]"
        elif self.multi and task is not None:
            name = f"{label}[{self.task_names[task]}]"
        else:
            name = label
        if sense is None:
            maximise = False
        else:
            maximise = sense == "max"
            # "min MAE" says what it means; only a bare "max A" follows the task's direction.
            if metric == "A" and alias is None and task is not None and task >= 0:
                # "max A" asks for the best accuracy; for MAE-like metrics that is the lowest.
                if not self.profile.task(self.task_names[task]).higher_is_better:
                    maximise = not maximise
        return Term(name, metric, stat, task, maximise, weight)

    def check_alias(self, alias: str, task: int | None, where: str) -> None:
        """``max mIoU`` is ``max A`` on tasks whose A is mIoU: any other task is an error naming
        what its A measures."""
        from ...taskmetrics import of_label

        positions = range(len(self.task_names)) if task is None or task == -1 else [task]
        for k in positions:
            name = self.task_names[k]
            label = self.profile.task(name).metric
            m = of_label(label)
            if m is None or m.slo.lower() != alias.lower():
                raise InputError(f"{where}: task {name!r} measures A as {label!r}, not {alias} "
                                 f"(write A, or {m.slo if m else 'A'})", where="SLO", value=alias)

    def objectives(self, slo: SLO) -> list[Term]:
        """The terms of the SLO's (effective) objectives, one per task they apply to."""
        out = []
        for o in slo.effective_objectives:
            for pos in self.positions(o.task, str(o)) if o.metric in MODEL_METRICS else [None]:
                t = self.term(o.metric, o.stat, pos, where=str(o),
                              sense="min" if o.sense == "target" else o.sense, weight=o.weight,
                              alias=o.alias)
                if o.sense == "target":
                    # "as close as possible to": the distance, minimised, named for the target.
                    t = replace(t, name=f"|{t.name} - {number_text(o.target)}|", maximise=False,
                                target=o.target)
                out.append(t)
        names = [t.name for t in out]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise InputError(f"objective {sorted(dup)[0]!r} is given twice", where="SLO")
        return out

    def constraints(self, slo: SLO) -> list[Bound]:
        """The bounds of the SLO's constraints, one per task they apply to."""
        out = []
        for c in slo.constraints:
            for pos in self.positions(c.task, str(c)) if c.metric in MODEL_METRICS else [None]:
                out.append(Bound(self.term(c.metric, c.stat, pos, where=str(c), sense=None,
                                           alias=c.alias),
                                 c.op, c.value))
        return out
