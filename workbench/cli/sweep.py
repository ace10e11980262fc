"""``workbench sweep``: many problems at once, in this process or on Dask."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import InputError, WorkbenchError
from ..lab.sweep import MAX_PROBLEMS, MAX_WORKERS, SweepTask
from ._format import MAX_EFFORT, whole


def sweep_cmd(args: argparse.Namespace) -> int:
    from ..lab.sweep import read_journal, reusable, write_results

    out = Path(args.output)
    if out.suffix not in (".csv", ".parquet"):
        raise InputError("results go to a .csv or .parquet file", where="-o", value=str(out))
    grid = _grid(args)
    journal = out.with_name(out.name + ".partial.jsonl")
    workers, where = _where(args)
    resumed = ""
    if read_journal(journal):
        # Only rows of the same task on a profile of the same content count as done.
        reused = len(reusable(grid, journal))
        resumed = f" (resuming from {journal}: {reused} of {len(grid)} reused)"
    plural = "" if len(grid) == 1 else "s"
    print(f"{len(grid)} problem{plural} {where}{resumed}", file=sys.stderr)
    df = _run(grid, args, workers=workers, journal=journal)
    write_results(df, out)
    journal.unlink(missing_ok=True)  # written whole: nothing left to resume
    failed = int((df["status"] == "error").sum())
    print(f"wrote {out}: {len(df)} rows ({failed} errors; "
          + ", ".join(f"{k} {v}" for k, v in df["status"].value_counts().items()) + ")")
    if len(df) and failed == len(df):
        # Not one answer: a script checking the exit status must not take this for a result.
        first = df.loc[df["status"] == "error", "error"].iloc[0]
        raise WorkbenchError(f"every problem failed (the rows are in {out}); the first: {first}")
    return 0


def _grid(args: argparse.Namespace) -> list[SweepTask]:
    """The sweep's tasks: from a grid file, or from the flags (never both)."""
    from ..lab.sweep import load_grid, sweep_grid

    profiles = [*(args.profiles or []), *(args.devices or [])]
    if args.grid:
        if profiles or args.use_cases or args.tasks or args.slo or args.weights_grid:
            raise InputError("a grid file says everything: give --grid alone, or the grid's flags",
                             where="--grid")
        return load_grid(args.grid)
    if not profiles or not (args.use_cases or args.tasks):
        raise InputError("give --profiles (or --devices) and --use-cases or --tasks (with "
                         "--slo), or --grid FILE", where="sweep")
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    return sweep_grid(profiles=profiles, use_cases=args.use_cases or (),
                      tasks=args.tasks or (), slos=args.slo or [None],
                      weights=args.weights_grid or [None], solvers=solvers,
                      repeat=args.repeat, pop_size=args.pop_size, n_gen=args.generations)


def _where(args: argparse.Namespace) -> tuple[int, str]:
    """How many local workers, and where the tasks run in words; an existing scheduler (its
    address, or read from its file) is checked to answer before anything else is printed."""
    workers = (args.workers if args.workers is not None
               else min(os.cpu_count() or 1, MAX_WORKERS))
    if args.scheduler and args.scheduler_file:
        raise InputError("give --scheduler or --scheduler-file, not both",
                         where="--scheduler-file")
    if (args.scheduler or args.scheduler_file) and args.workers is not None:
        raise InputError("--workers starts a local cluster; an existing scheduler has its own "
                         "workers: give one or the other", where="--workers")
    if args.scheduler_file:
        from ..lab.sweep import scheduler_address

        args.scheduler = scheduler_address(args.scheduler_file)
    if args.scheduler:  # before the first line of output: a wrong address is the only line
        from ..lab.sweep import probe_scheduler

        probe_scheduler(args.scheduler)
    where = (f"on the scheduler at {args.scheduler}" if args.scheduler else
             "in this process" if workers == 0 else f"on a local Dask cluster of {workers} workers")
    return workers, where


def _run(grid: list[SweepTask], args: argparse.Namespace, *, workers: int, journal: Path) -> Any:
    """The sweep's rows (a DataFrame), with a progress bar unless ``--quiet``."""
    from ..lab.sweep import sweep

    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=len(grid), unit="problem", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.n = done
            bar.refresh()

    try:
        def dashboard(client) -> None:
            link = getattr(client, "dashboard_link", None)
            if link:
                print(f"Dask dashboard: {link}", file=sys.stderr)

        return sweep(grid, workers=workers, scheduler=args.scheduler, journal=journal,
                     progress=progress, on_client=dashboard)
    except ImportError as exc:  # no sweep extra: one line that says what to install
        raise WorkbenchError(str(exc)) from None
    finally:
        if bar is not None:
            bar.close()


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="solve a grid of problems (profiles x use cases x SLOs x "
                       f"weights x solvers; at most {MAX_PROBLEMS:,}), in this process or on "
                       "Dask")
    p.add_argument("--profiles", nargs="+", metavar="PROFILE", help="profile names or files")
    p.add_argument("--devices", nargs="+", metavar="DEVICE", help="the same, by device name")
    p.add_argument("--grid", default=None, metavar="FILE",
                   help="a JSON grid file instead of the flags below: {\"profiles\": [...], "
                   "\"use_cases\": [...], \"slos\": [...], \"weights\": [...], \"solvers\": [...], "
                   "\"repeat\": 1, \"pop_size\": 40, \"n_gen\": 20}")
    p.add_argument("--use-cases", nargs="+", default=None, metavar="UC",
                   help="uc1..uc4, h1..h4, r1, r2 (each profile must have the use case's tasks)")
    p.add_argument("--tasks", nargs="+", default=None, metavar="T",
                   help="instead of use cases: the profiles' own tasks, each a task or several "
                   "joined by commas (a multi-DNN problem), e.g. --tasks fashion 'det,cls'; "
                   "needs --slo")
    p.add_argument("--slo", action="append", default=None, metavar="TEMPLATE",
                   help="an SLO; braces expand: 'max A; max TP; max L <= {10,20,41.67}ms' "
                        "(repeatable; default: each use case's own)")
    p.add_argument("--weights-grid", action="append", default=None, metavar="W",
                   help="objective weights, braces expand: 'A={1,2},TP=1' (repeatable)")
    p.add_argument("--solvers", default="rass", help="comma list: rass, oodin, nsga2, ... "
                   "(default rass)")
    p.add_argument("--repeat", type=whole(1, 1000), default=1, help="runs per problem, 1..1000 "
                   "(stochastic solvers get seeds 1..N)")
    p.add_argument("--pop-size", type=whole(2, MAX_EFFORT), default=None,
                   help=f"evolutionary solvers' population, 2..{MAX_EFFORT} (default 100)")
    p.add_argument("--generations", type=whole(1, MAX_EFFORT), default=None,
                   help=f"evolutionary solvers' generations, 1..{MAX_EFFORT} (default 100)")
    p.add_argument("-o", "--output", required=True, help="results.csv or results.parquet")
    p.add_argument("--workers", type=whole(0, MAX_WORKERS), default=None,
                   help="0: this process (the reference); N: a local Dask cluster of N "
                   f"processes, at most {MAX_WORKERS} (default: one per CPU)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="run on an existing Dask cluster instead (its versions are checked "
                        "against this client's; each task carries its profile's text, so the "
                        "workers need none of this machine's files)")
    p.add_argument("--scheduler-file", default=None, metavar="JSON",
                   help="or the file `dask scheduler --scheduler-file JSON` wrote")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=sweep_cmd)
