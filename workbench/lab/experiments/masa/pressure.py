"""MASA under real memory pressure on the networks of its Table 1 (:mod:`.table1`; notebook
16_masa, ``benchmarks/bench_memory.py --only masa``).

Every run is a fresh process (``python -m workbench.memory.masa._run``) in a memory cgroup whose
limit is the scheduler's budget plus :data:`ALLOWANCE_MB` for the interpreter, with a swap file:
a policy that holds more than the budget is paged by the kernel, so paging cost is measured.
The simulator's paging model is then fitted to these runs (:mod:`.paging`)."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....memory import masa as M
from ....timing import blas_threads_env
from ..memory import Nets
from .figures import COMPARED, scheduler_of
from .table1 import budgets

ALLOWANCE_MB = 64.0  # the interpreter, numpy and the runner beside the scheduler's budget

POLICIES = COMPARED  # the policies Figs 6-8 compare, run under real pressure


@dataclass(frozen=True)
class PressureRun:
    """One policy's real run in a memory cgroup (all measured).

    ``finished`` is False when the run passed its time limit (``mean_response_ms`` is then
    None and ``wall_s`` the limit) or was killed; ``group_peak_mb`` is the cgroup's peak charge
    (anonymous memory and page cache); ``swapped_mb`` what the machine wrote to swap meanwhile.
    """

    scaling: str
    paper_budget_mb: int
    budget_mb: float
    limit_mb: float
    swap_mb: float
    policy: str
    round: int
    finished: bool
    mean_response_ms: float | None
    makespan_s: float | None
    wall_s: float
    group_peak_mb: float | None
    major_faults: int | None
    swapped_mb: float | None
    base_mb: float | None
    overcommitted_tasks: int | None
    # The workload (:func:`jobs_for`): older runs recorded none of these and were scenario I at
    # intensity 1.2 with the fit's ``n`` jobs.
    intensity: float = 1.2
    scenario: int = 1
    jobs: int | None = None
    seed: int = 0  # the workload's random draw (:func:`jobs_for`)
    # Why an unfinished run stopped: "timeout", "killed for the memory limit" or the last line
    # the runner wrote to stderr (None when it finished).
    failure: str | None = None


def run_limited(nets: Nets, jobs: list[M.Job], variant: str, *, budget: int, swap_mb: float,
                workers: int = 2, timeout: float = 300.0, scaling: str = "",
                paper_budget_mb: int = 0, round: int = 0, workdir: Path,
                intensity: float = 1.2, scenario: int = 1, seed: int = 0,
                batch: int = 1, inputs_per_job: bool = False) -> PressureRun:
    """One real run of ``variant`` (see :func:`~.masa.scheduler_of`) in a fresh process held
    to ``budget`` + :data:`ALLOWANCE_MB` by a memory cgroup that may use ``swap_mb`` of swap
    (the swap file must be on). ``intensity`` and ``scenario`` label the row: they say how
    ``jobs`` were made (:func:`jobs_for`), so a fit can remake them (``seed`` too). ``batch`` runs every
    network on that many images at once (MASA Fig. 12): the scheduler plans with each layer's
    activations and execution time scaled by it (:meth:`~workbench.memory.masa.NetProfile.
    batched`), and each layer really executes on the whole batch. ``inputs_per_job`` gives
    every job its own input image (otherwise the jobs of a network share one)."""
    from ....memory import pressure

    policy, admission = scheduler_of(variant)
    spec = workdir / f"spec-{os.getpid()}.pkl"
    with open(spec, "wb") as fh:
        pickle.dump({"roots": {k: str(v) for k, v in nets.roots.items()}, "jobs": jobs,
                     "profiles": {k: p.batched(batch) for k, p in nets.profiles.items()},
                     "policy": policy, "admission": admission, "budget": budget,
                     "workers": workers, "batch": batch, "inputs_per_job": inputs_per_job},
                    fh)
    limit_mb = budget / 1e6 + ALLOWANCE_MB
    env = blas_threads_env(1)
    cmd = [sys.executable, "-m", "workbench.memory.masa._run", str(spec)]
    row = (scaling, paper_budget_mb, budget / 1e6, limit_mb, float(swap_mb), variant, round)
    load: dict[str, Any] = {"intensity": intensity, "scenario": scenario, "jobs": len(jobs),
                            "seed": seed}
    try:
        seen = pressure.run_limited(cmd, limit_bytes=int(limit_mb * 1e6),
                                    swap_bytes=int(swap_mb * 1e6), env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return PressureRun(*row, finished=False, mean_response_ms=None, makespan_s=None,
                           wall_s=timeout, group_peak_mb=None, major_faults=None,
                           swapped_mb=None, base_mb=None, overcommitted_tasks=None,
                           failure="timeout", **load)
    finally:
        spec.unlink(missing_ok=True)
    swapped = seen.swapped_out_pages * os.sysconf("SC_PAGE_SIZE") / 1e6
    peak = None if seen.peak_bytes is None else seen.peak_bytes / 1e6
    if seen.returncode != 0:
        tail = (seen.stderr or "").strip().splitlines()
        why = ("killed for the memory limit" if seen.oom_killed
               else tail[-1][:300] if tail else f"exit status {seen.returncode}")
        return PressureRun(*row, finished=False, mean_response_ms=None, makespan_s=None,
                           wall_s=seen.wall_s, group_peak_mb=peak, major_faults=seen.major_faults,
                           swapped_mb=swapped, base_mb=None, overcommitted_tasks=None,
                           failure=why, **load)
    out = json.loads(seen.stdout.strip().splitlines()[-1])
    return PressureRun(*row, finished=True, mean_response_ms=out["mean_response_s"] * 1e3,
                       makespan_s=out["makespan_s"], wall_s=out["wall_s"], group_peak_mb=peak,
                       major_faults=seen.major_faults, swapped_mb=swapped,
                       base_mb=out["base_mb"], overcommitted_tasks=out["overcommitted_tasks"],
                       **load)


@dataclass(frozen=True)
class InstancesRun:
    """Instances of one network run by Bulk in one memory cgroup (all measured; MASA Fig. 3(c)):
    ``parallel``, each a fresh process started at once and pinned to its own core (no
    coordination), or one after the other. ``exec_ms`` is each instance's execution time per
    image, load and execute, by its own clock (its interpreter's start left out): its makespan
    over ``images`` images run back to back (several images make the parallel instances
    overlap despite their interpreters' start-up jitter)."""

    role: str
    instances: int
    images: int
    parallel: bool
    limit_mb: float
    swap_mb: float
    finished: bool
    exec_ms: list[float]
    wall_s: float
    group_peak_mb: float | None
    major_faults: int | None
    swapped_mb: float | None


def run_instances(nets: Nets, role: str, *, limit_mb: float, swap_mb: float,
                  instances: int = 2, images: int = 1, parallel: bool = True,
                  timeout: float = 300.0, workdir: Path) -> InstancesRun:
    """``instances`` Bulk runs of ``role`` (``images`` images each, one worker, one BLAS
    thread) in
    one fresh memory cgroup of ``limit_mb`` with ``swap_mb`` of swap (the swap file must be
    on), all at once or one after the other (see :class:`InstancesRun`)."""
    import shlex

    from ....memory import pressure

    policy, admission = scheduler_of("bulk")
    tag = f"inst-{os.getpid()}"
    spec = workdir / f"{tag}.pkl"
    with open(spec, "wb") as fh:
        pickle.dump({"roots": {role: str(nets.roots[role])}, "jobs": [M.Job(i, 0.0, [role]) for i in range(images)],
                     "profiles": {role: nets.profiles[role]}, "policy": policy,
                     "admission": admission, "budget": int(limit_mb * 1e6), "workers": 1}, fh)
    outs = [workdir / f"{tag}-{i}.json" for i in range(instances)]
    taskset, cores = shutil.which("taskset"), os.cpu_count() or 1
    cmds = [" ".join(shlex.quote(c) for c in
                     ([taskset, "-c", str(i % cores)] if taskset else [])
                     + [sys.executable, "-m", "workbench.memory.masa._run", str(spec)])
            + f" > {shlex.quote(str(o))}" for i, o in enumerate(outs)]
    script = " & ".join(cmds) + " & wait" if parallel else " && ".join(cmds)
    row = (role, instances, images, parallel, float(limit_mb), float(swap_mb))
    try:
        seen = pressure.run_limited(["sh", "-c", script], limit_bytes=int(limit_mb * 1e6),
                                    swap_bytes=int(swap_mb * 1e6), env=blas_threads_env(1),
                                    timeout=timeout)
        ms = []
        for o in outs:
            lines = o.read_text().strip().splitlines() if o.exists() else []
            if lines:
                ms.append(json.loads(lines[-1])["makespan_s"] * 1e3 / images)
    except subprocess.TimeoutExpired:
        return InstancesRun(*row, finished=False, exec_ms=[], wall_s=timeout,
                            group_peak_mb=None, major_faults=None, swapped_mb=None)
    finally:
        for f in (spec, *outs):
            f.unlink(missing_ok=True)
    return InstancesRun(*row, finished=seen.returncode == 0 and len(ms) == instances,
                        exec_ms=ms, wall_s=seen.wall_s,
                        group_peak_mb=None if seen.peak_bytes is None else seen.peak_bytes / 1e6,
                        major_faults=seen.major_faults,
                        swapped_mb=seen.swapped_out_pages * os.sysconf("SC_PAGE_SIZE") / 1e6)


@dataclass(frozen=True)
class BatchRun:
    """MASA Fig. 12 measured: ``batch`` images of a multi-network task run as one batch
    (``batched``: each layer loaded once and executed on all of them) or as that many
    individual images arriving at once (``individual``), in one memory cgroup. ``ms_per_input``
    is the makespan over the images (the paper's per-input time)."""

    batch: int
    mode: str
    round: int
    finished: bool
    ms_per_input: float | None
    makespan_s: float | None
    group_peak_mb: float | None
    swapped_mb: float | None
    major_faults: int | None
    budget_mb: float
    limit_mb: float


def batching_real(nets: Nets, *, roles=("AgeNet", "GenderNet"), sizes=(1, 2, 4, 8, 16, 32),
                  paper_budget_mb: int = 1024, rounds: int = 1, swap_mb: float = 2048,
                  timeout: float = 300.0, workdir: Path,
                  progress: Callable[[BatchRun], None] | None = None) -> list[BatchRun]:
    """MASA Fig. 12 for real: the paper's two-network task (AgeNet and GenderNet) by MASA with
    two workers at the paper's 1 GB scaled by total memory (those networks' bulk memory here
    over Table 1's), batched against individual arrivals, each run a fresh process in a memory
    cgroup with ``swap_mb`` of swap (the swap file must be on). Both modes hold every image
    apart (a batch its rows, individual arrivals one array each). Modes alternate within a size
    and their order flips each round (this machine drifts)."""
    pool = list(roles)
    sub = Nets({k: nets.graphs[k] for k in pool if k in nets.graphs},
               {k: nets.roots[k] for k in pool}, {k: nets.profiles[k] for k in pool},
               trained=False)
    budget = budgets(sub, pool, (paper_budget_mb,))["by total"][paper_budget_mb]
    rows = []
    for r in range(rounds):
        for size in sizes:
            modes = ("batched", "individual") if (r + size) % 2 == 0 else ("individual",
                                                                            "batched")
            for mode in modes:
                if mode == "batched":
                    jobs, b = [M.Job(0, 0.0, pool)], size
                else:
                    jobs, b = [M.Job(i, 0.0, pool) for i in range(size)], 1
                pr = run_limited(sub, jobs, "masa", budget=budget, swap_mb=swap_mb,
                                 timeout=timeout, scaling="by total",
                                 paper_budget_mb=paper_budget_mb, round=r, workdir=workdir,
                                 batch=b, inputs_per_job=True)
                row = BatchRun(size, mode, r, pr.finished,
                               None if pr.makespan_s is None else pr.makespan_s * 1e3 / size,
                               pr.makespan_s, pr.group_peak_mb, pr.swapped_mb, pr.major_faults,
                               pr.budget_mb, pr.limit_mb)
                rows.append(row)
                if progress:
                    progress(row)
    return rows


def jobs_for(nets: Nets, *, n: int, intensity: float = 1.2, seed: int = 0,
             scenario: int = 1) -> list[M.Job]:
    """MASA 5.3 scenario I (or II: periodic images, a random set of networks each) over the
    roles of ``nets``."""
    return M.stochastic_jobs(list(nets.profiles), nets.profiles, scenario=scenario,
                             intensity=intensity, n=n, seed=seed)


def under_pressure(nets: Nets, *, n: int = 30, intensity: float = 1.2, swap_mb: float = 2048,
                   scalings=("by total", "by largest layer"), paper_budget_mb: int = 512,
                   rounds: int = 1, policies=POLICIES, timeout: float = 300.0,
                   progress: Callable[[PressureRun], None] | None = None, scenario: int = 1,
                   before_round: Callable[[int], None] | None = None) -> list[PressureRun]:
    """Scenario I (``scenario=2``: II) at ``intensity`` at the paper's ``paper_budget_mb``
    scaled each way, every policy in its own cgroup; the policies of a round run back to back
    (this machine drifts). ``before_round(r)`` is called before each round (a wait for quiet).

    Raises:
        PressureUnavailable: no memory cgroup or no swap here (says why).
    """
    from ....memory import pressure

    jobs = jobs_for(nets, n=n, intensity=intensity, scenario=scenario)
    pool = list(nets.profiles)
    bs = budgets(nets, pool, (paper_budget_mb,))
    rows = []
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wb-masa-")))
        if swap_mb:
            stack.enter_context(pressure.swap_file(int(swap_mb * 1e6)))
        for r in range(rounds):
            if before_round:
                before_round(r)
            for scaling in scalings:
                b = bs[scaling][paper_budget_mb]
                for pol in policies:
                    row = run_limited(nets, jobs, pol, budget=b, swap_mb=swap_mb,
                                      timeout=timeout, scaling=scaling,
                                      paper_budget_mb=paper_budget_mb, round=r, workdir=work,
                                      intensity=intensity, scenario=scenario)
                    rows.append(row)
                    if progress:
                        progress(row)
    return rows
