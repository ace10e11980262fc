"""Memory measured, never computed: one inference of a layer graph in a fresh process, bulk or
FlexNN-planned at a budget, with the process's own peak resident set read from the kernel.

The parent stores the graph (its structure, and its weights as the files the executor reads) and
starts ``python -m workbench.memory._probe``, which imports numpy and the executor only (no
TensorFlow, no copy of the weights in memory), warms up BLAS, resets the kernel's peak counter
(``/proc/self/clear_refs``, Linux), reads its resident set (the *baseline*), builds the runner,
runs the inference ``reps`` times and reads the peak (``VmHWM``). ``model_mb`` is the peak over
the baseline less the library code first run during it (what the model costs), ``peak_mb`` the
whole process (what ``pmap`` and FlexNN's figures show); both are measurements. ``planned_mb`` is
what the plan says it needs, for comparison only.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, WorkbenchError
from ..timing import blas_threads_env
from .graph import LayerGraph, write_weights
from .programs import planned_program, write_weight_files

if TYPE_CHECKING:
    from .pressure import Limited

SKELETON = "skeleton.pkl"


@dataclass(frozen=True)
class Measurement:
    """One measured run of a model in a fresh process.

    Attributes:
        model: The graph's name.
        mode: ``bulk`` (every weight resident), ``planned`` (FlexNN at ``budget_mb``) or
            ``on-demand`` (each layer's weights read just before it runs: FlexNN's baseline).
        budget_mb: The budget of a planned run (None for bulk).
        latency_ms: Median latency of the ``reps`` inferences after ``warmup`` untimed ones.
        latency_samples_ms: Every timed inference.
        base_mb: Resident set before the model is loaded (interpreter, numpy, BLAS warmed up).
        peak_mb: The process's peak resident set (whole process, as ``pmap`` reports).
        model_mb: ``peak_mb - base_mb - code_mb``: what the model costs.
        planned_mb: The plan's buffer (planned) or the graph's tensor bytes at its peak (bulk):
            computed, for comparison with ``model_mb``.
        within_budget: ``model_mb <= budget_mb`` (None for bulk).
        code_mb: Shared-library code the run mapped in for the first time (the growth of the
            file-backed resident set, ``RssFile``): clean, shared and the same whatever the
            model, so not the model's cost. In ``peak_mb``, not in ``model_mb``.
        preload: Whether the loader thread preloaded weights (planned runs).
        sliced: Whether layers were sliced (planned runs; False: FlexNN "w.o. slicing").
        load_ms: Reading the weights before the first inference (bulk: all of them; planned:
            the pinned ones) and setting up.
        first_ms: The first inference (reads every streamed weight; cold when ``cold``).
        cold: Whether the page cache was dropped before the run (weights read from disk);
            ``"weights"``: only the weight files' pages were.
        limit_mb: The memory cgroup's limit the run was held to (None: no limit).
        swap_mb: Swap the run could use (0: none).
        group_peak_mb: The group's peak charge (anonymous memory and page cache, as the kernel
            counts it against the limit; None without a limit).
        major_faults: Page faults the run waited on disk or swap for (None without a limit).
        swapped_mb: Memory written to swap during the run (machine-wide counter).
        kernel: Bulk runs: the convolution kernel (``im2col``, or ``direct``: no im2col matrix).
        warmup: Untimed inferences before the timed ones (the first is ``first_ms``).
        idle_s: Seconds the process slept after start-up, before loading (its idle reading).
        phases: ``time.time()`` stamps of the run's phases (idle, load, timed, end).
        read_mb_per_inference: MB each timed inference read from storage (the block layer,
            ``/proc/self/io``; reads the page cache served are not counted).
        sampled_peak_mb: With ``sample_ms``: the largest resident set sampled from outside
            (``pmap -x``'s total, from ``/proc/PID/smaps_rollup``) from the idle phase to the
            end of the last inference.
        idle_mb: With ``sample_ms``: the largest sample of the idle phase.
        pmap_mb: ``sampled_peak_mb - idle_mb``: FlexNN's own measure of a run's memory.
        samples: How many samples were taken.
        pmap_check_kb: ``pmap -x``'s total minus the rollup read just after it, once per run
            when the resident set first holds still (None without ``pmap``): what shows the
            two readings are the same quantity.
    """

    model: str
    mode: str
    budget_mb: float | None
    latency_ms: float
    latency_samples_ms: list[float]
    base_mb: float
    peak_mb: float
    model_mb: float
    planned_mb: float
    within_budget: bool | None
    code_mb: float = 0.0
    preload: bool = True
    sliced: bool = True
    load_ms: float = 0.0
    first_ms: float = 0.0
    cold: bool | str = False
    limit_mb: float | None = None
    swap_mb: float = 0.0
    group_peak_mb: float | None = None
    major_faults: int | None = None
    swapped_mb: float | None = None
    kernel: str = "im2col"
    warmup: int = 1
    idle_s: float = 0.0
    phases: dict[str, float] | None = None
    read_mb_per_inference: float | None = None
    sampled_peak_mb: float | None = None
    idle_mb: float | None = None
    pmap_mb: float | None = None
    samples: int | None = None
    pmap_check_kb: int | None = None
    #: The class that ran a planned run (an ablation swaps it: its caller checks it did).
    runner: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class KilledByLimit(WorkbenchError):
    """The kernel killed the run for its memory limit (what a model that does not fit meets)."""

    def __init__(self, message: str, *, limit_mb: float, swap_mb: float):
        self.limit_mb, self.swap_mb = limit_mb, swap_mb
        super().__init__(message)


def skeleton(graph: LayerGraph) -> dict[str, Any]:
    """The graph without its weight values: layers with each weight's shape only."""
    return {"name": graph.name, "input_shape": tuple(graph.input_shape),
            "layers": [ly.spec() for ly in graph.layers]}


def from_skeleton(data: dict[str, Any]) -> LayerGraph:
    """A graph whose weights take no memory (zero-strided placeholders of the right shape and
    byte count): the executor reads the real ones from their files."""
    from ..runtime.layers import LayerSpec
    from .graph import Layer

    zero = np.zeros(1, np.float32)
    specs = [LayerSpec.from_spec(d) for d in data["layers"]]
    layers = [Layer(s.name, s.op, s.inputs, s.shape, s.attrs,
                    {k: np.broadcast_to(zero[0], sh) for k, sh in s.weight_shapes.items()},
                    s.in_shapes)
              for s in specs]
    return LayerGraph(data["name"], tuple(data["input_shape"]), layers)


def prepare(graph: LayerGraph, root: str | Path, *, budget_mb: float | None = None,
            sliced: bool = True) -> Path:
    """Write what the probe reads: the skeleton, and the weight files of the bulk run or of the
    plan at ``budget_mb`` (slices)."""
    from . import flexnn as F

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / SKELETON, "wb") as fh:
        pickle.dump(skeleton(graph), fh)
    if budget_mb is None:
        for ly in graph.layers:
            if ly.weights:
                write_weights(root, ly)
    else:
        p = F.plan_within(graph, int(budget_mb * 1e6), sliced=sliced)
        write_weight_files(graph, planned_program(p), root)
    return root


def measure(graph: LayerGraph, *, budget_mb: float | None = None, reps: int = 5,
            preload: bool = True, root: str | Path | None = None, limit_mb: float | None = None,
            swap_mb: float = 0.0, cold: bool | str = False, on_demand: bool = False,
            sliced: bool = True, timeout: float = 600.0, kernel: str = "im2col",
            warmup: int = 1, idle_s: float = 0.0,
            sample_ms: float | None = None) -> Measurement:
    """One measured run of ``graph`` in a fresh process (see the module docstring).

    Args:
        budget_mb: FlexNN budget in MB (None: bulk, every weight resident).
        reps: Timed inferences after the first.
        preload: Planned runs: preload weights on a loader thread (False: load each just before
            its step, FlexNN's "w.o. preload").
        root: Folder for the stored graph and weight files (default: a temporary one).
        limit_mb: Run inside a memory cgroup capped at this many MB (real pressure: the kernel
            reclaims page cache, swaps or kills). Needs root and a memory cgroup.
        swap_mb: With ``limit_mb``: a swap file of this size is on for the run and the group may
            use it (0: no swap, a run over the limit is killed).
        cold: Drop the page cache before the run, so the weights are read from disk;
            ``"weights"`` drops only the weight files' pages (the interpreter's and libraries'
            stay cached, as an app's code does on a device).
        on_demand: Without a budget: load each layer's weights just before it runs and free
            them after (FlexNN's On-Demand baseline) instead of holding all of them.
        sliced: Planned runs: False keeps every layer whole (FlexNN "w.o. slicing").
        kernel: Bulk runs: ``direct`` convolves without the im2col matrix (FlexNN's
            "NCNN-Direct" baseline).
        warmup: Untimed inferences before the ``reps`` timed ones (FlexNN's scripts: 4, then 8).
        idle_s: Seconds the process sleeps before loading, so its idle memory can be read.
        sample_ms: Without a limit: sample the process's resident set from outside every so
            many ms, as FlexNN's ``measure-mem.sh`` samples ``pmap -x`` every 10 ms (fills
            ``sampled_peak_mb``, ``idle_mb``, ``pmap_mb``; give ``idle_s`` too).

    Raises:
        CannotFit: The budget is below the plan's minimum (says the minimum).
        KilledByLimit: The kernel killed the run for ``limit_mb``.
        PressureUnavailable: ``limit_mb`` or ``swap_mb`` asked for on a machine without them.
        WorkbenchError: The probe failed (its last line of stderr).
    """
    _check_arguments(budget_mb=budget_mb, reps=reps, limit_mb=limit_mb, swap_mb=swap_mb,
                     cold=cold, on_demand=on_demand, kernel=kernel, warmup=warmup, idle_s=idle_s,
                     sample_ms=sample_ms)
    tmp = None
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="wb-measure-")
        root = tmp.name
    try:
        prepare(graph, root, budget_mb=budget_mb, sliced=sliced)
        mode = "on-demand" if on_demand else "bulk"
        cmd = [sys.executable, "-m", "workbench.memory._probe", str(root),
               mode if budget_mb is None else repr(float(budget_mb)), str(reps),
               "1" if preload else "0", "1" if sliced else "0", kernel, str(warmup),
               repr(float(idle_s))]
        # One BLAS thread, as the executor's timings elsewhere: the peak is the model's, not a
        # thread pool's.
        env = blas_threads_env(1)
        code, stdout, stderr, seen, sampled = _run_probe(
            graph, cmd, env, root=Path(root), mode=mode, budget_mb=budget_mb, limit_mb=limit_mb,
            swap_mb=swap_mb, cold=cold, sample_ms=sample_ms, timeout=timeout)
        if code != 0:
            lines = [ln for ln in stderr.splitlines() if ln.strip()]
            raise WorkbenchError(f"memory probe of {graph.name} failed: "
                                 f"{lines[-1] if lines else 'exit ' + str(code)}")
        out = json.loads(stdout.strip().splitlines()[-1])
    finally:
        if tmp is not None:
            tmp.cleanup()
    if seen is not None:
        out.update(limit_mb=limit_mb, swap_mb=float(swap_mb), major_faults=seen.major_faults,
                   group_peak_mb=None if seen.peak_bytes is None else seen.peak_bytes / 1e6,
                   swapped_mb=seen.swapped_out_pages * os.sysconf("SC_PAGE_SIZE") / 1e6)
    if sampled is not None:
        out.update(_sampled_fields(sampled, out["phases"]))
    return Measurement(**out, cold=cold)


def _check_arguments(*, budget_mb: float | None, reps: int, limit_mb: float | None,
                     swap_mb: float, cold: bool | str, on_demand: bool, kernel: str, warmup: int,
                     idle_s: float, sample_ms: float | None) -> None:
    """:func:`measure`'s arguments, each checked before anything is written or run."""
    if not isinstance(reps, int) or isinstance(reps, bool) or not 1 <= reps <= 10000:
        raise InputError("reps must be a whole number 1..10000", value=reps)
    for name, v in (("the budget", budget_mb), ("the memory limit", limit_mb)):
        if v is not None and not (isinstance(v, (int, float)) and 0 < v < 1e7):
            raise InputError(f"{name} must be a number of MB > 0", value=v)
    if not (isinstance(swap_mb, (int, float)) and 0 <= swap_mb < 1e6):
        raise InputError("swap must be a number of MB >= 0", value=swap_mb)
    if on_demand and budget_mb is not None:
        raise InputError("on-demand loading has no budget: give one or the other",
                         value=budget_mb)
    if kernel not in ("im2col", "direct"):
        raise InputError("the kernel must be 'im2col' or 'direct'", value=kernel)
    if kernel == "direct" and (budget_mb is not None or on_demand):
        raise InputError("the direct kernel is a bulk run's option (a plan picks its own)",
                         value=kernel)
    if not isinstance(warmup, int) or isinstance(warmup, bool) or not 1 <= warmup <= 1000:
        raise InputError("warmup must be a whole number 1..1000", value=warmup)
    if not (isinstance(idle_s, (int, float)) and 0 <= idle_s <= 60):
        raise InputError("idle_s must be 0..60 seconds", value=idle_s)
    if sample_ms is not None:
        if not (isinstance(sample_ms, (int, float)) and 1 <= sample_ms <= 1000):
            raise InputError("sample_ms must be 1..1000 ms", value=sample_ms)
        if limit_mb is not None:
            raise InputError("sampling from outside is for runs without a limit (a limited "
                             "run reports its group's peak)", value=sample_ms)
    if cold not in (False, True, "weights"):
        raise InputError("cold is True, False or 'weights'", value=cold)
    if swap_mb and limit_mb is None:
        raise InputError("swap matters only under a memory limit: give limit_mb too",
                         value=swap_mb)


def _run_probe(graph: LayerGraph, cmd: list[str], env: dict[str, str], *, root: Path, mode: str,
               budget_mb: float | None, limit_mb: float | None, swap_mb: float,
               cold: bool | str, sample_ms: float | None,
               timeout: float) -> tuple[int, str, str, Limited | None, _Samples | None]:
    """Run the probe: sampled from outside, plainly, or inside a memory cgroup (``limit_mb``,
    with a swap file of ``swap_mb``), after dropping the page cache when ``cold``. Returns its
    exit code, stdout, stderr, what the cgroup saw (or None) and the outside samples (or None).

    Raises:
        KilledByLimit: The kernel killed the run for ``limit_mb``.
    """
    from . import pressure

    with contextlib.ExitStack() as stack:
        if swap_mb:
            stack.enter_context(pressure.swap_file(int(swap_mb * 1e6)))
        if cold:
            pressure.drop_page_cache(sorted(root.glob("*.bin")), only=cold == "weights")
        seen: Limited | None = None
        sampled: _Samples | None = None
        if limit_mb is None and sample_ms is not None:
            code, stdout, stderr, sampled = _run_sampled(cmd, env, timeout, sample_ms / 1e3)
        elif limit_mb is None:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            code, stdout, stderr = r.returncode, r.stdout, r.stderr
        else:
            seen = pressure.run_limited(cmd, limit_bytes=int(limit_mb * 1e6),
                                        swap_bytes=int(swap_mb * 1e6), env=env,
                                        timeout=timeout)
            code, stdout, stderr = seen.returncode, seen.stdout, seen.stderr
            if seen.oom_killed:
                how = mode if budget_mb is None else f"planned at {budget_mb:g} MB"
                raise KilledByLimit(
                    f"the kernel killed {graph.name} ({how}) "
                    f"for its {limit_mb:g} MB memory limit"
                    + (f" with {swap_mb:g} MB of swap" if swap_mb else " (no swap)"),
                    limit_mb=limit_mb, swap_mb=swap_mb)
    return code, stdout, stderr, seen, sampled


@dataclass
class _Samples:
    rss: list[tuple[float, int]]  # (time.time(), kB)
    pmap_check_kb: int | None = None


def _pmap_total_kb(pid: int) -> int | None:
    """The RSS column of ``pmap -x PID``'s total line (procps), None without pmap."""
    import shutil

    if shutil.which("pmap") is None:
        return None
    r = subprocess.run(["pmap", "-x", str(pid)], capture_output=True, text=True)
    last = r.stdout.strip().splitlines()[-1:] if r.returncode == 0 else []
    parts = last[0].split() if last else []
    return int(parts[3]) if len(parts) >= 4 and parts[3].isdigit() else None


def _run_sampled(cmd: list[str], env: dict[str, str], timeout: float,
                 period: float) -> tuple[int, str, str, _Samples]:
    """Run ``cmd`` and sample its resident set from outside every ``period`` s until it exits
    (FlexNN's measure-mem.sh). Once, when the resident set first holds still, ``pmap -x`` is
    read beside the rollup."""
    import threading
    import time as _time

    from ..procfs import rollup_rss_kb

    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    got = _Samples([])
    stop = threading.Event()

    def sample() -> None:
        # pmap -x is read once while the resident set holds still (5 equal samples in a row,
        # as in the idle phase), so that the two readings are of the same moment.
        checked = False
        while not stop.is_set():
            kb = rollup_rss_kb(p.pid)
            if kb is None:
                return
            got.rss.append((_time.time(), kb))
            if not checked and len(got.rss) >= 5 and len({k for _, k in got.rss[-5:]}) == 1:
                checked = True
                total, after = _pmap_total_kb(p.pid), rollup_rss_kb(p.pid)
                if total is not None and after is not None:
                    got.pmap_check_kb = total - after
            stop.wait(period)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise
    finally:
        stop.set()
        th.join()
    return p.returncode, out, err, got


def _sampled_fields(got: _Samples, phases: dict[str, float]) -> dict[str, Any]:
    """FlexNN's reading of a sampled run: the largest sample from the idle phase to the last
    inference's end (not the exit's teardown), less the largest of the idle phase (its scripts
    take the first 3 s of the run as idle)."""
    mb = 1024 / 1e6
    idle = [kb for t, kb in got.rss if phases["idle"] <= t < phases["load"]]
    after = [kb for t, kb in got.rss if phases["idle"] <= t <= phases["end"]]
    if not idle or not after:
        raise WorkbenchError("the run ended before its idle phase was sampled: give idle_s of "
                             "several sampling periods")
    return {"sampled_peak_mb": max(after) * mb, "idle_mb": max(idle) * mb,
            "pmap_mb": (max(after) - max(idle)) * mb, "samples": len(got.rss),
            "pmap_check_kb": got.pmap_check_kb}
