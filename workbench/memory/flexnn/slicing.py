"""FlexNN's bottleneck-aware layer slicing: per layer a kernel (im2col + GEMM, else direct
convolution), the im2col band (input slicing) and the fewest weight slices (by output channels)
that fit the budget while leaving room to preload the next slice."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import InputError
from ..graph import Layer, LayerGraph

ALIGN = 64
BAND_TARGET = 256 * 1024  # bytes of im2col per band: FlexNN's fixed slice size, for this CPU
MIN_COLS = 8  # weight slices keep at least 8 output channels (SIMD width, as FlexNN)


def _al(n: int) -> int:
    return -(-int(n) // ALIGN) * ALIGN


class CannotFit(InputError):
    """The budget is below what the model needs even fully sliced; ``min_budget`` says what
    would fit (bytes)."""

    def __init__(self, message: str, *, budget: int, min_budget: int | None, where=None):
        self.budget = budget
        self.min_budget = min_budget
        # Rounded up: a user who types the number shown must get a budget that fits.
        extra = (f"; the minimum feasible budget is {math.ceil(min_budget / 1e3) / 1e3:.3f} MB"
                 if min_budget else "")
        super().__init__(f"cannot fit in {budget / 1e6:.3f} MB: {message}{extra}", where=where)


@dataclass(frozen=True)
class Step:
    """One sub-layer in execution order: a layer, or one weight slice of it."""

    index: int
    layer: int
    cols: tuple[int, int] | None
    rows: int | None
    kernel: str
    weight_bytes: int
    scratch_bytes: int
    first: bool
    last: bool
    shared: bool = False  # weight slices share one im2col matrix, built by the first slice


@dataclass
class Slicing:
    graph: LayerGraph
    steps: list[Step]
    budget: int
    batch: int = 1
    sliced: bool = True  # False: FlexNN "w.o. slicing" (every layer whole: no weight or input slices)

    def summary(self) -> list[dict]:
        out = []
        for i, ly in enumerate(self.graph.layers):
            st = [s for s in self.steps if s.layer == i]
            out.append({"layer": ly.name, "op": ly.op, "kernel": st[0].kernel, "weight_slices":
                        len(st), "band_rows": st[0].rows,
                        "max_weight_bytes": max(s.weight_bytes for s in st),
                        "scratch_bytes": max(s.scratch_bytes for s in st)})
        return out


def _layer_options(ly: Layer, batch: int, sliced: bool = True):
    """(kernel, rows, scratch_bytes) choices for a layer, fastest first (without slicing: the
    whole im2col matrix only)."""
    if ly.op != "conv":
        return [(None, None, _al(ly.scratch_bytes(batch)))]
    ho = ly.geometry()[0]
    if not sliced:
        return [("im2col", ho, _al(ly.scratch_bytes(batch, rows=ho)))]
    full = ly.band_bytes(None, batch)
    per_row = max(1, full // ho)
    rows = max(1, min(ho, BAND_TARGET // per_row))
    # Kernel selection: the whole im2col matrix (fastest) when it fits, else bands of about
    # BAND_TARGET bytes (input slicing), else one row, else the direct kernel.
    opts = [("im2col", ho, _al(ly.scratch_bytes(batch, rows=ho)))] if rows < ho else []
    opts.append(("im2col", rows, _al(ly.scratch_bytes(batch, rows=rows))))
    if rows > 1:
        opts.append(("im2col", 1, _al(ly.scratch_bytes(batch, rows=1))))
    opts.append(("direct", None, _al(ly.scratch_bytes(batch, kernel="direct"))))
    return opts


def _slices(cout: int, n: int) -> list[tuple[int, int]]:
    """About ``n`` column blocks of ``cout`` channels, each at least MIN_COLS wide."""
    if n <= 1:
        return [(0, cout)]
    step = max(MIN_COLS, -(-cout // n))
    return [(c, min(cout, c + step)) for c in range(0, cout, step)]


def _slice(graph: LayerGraph, budget: int, *, batch: int = 1, sliced: bool = True) -> Slicing:
    budget = int(budget)
    acts = graph.live_activation_bytes(batch, size=_al)
    steps: list[Step] = []
    for i, ly in enumerate(graph.layers):
        avail = budget - acts[i]
        # (kernel, band rows, scratch bytes, weight column blocks; [None] = not sliced)
        choice: tuple[str | None, int | None, int, list[tuple[int, int] | None]] | None = None
        sliceable = sliced and ly.op in ("conv", "dense")
        for kernel, rows, scratch in _layer_options(ly, batch, sliced):
            room = avail - scratch
            if room <= 0 and ly.weights:
                continue
            if room < 0:
                continue
            if not ly.weights:
                choice = (kernel, rows, scratch, [None])
                break
            whole = _al(ly.weight_bytes)
            if whole <= room // 2 or (not sliceable and whole <= room):
                choice = (kernel, rows, scratch, [None])  # fits with room to preload the next
                break
            if not sliceable:
                continue
            # Fewest slices whose size leaves room to preload the next one; else that just fit.
            for share in (2, 1):
                n = max(1, math.ceil(whole / max(1, room // share)))
                while n <= ly.cout:
                    blocks = _slices(ly.cout, n)
                    if max(_al(ly.slice_bytes(*b)) for b in blocks) <= room // share:
                        choice = (kernel, rows, scratch, list(blocks))
                        break
                    n += max(1, n // 8)
                if choice:
                    break
            if choice:
                break
        if choice is None:
            why = (f"its live activations alone need {acts[i] / 1e6:.3f} MB" if avail <= 0 else
                   f"it needs more than the {avail / 1e6:.3f} MB left beside its live activations")
            raise CannotFit(f"layer {ly.name} ({ly.op}): {why}", budget=budget, min_budget=None,
                            where=ly.name)
        kernel, rows, scratch, chosen = choice
        # Weight slices of a conv whose whole im2col matrix fits build it once and share it.
        shared = (kernel == "im2col" and len(chosen) > 1 and rows == ly.geometry()[0])
        for j, b in enumerate(chosen):
            wb = _al(ly.slice_bytes(*b)) if (b and ly.weights) else _al(ly.weight_bytes)
            steps.append(Step(len(steps), i, b if len(chosen) > 1 else None, rows,
                              kernel or "-", wb if ly.weights else 0, scratch, j == 0,
                              j == len(chosen) - 1, shared))
    return Slicing(graph, steps, budget, batch, sliced)


def lower_bound(graph: LayerGraph, *, batch: int = 1, sliced: bool = True) -> int:
    """Largest footprint of any layer at its finest slicing: no budget below this can work."""
    acts = graph.live_activation_bytes(batch, size=_al)
    need = 0
    for i, ly in enumerate(graph.layers):
        opts = _layer_options(ly, batch, sliced)
        w = 0
        if ly.weights and not sliced:
            w = _al(ly.weight_bytes)
        elif ly.weights:
            w = _al(ly.slice_bytes(0, min(MIN_COLS, ly.cout))) if ly.op in ("conv", "dense") \
                else _al(ly.weight_bytes)
        need = max(need, acts[i] + min(s for _, _, s in opts) + w)
    return need


