"""One sweep task solved into one plain row (:data:`COLUMNS`); a task's failure is its row."""

from __future__ import annotations

import hashlib
import math
import time
from typing import Any, cast

from .grid import SweepTask
from .profile_files import _parse_profile, _read_profile

#: The columns of a sweep's rows, in order.
COLUMNS = ("key", "profile", "device", "profile_source", "use_case", "tasks", "slo", "weights",
           "solver",
           "repeat", "status", "d0", "optimality", "designs", "feasible", "hv", "igd",
           "optimality_ratio", "solve_ms", "error")

#: Columns that differ between runs of the same task (everything else must not).
TIMING_COLUMNS = ("solve_ms",)


def input_key(task: "SweepTask", profile_sha: str | None) -> str:
    """What a journal row is reused by: the task (every option) and the content of the profile
    it was solved on."""
    return hashlib.sha256(f"{task.key()} {profile_sha}".encode()).hexdigest()[:32]


def run_task(task: SweepTask, profile_text: str | None = None) -> dict[str, Any]:
    """Solve one task; a plain row (see :data:`COLUMNS`). Never raises for a task's own
    problem: a bad SLO, an infeasible problem or a solver failure is the row's status.

    ``profile_text``: the profile file's text, read by the client and shipped with the task,
    so a worker needs no access to the client's disk (without it the worker reads the file)."""
    from ...moo.problem import DiscreteProblem
    from ...moo.usecases import scenario
    from ...profiles import resolve_profile
    from ...solvers import SOLVERS, solve

    row: dict[str, Any] = {c: None for c in COLUMNS}
    row.update(key=task.key(), profile=task.profile, use_case=task.use_case, slo=task.slo,
               weights=task.weights, solver=task.solver, repeat=task.repeat, tasks=task.tasks)
    # The journal's key for this row: the content this task actually read (not in COLUMNS).
    row["input_key"] = input_key(task, None)
    try:
        prof, sha = (_parse_profile(profile_text, task.profile) if profile_text is not None
                     else _read_profile(resolve_profile(task.profile)))
        row["input_key"] = input_key(task, sha)
        row.update(device=prof.device.name, profile_source=prof.source)
        if task.tasks is not None:
            tasks, uc_slo = tuple(task.tasks.split(",")), None
        else:
            tasks, uc_slo = scenario(cast(str, task.use_case))  # a task names one or the other
            row["tasks"] = ",".join(tasks)
        slo = task.slo or uc_slo
        row["slo"] = slo
        pb = DiscreteProblem(prof, cast(str, slo), tasks=list(tasks), weights=task.weights)
        options: dict[str, Any] = {}
        if task.solver not in SOLVERS:  # the exact solvers take no seed or effort
            options = {"seed": 1 + task.repeat,
                       **({"pop_size": task.pop_size} if task.pop_size else {}),
                       **({"n_gen": task.n_gen} if task.n_gen else {})}
        t0 = time.perf_counter()
        res = solve(pb, task.solver, **options)
        row["solve_ms"] = (time.perf_counter() - t0) * 1e3
        row["status"] = res.status
        row["feasible"] = int(res.n_feasible) if res.n_feasible >= 0 else None
        if res.ok:
            d0 = res.designs["d0"]
            row.update(d0=" + ".join(d0.labels), optimality=_number(d0.optimality),
                       designs=len(res.designs))
        for k in ("hv", "igd", "optimality_ratio"):
            v = res.extra.get(k) if res.extra else None
            row[k] = _number(v) if isinstance(v, (int, float)) else None
    except Exception as e:  # noqa: BLE001 - a task's failure is its row, the sweep goes on
        row["status"] = "error"
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]
    return row


def _number(v: float | None) -> float | None:
    """A row's number as it is: an optimality at the utopia point stays inf (written "inf" in
    CSV, read back as inf; the journal's JSON lines hold it as Infinity), never a finite
    stand-in such as 1e308 that a reader would take for a value. NaN is no number: None."""

    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v
