"""One task's configuration rows as numpy columns (built once; solvers never touch the rows'
objects), the rows an SLO can rank (those with every value it needs), and what variants of a
problem over the same rows reuse."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ... import processors
from ...errors import InputError
from ...metrics import COLUMNS
from ...profiles.schema import Config
from ..contention import mask_array


class TaskSpace:
    """One task's configuration rows, as numpy columns."""

    def __init__(self, name: str, configs: list[Config], processors: list[str],
                 coremasks: dict[str, int]) -> None:
        self.name = name
        # An object array from an iterator: np.array would iterate each pydantic model into its
        # fields, and filling one asks every row for __array__ (three failed lookups a row). A
        # subset of the rows is then one fancy index, not a Python loop.
        self.configs = np.fromiter(configs, dtype=object, count=len(configs))
        # Read each row's fields once from its __dict__ (10^5-row tables: attribute access and
        # parsing the processor id per row were most of building a problem).
        rows = [c.__dict__ for c in configs]
        where = {p: i for i, p in enumerate(processors)}
        proc = [d["processor"] for d in rows]
        kinds = _kinds(set(proc))
        self.ids = np.array([d["id"] for d in rows], dtype=object)
        self.proc = np.array([where[p] for p in proc], dtype=np.int64)
        self.is_cpu = np.array([kinds[p] for p in proc], dtype=bool)
        self.coremask = mask_array([coremasks.get(p, 0) for p in proc])
        self.threads = np.array([(d["threads"] or 1) if kinds[p] else 1
                                 for d, p in zip(rows, proc)], dtype=np.int64)
        self.batch = np.array([d["batch"] for d in rows], dtype=float)
        self.models = np.array([d["model"] for d in rows], dtype=object)
        # The table as numpy columns, built once: solvers then never touch Config objects.
        self._cols = {f: np.array([np.nan if d[f] is None else d[f] for d in rows], dtype=float)
                      for f in COLUMNS}
        # How sure each row's values are (workbench.moo.confidence): A's 95% half-width, and
        # the mean latency's as a share of L (TP and E follow L).
        self.A_half = np.array([c.A_half_width for c in configs], dtype=float)
        self.L_rel = np.array([c.L_half_width / c.L if c.L else 0.0 for c in configs],
                              dtype=float)

    def subset(self, keep: np.ndarray) -> "TaskSpace":
        """The rows where ``keep`` is True, by indexing the columns (no row is rebuilt)."""
        out = object.__new__(TaskSpace)
        out.name = self.name
        for attr in ("configs", "ids", "proc", "is_cpu", "coremask", "threads", "batch",
                     "models", "A_half", "L_rel"):
            setattr(out, attr, getattr(self, attr)[keep])
        out._cols = {k: v[keep] for k, v in self._cols.items()}
        return out

    def __len__(self) -> int:
        return len(self.configs)

    def col(self, name: str) -> np.ndarray:
        return self._cols[name]

    @property
    def placements(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows grouped by where they run (processor, cores, threads): each row's group, and
        the first row of each group. The contention model depends on nothing else."""
        cached = self.__dict__.get("_placements")
        if cached is None:
            ids: dict[tuple, int] = {}
            keys = zip(self.proc.tolist(), self.is_cpu.tolist(), self.coremask.tolist(),
                       self.threads.tolist())
            group = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), dtype=np.int64,
                                count=len(self.proc))
            cached = (group, np.unique(group, return_index=True)[1])
            self.__dict__["_placements"] = cached
        return cached



class _Spaces(NamedTuple):
    """What a variant of a problem over the same rows reuses: everything read from the
    profile's rows (the explorer re-solves on every slider move, and walking 10^4 rows in
    Python cost more than the solve)."""

    processors: list[str]
    tasks: list[TaskSpace]
    contention: dict[str, float]
    contention_source: str
    known: list[str]
    n_cores: int
    #: (task position, columns that must have values) -> the rows that have them.
    subsets: dict



def keep_rows_with_values(tasks: list[TaskSpace], needs: list[set[str]], subsets: dict,
                          device: str) -> dict[str, int]:
    """Drop, in place, each task's rows that lack a column it ``needs``, and refuse a task with
    no value of such a column at all or no row left; returns the rows dropped per task.
    ``subsets`` caches (task position, columns) -> (dropped, rows kept) for variants of a
    problem over the same rows."""
    out: dict[str, int] = {}
    for k, ts in enumerate(tasks):
        cols = needs[k]
        cached = subsets.get((k, frozenset(cols)))
        if cached is not None:
            out.update(cached[0])
            tasks[k] = cached[1]
        else:
            keep = np.ones(len(ts), dtype=bool)
            for col in sorted(cols):
                vals = ts.col(col)
                if len(ts) and np.isnan(vals).all():
                    raise InputError(
                        f"the SLO needs {col} for task {ts.name!r}, but profile "
                        f"{device!r} has no {col} values for it", where="SLO", value=col)
                keep &= ~np.isnan(vals)
            dropped = {ts.name: int((~keep).sum())} if not keep.all() else {}
            if dropped:
                tasks[k] = ts.subset(keep)
            out.update(dropped)
            subsets[(k, frozenset(cols))] = (dropped, tasks[k])
        if len(tasks[k]) == 0:
            raise InputError(f"task {ts.name!r} has no configurations to choose from",
                             where="tasks", value=ts.name)
    return out


def _kinds(procs: set[str]) -> dict[str, bool]:
    """Whether each processor id is a CPU, parsed once per id rather than once per row."""
    return {p: processors.kind(p) == "CPU" for p in procs}

