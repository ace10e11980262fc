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

The modules: :mod:`.grid` (templates and tasks), :mod:`.task` (one task solved into a row),
:mod:`.profile_files` (profiles read once per content), :mod:`.journal` (resuming),
:mod:`.cluster` (Dask), :mod:`.run` (the sweep itself) and :mod:`.farm` (devices as Dask worker
resources for a profiling farm).
"""

from .cluster import MAX_WORKERS as MAX_WORKERS
from .cluster import SCHEDULER_TIMEOUT_S as SCHEDULER_TIMEOUT_S
from .cluster import _check_versions as _check_versions
from .cluster import dask_client as dask_client
from .cluster import probe_scheduler as probe_scheduler
from .cluster import scheduler_address as scheduler_address
from .grid import MAX_PROBLEMS as MAX_PROBLEMS
from .grid import SweepTask as SweepTask
from .grid import count as count
from .grid import expand as expand
from .grid import load_grid as load_grid
from .grid import sweep_grid as sweep_grid
from .journal import read_journal as read_journal
from .journal import reusable as reusable
from .profile_files import profile_digest as profile_digest
from .run import sweep as sweep
from .run import write_results as write_results
from .task import COLUMNS as COLUMNS
from .task import TIMING_COLUMNS as TIMING_COLUMNS
from .task import input_key as input_key
from .task import run_task as run_task
