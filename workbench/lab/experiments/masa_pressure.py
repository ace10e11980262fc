"""MASA under real memory pressure on the networks of its Table 1 at their published sizes
(notebook 16_masa, ``benchmarks/bench_memory.py --only masa``).

The architectures are the paper's (Levi-Hassner for AgeNet and GenderNet, AlexNet for FaceNet,
SoS, MemNet and SceneNet, VGG-S for EmotionNet, Tiny YOLO v2 for TinyYOLO, GoogLeNet for
GoogleNet), built with Keras at their input sizes with random weights: latency and memory only.
GoogLeNet is Szegedy et al.'s 2014 network without its two auxiliary classifiers (training-only
heads). Local response normalisation is left out (no weights, a few percent of the time).
Each role gets its own weight files, as the paper's networks are separate files.

Every run is a fresh process (``python -m workbench.memory.masa._run``) in a memory cgroup whose
limit is the scheduler's budget plus :data:`ALLOWANCE_MB` for the interpreter, with a swap file:
a policy that holds more than the budget is paged by the kernel, so paging cost is measured.
The simulator's paging model (``workbench.memory.masa.paging``) is then *fitted* to these runs
(:func:`fit_paging`), and labelled as fitted wherever it is shown.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from ...memory import masa as M
from ...memory.graph import LayerGraph
from ...timing import blas_threads_env
from .masa import scheduler_of
from .memory import PAPER_BUDGETS_MB, PAPER_MEMORY_MB, Nets

# Paper role -> architecture built here.
TABLE1 = {"AgeNet": "Levi-Hassner-8", "GenderNet": "Levi-Hassner-2", "FaceNet": "AlexNet",
          "SoS": "AlexNet", "MemNet": "AlexNet", "SceneNet": "AlexNet", "EmotionNet": "VGG-S",
          "TinyYOLO": "TinyYOLOv2", "GoogleNet": "GoogLeNet"}
ALLOWANCE_MB = 64.0  # the interpreter, numpy and the runner beside the scheduler's budget
POLICIES = ("bulk", "deepeye", "masa", "masa-idle")


def table1_model(arch: str):
    """A Keras model of ``arch`` (one of :data:`TABLE1`'s values) with random weights."""
    from ...host import zoo

    keras = zoo._keras()
    L = keras.layers
    keras.utils.set_random_seed(0)

    def conv(n, k, s=1, pad="same"):
        return L.Conv2D(n, k, strides=s, padding=pad, activation="relu")

    if arch.startswith("Levi-Hassner"):  # Levi & Hassner 2015, AgeNet (8) / GenderNet (2)
        size, body = 227, [conv(96, 7, 4, "valid"), L.MaxPooling2D(3, 2), conv(256, 5),
                           L.MaxPooling2D(3, 2), conv(384, 3), L.MaxPooling2D(3, 2)]
        head = [512, 512, int(arch.rsplit("-", 1)[1])]
    elif arch == "AlexNet":
        size, body = 227, [conv(96, 11, 4, "valid"), L.MaxPooling2D(3, 2), conv(256, 5),
                           L.MaxPooling2D(3, 2), conv(384, 3), conv(384, 3), conv(256, 3),
                           L.MaxPooling2D(3, 2)]
        head = [4096, 4096, 1000]
    elif arch == "VGG-S":  # Chatfield et al. 2014
        size, body = 224, [conv(96, 7, 2, "valid"), L.MaxPooling2D(3, 3), conv(256, 5),
                           L.MaxPooling2D(2, 2), conv(512, 3), conv(512, 3), conv(512, 3),
                           L.MaxPooling2D(3, 3)]
        head = [4096, 4096, 7]
    elif arch == "TinyYOLOv2":  # tiny-yolo-voc: nine convolutions, no FC
        size, body = 416, []
        for n in (16, 32, 64, 128, 256):
            body += [conv(n, 3), L.MaxPooling2D(2, 2)]
        body += [conv(512, 3), conv(1024, 3), conv(1024, 3), L.Conv2D(125, 1)]
        head = []
    elif arch == "GoogLeNet":
        return _googlenet(keras)
    else:
        raise KeyError(arch)
    x = inp = keras.Input((size, size, 3))
    for layer in body:
        x = layer(x)
    if head:
        x = L.Flatten()(x)
        for i, n in enumerate(head):
            x = L.Dense(n, activation="relu" if i < len(head) - 1 else None)(x)
    return keras.Model(inp, x, name=arch)


# GoogLeNet's nine inception modules (Szegedy et al. 2014, Table 1): 1x1, 3x3 reduce, 3x3,
# 5x5 reduce, 5x5, pool projection; "M" is a 3x3/2 max pooling between stages.
_INCEPTION = ((64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "M",
              (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64),
              (128, 128, 256, 24, 64, 64), (112, 144, 288, 32, 64, 64),
              (256, 160, 320, 32, 128, 128), "M", (256, 160, 320, 32, 128, 128),
              (384, 192, 384, 48, 128, 128))


def _googlenet(keras):
    L = keras.layers

    def conv(x, n, k, s=1):
        return L.Conv2D(n, k, strides=s, padding="same", activation="relu")(x)

    x = inp = keras.Input((224, 224, 3))
    x = L.MaxPooling2D(3, 2, padding="same")(conv(x, 64, 7, 2))
    x = L.MaxPooling2D(3, 2, padding="same")(conv(conv(x, 64, 1), 192, 3))
    for m in _INCEPTION:
        if m == "M":
            x = L.MaxPooling2D(3, 2, padding="same")(x)
            continue
        a, b3r, b3, b5r, b5, pp = m
        x = L.Concatenate()([conv(x, a, 1), conv(conv(x, b3r, 1), b3, 3),
                             conv(conv(x, b5r, 1), b5, 5),
                             conv(L.MaxPooling2D(3, 1, padding="same")(x), pp, 1)])
    x = L.Dense(1000)(L.GlobalAveragePooling2D()(x))
    return keras.Model(inp, x, name="GoogLeNet")


def layer_sizes(arch: str, root: str | Path, *, repeats: int = 2) -> list[dict]:
    """Each layer of ``arch`` (MASA Figs. 2 and 3(a)): its kind, weight bytes as stored under
    ``root`` and the peak resident-set growth while it loads and runs (measured, MASA's
    profiler; :func:`~workbench.memory.masa.profile_network`). Run it in a fresh process whose
    allocator maps every array (``MALLOC_MMAP_THRESHOLD_`` fixed) or a layer's growth hides in
    memory earlier layers freed."""
    prof = M.profile_network(table1_graph(arch), Path(root), repeats=repeats, sample_rss=True)
    return [{"layer": c.name, "kind": c.kind, "weight_bytes": c.weight_bytes,
             "out_bytes": c.out_bytes, "scratch_bytes": c.scratch_bytes,
             "rss_peak_bytes": c.rss_peak_bytes} for c in prof.layers]


def table1_graph(arch: str) -> LayerGraph:
    from ...memory.graph import from_keras

    return from_keras(table1_model(arch), name=arch)


def prepare(root: str | Path, *, roles=tuple(TABLE1), repeats: int = 3,
            progress: Callable[[str], None] | None = None) -> Nets:
    """Per-layer profiles of each architecture (measured here, once per architecture) and a
    stored copy (skeleton + weight files) per role."""
    from threadpoolctl import threadpool_limits

    from ...memory.measure import SKELETON, skeleton

    root = Path(root)
    graphs, roots, profiles, done = {}, {}, {}, {}
    for role in roles:
        arch = TABLE1[role]
        if arch not in done:
            g = table1_graph(arch)
            if progress:
                progress(f"{arch}: {g.weight_bytes / 1e6:.0f} MB of weights, "
                         f"{g.flops / 1e9:.1f} GFLOPs; profiling")
            with threadpool_limits(1):  # as the runs: one BLAS thread per worker
                done[arch] = (g, M.profile_network(g, root / arch, repeats=repeats,
                                                   sample_rss=False))
            with open(root / arch / SKELETON, "wb") as fh:
                pickle.dump(skeleton(g), fh)
        g, prof = done[arch]
        if not (root / role).exists():
            shutil.copytree(root / arch, root / role)  # its own files, as in the paper
        graphs[role], roots[role] = g, root / role
        profiles[role] = M.NetProfile(role, prof.layers)
    return Nets(graphs, roots, profiles, trained=False)


def budgets(nets: Nets, pool: list[str],
            mbs: tuple[int, ...] = PAPER_BUDGETS_MB) -> dict[str, dict[int, int]]:
    """The paper's memory sizes ``mbs`` (512 MB / 1 GB / 2 GB) in bytes two ways. ``by
    total``: scaled by the pool's bulk memory here over Table 1's; ``by largest layer``:
    keeping the paper's ratio to the largest layer, which is the paper's own size here (the
    same architectures)."""
    scale = sum(nets.profiles[n].bulk_bytes for n in pool) / sum(
        PAPER_MEMORY_MB[n] * 1e6 for n in pool)
    return {"by total": {mb: int(mb * 1e6 * scale) for mb in mbs},
            "by largest layer": {mb: int(mb * 1e6) for mb in mbs}}


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
    from ...memory import pressure

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

    from ...memory import pressure

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
    from ...memory import pressure

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


@dataclass(frozen=True)
class Paging:
    """The simulator's paging parameters (modelled, see ``workbench.memory.masa.paging``):
    page-out + page-in bandwidth, page cache charged per weight byte a load reads, and the share
    of reclaim taken from anonymous memory while page cache remains; and ``exec_scale``, the
    real runs' layer times over the profiled ones (two workers share the cores and the memory
    bus in a run; each layer is profiled alone)."""

    swap_mb_per_s: float
    cache_factor: float
    anon_share: float
    exec_scale: float = 1.0


@dataclass(frozen=True)
class FitRow:
    """The simulator against one measured configuration (a scaling and policy; the median of
    its rounds, their spread beside it), with paging parameters fitted to the runs named by
    ``fitted_on`` (modelled: the parameters are the simulator's, not measurements).
    ``whatif_ms`` is the simulation's own time."""

    scaling: str
    policy: str
    rounds: int
    measured_ms: float  # median over rounds
    measured_min_ms: float
    measured_max_ms: float
    simulated_ms: float
    error_pct: float
    fitted_on: str  # "all" | "by total" | "by largest layer"
    swap_mb_per_s: float
    cache_factor: float
    anon_share: float
    slack_mb: float
    whatif_ms: float
    # A check the fit does not use: bytes the kernel swapped out during the runs (median over
    # rounds, measured) against what the simulator's paging model pages out (modelled).
    measured_swapped_mb: float | None = None
    simulated_paged_out_mb: float | None = None
    # The configuration's memory and workload (see :class:`PressureRun`).
    paper_budget_mb: int = 512
    intensity: float = 1.2
    scenario: int = 1
    exec_scale: float = 1.0


#: The grid the fit searches (each axis a parameter of :class:`Paging`).
PAGING_GRID = {"swap_mb_per_s": tuple(float(v) for v in np.round(np.geomspace(50, 3200, 13))),
               "cache_factor": (0.0, 0.5, 1.0),
               "anon_share": (0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0),
               "exec_scale": (1.0,)}


def fit_paging(nets: Nets, rows: list[PressureRun], *, n: int = 30, grid: dict | None = None,
               fitted_on: str = "all", fit_on: Callable[[PressureRun], bool] | None = None,
               only: Paging | None = None,
               jobs_of: Callable[[PressureRun], list[M.Job]] | None = None) -> list[FitRow]:
    """The simulator against the finished runs of ``rows``, one row per configuration (scenario,
    scaling, memory, intensity and policy), at the paging parameters that best match the runs
    of ``fitted_on`` ("all" or one scaling), or, when ``fit_on`` is given, the runs it accepts
    (``fitted_on`` then only names them): least sum of squared log ratios of simulated to
    measured (median over rounds). ``only`` skips the search. Each run's jobs are ``jobs_of``
    it, or remade from its workload (``n`` jobs when it recorded none). The memory a real limit
    leaves beside the budget (limit - baseline - budget) is measured per run and given to the
    simulator, not fitted."""
    import statistics

    from ...timing import Stopwatch
    from .masa import run

    done: dict[tuple, list[PressureRun]] = {}
    for r in rows:
        if r.finished and r.mean_response_ms:
            key = (r.scenario, r.scaling, r.paper_budget_mb, r.intensity, r.policy)
            done.setdefault(key, []).append(r)
    if not done:
        return []
    grid = {**PAGING_GRID, **(grid or {})}
    workloads: dict[tuple, list[M.Job]] = {}

    def jobs(r: PressureRun) -> list[M.Job]:
        if jobs_of is not None:
            return jobs_of(r)
        w = (r.jobs or n, r.intensity, r.scenario, r.seed)
        if w not in workloads:
            workloads[w] = jobs_for(nets, n=w[0], intensity=w[1], scenario=w[2], seed=w[3])
        return workloads[w]

    def slack(rs: list[PressureRun]) -> int:
        return int(statistics.median(r.limit_mb - (r.base_mb or 0.0) - r.budget_mb for r in rs)
                   * 1e6)

    scaled: dict[float, dict] = {}

    def profiles(k: float) -> dict:
        if k not in scaled:
            scaled[k] = {n: M.NetProfile(n, [dataclasses.replace(x, exec_s=x.exec_s * k)
                                             for x in p.layers])
                         for n, p in nets.profiles.items()}
        return scaled[k]

    def simulate(rs: list[PressureRun], p: Paging) -> list:
        """One simulation per run of ``rs`` (rounds with the same workload share one)."""
        by_seed: dict[int, M.RunResult] = {}
        for r in rs:
            if r.seed not in by_seed:
                by_seed[r.seed] = run(profiles(p.exec_scale), jobs(r), r.policy,
                                      budget=int(r.budget_mb * 1e6),
                                      swap_bps=p.swap_mb_per_s * 1e6,
                                      cache_factor=p.cache_factor, anon_share=p.anon_share,
                                      slack_bytes=slack(rs))
        return [by_seed[r.seed] for r in rs]

    def sim(rs: list[PressureRun], p: Paging) -> float:
        """The median over ``rs``'s runs of the simulated mean response, as ``measured``."""
        return statistics.median(x.mean_response for x in simulate(rs, p)) * 1e3

    # Finished runs only (done): each has its mean response.
    measured = {k: statistics.median(cast(float, r.mean_response_ms) for r in rs)
                for k, rs in done.items()}
    if fit_on is not None:
        fit_keys = [k for k, rs in done.items() if fit_on(rs[0])]
    else:
        fit_keys = [k for k in done if fitted_on == "all" or k[1] == fitted_on]

    if not fit_keys and only is None:
        raise ValueError(f"no finished run to fit on: fitted_on={fitted_on!r} names no scaling "
                         "and no fit_on was given")

    def loss(p: Paging) -> float:
        return sum(np.log(sim(done[k], p) / measured[k]) ** 2 for k in fit_keys)

    if only is None:
        candidates = [Paging(b, c, a, e) for b in grid["swap_mb_per_s"]
                      for c in grid["cache_factor"] for a in grid["anon_share"]
                      for e in grid["exec_scale"]]
        best = min(candidates, key=loss)
    else:
        best = only
    out = []
    for k, rs in done.items():
        with Stopwatch() as sw:
            res = simulate(rs, best)
        ms = statistics.median(x.mean_response for x in res) * 1e3
        ms_r = [cast(float, r.mean_response_ms) for r in rs]
        swapped = [r.swapped_mb for r in rs if r.swapped_mb is not None]
        out.append(FitRow(k[1], k[4], len(rs), measured[k], min(ms_r), max(ms_r), ms,
                          100 * (ms / measured[k] - 1), fitted_on, best.swap_mb_per_s,
                          best.cache_factor, best.anon_share, slack(rs) / 1e6, sw.ms,
                          statistics.median(swapped) if swapped else None,
                          statistics.median(x.paged_out_bytes for x in res) / 1e6,
                          paper_budget_mb=k[2], intensity=k[3],
                          scenario=k[0], exec_scale=best.exec_scale))
    return out


@dataclass(frozen=True)
class NetworkSize:
    """One Table 1 role as built here (measured) beside the paper's memory."""

    role: str
    architecture: str
    weights_mb: float
    bulk_mb: float
    largest_layer_mb: float
    bulk_ms: float
    paper_memory_mb: float


@dataclass(frozen=True)
class PressureStudy:
    """What ``benchmarks/bench_memory.py --only masa`` measured and fitted, read back typed."""

    cpu: str
    data: str
    fit_data: str
    jobs: int
    networks: list[NetworkSize]
    rows: list[PressureRun]
    gain_vs_bulk_pct: dict[str, dict[str, float]]
    fit: list[FitRow]
    held_out: list[FitRow]


def load_pressure(path: str | Path | None = None) -> PressureStudy | None:
    """The real-pressure runs committed in ``reports/bench/memory.json`` (see
    :func:`workbench.lab.bench.bench_section`), or None when the benchmark has not run."""
    from ...errors import InputError
    from ..bench import bench_section

    m = bench_section("memory.json", "masa_pressure", path)
    if m is None:
        return None
    try:
        return PressureStudy(m["cpu"], m["data"], m.get("fit_data", ""), m["jobs"],
                             [NetworkSize(**r) for r in m["networks"]],
                             [PressureRun(**r) for r in m["rows"]], m["gain_vs_bulk_pct"],
                             [FitRow(**r) for r in m["fit"]],
                             [FitRow(**r) for r in m.get("held_out", [])])
    except (KeyError, TypeError) as e:
        raise InputError(f"the benchmark's 'masa_pressure' section does not match this version: "
                         f"{e}", file=path or "reports/bench/memory.json") from None


@dataclass(frozen=True)
class GridCell:
    """One cell of Figs. 7-8's grid (measured): each policy's median mean response over its
    rounds with quartiles and what the kernel paged (``policies[p]``: ``median_ms``, ``q1_ms``,
    ``q3_ms``, ``runs``, ``finished``, ``swapped_mb``, ``major_faults``,
    ``overcommitted_tasks``), MASA's savings and the order, fastest first."""

    scenario: int
    paper_budget_mb: int
    intensity: float
    budget_mb: float
    policies: dict[str, dict]
    masa_saving_vs_bulk_pct: float | None
    masa_saving_vs_deepeye_pct: float | None
    masa_saving_vs_best_other_pct: float | None
    order_fastest_first: list[str]
    masa_saving_vs_best_other_rounds_pct: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class GridStudy:
    """What ``benchmarks/bench_masa_grid.py`` measured and fitted, read back typed: the cells,
    the ledger's readings (``derived``) and the simulator refitted on the grid, with its
    held-out rows (``held_out``, cells it did not see) and in-sample rows."""

    cpu: str
    source: str
    jobs: dict[str, int]
    budgets_mb: dict[str, float]
    networks: list[dict]
    cells: list[GridCell]
    derived: dict[str, float | int | None]
    fit_source: str
    held_out_rule: str
    held_out: list[FitRow]
    in_sample: list[FitRow]


def load_grid(path: str | Path | None = None) -> GridStudy | None:
    """The grid committed in ``reports/bench/masa_grid.json``, or None when it has not run."""
    from ...errors import InputError
    from ..bench import bench_section

    m = bench_section("masa_grid.json", None, path)
    if m is None:
        return None
    try:
        fit = m.get("fit", {})
        return GridStudy(m["cpu"], m["source"], m["jobs"], m["budgets_mb"], m["networks"],
                         [GridCell(**c) for c in m["cells"]], m.get("derived", {}),
                         fit.get("source", ""), fit.get("held_out_rule", ""),
                         [FitRow(**r) for r in fit.get("held_out", [])],
                         [FitRow(**r) for r in fit.get("in_sample", [])])
    except (KeyError, TypeError) as e:
        raise InputError(f"masa_grid.json does not match this version: {e}",
                         file=path or "reports/bench/masa_grid.json") from None


def grid_figure(study: GridStudy, scenario: int):
    """Grouped bars: each policy's median mean response per (memory, intensity) cell of one
    scenario, quartiles as error bars, log scale (plotly; drawing only)."""
    import plotly.graph_objects as go

    cells = [c for c in study.cells if c.scenario == scenario]
    fig = go.Figure()
    for pol in ("bulk", "deepeye", "masa"):
        xs, ys, lo, hi = [], [], [], []
        for c in cells:
            p = c.policies.get(pol, {})
            if p.get("median_ms") is None:
                continue
            xs.append(f"{c.paper_budget_mb} MB, {c.intensity}")
            ys.append(p["median_ms"])
            lo.append(p["median_ms"] - p["q1_ms"])
            hi.append(p["q3_ms"] - p["median_ms"])
        fig.add_trace(go.Bar(name=f"{pol} (measured)", x=xs, y=ys, error_y=dict(
            type="data", symmetric=False, array=hi, arrayminus=lo)))
    fig.update_layout(barmode="group", yaxis_type="log", template="plotly_white",
                      yaxis_title="mean response (ms)", xaxis_title="paper's memory, intensity",
                      title=f"Scenario {'I' * scenario} under a real memory limit (measured)")
    return fig
