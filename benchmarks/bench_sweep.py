"""Sweep throughput: 1,008 problems (4 phones x 4 use cases x 3 bounds x 7 weights x 3 solvers)
in this process, on a LocalCluster of 1 and of 2 workers; Dask's overhead per task.

Writes reports/bench/sweep.json. Target (issue 20): Dask adds under 5 ms a task. NSGA-II runs
40 x 20 here so the benchmark stays bounded; the rows are checked to be the same in every run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.fileio import atomic_write_json  # noqa: E402
from workbench.lab.sweep import TIMING_COLUMNS, sweep, sweep_grid  # noqa: E402
from workbench.procfs import cpu_model  # noqa: E402

BOUNDS = {"uc1": "max A; max TP; max L <= {20,30,41.67}ms",
          "uc2": "min L; min S; max A; MF <= {60,90,120}MB",
          "uc3": "min L; min std L; max A; avg L <= {50,100,150}ms; std L <= 10ms",
          "uc4": "min L; min std L; min S; min MF; max A; max L <= {5,10,20}ms"}


def tasks(quick: bool):
    devices = ["s20fe", "a71"] if quick else ["pixel7", "s20fe", "a71", "xperia-c5"]
    weights = "A={1,4}" if quick else "A={1,2,3,4,5,6,7}"
    out = []
    for uc, slo in BOUNDS.items():
        out += sweep_grid(profiles=devices, use_cases=[uc], slos=[slo], weights=[weights],
                          solvers=["rass", "oodin", "nsga2"], pop_size=40, n_gen=20)
    return out


def _noop(i: int) -> int:
    return i


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("-o", "--output", default=str(ROOT / "reports" / "bench" / "sweep.json"))
    args = ap.parse_args(argv)
    grid = tasks(args.quick)
    runs, frames = {}, {}
    for workers in (0, 1, 2):
        t0 = time.perf_counter()
        frames[workers] = sweep(grid, workers=workers)
        runs[workers] = time.perf_counter() - t0
    # Dask's own cost per task, alone: the same number of no-op tasks on a warm 1-worker cluster
    # (the sweep difference above also holds the cluster's start and the workers' cold imports
    # and profile caches, and workers run numpy with one thread).
    from dask.distributed import Client, LocalCluster, wait

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster, Client(cluster) as client:
        wait(client.map(_noop, range(50), pure=False))
        t0 = time.perf_counter()
        wait(client.map(_noop, range(len(grid)), pure=False))
        noop_ms = (time.perf_counter() - t0) / len(grid) * 1e3
    cols = [c for c in frames[0].columns if c not in TIMING_COLUMNS]
    same = all(frames[0][cols].astype(str).equals(frames[w][cols].astype(str)) for w in (1, 2))
    n = len(grid)
    # One worker does the serial work in another process: the difference is what Dask adds
    # (cluster start, pickling each task and row, scheduling), per task.
    whole_ms = (runs[1] - runs[0]) / n * 1e3
    out = {"what": "workbench sweep wall time (measured on this machine): in-process against a Dask "
                   "LocalCluster of 1 and 2 worker processes; NSGA-II 40 x 20",
           "cpu": cpu_model(), "problems": n, "statuses": frames[0]["status"].value_counts().to_dict(),
           "wall_s": {f"workers_{w}": round(t, 2) for w, t in runs.items()},
           "speedup_2_workers": round(runs[0] / runs[2], 2), "rows_identical": bool(same),
           "one_worker_minus_in_process_ms_per_task": round(whole_ms, 2),
           "targets": {"dask_overhead_ms_per_task": {"target": 5.0, "measured": round(noop_ms, 2),
                                                     "met": noop_ms < 5.0}}}
    atomic_write_json(args.output, out)
    print(out)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
