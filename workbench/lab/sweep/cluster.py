"""Dask for sweeps: a client on a new LocalCluster or on an existing scheduler, checked first
(the address answers as a scheduler within :data:`SCHEDULER_TIMEOUT_S`, the versions agree).
Dask is imported only here, and only when a cluster is used."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from ...errors import InputError, MissingExtra

#: The most worker processes of a local Dask cluster.
MAX_WORKERS = 256

#: Seconds a scheduler has to answer as a Dask scheduler before the sweep gives up on it.
SCHEDULER_TIMEOUT_S = 5.0


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

    from ...errors import WorkbenchError

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
    from ...errors import WorkbenchError

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
            from ...errors import WorkbenchError

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
