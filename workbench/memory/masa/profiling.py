"""MASA's per-layer profiler: load and execution seconds and the resident-memory growth of
each layer, measured on this machine."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...timing import Stopwatch
from .model import LayerCost, NetProfile


def profile_network(graph, root: Path, *, repeats: int = 5, sample_rss: bool = True) -> NetProfile:
    """Per-layer load and execute times (medians) and memory: bytes from the layer graph and, as
    MASA's profiler does, the peak resident-set growth sampled from ``/proc/self/statm``."""
    from ..graph import read_weights, store
    from ..profiler import RssSampler

    store(graph, root)
    x = np.random.default_rng(0).normal(size=(1,) + tuple(graph.input_shape)).astype(np.float32)
    acts = {"input": x}
    out = []
    for _k, ly in enumerate(graph.layers):
        loads, execs, peak = [], [], 0
        for _ in range(repeats):
            with RssSampler(enabled=sample_rss) as rs, Stopwatch() as sw:
                w = read_weights(root, ly) if ly.weights else None
                loaded_ms = sw.lap()
                o = np.empty((1,) + ly.shape, np.float32)
                ly.compute([acts[n] for n in ly.inputs], o, w=w)
            peak = max(peak, rs.peak_delta)
            loads.append(loaded_ms / 1e3)
            execs.append((sw.ms - loaded_ms) / 1e3)
            del w
        acts[ly.name] = o
        out.append(LayerCost(ly.name, ly.kind, [graph.index[n] if n != "input" else -1
                                                for n in ly.inputs], ly.weight_bytes,
                             ly.out_bytes(), ly.scratch_bytes(),
                             float(np.median(loads)) if ly.weights else 0.0,
                             float(np.median(execs)), peak))
    return NetProfile(graph.name, out)
