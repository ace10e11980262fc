"""FlexNN (MobiCom '24): bottleneck-aware layer slicing, preload-aware memory planning (its
Alg. 1) and an executor that follows the plan in one static buffer with a preloading thread.

- :func:`slice_graph` picks, per layer, a kernel (im2col + GEMM, else direct convolution), the
  im2col band (input slicing) and the fewest weight slices (by output channels) that fit the
  budget while leaving room to preload the next slice.
- :func:`plan` places every tensor in a buffer of ``budget`` bytes: activations first at both
  ends, then per step the weights as early as memory allows (preloading), then intermediates,
  re-planning a step without preloading when that fails.
- :class:`FlexRunner` executes a plan for real: weights are read from per-slice files into their
  planned addresses by a loader thread while the caller's thread computes; ``load(j)`` waits for
  the computation after which its address range is free (FlexNN's dependency-based sync).
- :func:`simulate` predicts a plan's latency from per-layer times in microseconds (what-if).
- :class:`FlexNN` ties them together and adapts to a new budget (re-plan, re-slice only when the
  old slicing no longer fits), timing each part.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ...errors import InputError
from ..graph import LayerGraph
from .planning import Plan, Tensor, min_budget, plan, slice_and_plan, slice_graph, tensors_of
from .runner import EXECUTOR_RESERVE, FlexRunner, on_demand_peak_bytes, plan_within, run_on_demand, warm_up
from .simulator import LayerTimes, measure_layer_times, simulate, step_seconds
from .slicing import ALIGN, BAND_TARGET, MIN_COLS, CannotFit, Slicing, Step, lower_bound

__all__ = ["ALIGN", "BAND_TARGET", "EXECUTOR_RESERVE", "MIN_COLS", "Adaptation", "CannotFit",
           "FlexNN", "FlexRunner", "LayerTimes", "Plan", "Slicing", "Step", "Tensor",
           "lower_bound", "measure_layer_times", "min_budget", "on_demand_peak_bytes", "plan",
           "plan_within", "run_on_demand", "simulate", "slice_and_plan", "slice_graph", "step_seconds",
           "tensors_of", "warm_up"]


@dataclass
class Adaptation:
    budget: int
    resliced: bool
    slice_ms: float
    plan_ms: float
    setup_ms: float
    total_ms: float


class FlexNN:
    """A model served under a memory budget that may change.

    Example:
        >>> f = FlexNN(graph, root, budget=2_000_000)
        >>> y = f.run(x)
        >>> f.adapt(1_000_000)   # re-plans (and re-slices only if needed)
    """

    def __init__(self, graph: LayerGraph, root: str | Path, *, budget: int, batch: int = 1,
                 preload: bool = True):
        self.graph, self.root, self.batch, self.preload = graph, Path(root), batch, preload
        self.runner: FlexRunner | None = None
        self.history: list[Adaptation] = []
        self.slicing: Slicing | None = None
        self.adapt(budget)

    def adapt(self, budget: int) -> Adaptation:
        t0 = time.perf_counter()
        budget = int(budget)
        resliced = False
        ts = time.perf_counter()
        p = None
        if self.slicing is not None:
            try:
                p = plan(replace(self.slicing, budget=budget), budget)
            except CannotFit:
                p = None
        slice_ms = 0.0
        if p is None:
            p = slice_and_plan(self.graph, budget, batch=self.batch)
            slice_ms = (time.perf_counter() - ts) * 1e3 - p.seconds * 1e3
            resliced = True
            self.slicing = p.slicing
        plan_ms = p.seconds * 1e3
        t1 = time.perf_counter()
        if self.runner is not None:
            self.runner.close()
        self.runner = FlexRunner(p, self.root, preload=self.preload)
        setup_ms = (time.perf_counter() - t1) * 1e3
        a = Adaptation(budget, resliced, slice_ms, plan_ms, setup_ms,
                       (time.perf_counter() - t0) * 1e3)
        self.history.append(a)
        return a

    def _active(self) -> FlexRunner:
        if self.runner is None:
            raise InputError("this FlexNN is closed", where="FlexNN")
        return self.runner

    @property
    def plan(self) -> Plan:
        return self._active().plan

    def run(self, x: np.ndarray) -> np.ndarray:
        return self._active().run(x)

    def close(self) -> None:
        if self.runner:
            self.runner.close()
            self.runner = None
