"""MASA under real memory pressure on the networks of its Table 1 at their published sizes
(notebook 16_masa, ``benchmarks/bench_memory.py --only masa``).

The architectures are the paper's (Levi-Hassner for AgeNet and GenderNet, AlexNet for FaceNet,
SoS, MemNet and SceneNet, VGG-S for EmotionNet, Tiny YOLO v2 for TinyYOLO), built with Keras at
their input sizes with random weights: latency and memory only. GoogleNet is left out (the layer
executor has no Concatenate). Local response normalisation is left out (no weights, a few
percent of the time). Each role gets its own weight files, as the paper's networks are separate
files.

Every run is a fresh process (``python -m workbench.memory.masa._run``) in a memory cgroup whose
limit is the scheduler's budget plus :data:`ALLOWANCE_MB` for the interpreter, with a swap file:
a policy that holds more than the budget is paged by the kernel, so paging cost is measured.
The simulator's paging penalty (``swap_bps``) is then *fitted* to these runs
(:func:`fit_swap`), and labelled as fitted wherever it is shown.
"""

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

import numpy as np

from ...memory import masa as M
from ...memory.graph import LayerGraph
from ...timing import blas_threads_env
from .masa import scheduler_of
from .memory import PAPER_BUDGETS_MB, PAPER_MEMORY_MB, Nets

# Paper role -> architecture built here.
TABLE1 = {"AgeNet": "Levi-Hassner-8", "GenderNet": "Levi-Hassner-2", "FaceNet": "AlexNet",
          "SoS": "AlexNet", "MemNet": "AlexNet", "SceneNet": "AlexNet", "EmotionNet": "VGG-S",
          "TinyYOLO": "TinyYOLOv2"}
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


def budgets(nets: Nets, pool: list[str]) -> dict[str, dict[int, int]]:
    """The paper's 512 MB / 1 GB / 2 GB in bytes two ways. ``by total``: scaled by the pool's
    bulk memory here over Table 1's; ``by largest layer``: keeping the paper's ratio to the
    largest layer, which is the paper's own size here (the same architectures)."""
    scale = sum(nets.profiles[n].bulk_bytes for n in pool) / sum(
        PAPER_MEMORY_MB[n] * 1e6 for n in pool)
    return {"by total": {mb: int(mb * 1e6 * scale) for mb in PAPER_BUDGETS_MB},
            "by largest layer": {mb: int(mb * 1e6) for mb in PAPER_BUDGETS_MB}}


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


def run_limited(nets: Nets, jobs: list[M.Job], variant: str, *, budget: int, swap_mb: float,
                workers: int = 2, timeout: float = 300.0, scaling: str = "",
                paper_budget_mb: int = 0, round: int = 0, workdir: Path) -> PressureRun:
    """One real run of ``variant`` (see :func:`~.masa.scheduler_of`) in a fresh process held
    to ``budget`` + :data:`ALLOWANCE_MB` by a memory cgroup that may use ``swap_mb`` of swap
    (the swap file must be on)."""
    from ...memory import pressure

    policy, admission = scheduler_of(variant)
    spec = workdir / f"spec-{os.getpid()}.pkl"
    with open(spec, "wb") as fh:
        pickle.dump({"roots": {k: str(v) for k, v in nets.roots.items()}, "jobs": jobs,
                     "profiles": nets.profiles, "policy": policy, "admission": admission,
                     "budget": budget, "workers": workers}, fh)
    limit_mb = budget / 1e6 + ALLOWANCE_MB
    env = blas_threads_env(1)
    cmd = [sys.executable, "-m", "workbench.memory.masa._run", str(spec)]
    row = (scaling, paper_budget_mb, budget / 1e6, limit_mb, float(swap_mb), variant, round)
    try:
        seen = pressure.run_limited(cmd, limit_bytes=int(limit_mb * 1e6),
                                    swap_bytes=int(swap_mb * 1e6), env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return PressureRun(*row, finished=False, mean_response_ms=None, makespan_s=None,
                           wall_s=timeout, group_peak_mb=None, major_faults=None,
                           swapped_mb=None, base_mb=None, overcommitted_tasks=None)
    finally:
        spec.unlink(missing_ok=True)
    swapped = seen.swapped_out_pages * os.sysconf("SC_PAGE_SIZE") / 1e6
    peak = None if seen.peak_bytes is None else seen.peak_bytes / 1e6
    if seen.returncode != 0:
        return PressureRun(*row, finished=False, mean_response_ms=None, makespan_s=None,
                           wall_s=seen.wall_s, group_peak_mb=peak, major_faults=seen.major_faults,
                           swapped_mb=swapped, base_mb=None, overcommitted_tasks=None)
    out = json.loads(seen.stdout.strip().splitlines()[-1])
    return PressureRun(*row, finished=True, mean_response_ms=out["mean_response_s"] * 1e3,
                       makespan_s=out["makespan_s"], wall_s=out["wall_s"], group_peak_mb=peak,
                       major_faults=seen.major_faults, swapped_mb=swapped,
                       base_mb=out["base_mb"], overcommitted_tasks=out["overcommitted_tasks"])


def jobs_for(nets: Nets, *, n: int, intensity: float = 1.2, seed: int = 0) -> list[M.Job]:
    """MASA 5.3 scenario I over the roles of ``nets``."""
    return M.stochastic_jobs(list(nets.profiles), nets.profiles, scenario=1,
                             intensity=intensity, n=n, seed=seed)


def under_pressure(nets: Nets, *, n: int = 30, intensity: float = 1.2, swap_mb: float = 2048,
                   scalings=("by total", "by largest layer"), paper_budget_mb: int = 512,
                   rounds: int = 1, policies=POLICIES, timeout: float = 300.0,
                   progress: Callable[[PressureRun], None] | None = None) -> list[PressureRun]:
    """Scenario I at ``intensity`` at the paper's ``paper_budget_mb`` scaled each way, every
    policy in its own cgroup; the policies of a round run back to back (this machine drifts).

    Raises:
        PressureUnavailable: no memory cgroup or no swap here (says why).
    """
    from ...memory import pressure

    jobs = jobs_for(nets, n=n, intensity=intensity)
    pool = list(nets.profiles)
    bs = budgets(nets, pool)
    rows = []
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="wb-masa-")))
        if swap_mb:
            stack.enter_context(pressure.swap_file(int(swap_mb * 1e6)))
        for r in range(rounds):
            for scaling in scalings:
                b = bs[scaling][paper_budget_mb]
                for pol in policies:
                    row = run_limited(nets, jobs, pol, budget=b, swap_mb=swap_mb,
                                      timeout=timeout, scaling=scaling,
                                      paper_budget_mb=paper_budget_mb, round=r, workdir=work)
                    rows.append(row)
                    if progress:
                        progress(row)
    return rows


@dataclass(frozen=True)
class FitRow:
    """The simulator against one measured run, with its two paging parameters fitted to all
    runs (modelled: ``swap_mb_per_s`` and ``cache_factor`` are parameters of the simulator,
    not measurements). ``whatif_ms`` is the simulation's own time."""

    scaling: str
    policy: str
    measured_ms: float
    simulated_ms: float
    error_pct: float
    swap_mb_per_s: float
    cache_factor: float
    whatif_ms: float


def fit_swap(nets: Nets, rows: list[PressureRun], *, n: int = 30, intensity: float = 1.2,
             swap_grid=None, cache_grid=(0.0, 0.5, 1.0, 1.5, 2.0)) -> list[FitRow]:
    """The simulator's paging bandwidth (``swap_bps``) and page-cache charge of a load
    (``cache_factor``) that best match the finished runs of ``rows`` (least median absolute
    error), and the simulator's error at them per run."""
    from ...timing import Stopwatch
    from .masa import run

    jobs = jobs_for(nets, n=n, intensity=intensity)
    done = [(r, r.mean_response_ms) for r in rows if r.finished and r.mean_response_ms]
    if not done:
        return []
    swap_grid = list(swap_grid if swap_grid is not None else np.geomspace(20e6, 5e9, 25))

    def sim(r: PressureRun, bps: float, cf: float) -> float:
        return run(nets.profiles, jobs, r.policy, budget=int(r.budget_mb * 1e6), swap_bps=bps,
                   cache_factor=cf).mean_response * 1e3

    def score(p) -> float:
        return float(np.median([abs(sim(r, *p) / m - 1) for r, m in done]))

    bps, cf = min(((b, c) for c in cache_grid for b in swap_grid), key=score)
    out = []
    for r, m in done:
        with Stopwatch() as sw:
            ms = sim(r, bps, cf)
        out.append(FitRow(r.scaling, r.policy, m, ms, 100 * (ms / m - 1), bps / 1e6, cf, sw.ms))
    return out
