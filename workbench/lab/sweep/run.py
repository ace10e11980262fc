"""Running a sweep: its tasks in this process or on Dask, rows journalled as they finish, and
the rows written as CSV or Parquet."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable

from ...errors import InputError, MissingExtra
from ...profiles.store import MAX_PROFILE_BYTES
from .cluster import _check_workers, dask_client
from .grid import MAX_PROBLEMS, SweepTask, _too_many
from .journal import reusable
from .task import COLUMNS, run_task


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
            from ...fileio import read_text
            from ...profiles import resolve_profile

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
    from ...fileio import atomic_write_text, staging

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
