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
from typing import Any

import numpy as np

from ..errors import InputError, WorkbenchError
from ..timing import blas_threads_env
from .graph import LayerGraph, write_weights
from .programs import planned_program, write_weight_files

SKELETON = "skeleton.pkl"


@dataclass(frozen=True)
class Measurement:
    """One measured run of a model in a fresh process.

    Attributes:
        model: The graph's name.
        mode: ``bulk`` (every weight resident), ``planned`` (FlexNN at ``budget_mb``) or
            ``on-demand`` (each layer's weights read just before it runs: FlexNN's baseline).
        budget_mb: The budget of a planned run (None for bulk).
        latency_ms: Median latency of the ``reps`` inferences after one warm-up.
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
        cold: Whether the page cache was dropped before the run (weights read from disk).
        limit_mb: The memory cgroup's limit the run was held to (None: no limit).
        swap_mb: Swap the run could use (0: none).
        group_peak_mb: The group's peak charge (anonymous memory and page cache, as the kernel
            counts it against the limit; None without a limit).
        major_faults: Page faults the run waited on disk or swap for (None without a limit).
        swapped_mb: Memory written to swap during the run (machine-wide counter).
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
    cold: bool = False
    limit_mb: float | None = None
    swap_mb: float = 0.0
    group_peak_mb: float | None = None
    major_faults: int | None = None
    swapped_mb: float | None = None

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
            swap_mb: float = 0.0, cold: bool = False, on_demand: bool = False,
            sliced: bool = True, timeout: float = 600.0) -> Measurement:
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
        cold: Drop the page cache before the run, so the weights are read from disk.
        on_demand: Without a budget: load each layer's weights just before it runs and free
            them after (FlexNN's On-Demand baseline) instead of holding all of them.
        sliced: Planned runs: False keeps every layer whole (FlexNN "w.o. slicing").

    Raises:
        CannotFit: The budget is below the plan's minimum (says the minimum).
        KilledByLimit: The kernel killed the run for ``limit_mb``.
        PressureUnavailable: ``limit_mb`` or ``swap_mb`` asked for on a machine without them.
        WorkbenchError: The probe failed (its last line of stderr).
    """
    from . import pressure

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
    if swap_mb and limit_mb is None:
        raise InputError("swap matters only under a memory limit: give limit_mb too",
                         value=swap_mb)
    tmp = None
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="wb-measure-")
        root = tmp.name
    try:
        prepare(graph, root, budget_mb=budget_mb, sliced=sliced)
        mode = "on-demand" if on_demand else "bulk"
        cmd = [sys.executable, "-m", "workbench.memory._probe", str(root),
               mode if budget_mb is None else repr(float(budget_mb)), str(reps),
               "1" if preload else "0", "1" if sliced else "0"]
        # One BLAS thread, as the executor's timings elsewhere: the peak is the model's, not a
        # thread pool's.
        env = blas_threads_env(1)
        with contextlib.ExitStack() as stack:
            if swap_mb:
                stack.enter_context(pressure.swap_file(int(swap_mb * 1e6)))
            if cold:
                pressure.drop_page_cache(sorted(Path(root).glob("*.bin")))
            seen = None
            if limit_mb is None:
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
    return Measurement(**out, cold=cold)
