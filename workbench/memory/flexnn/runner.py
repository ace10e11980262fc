"""FlexNN's executor: a plan run for real in one static buffer. Weights are read from per-slice
files into their planned addresses by a loader thread while the caller's thread computes;
``load(j)`` waits for the computation after which its address range is free (FlexNN's
dependency-based synchronisation). Also the "On-Demand" baseline (layer-wise swapping)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from ...runtime import kernels
from ...runtime.programs import PlanRunner
from ..graph import LayerGraph, weight_file
from .planning import Plan, min_budget, slice_and_plan
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


def plan_within(graph: LayerGraph, budget: int, *, batch: int = 1, sliced: bool = True) -> Plan:
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
        return slice_and_plan(graph, tensors, batch=batch, sliced=sliced)
    except CannotFit as e:
        need = (e.min_budget or min_budget(graph, batch=batch, sliced=sliced)) + EXECUTOR_RESERVE
        raise CannotFit(f"the plan's buffer and the executor's {EXECUTOR_RESERVE / 1e6:.3f} MB "
                        "reserve do not fit", budget=budget, min_budget=need,
                        where=e.where) from None


class FlexRunner(PlanRunner):
    """Runs a plan for real: the plan as a layer program (what a bundle carries to the device)
    run by the runtime's :class:`~workbench.runtime.programs.PlanRunner`: one static buffer of
    the plan's size, weights read from per-slice files by a loader thread, computation on the
    caller's thread.

    Args:
        root: folder for the weight files (slices written on first use, then reused).
        preload: False loads each step's weights just before computing it (FlexNN's
            "w.o. preload" ablation).
    """

    def __init__(self, p: Plan, root: str | Path, *, preload: bool = True):
        from ..programs import planned_program, write_weight_files

        self.plan = p
        prog = planned_program(p)
        write_weight_files(p.slicing.graph, prog, root)
        super().__init__(prog, root, preload=preload)


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


