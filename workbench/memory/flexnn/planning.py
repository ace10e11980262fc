"""FlexNN's preload-aware memory planning (its Alg. 1): every tensor placed in a buffer of
``budget`` bytes, activations first at both ends, then per step the weights as early as memory
allows (preloading), then intermediates; a step that fails is re-planned without preloading.

The public entry points :func:`slice_graph` and :func:`plan` live here because a budget that
cannot work is reported with the minimum one that can, which needs both slicing and planning."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ...runtime.layers import F32
from ..graph import LayerGraph
from .slicing import ALIGN, CannotFit, Slicing, _al, _slice, lower_bound


def min_budget(graph: LayerGraph, *, batch: int = 1, tol: float = 0.01,
               sliced: bool = True) -> int:
    """The smallest budget (bytes, within ``tol``) for which slicing and planning succeed
    (``sliced=False``: with every layer whole)."""
    def ok(b):
        try:
            _slice_and_plan(graph, b, batch=batch, sliced=sliced)
            return True
        except CannotFit:
            return False

    lo = lower_bound(graph, batch=batch, sliced=sliced)
    if ok(lo):
        return lo
    hi = max(lo * 2, _al(graph.bulk_peak_bytes(batch)) * 2)
    while not ok(hi):
        hi *= 2
    while hi - lo > max(ALIGN, tol * lo):
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return _al(hi)


def _with_min_budget(graph: LayerGraph, batch: int, fn, sliced: bool = True):
    try:
        return fn()
    except CannotFit as e:
        if e.min_budget is not None:
            raise
        raise CannotFit(e.message.split(": ", 1)[-1], budget=e.budget,
                        min_budget=min_budget(graph, batch=batch, sliced=sliced),
                        where=e.where) from None


def slice_graph(graph: LayerGraph, budget: int, *, batch: int = 1,
                sliced: bool = True) -> Slicing:
    """Bottleneck-aware layer slicing of ``graph`` for a budget of ``budget`` bytes.

    Args:
        sliced: False keeps every layer whole (no weight slices, no im2col bands): FlexNN's
            "w.o. slicing" ablation, which needs the largest layer to fit with its whole im2col.

    Raises:
        CannotFit: when even the finest slicing does not fit (says the minimum budget).
    """
    return _with_min_budget(graph, batch, lambda: _slice(graph, budget, batch=batch,
                                                         sliced=sliced), sliced)


def plan(slicing: Slicing, budget: int | None = None, *, preload: bool = True) -> Plan:
    """FlexNN's Alg. 1: activations first (both ends), then per step weights preloaded as early
    as memory allows and intermediates; a step that fails is re-planned without preloading.

    Raises:
        CannotFit: when a step fails even without preloading (says the minimum budget).
    """
    return _with_min_budget(slicing.graph, slicing.batch,
                            lambda: _plan(slicing, budget, preload=preload), slicing.sliced)



#: When the slicing chosen for a budget does not plan in it, finer slicings are tried: those
#: chosen for the budget times 0.85, 0.85^2, ... down to the model's lower bound.
FINER = 0.85


def _slice_and_plan(graph: LayerGraph, budget: int, *, batch: int = 1, sliced: bool = True,
                    preload: bool = True) -> Plan:
    try:
        return _plan(_slice(graph, budget, batch=batch, sliced=sliced), budget, preload=preload)
    except CannotFit as first:
        # The slicing picks, per layer, the fastest option that fits the budget on its own; the
        # plan must then place every step's tensors beside the live activations, and a larger
        # budget can pick larger options that no longer place (ResNet-152 plans at 9.7 and 16
        # MB but not at 13 with its own slicing). A finer slicing (one chosen for less memory)
        # placed in the whole budget then fits.
        floor = lower_bound(graph, batch=batch, sliced=sliced)
        b = int(budget * FINER)
        while b >= floor:
            try:
                return _plan(_slice(graph, b, batch=batch, sliced=sliced), budget,
                             preload=preload)
            except CannotFit:
                b = int(b * FINER)
        raise first


def slice_and_plan(graph: LayerGraph, budget: int, *, batch: int = 1, sliced: bool = True,
                   preload: bool = True) -> Plan:
    """:func:`slice_graph` then :func:`plan` in ``budget`` bytes; when the slicing chosen for
    ``budget`` does not place, a finer one (chosen for less memory) is planned in the whole
    budget, so every budget at or above :func:`min_budget` plans.

    Raises:
        CannotFit: no slicing plans in ``budget`` (says the minimum budget).
    """
    return _with_min_budget(graph, batch, lambda: _slice_and_plan(
        graph, budget, batch=batch, sliced=sliced, preload=preload), sliced)


@dataclass
class Tensor:
    id: int
    kind: str  # activation | weight | intermediate
    size: int
    start: int  # first step it is live (for weights: the step that uses it, before preloading)
    end: int  # last step it is live
    step: int | None = None  # weights/intermediates: the step they belong to
    name: str = ""
    time: int = 0  # planned allocation step (weights may be earlier than start: preloading)
    addr: int = -1
    pinned: bool = False  # a weight kept in memory for the whole run (loaded once)

    @property
    def owner(self) -> int:
        """The step a weight or intermediate belongs to."""
        if self.step is None:
            raise ValueError(f"{self.name} is an activation: it belongs to no step")
        return self.step


@dataclass
class Plan:
    """Where and when every tensor lives in a buffer of ``budget`` bytes."""

    slicing: Slicing
    budget: int
    tensors: list[Tensor]
    seconds: float = 0.0
    no_preload_steps: list[int] = field(default_factory=list)

    @property
    def buffer_bytes(self) -> int:
        return max(t.addr + t.size for t in self.tensors)

    @property
    def weights(self) -> list[Tensor]:
        return [t for t in self.tensors if t.kind == "weight"]

    @property
    def preloaded(self) -> int:
        """Streamed weight tensors whose loading starts before the step that uses them."""
        return sum(1 for t in self.weights if t.time < t.start and not t.pinned)

    @property
    def pinned_bytes(self) -> int:
        return sum(t.size for t in self.weights if t.pinned)

    @property
    def streamed_bytes(self) -> int:
        """Weight bytes read from disk on every inference."""
        return sum(t.size for t in self.weights if not t.pinned)

    def peak_live_bytes(self) -> int:
        n = len(self.slicing.steps)
        use = np.zeros(n + 1, np.int64)
        for t in self.tensors:
            use[t.time: t.end + 1] += t.size
        return int(use.max())

    def check(self) -> None:
        """Assert the planner's invariants: within the budget, and no two tensors live at the
        same step share an address."""
        for t in self.tensors:
            if t.addr < 0 or t.addr + t.size > self.budget:
                raise AssertionError(f"tensor {t.name} at {t.addr}+{t.size} outside the budget")
            if t.time > t.start:
                raise AssertionError(f"tensor {t.name} allocated after its first use")
        ts = sorted(self.tensors, key=lambda t: t.addr)
        for i, a in enumerate(ts):
            for b in ts[i + 1:]:
                if b.addr >= a.addr + a.size:
                    break
                if a.time <= b.end and b.time <= a.end:
                    raise AssertionError(f"tensors {a.name} and {b.name} overlap in address "
                                         "and time")


def tensors_of(slicing: Slicing) -> list[Tensor]:
    """Tensors with their lifetimes in steps: activations, weights (per slice), intermediates."""
    g, steps, batch = slicing.graph, slicing.steps, slicing.batch
    first: dict[int, int] = {}
    lastst: dict[int, int] = {}
    for s in steps:
        first.setdefault(s.layer, s.index)
        lastst[s.layer] = s.index
    last_use = g.last_use()
    out: list[Tensor] = []
    n = len(steps)

    def end_of(name):
        i = last_use[name]
        return n - 1 if i >= len(g.layers) else lastst[i]

    out.append(Tensor(0, "activation", _al(batch * math.prod(g.input_shape) * F32), 0,
                      end_of("input"), name="input"))
    for i, ly in enumerate(g.layers):
        out.append(Tensor(len(out), "activation", _al(ly.out_bytes(batch)), first[i],
                          end_of(ly.name), name=ly.name))
    for s in steps:
        if s.weight_bytes:
            out.append(Tensor(len(out), "weight", s.weight_bytes, s.index, s.index, s.index,
                              name=f"w{s.index}:{g.layers[s.layer].name}"))
        if s.scratch_bytes and (s.first or not s.shared):
            end = lastst[s.layer] if s.shared else s.index
            out.append(Tensor(len(out), "intermediate", s.scratch_bytes, s.index, end,
                              s.index, name=f"i{s.index}:{g.layers[s.layer].name}"))
    for t in out:
        t.time = t.start
    return out


class _Occupancy:
    """Per step, the address intervals in use."""

    def __init__(self, n: int):
        self.at: list[list[tuple[int, int]]] = [[] for _ in range(n)]

    def place(self, t: Tensor) -> None:
        for k in range(t.time, t.end + 1):
            self.at[k].append((t.addr, t.addr + t.size))

    def remove(self, t: Tensor) -> None:
        for k in range(t.time, t.end + 1):
            self.at[k].remove((t.addr, t.addr + t.size))

    def busy(self, t0: int, t1: int) -> list[tuple[int, int]]:
        iv = sorted(x for k in range(t0, t1 + 1) for x in self.at[k])
        merged: list[list[int]] = []
        for a, b in iv:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        return [(a, b) for a, b in merged]

    def first_fit(self, size: int, t0: int, t1: int, limit: int, *, top: bool = False) -> int:
        busy = self.busy(t0, t1)
        gaps = []
        at = 0
        for a, b in busy:
            if a - at >= size:
                gaps.append((at, a))
            at = max(at, b)
        if limit - at >= size:
            gaps.append((at, limit))
        if not gaps:
            return -1
        if top:
            a, b = gaps[-1]
            return (b - size) // ALIGN * ALIGN if (b - size) // ALIGN * ALIGN >= a else -1
        return gaps[0][0]


def _plan(slicing: Slicing, budget: int | None = None, *, preload: bool = True,
          pin: bool = True) -> Plan:
    t_start = time.perf_counter()
    budget = int(slicing.budget if budget is None else budget)
    base = _plan_once(slicing, budget, preload=preload, pinned=0)
    if pin and preload:
        # FlexNN fixes weights in memory when the budget allows: pin the k largest weights
        # (loaded once, never again) for the largest k that still plans with as many weights
        # hidden (pinned or preloaded) as the unpinned plan. Monotone enough in k to bisect.
        n_w = len(base.weights)
        lo, hi, best = 1, n_w, base
        while lo <= hi:
            k = (lo + hi) // 2
            try:
                p = _plan_once(slicing, budget, preload=preload, pinned=k)
                ok = p.preloaded + k >= base.preloaded
            except CannotFit:
                ok = False
            if ok:
                best, lo = p, k + 1
            else:
                hi = k - 1
        base = best
    base.seconds = time.perf_counter() - t_start
    return base


def _plan_once(slicing: Slicing, budget: int, *, preload: bool, pinned: int) -> Plan:
    tensors = tensors_of(slicing)
    n = len(slicing.steps)
    occ = _Occupancy(n)
    g = slicing.graph

    # 1. Activations, in order of allocation, on the side opposite their layer's input.
    side: dict[str, bool] = {}
    for t in (x for x in tensors if x.kind == "activation"):
        layer = g.layers[g.index[t.name]] if t.name in g.index else None
        want_top = not side.get(layer.inputs[0], False) if layer else False
        for top in (want_top, not want_top):
            t.addr = occ.first_fit(t.size, t.time, t.end, budget, top=top)
            if t.addr >= 0:
                break
        if t.addr < 0:
            raise CannotFit(f"activations alone do not fit at layer {t.name}", budget=budget,
                            min_budget=None, where=t.name)
        side[t.name] = t.addr + t.size > budget // 2 and t.addr >= budget // 2 - t.size
        occ.place(t)

    # 2. Pinned weights: live for the whole inference (loaded once, at setup).
    by_size = sorted((t for t in tensors if t.kind == "weight"), key=lambda t: -t.size)
    for t in by_size[:pinned]:
        t.pinned, t.time, t.start, t.end = True, 0, 0, n - 1
        t.addr = occ.first_fit(t.size, 0, n - 1, budget)
        if t.addr < 0:
            raise CannotFit("pinned weights do not fit", budget=budget, min_budget=None)
        occ.place(t)
    weights = {t.step: t for t in tensors if t.kind == "weight" and not t.pinned}
    inter = {t.step: t for t in tensors if t.kind == "intermediate"}
    no_preload = []
    earliest = 0  # one loading thread: loads start in step order
    for s in range(n):
        w, m = weights.get(s), inter.get(s)
        placed = []
        ok = True
        if w is not None:
            lo, hi = (earliest, s) if preload else (s, s)
            # Feasibility is monotone in the start time (fewer steps to avoid): bisect.
            best = -1
            while lo <= hi:
                mid = (lo + hi) // 2
                if occ.first_fit(w.size, mid, s, budget) >= 0:
                    best, hi = mid, mid - 1
                else:
                    lo = mid + 1
            if best < 0:
                ok = False
            else:
                w.time, w.addr = best, occ.first_fit(w.size, best, s, budget)
                occ.place(w)
                placed.append(w)
        if ok and m is not None:
            m.addr = occ.first_fit(m.size, m.start, m.end, budget)
            ok = m.addr >= 0
            if ok:
                occ.place(m)
                placed.append(m)
        if not ok:  # restore, then this step without preloading
            for t in placed:
                occ.remove(t)
            no_preload.append(s)
            for t in (x for x in (w, m) if x is not None):
                t.time = s
                t.addr = occ.first_fit(t.size, s, t.end, budget)
                if t.addr < 0:
                    raise CannotFit(f"step {s} ({t.name}) does not fit even without preloading",
                                    budget=budget, min_budget=None, where=t.name)
                occ.place(t)
        if w is not None:
            earliest = w.time
    return Plan(slicing, budget, tensors, 0.0, no_preload)


