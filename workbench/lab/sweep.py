"""Sweeps: the same question asked many times. Profiles x use cases x SLO grids x weight grids x
solvers x repeats become independent tasks; each solves one problem and returns a plain row.

Tasks run in this process (``workers=0``, the reference), on a Dask ``LocalCluster`` (``workers=N``)
or on an existing Dask cluster (``scheduler="tcp://HOST:PORT"``); the rows are the same whichever
runs them (timings aside). A task that fails is a row with its error, and the sweep goes on.
Finished rows go to a journal (JSON lines) as they arrive, so an interrupted sweep resumes from
what it wrote. Dask is optional (the ``sweep`` extra) and imported only when a cluster is used.

    grid = sweep_grid(profiles=["s20fe", "a71"], use_cases=["uc1"],
                      slos=["max A; max TP; max L <= {20,41.67}ms"], solvers=["rass", "oodin"])
    rows = sweep(grid, workers=2)          # a DataFrame, one row per task
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..errors import InputError

_BRACES = re.compile(r"\{([^{}]*)\}")


def expand(text: str) -> list[str]:
    """Brace expansion: ``"L <= {10,20}ms; TP >= {5,10}"`` -> the four strings, in order (the
    last brace varies fastest). Braces do not nest; an empty or unclosed brace is an error."""
    if text.count("{") != text.count("}") or re.search(r"\{[^}]*\{", text):
        raise InputError("braces must close and not nest, e.g. 'L <= {10,20}ms'", value=text)
    parts = _BRACES.split(text)
    fixed, choices = parts[0::2], parts[1::2]
    options = []
    for c in choices:
        vals = [v.strip() for v in c.split(",")]
        if not all(vals):
            raise InputError("an empty choice inside braces", value="{" + c + "}")
        options.append(vals)
    out = []
    for combo in itertools.product(*options):
        s = fixed[0]
        for v, f in zip(combo, fixed[1:]):
            s += v + f
        out.append(s)
    return out


@dataclass(frozen=True)
class SweepTask:
    """One problem to solve: a profile (name or file), a use case, an SLO (None: the use
    case's own), weights (``"A=2,TP=1"`` or None), a solver and a repeat number (the seed of
    stochastic solvers)."""

    profile: str
    use_case: str
    slo: str | None
    weights: str | None
    solver: str
    repeat: int = 0
    #: Evolutionary solvers' effort (None: the solver's defaults, 100 x 100).
    pop_size: int | None = None
    n_gen: int | None = None

    def key(self) -> str:
        """A stable id: the same task has the same key in every run (what resuming matches)."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def sweep_grid(*, profiles: Sequence[str], use_cases: Sequence[str],
               slos: Sequence[str | None] = (None,), weights: Sequence[str | None] = (None,),
               solvers: Sequence[str] = ("rass",), repeat: int = 1, pop_size: int | None = None,
               n_gen: int | None = None) -> list[SweepTask]:
    """Every combination, braces in SLOs and weights expanded. Names are checked here, before
    anything runs, so a typo is one error instead of a thousand error rows."""
    from ..moo.usecases import scenario
    from ..profiles import resolve_profile
    from ..solvers import ALGORITHMS, SOLVERS

    if not (1 <= repeat <= 1000):
        raise InputError("repeat is a whole number 1..1000", where="repeat", value=repeat)
    for p in profiles:
        resolve_profile(p)
    for uc in use_cases:
        scenario(uc)
    for s in solvers:
        if s not in SOLVERS and s.lower() not in ALGORITHMS:
            raise InputError(f"unknown solver; use {', '.join([*SOLVERS, *ALGORITHMS])}",
                             where="solvers", value=s)
    slo_list = [x for s in slos for x in ([None] if s is None else expand(s))]
    w_list = [x for w in weights for x in ([None] if w is None else expand(w))]
    # Effort belongs to evolutionary solvers only: an exact solver's task key must not vary
    # with it.
    return [SweepTask(p, uc, s, w, solver, r, None if solver in SOLVERS else pop_size,
                      None if solver in SOLVERS else n_gen)
            for p, uc, s, w, solver, r in itertools.product(
                profiles, use_cases, slo_list, w_list, solvers, range(repeat))]


def load_grid(path: str | os.PathLike) -> list[SweepTask]:
    """A grid file: JSON with the keyword arguments of :func:`sweep_grid`, e.g.
    ``{"profiles": ["s20fe"], "use_cases": ["uc1"], "slos": ["max A; L <= {10,20}ms"],
    "solvers": ["rass", "nsga2"], "n_gen": 20}``. A bad file is one error naming the field."""
    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    from ..fileio import parse_json, read_text
    from ..profiles.store import error_from_validation

    class _Grid(BaseModel):
        model_config = ConfigDict(extra="forbid")
        profiles: list[str] = Field(min_length=1)
        use_cases: list[str] = Field(min_length=1)
        slos: list[str | None] = [None]
        weights: list[str | None] = [None]
        solvers: list[str] = ["rass"]
        repeat: int = 1
        pop_size: int | None = None
        n_gen: int | None = None

    data = parse_json(read_text(path, what="sweep grid"), file=path)
    try:
        g = _Grid.model_validate(data)
    except ValidationError as e:
        raise error_from_validation(e, file=path) from None
    return sweep_grid(**g.model_dump())


#: The columns of a sweep's rows, in order.
COLUMNS = ("key", "profile", "device", "profile_source", "use_case", "slo", "weights", "solver",
           "repeat", "status", "d0", "optimality", "designs", "feasible", "hv", "igd",
           "optimality_ratio", "solve_ms", "error")
#: Columns that differ between runs of the same task (everything else must not).
TIMING_COLUMNS = ("solve_ms",)


@functools.lru_cache(maxsize=16)
def _profile(path: str, mtime_ns: int) -> Any:
    # One parse per profile file per process (a worker solves many problems on the same few
    # profiles); the modification time is in the key so an edited file is read again.
    from ..profiles import load_profile

    return load_profile(path)


def run_task(task: SweepTask) -> dict[str, Any]:
    """Solve one task; a plain row (see :data:`COLUMNS`). Never raises for a task's own
    problem: a bad SLO, an infeasible problem or a solver failure is the row's status."""
    from ..moo.problem import DiscreteProblem
    from ..moo.usecases import scenario
    from ..profiles import resolve_profile
    from ..solvers import SOLVERS, solve

    row: dict[str, Any] = {c: None for c in COLUMNS}
    row.update(key=task.key(), profile=task.profile, use_case=task.use_case, slo=task.slo,
               weights=task.weights, solver=task.solver, repeat=task.repeat)
    try:
        path = resolve_profile(task.profile)
        prof = _profile(str(path), path.stat().st_mtime_ns)
        row.update(device=prof.device.name, profile_source=prof.source)
        tasks, uc_slo = scenario(task.use_case)
        slo = task.slo or uc_slo
        row["slo"] = slo
        pb = DiscreteProblem(prof, slo, tasks=list(tasks), weights=task.weights)
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
            row.update(d0=" + ".join(d0.labels), optimality=_finite(d0.optimality),
                       designs=len(res.designs))
        for k in ("hv", "igd", "optimality_ratio"):
            v = res.extra.get(k) if res.extra else None
            row[k] = _finite(v) if isinstance(v, (int, float)) else None
    except Exception as e:  # noqa: BLE001 - a task's failure is its row, the sweep goes on
        row["status"] = "error"
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]
    return row


def _finite(v: float | None) -> float | None:
    import math

    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else (1e308 if v > 0 else -1e308)


def read_journal(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The rows an earlier (interrupted) run wrote, by task key; a torn last line is ignored."""
    out: dict[str, dict[str, Any]] = {}
    p = Path(path)
    if not p.exists():
        return out
    for line in p.read_text("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # the line a kill cut short
        if isinstance(row, dict) and "key" in row:
            out[row["key"]] = row
    return out


def dask_client(workers: int, scheduler: str | None) -> tuple[Any, Callable[[], None]]:
    """A Dask client on an existing scheduler, or on a new LocalCluster of ``workers`` worker
    processes (one thread each), and the function that closes what was started."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("a sweep on Dask needs the sweep extra: pip install 'workbench[sweep]' "
                          "(or run in this process with workers=0)") from exc
    if scheduler:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as exc:
            from ..errors import WorkbenchError

            raise WorkbenchError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
        return client, client.close
    # Processes, one thread each: solvers are numpy-bound and hold the GIL between calls.
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=40)
    client = Client(cluster)

    def close() -> None:
        client.close()
        cluster.close()

    return client, close


def sweep(tasks: Iterable[SweepTask], *, workers: int = 0, scheduler: str | None = None,
          client: Any = None, journal: str | os.PathLike | None = None,
          progress: Callable[[int, int], None] | None = None) -> "Any":
    """Run every task; a DataFrame with one row per task, in task order.

    Args:
        tasks: From :func:`sweep_grid` (or built by hand).
        workers: 0 runs in this process; N starts a Dask LocalCluster of N worker processes.
        scheduler: The address of a running Dask scheduler (``tcp://HOST:PORT``) instead.
        client: A ``dask.distributed.Client`` of your own (it is not closed).
        journal: A JSON-lines file: rows already in it are not run again, new rows are appended
            as they finish (an interrupted sweep resumes from it).
        progress: Called with (done, total) after every row.
    """
    import pandas as pd

    tasks = list(tasks)
    if workers < 0:
        raise InputError("workers is 0 (this process) or more", where="workers", value=workers)
    done = read_journal(journal) if journal else {}
    todo = [t for t in tasks if t.key() not in done]
    rows = dict(done)
    sink: Any = None  # opened at the first finished row: a sweep that never ran leaves none

    def record(row: dict[str, Any]) -> None:
        nonlocal sink
        rows[row["key"]] = row
        if journal:
            if sink is None:
                Path(journal).parent.mkdir(parents=True, exist_ok=True)
                sink = open(journal, "a", encoding="utf-8")  # noqa: SIM115
            sink.write(json.dumps(row) + "\n")
            sink.flush()
        if progress is not None:
            progress(len(rows), len(tasks))

    try:
        if todo and (client is not None or scheduler or workers > 0):
            own = client is None
            cl, close = (client, lambda: None) if client is not None else dask_client(workers, scheduler)
            try:
                from dask.distributed import as_completed

                futures = cl.map(run_task, todo, pure=False)
                for fut in as_completed(futures):
                    record(fut.result())
            finally:
                if own:
                    close()
        else:
            for t in todo:
                record(run_task(t))
    finally:
        if sink is not None:
            sink.close()
    order = [t.key() for t in tasks]
    return pd.DataFrame([rows[k] for k in order], columns=list(COLUMNS))


def write_results(df: Any, path: str | os.PathLike) -> Path:
    """Write a sweep's rows as CSV or Parquet (by the suffix), atomically."""
    from ..fileio import atomic_write_text, staging

    p = Path(path)
    if p.suffix == ".csv":
        return atomic_write_text(p, df.to_csv(index=False))
    if p.suffix == ".parquet":
        tmp = staging(p)
        try:
            df.to_parquet(tmp, index=False)
            os.replace(tmp, p)
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("Parquet needs pyarrow: pip install 'workbench[sweep]'") from exc
        finally:
            tmp.unlink(missing_ok=True)
        return p
    raise InputError("results go to a .csv or .parquet file", where="-o", value=str(p))
