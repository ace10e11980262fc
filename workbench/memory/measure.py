"""Memory measured, never computed: one inference of a layer graph in a fresh process, bulk or
FlexNN-planned at a budget, with the process's own peak resident set read from the kernel.

The parent stores the graph (its structure, and its weights as the files the executor reads) and
starts ``python -m workbench.memory._probe``, which imports numpy and the executor only (no
TensorFlow, no copy of the weights in memory), warms up BLAS, resets the kernel's peak counter
(``/proc/self/clear_refs``, Linux), reads its resident set (the *baseline*), builds the runner,
runs the inference ``reps`` times and reads the peak (``VmHWM``). ``model_mb`` is the peak over
the baseline (what the model costs), ``peak_mb`` the whole process (what ``pmap`` and FlexNN's
figures show); both are measurements. ``planned_mb`` is what the plan says it needs, for
comparison only.
"""

from __future__ import annotations

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
from .graph import LayerGraph, write_weights

SKELETON = "skeleton.pkl"


@dataclass(frozen=True)
class Measurement:
    """One measured run of a model in a fresh process.

    Attributes:
        model: The graph's name.
        mode: ``bulk`` (every weight resident) or ``planned`` (FlexNN at ``budget_mb``).
        budget_mb: The budget of a planned run (None for bulk).
        latency_ms: Median latency of the ``reps`` inferences after one warm-up.
        latency_samples_ms: Every timed inference.
        base_mb: Resident set before the model is loaded (interpreter, numpy, BLAS warmed up).
        peak_mb: The process's peak resident set (whole process, as ``pmap`` reports).
        model_mb: ``peak_mb - base_mb``: what the model costs.
        planned_mb: The plan's buffer (planned) or the graph's tensor bytes at its peak (bulk):
            computed, for comparison with ``model_mb``.
        within_budget: ``model_mb <= budget_mb`` (None for bulk).
        preload: Whether the loader thread preloaded weights (planned runs).
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
    preload: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def skeleton(graph: LayerGraph) -> dict[str, Any]:
    """The graph without its weight values: layers with each weight's shape only."""
    return {"name": graph.name, "input_shape": tuple(graph.input_shape),
            "layers": [{"name": ly.name, "op": ly.op, "inputs": list(ly.inputs),
                        "shape": tuple(ly.shape), "attrs": ly.attrs,
                        "in_shapes": [tuple(s) for s in ly.in_shapes],
                        "weights": {k: tuple(w.shape) for k, w in ly.weights.items()}}
                       for ly in graph.layers]}


def from_skeleton(data: dict[str, Any]) -> LayerGraph:
    """A graph whose weights take no memory (zero-strided placeholders of the right shape and
    byte count): the executor reads the real ones from their files."""
    from .graph import Layer

    zero = np.zeros(1, np.float32)
    layers = [Layer(d["name"], d["op"], d["inputs"], tuple(d["shape"]), d["attrs"],
                    {k: np.broadcast_to(zero[0], s) for k, s in d["weights"].items()},
                    [tuple(s) for s in d["in_shapes"]])
              for d in data["layers"]]
    return LayerGraph(data["name"], tuple(data["input_shape"]), layers)


def prepare(graph: LayerGraph, root: str | Path, *, budget_mb: float | None = None) -> Path:
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
        s = F.plan_within(graph, int(budget_mb * 1e6)).slicing
        for st in s.steps:
            if st.weight_bytes:
                ly = graph.layers[st.layer]
                c0, c1 = st.cols or (0, ly.cout)
                write_weights(root, ly, c0, c1)
    return root


def measure(graph: LayerGraph, *, budget_mb: float | None = None, reps: int = 5,
            preload: bool = True, root: str | Path | None = None,
            timeout: float = 600.0) -> Measurement:
    """One measured run of ``graph`` in a fresh process (see the module docstring).

    Args:
        budget_mb: FlexNN budget in MB (None: bulk, every weight resident).
        reps: Timed inferences after one warm-up.
        preload: Planned runs: preload weights on a loader thread (False: load each just before
            its step, FlexNN's "w.o. preload").
        root: Folder for the stored graph and weight files (default: a temporary one).

    Raises:
        CannotFit: The budget is below the plan's minimum (says the minimum).
        WorkbenchError: The probe failed (its last line of stderr).
    """
    if not isinstance(reps, int) or isinstance(reps, bool) or not 1 <= reps <= 10000:
        raise InputError("reps must be a whole number 1..10000", value=reps)
    if budget_mb is not None and not (isinstance(budget_mb, (int, float))
                                      and 0 < budget_mb < 1e7):
        raise InputError("the budget must be a number of MB > 0", value=budget_mb)
    tmp = None
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="wb-measure-")
        root = tmp.name
    try:
        prepare(graph, root, budget_mb=budget_mb)
        cmd = [sys.executable, "-m", "workbench.memory._probe", str(root),
               "bulk" if budget_mb is None else repr(float(budget_mb)), str(reps),
               "1" if preload else "0"]
        # One BLAS thread, as the executor's timings elsewhere: the peak is the model's, not a
        # thread pool's.
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        if r.returncode != 0:
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            raise WorkbenchError(f"memory probe of {graph.name} failed: "
                                 f"{lines[-1] if lines else 'exit ' + str(r.returncode)}")
        out = json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        if tmp is not None:
            tmp.cleanup()
    return Measurement(**out)
