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

import math
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..errors import InputError
from .graph import F32, Layer, LayerGraph, weight_file, write_weights

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
        extra = (f"; the minimum feasible budget is {min_budget / 1e6:.3f} MB"
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

    def summary(self) -> list[dict]:
        out = []
        for i, ly in enumerate(self.graph.layers):
            st = [s for s in self.steps if s.layer == i]
            out.append({"layer": ly.name, "op": ly.op, "kernel": st[0].kernel, "weight_slices":
                        len(st), "band_rows": st[0].rows,
                        "max_weight_bytes": max(s.weight_bytes for s in st),
                        "scratch_bytes": max(s.scratch_bytes for s in st)})
        return out


def _layer_options(ly: Layer, batch: int):
    """(kernel, rows, scratch_bytes) choices for a layer, fastest first."""
    if ly.op != "conv":
        return [(None, None, _al(ly.scratch_bytes(batch)))]
    ho = ly.geometry()[0]
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


def _slice(graph: LayerGraph, budget: int, *, batch: int = 1) -> Slicing:
    budget = int(budget)
    acts = graph.live_activation_bytes(batch, size=_al)
    steps: list[Step] = []
    for i, ly in enumerate(graph.layers):
        avail = budget - acts[i]
        choice = None
        sliceable = ly.op in ("conv", "dense")
        for kernel, rows, scratch in _layer_options(ly, batch):
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
                        choice = (kernel, rows, scratch, blocks)
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
        kernel, rows, scratch, blocks = choice
        # Weight slices of a conv whose whole im2col matrix fits build it once and share it.
        shared = (kernel == "im2col" and len(blocks) > 1 and rows == ly.geometry()[0])
        for j, b in enumerate(blocks):
            wb = _al(ly.slice_bytes(*b)) if (b and ly.weights) else _al(ly.weight_bytes)
            steps.append(Step(len(steps), i, b if len(blocks) > 1 else None, rows,
                              kernel or "-", wb if ly.weights else 0, scratch, j == 0,
                              j == len(blocks) - 1, shared))
    return Slicing(graph, steps, budget, batch)


def lower_bound(graph: LayerGraph, *, batch: int = 1) -> int:
    """Largest footprint of any layer at its finest slicing: no budget below this can work."""
    acts = graph.live_activation_bytes(batch, size=_al)
    need = 0
    for i, ly in enumerate(graph.layers):
        opts = _layer_options(ly, batch)
        w = 0
        if ly.weights:
            w = _al(ly.slice_bytes(0, min(MIN_COLS, ly.cout))) if ly.op in ("conv", "dense") \
                else _al(ly.weight_bytes)
        need = max(need, acts[i] + min(s for _, _, s in opts) + w)
    return need


def min_budget(graph: LayerGraph, *, batch: int = 1, tol: float = 0.01) -> int:
    """The smallest budget (bytes, within ``tol``) for which slicing and planning succeed."""
    def ok(b):
        try:
            _plan(_slice(graph, b, batch=batch), b)
            return True
        except CannotFit:
            return False

    lo = lower_bound(graph, batch=batch)
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


def _with_min_budget(graph: LayerGraph, batch: int, fn):
    try:
        return fn()
    except CannotFit as e:
        if e.min_budget is not None:
            raise
        raise CannotFit(e.message.split(": ", 1)[-1], budget=e.budget,
                        min_budget=min_budget(graph, batch=batch), where=e.where) from None


def slice_graph(graph: LayerGraph, budget: int, *, batch: int = 1) -> Slicing:
    """Bottleneck-aware layer slicing of ``graph`` for a budget of ``budget`` bytes.

    Raises:
        CannotFit: when even the finest slicing does not fit (says the minimum budget).
    """
    return _with_min_budget(graph, batch, lambda: _slice(graph, budget, batch=batch))


def plan(slicing: Slicing, budget: int | None = None, *, preload: bool = True) -> "Plan":
    """FlexNN's Alg. 1: activations first (both ends), then per step weights preloaded as early
    as memory allows and intermediates; a step that fails is re-planned without preloading.

    Raises:
        CannotFit: when a step fails even without preloading (says the minimum budget).
    """
    return _with_min_budget(slicing.graph, slicing.batch,
                            lambda: _plan(slicing, budget, preload=preload))


# --- planning ----------------------------------------------------------------------------------

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
    first = {}
    lastst = {}
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
            for t in (w, m):
                if t is None:
                    continue
                t.time = s
                t.addr = occ.first_fit(t.size, s, t.end, budget)
                if t.addr < 0:
                    raise CannotFit(f"step {s} ({t.name}) does not fit even without preloading",
                                    budget=budget, min_budget=None, where=t.name)
                occ.place(t)
        if w is not None:
            earliest = w.time
    return Plan(slicing, budget, tensors, 0.0, no_preload)


# --- execution -----------------------------------------------------------------------------------

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
        self.loads = sorted((t for t in self.w.values() if not t.pinned), key=lambda t: t.step)
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
        s = self.plan.slicing.steps[t.step]
        ly = self.plan.slicing.graph.layers[s.layer]
        c0, c1 = s.cols or (0, ly.cout)
        nbytes = ly.slice_bytes(c0, c1)
        mv = memoryview(self.buf)[t.addr: t.addr + nbytes]
        got = os.preadv(self.fds[t.step], [mv], 0)
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
    from .graph import read_weights, store

    root = Path(root)
    if not (root / "graph.json").exists():
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


# --- simulation ----------------------------------------------------------------------------------

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
    from .graph import read_weights, store

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
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            ly.compute(xs, out, rows=rows)
            ts.append(time.perf_counter() - t0)
        comp.append(float(np.median(ts)))
        if ly.op == "conv":
            ts = []
            for _ in range(max(1, repeats // 2)):
                t0 = time.perf_counter()
                ly.compute(xs, out, kernel="direct")
                ts.append(time.perf_counter() - t0)
            direct[len(comp) - 1] = float(np.median(ts))
        if ly.weights:
            ts = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                read_weights(root, ly)
                ts.append(time.perf_counter() - t0)
            reads.append((ly.weight_bytes, float(np.median(ts))))
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
        ts = []
        for _ in range(50):
            t0 = time.perf_counter()
            ly.compute([xin], o, w=w, cols=(0, MIN_COLS))
            ts.append(time.perf_counter() - t0)
        over = float(np.median(ts))
    tot_b = sum(b for b, _ in reads) or 1
    tot_s = sum(s for _, s in reads) or 1e-9
    # The runner's cost per step: an all-pinned plan (nothing loaded per inference) against the
    # layers' own times.
    big = _al(graph.bulk_peak_bytes(batch)) * 2
    p = _plan(_slice(graph, big, batch=batch), big)
    r = FlexRunner(p, root)
    try:
        r.run(x)
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            r.run(x)
            ts.append(time.perf_counter() - t0)
    finally:
        r.close()
    sync = max(0.0, (float(np.median(ts)) - sum(comp)) / len(p.slicing.steps))
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
    order = sorted((t for t in w.values() if not t.pinned), key=lambda t: t.step)
    li = 0  # loads depend on earlier computations: issue them lazily, in order
    now = 0.0
    for s in steps:
        if s.index in w and w[s.index].pinned:
            pass
        elif s.index in w:
            if preload:
                while li < len(order) and order[li].step <= s.index:
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


# --- FlexNN: slicing + planning + runner, with adaptation --------------------------------------

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
            s = slice_graph(self.graph, budget, batch=self.batch)
            slice_ms = (time.perf_counter() - ts) * 1e3
            p = plan(s, budget)
            resliced = True
            self.slicing = s
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

    @property
    def plan(self) -> Plan:
        return self.runner.plan

    def run(self, x: np.ndarray) -> np.ndarray:
        return self.runner.run(x)

    def close(self):
        if self.runner:
            self.runner.close()
