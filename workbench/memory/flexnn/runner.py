"""FlexNN's executor: a plan run for real in one static buffer. Weights are read from per-slice
files into their planned addresses by a loader thread while the caller's thread computes;
``load(j)`` waits for the computation after which its address range is free (FlexNN's
dependency-based synchronisation). Also the "On-Demand" baseline (layer-wise swapping)."""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path

import numpy as np

from ...errors import InputError
from .. import kernels
from ..graph import LayerGraph, weight_file, write_weights
from .planning import Plan, Tensor, min_budget, plan, slice_graph
from .slicing import CannotFit

# What the executor holds outside the plan's buffer while it runs: the step loop's objects, the
# loader thread's events and lock, scratch stubs of steps without one. Measured in fresh processes
# after warm_up(): 12-36 KB on fc-64, MobileNetV2-96, RegNet-64 and VGG-64 at two budgets each.
# A process budget reserves it (with headroom) so the whole model, not just the plan, stays within.
EXECUTOR_RESERVE = 64_000


def warm_up() -> None:
    """Pay the executor's first-call costs before a measurement's baseline: every kernel once on
    tiny arrays, and one thread started and joined (its stack is cached and reused by the loader
    thread). Neither depends on the model's size."""
    kernels.warm_up()
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()


def plan_within(graph: LayerGraph, budget: int, *, batch: int = 1) -> Plan:
    """Slice and plan ``graph`` so that the executor's whole footprint (the plan's buffer plus
    :data:`EXECUTOR_RESERVE`) fits in ``budget`` bytes: what a process budget means.

    Raises:
        CannotFit: saying the smallest process budget that fits.
    """
    try:
        if budget <= EXECUTOR_RESERVE:
            raise CannotFit("the executor alone needs the reserve", budget=budget,
                            min_budget=None)
        tensors = budget - EXECUTOR_RESERVE
        return plan(slice_graph(graph, tensors, batch=batch), tensors)
    except CannotFit as e:
        need = (e.min_budget or min_budget(graph, batch=batch)) + EXECUTOR_RESERVE
        raise CannotFit(f"the plan's buffer and the executor's {EXECUTOR_RESERVE / 1e6:.3f} MB "
                        "reserve do not fit", budget=budget, min_budget=need,
                        where=e.where) from None


class FlexRunner:
    """Runs a plan for real: one static buffer of the plan's size, weights read from per-slice
    files by a loader thread, computation on the caller's thread.

    Args:
        root: folder for the weight files (slices written on first use, then reused).
        preload: False loads each step's weights just before computing it (FlexNN's
            "w.o. preload" ablation).
    """

    def __init__(self, p: Plan, root: str | Path, *, preload: bool = True):
        self.plan = p
        self.preload = preload
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        g = p.slicing.graph
        self.buf = np.zeros(p.buffer_bytes, np.uint8)  # committed now: RSS shows the budget
        self.acts = {t.name: t for t in p.tensors if t.kind == "activation"}
        self.w = {t.step: t for t in p.tensors if t.kind == "weight"}
        self.m = {t.step: t for t in p.tensors if t.kind == "intermediate"}
        for st in p.slicing.steps:  # later weight slices use their layer's shared im2col matrix
            if st.shared and not st.first:
                self.m[st.index] = self.m[next(x.index for x in p.slicing.steps
                                               if x.layer == st.layer and x.first)]
        self.fds = {}
        for s in p.slicing.steps:
            if s.weight_bytes:
                ly = g.layers[s.layer]
                c0, c1 = s.cols or (0, ly.cout)
                write_weights(self.root, ly, c0, c1)
                self.fds[s.index] = os.open(weight_file(self.root, ly, c0, c1), os.O_RDONLY)
        self.loads = sorted((t for t in self.w.values() if not t.pinned), key=lambda t: t.owner)
        for t in self.w.values():
            if t.pinned:
                self._load(t)

    def close(self):
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}
        self.buf = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _view(self, t: Tensor, shape=None, n=None) -> np.ndarray:
        v = self.buf[t.addr: t.addr + t.size].view(np.float32)
        if shape is not None:
            return v[: math.prod(shape)].reshape(shape)
        return v[:n] if n is not None else v

    def _load(self, t: Tensor) -> None:
        s = self.plan.slicing.steps[t.owner]
        ly = self.plan.slicing.graph.layers[s.layer]
        c0, c1 = s.cols or (0, ly.cout)
        nbytes = ly.slice_bytes(c0, c1)
        mv = self.buf.data[t.addr: t.addr + nbytes]
        got = os.preadv(self.fds[t.owner], [mv], 0)
        if got != nbytes:
            raise InputError(f"short read: {got} of {nbytes} bytes",
                             file=weight_file(self.root, ly, c0, c1))

    def run(self, x: np.ndarray, *, timings: list | None = None) -> np.ndarray:
        """One inference. ``timings`` (a list) receives (step, compute seconds) pairs."""
        p = self.plan
        g, steps = p.slicing.graph, p.slicing.steps
        batch = x.shape[0]
        self._view(self.acts["input"], (batch,) + tuple(g.input_shape))[...] = x
        done = [-1]  # last computed step
        loaded = {t.step: threading.Event() for t in self.loads}
        cv = threading.Condition()
        err: list[BaseException] = []

        def loader():
            try:
                for t in self.loads:
                    with cv:  # load(j) waits for comp(time-1): its address range is free then
                        while done[0] < t.time - 1 and not err:
                            cv.wait()
                    if err:
                        return
                    self._load(t)
                    loaded[t.step].set()
            except BaseException as e:  # surfaced on the compute thread
                err.append(e)
                for ev in loaded.values():
                    ev.set()

        # No thread when nothing streams (every weight pinned): no synchronisation to pay.
        th = threading.Thread(target=loader, daemon=True) if self.preload and self.loads else None
        if th:
            th.start()
        try:
            for s in steps:
                ly = g.layers[s.layer]
                w = None
                if s.weight_bytes:
                    wt = self.w[s.index]
                    if wt.pinned:
                        pass
                    elif th is None:
                        self._load(wt)
                    else:
                        loaded[s.index].wait()
                        if err:
                            raise err[0]
                    c0, c1 = s.cols or (0, ly.cout)
                    w = ly.views(self._view(wt), c0, c1)
                xs = [self._view(self.acts[n], (batch,) + (tuple(g.input_shape) if n == "input"
                                                          else g.layers[g.index[n]].shape))
                      for n in ly.inputs]
                out = self._view(self.acts[ly.name], (batch,) + ly.shape)
                scratch = self._view(self.m[s.index]) if s.index in self.m else None
                t0 = time.perf_counter()
                ly.compute(xs, out, w=w, cols=s.cols, scratch=scratch, rows=s.rows,
                           kernel=s.kernel if s.kernel != "-" else "im2col",
                           build=s.first or not s.shared)
                if timings is not None:
                    timings.append((s.index, time.perf_counter() - t0))
                if th is not None:
                    with cv:
                        done[0] = s.index
                        cv.notify_all()
        finally:
            if th:
                with cv:
                    if not err and done[0] < len(steps) - 1:
                        err.append(RuntimeError("inference aborted"))
                    cv.notify_all()
                th.join()
        last = g.layers[-1]
        return self._view(self.acts[last.name], (batch,) + last.shape).copy()


def run_on_demand(graph: LayerGraph, root: str | Path, x: np.ndarray) -> np.ndarray:
    """Layer-wise swapping without slicing or preloading (FlexNN's "On-Demand" baseline): each
    layer's weights read from its file just before it runs and freed after."""
    from ..graph import read_weights, store

    root = Path(root)
    if not all(weight_file(root, ly).exists() for ly in graph.layers if ly.weights):
        store(graph, root)
    last = graph.last_use()
    acts = {"input": np.ascontiguousarray(x, np.float32)}
    for i, ly in enumerate(graph.layers):
        w = read_weights(root, ly) if ly.weights else None
        out = np.empty((x.shape[0],) + ly.shape, np.float32)
        ly.compute([acts[s] for s in ly.inputs], out, w=w)
        del w
        acts[ly.name] = out
        for s in set(ly.inputs):
            if last[s] == i:
                acts.pop(s, None)
    return acts[graph.layers[-1].name]


def on_demand_peak_bytes(graph: LayerGraph, batch: int = 1) -> int:
    return graph.activation_peak_bytes(batch, with_scratch=True, weights=True)


