"""What-if latency of a FlexNN plan: per-layer times measured once on this machine, then a
loader thread and a compute thread replayed with FlexNN's dependencies (microseconds per plan)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...timing import median_ms
from ..graph import LayerGraph
from .planning import Plan, _plan
from .runner import FlexRunner
from .slicing import MIN_COLS, Slicing, _al, _layer_options, _slice


@dataclass
class LayerTimes:
    """Measured per-layer compute seconds (whole layer, im2col kernel at the default band; the
    direct kernel where measured), per-step overhead, and file read bandwidth (bytes/s)."""

    compute: list[float]
    direct: dict[int, float]
    step_overhead: float
    read_bps: float
    sync_s: float = 0.0  # the runner's own cost per step (views, events), measured


def measure_layer_times(graph: LayerGraph, root: str | Path, *, repeats: int = 5,
                        batch: int = 1) -> LayerTimes:
    """Time each layer alone (median of ``repeats``) and the read bandwidth of its weight file."""
    from ..graph import read_weights, store

    root = Path(root)
    store(graph, root)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch,) + tuple(graph.input_shape)).astype(np.float32)
    acts = {"input": x}
    comp, direct, reads = [], {}, []
    for ly in graph.layers:
        xs = [acts[s] for s in ly.inputs]
        out = np.empty((batch,) + ly.shape, np.float32)
        opts = _layer_options(ly, batch)
        rows = opts[0][1]
        comp.append(median_ms(lambda: ly.compute(xs, out, rows=rows), runs=repeats) / 1e3)
        if ly.op == "conv":
            direct[len(comp) - 1] = median_ms(lambda: ly.compute(xs, out, kernel="direct"),
                                              runs=max(1, repeats // 2)) / 1e3
        if ly.weights:
            reads.append((ly.weight_bytes,
                          median_ms(read_weights, root, ly, runs=repeats) / 1e3))
        acts[ly.name] = out
    # Overhead of one extra sub-layer call: a dense slice of 8 columns of the first FC (or 0).
    over = 15e-6
    dense = [ly for ly in graph.layers if ly.op == "dense"]
    if dense:
        ly = dense[0]
        xin = np.ones((batch,) + tuple(ly.in_shapes[0]), np.float32).reshape(batch, -1)
        o = np.empty((batch, ly.cout), np.float32)
        w = {k: v[..., :MIN_COLS] if k == "w" else v[:MIN_COLS] for k, v in ly.weights.items()}
        w = {k: np.ascontiguousarray(v) for k, v in w.items()}
        over = median_ms(lambda: ly.compute([xin], o, w=w, cols=(0, MIN_COLS)), runs=50) / 1e3
    tot_b = sum(b for b, _ in reads) or 1
    tot_s = sum(s for _, s in reads) or 1e-9
    # The runner's cost per step: an all-pinned plan (nothing loaded per inference) against the
    # layers' own times.
    big = _al(graph.bulk_peak_bytes(batch)) * 2
    p = _plan(_slice(graph, big, batch=batch), big)
    r = FlexRunner(p, root)
    try:
        run_s = median_ms(r.run, x, runs=repeats, warmup=1) / 1e3
    finally:
        r.close()
    sync = max(0.0, (run_s - sum(comp)) / len(p.slicing.steps))
    return LayerTimes(comp, direct, over, tot_b / tot_s, sync)


def step_seconds(slicing: Slicing, lt: LayerTimes) -> list[float]:
    out = []
    for s in slicing.steps:
        ly = slicing.graph.layers[s.layer]
        base = lt.direct.get(s.layer, lt.compute[s.layer]) if s.kernel == "direct" \
            else lt.compute[s.layer]
        frac = (s.cols[1] - s.cols[0]) / ly.cout if s.cols else 1.0
        out.append(base * frac + (lt.step_overhead if s.cols else 0.0) + lt.sync_s)
    return out


def simulate(p: Plan, lt: LayerTimes, *, preload: bool = True) -> float:
    """Latency (s) of a plan: a loader and a compute thread with FlexNN's dependencies."""
    steps = p.slicing.steps
    comp = step_seconds(p.slicing, lt)
    w = {t.step: t for t in p.weights}
    done = [0.0] * len(steps)
    loader = 0.0
    load_end = {}
    order = sorted((t for t in w.values() if not t.pinned), key=lambda t: t.owner)
    li = 0  # loads depend on earlier computations: issue them lazily, in order
    now = 0.0
    for s in steps:
        if s.index in w and w[s.index].pinned:
            pass
        elif s.index in w:
            if preload:
                while li < len(order) and order[li].owner <= s.index:
                    t = order[li]
                    ready = done[t.time - 1] if t.time > 0 else 0.0
                    loader = max(loader, ready) + t.size / lt.read_bps
                    load_end[t.step] = loader
                    li += 1
                now = max(now, load_end[s.index])
            else:
                now += w[s.index].size / lt.read_bps
        now += comp[s.index]
        done[s.index] = now
    return now


