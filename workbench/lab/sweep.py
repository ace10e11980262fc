"""Sweeps: the same question asked many times. Profiles x use cases x SLO grids x weight grids x
solvers x repeats become independent tasks; each solves one problem and returns a plain row.

Tasks run in this process (``workers=0``, the reference), on a Dask ``LocalCluster`` (``workers=N``)
or on an existing Dask cluster (``scheduler="tcp://HOST:PORT"``); the rows are the same whichever
runs them (timings aside). A task that fails is a row with its error, and the sweep goes on.
Finished rows go to a journal (JSON lines) as they arrive, so an interrupted sweep resumes from
what it wrote; a journal row is reused only for the same task (every option) on a profile file of
the same content (sha256), so a sweep resumed after either changed computes those rows again.
Dask is optional (the ``sweep`` extra) and imported only when a cluster is used.

Limits, refused before anything runs: at most :data:`MAX_PROBLEMS` problems (counted before
braces are expanded), at most :data:`MAX_WORKERS` local worker processes, and a scheduler that
does not answer as one within :data:`SCHEDULER_TIMEOUT_S` seconds is an error naming it.

    grid = sweep_grid(profiles=["s20fe", "a71"], use_cases=["uc1"],
                      slos=["max A; max TP; max L <= {20,41.67}ms"], solvers=["rass", "oodin"])
    rows = sweep(grid, workers=2)          # a DataFrame, one row per task
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, cast

from ..errors import InputError, MissingExtra
from ..profiles.store import MAX_PROFILE_BYTES

_BRACES = re.compile(r"\{([^{}]*)\}")
#: The most problems one sweep takes (a grid of braces multiplies fast: nine braces of ten
#: choices are a billion strings, more than the memory of the machine).
MAX_PROBLEMS = 100_000
#: The most worker processes of a local Dask cluster.
MAX_WORKERS = 256
#: Seconds a scheduler has to answer as a Dask scheduler before the sweep gives up on it.
SCHEDULER_TIMEOUT_S = 5.0


def _braces(text: str) -> tuple[list[str], list[list[str]]]:
    """The fixed parts of a brace template and the choices of each brace (checked)."""
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
    return fixed, options


def count(text: str) -> int:
    """How many strings :func:`expand` makes of ``text``, without making them."""
    return math.prod(len(o) for o in _braces(text)[1])


def _too_many(n: int, what: str, text: Any = ...) -> InputError:
    return InputError(f"{what} {n:,} problems, over the limit of {MAX_PROBLEMS:,} a sweep takes; "
                      "split it into smaller sweeps", value=text)


def expand(text: str) -> list[str]:
    """Brace expansion: ``"L <= {10,20}ms; TP >= {5,10}"`` -> the four strings, in order (the
    last brace varies fastest). Braces do not nest; an empty or unclosed brace is an error, and
    so is a template of more than :data:`MAX_PROBLEMS` strings (counted first)."""
    fixed, options = _braces(text)
    n = math.prod(len(o) for o in options)
    if n > MAX_PROBLEMS:
        raise _too_many(n, "the braces expand to", text)
    out = []
    for combo in itertools.product(*options):
        s = fixed[0]
        for v, f in zip(combo, fixed[1:]):
            s += v + f
        out.append(s)
    return out


@dataclass(frozen=True)
class SweepTask:
    """One problem to solve: a profile (name or file), a use case or some of the profile's own
    tasks, an SLO (None: the use case's own), weights (``"A=2,TP=1"`` or None), a solver and a
    repeat number (the seed of stochastic solvers)."""

    profile: str
    use_case: str | None
    slo: str | None
    weights: str | None
    solver: str
    repeat: int = 0
    #: Evolutionary solvers' effort (None: the solver's defaults, 100 x 100).
    pop_size: int | None = None
    n_gen: int | None = None
    #: The profile's own tasks, comma-separated (instead of a use case; then ``slo`` is given).
    tasks: str | None = None

    def key(self) -> str:
        """A stable id: the same task has the same key in every run (what resuming matches)."""
        d = asdict(self)
        if d["tasks"] is None:  # keys of use-case tasks stay what they were
            del d["tasks"]
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def sweep_grid(*, profiles: Sequence[str], use_cases: Sequence[str] = (),
               slos: Sequence[str | None] = (None,), weights: Sequence[str | None] = (None,),
               solvers: Sequence[str] = ("rass",), repeat: int = 1, pop_size: int | None = None,
               n_gen: int | None = None, tasks: Sequence[str] = ()) -> list[SweepTask]:
    """Every combination, braces in SLOs and weights expanded. Names are checked here, before
    anything runs, so a typo is one error instead of a thousand error rows.

    The problems are the built-in ``use_cases`` (each with its own SLO unless ``slos`` are
    given), or the profiles' own ``tasks``: each entry one task or several joined by commas
    (``"h1"``, ``"det,cls"``: a multi-DNN problem), solved under every one of ``slos`` (which
    are then required); every profile must hold every task named."""
    from ..moo.usecases import scenario
    from ..profiles import resolve_profile
    from ..solvers import ALGORITHMS, SAMPLERS, SOLVERS
    from ..solvers.evolutionary import MAX_EFFORT

    if not (1 <= repeat <= 1000):
        raise InputError("repeat is a whole number 1..1000", where="repeat", value=repeat)
    # Checked here, not left to the solver: 0 would silently mean "the default", and a bad
    # value would otherwise be an error row per task.
    for name, v, lo in (("pop_size", pop_size, 2), ("n_gen", n_gen, 1)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)
                              or not lo <= v <= MAX_EFFORT):
            raise InputError(f"must be a whole number {lo}..{MAX_EFFORT}", where=name, value=v)
    # Counted before anything is expanded: each brace grid may be small and their product not.
    if bool(use_cases) == bool(tasks):
        raise InputError("give use cases or the profiles' own tasks, not both or neither",
                         where="use_cases" if use_cases else "tasks")
    task_sets = [",".join(t.strip() for t in entry.split(",") if t.strip()) for entry in tasks]
    for entry in task_sets:
        names = entry.split(",")
        if not entry or len(set(names)) != len(names):
            raise InputError("each entry names one or more different tasks, joined by commas",
                             where="tasks", value=entry)
    if tasks and any(s is None for s in slos):
        raise InputError("the profiles' own tasks have no SLO of their own: give --slo",
                         where="slo")
    n = (len(profiles) * len(use_cases or task_sets) * len(solvers) * repeat
         * sum(1 if s is None else count(s) for s in slos)
         * sum(1 if w is None else count(w) for w in weights))
    if n > MAX_PROBLEMS:
        raise _too_many(n, "the grid is")
    for p in profiles:
        path = resolve_profile(p)
        if task_sets:
            have = {t.name for t in _read_profile(path)[0].tasks}
            for entry in task_sets:
                for t in entry.split(","):
                    if t not in have:
                        raise InputError(f"profile {p} has no task {t!r} (its tasks: "
                                         f"{', '.join(sorted(have))})", where="tasks", value=t)
    for uc in use_cases:
        scenario(uc)
    for s in solvers:
        if s not in SOLVERS and s.lower() not in ALGORITHMS and s.lower() not in SAMPLERS:
            raise InputError(f"unknown solver; use {', '.join([*SOLVERS, *ALGORITHMS, *SAMPLERS])}",
                             where="solvers", value=s)
    slo_list = [x for s in slos for x in ([None] if s is None else expand(s))]
    w_list = [x for w in weights for x in ([None] if w is None else expand(w))]
    # Effort belongs to evolutionary solvers only: an exact solver's task key must not vary
    # with it.
    problems: list[tuple[str | None, str | None]] = (
        [(uc, None) for uc in use_cases] or [(None, t) for t in task_sets])
    return [SweepTask(p, uc, s, w, solver, r, None if solver in SOLVERS else pop_size,
                      None if solver in SOLVERS else n_gen, ts)
            for p, (uc, ts), s, w, solver, r in itertools.product(
                profiles, problems, slo_list, w_list, solvers, range(repeat))]


def load_grid(path: str | os.PathLike) -> list[SweepTask]:
    """A grid file: JSON with the keyword arguments of :func:`sweep_grid`, e.g.
    ``{"profiles": ["s20fe"], "use_cases": ["uc1"], "slos": ["max A; L <= {10,20}ms"],
    "solvers": ["rass", "nsga2"], "n_gen": 20}`` (or ``"tasks": ["fashion"]`` for the profiles'
    own tasks). A bad file is one error naming the field."""
    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    from ..fileio import parse_json, read_text
    from ..profiles.store import error_from_validation

    class _Grid(BaseModel):
        model_config = ConfigDict(extra="forbid")
        profiles: list[str] = Field(min_length=1)
        use_cases: list[str] = []
        tasks: list[str] = []
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
COLUMNS = ("key", "profile", "device", "profile_source", "use_case", "tasks", "slo", "weights",
           "solver",
           "repeat", "status", "d0", "optimality", "designs", "feasible", "hv", "igd",
           "optimality_ratio", "solve_ms", "error")
#: Columns that differ between runs of the same task (everything else must not).
TIMING_COLUMNS = ("solve_ms",)


#: Parsed profiles by (path, sha256 of the text): one parse per profile content per process (a
#: worker solves many problems on the same few profiles), an edited file is parsed again.
_PARSED: dict[tuple[str, str], Any] = {}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_profile(path: Path) -> tuple[Any, str]:
    """A profile file parsed, and the sha256 of the very text that was parsed."""
    from ..fileio import read_text

    return _parse_profile(read_text(path, what="profile file", limit=MAX_PROFILE_BYTES), path)


def _parse_profile(text: str, path: Any) -> tuple[Any, str]:
    """A profile's text parsed (cached by name and content), and the text's sha256."""
    from ..fileio import parse_json
    from ..profiles.store import profile_from_dict

    sha = _digest(text)
    prof = _PARSED.get((str(path), sha))
    if prof is None:
        prof = profile_from_dict(parse_json(text, file=path), file=path)
        if len(_PARSED) >= 16:
            _PARSED.pop(next(iter(_PARSED)))
        _PARSED[(str(path), sha)] = prof
    return prof, sha


def profile_digest(profile: str) -> str | None:
    """The sha256 of a task's profile file as it is now (None: it cannot be read)."""
    from ..fileio import read_text
    from ..profiles import resolve_profile

    try:
        return _digest(read_text(resolve_profile(profile), what="profile file", limit=MAX_PROFILE_BYTES))
    except (OSError, ValueError):  # InputError is a ValueError: the task's row will say why
        return None


def input_key(task: "SweepTask", profile_sha: str | None) -> str:
    """What a journal row is reused by: the task (every option) and the content of the profile
    it was solved on."""
    return hashlib.sha256(f"{task.key()} {profile_sha}".encode()).hexdigest()[:32]


def run_task(task: SweepTask, profile_text: str | None = None) -> dict[str, Any]:
    """Solve one task; a plain row (see :data:`COLUMNS`). Never raises for a task's own
    problem: a bad SLO, an infeasible problem or a solver failure is the row's status.

    ``profile_text``: the profile file's text, read by the client and shipped with the task,
    so a worker needs no access to the client's disk (without it the worker reads the file)."""
    from ..moo.problem import DiscreteProblem
    from ..moo.usecases import scenario
    from ..profiles import resolve_profile
    from ..solvers import SOLVERS, solve

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
    import math

    if v is None:
        return None
    v = float(v)
    return None if math.isnan(v) else v


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


def reusable(tasks: Iterable[SweepTask], journal: str | os.PathLike | None
             ) -> dict[str, dict[str, Any]]:
    """The journal's rows that answer ``tasks`` as they are now, by task key: a row written for
    the same task on a profile of the same content. Rows of other options or of a profile since
    changed are left out (and computed again)."""
    done = read_journal(journal) if journal else {}
    if not done:
        return {}
    digests: dict[str, str | None] = {}
    out = {}
    for t in tasks:
        row = done.get(t.key())
        if row is None:
            continue
        if t.profile not in digests:
            digests[t.profile] = profile_digest(t.profile)
        if row.get("input_key") == input_key(t, digests[t.profile]):
            out[t.key()] = row
    return out


def _check_workers(workers: int) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or not (
            0 <= workers <= MAX_WORKERS):
        raise InputError(f"workers is 0 (this process) .. {MAX_WORKERS} (local processes)",
                         where="workers", value=workers)


def probe_scheduler(address: str) -> None:
    """Ask ``address`` who it is, within :data:`SCHEDULER_TIMEOUT_S` seconds; a WorkbenchError
    naming the address unless a Dask scheduler answers. (``Client`` alone waits forever on a
    port that accepts and says nothing.)"""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect

    from ..errors import WorkbenchError

    timeout = SCHEDULER_TIMEOUT_S

    async def ask() -> Any:
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    async def bounded() -> Any:
        return await asyncio.wait_for(ask(), timeout)

    # An event loop of its own, in a thread: the caller may be running one (a notebook).
    with ThreadPoolExecutor(1) as pool:
        try:
            ident = pool.submit(asyncio.run, bounded()).result()
        except (TimeoutError, asyncio.TimeoutError):
            raise WorkbenchError(f"no Dask scheduler answered at {address} within {timeout:g} s"
                                 ) from None
        except ValueError as exc:  # a malformed address
            raise WorkbenchError(f"not a Dask scheduler address (tcp://HOST:PORT): {address}: "
                                 f"{exc}") from None
        except Exception as exc:  # noqa: BLE001 - refused, reset, closed: all say "not there"
            msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise WorkbenchError(f"cannot reach the Dask scheduler at {address}: {msg}") from None
    if not (isinstance(ident, dict) and ident.get("type") == "Scheduler"):
        what = ident.get("type") if isinstance(ident, dict) else None
        raise WorkbenchError(f"{address} answers, but is not a Dask scheduler"
                             + (f" (it is a {what})" if what else ""))


def _check_versions(client: Any) -> None:
    """The client, scheduler and workers must run the same versions of what a task needs
    (Dask's own check, ``get_versions(check=True)``): a mismatch is one clear error, not a
    failure in the middle of a sweep."""
    from ..errors import WorkbenchError

    try:
        client.get_versions(check=True)
    except (ValueError, RuntimeError) as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        raise WorkbenchError("the Dask client, scheduler and workers run different versions: "
                             + "; ".join(lines[:6])) from None


def scheduler_address(path: str | os.PathLike) -> str:
    """The address a ``dask scheduler --scheduler-file`` wrote, or an InputError naming the
    file."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such scheduler file (start the scheduler with `dask scheduler "
                         "--scheduler-file FILE`)", file=p, where="--scheduler-file") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"not a Dask scheduler file: {exc}", file=p,
                         where="--scheduler-file") from None
    address = data.get("address") if isinstance(data, dict) else None
    if address is None:
        raise InputError("not a Dask scheduler file: no 'address'", file=p,
                         where="--scheduler-file")
    if not isinstance(address, str) or not address.startswith(("tcp://", "tls://",
                                                                 "inproc://", "ucx://")):
        raise InputError("its 'address' is not a Dask scheduler address (tcp://HOST:PORT)",
                         file=p, where="--scheduler-file.address", value=address)
    return address


def dask_client(workers: int, scheduler: str | None, *, scheduler_file: str | None = None
                ) -> tuple[Any, Callable[[], None]]:
    """A Dask client on an existing scheduler (its address, or the ``scheduler_file`` that
    ``dask scheduler --scheduler-file`` writes), or on a new LocalCluster of ``workers`` worker
    processes (one thread each, at most :data:`MAX_WORKERS`), and the function that closes
    what was started. On an existing cluster the versions are checked first."""
    _check_workers(workers)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtra("Dask", "sweep", needs="a sweep on Dask",
                           hint="or run in this process with workers=0") from exc
    if scheduler_file:
        scheduler = scheduler_address(scheduler_file)
    if scheduler:
        probe_scheduler(scheduler)
        try:
            client = Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT_S:g}s")
        except (OSError, TimeoutError) as exc:
            from ..errors import WorkbenchError

            raise WorkbenchError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
        try:
            _check_versions(client)
        except BaseException:
            client.close()
            raise
        return client, client.close
    # Processes, one thread each: solvers are numpy-bound and hold the GIL between calls. The
    # dashboard (on a free port) when bokeh is there to serve it.
    import importlib.util

    dashboard = ":0" if importlib.util.find_spec("bokeh") is not None else None
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=dashboard, silence_logs=40)
    client = Client(cluster)

    def close() -> None:
        client.close()
        cluster.close()

    return client, close


def sweep(tasks: Iterable[SweepTask], *, workers: int = 0, scheduler: str | None = None,
          scheduler_file: str | None = None, client: Any = None,
          journal: str | os.PathLike | None = None,
          progress: Callable[[int, int], None] | None = None,
          on_client: Callable[[Any], None] | None = None) -> "Any":
    """Run every task; a DataFrame with one row per task, in task order.

    Args:
        tasks: From :func:`sweep_grid` (or built by hand).
        workers: 0 runs in this process; N starts a Dask LocalCluster of N worker processes.
        scheduler: The address of a running Dask scheduler (``tcp://HOST:PORT``) instead.
        scheduler_file: Or the file ``dask scheduler --scheduler-file`` wrote.
        on_client: Called with the Dask client once it is up (e.g. to print its dashboard).

    On Dask, each task carries its profile's text (read once here and scattered to the
    workers): the workers need none of this machine's files.
        client: A ``dask.distributed.Client`` of your own (it is not closed).
        journal: A JSON-lines file: rows already in it for the same task on a profile of the
            same content are not run again (see :func:`reusable`), new rows are appended as they
            finish (an interrupted sweep resumes from it).
        progress: Called with (done, total) after every row.
    """
    import pandas as pd

    tasks = list(tasks)
    _check_workers(workers)
    if len(tasks) > MAX_PROBLEMS:
        raise _too_many(len(tasks), "the sweep is")
    done = reusable(tasks, journal)
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
        if todo and (client is not None or scheduler or scheduler_file or workers > 0):
            from ..fileio import read_text
            from ..profiles import resolve_profile

            # Read here, sent with the tasks: a worker on another machine has no such file.
            texts = {name: read_text(resolve_profile(name), what="profile file", limit=MAX_PROFILE_BYTES)
                     for name in dict.fromkeys(t.profile for t in todo)}
            own = client is None
            cl, close = ((client, lambda: None) if client is not None
                         else dask_client(workers, scheduler, scheduler_file=scheduler_file))
            try:
                from dask.distributed import as_completed

                if on_client is not None:
                    on_client(cl)
                shipped = {name: cl.scatter(text, broadcast=True) for name, text in texts.items()}
                futures = [cl.submit(run_task, t, shipped[t.profile], pure=False) for t in todo]
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
            raise MissingExtra("pyarrow", "sweep", needs="Parquet") from exc
        finally:
            tmp.unlink(missing_ok=True)
        return p
    raise InputError("results go to a .csv or .parquet file", where="-o", value=str(p))
