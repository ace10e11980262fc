"""Memory modes on the device: a model run as a *layer program* within a byte budget, its weights
read from per-layer (or per-slice) files while it runs, instead of held in memory.

Two modes, both produced on the host (``workbench.memory.programs``) and bundled with their
weight files:

- ``planned`` (FlexNN): every tensor has an address in one static buffer of the plan's size; a
  loader thread reads each weight slice into its address as soon as the computation that last
  used that range is done (FlexNN's dependency-based synchronisation), the caller's thread
  computes. Memory is the buffer, whatever the input.
- ``streamed`` (MASA's schedule of one network): layer by layer, a loader thread reads the next
  layers' weights ahead of the computation as far as the budget allows, and each layer's weights
  are freed once it has run.

A program (``program.json``) holds the layers without their weights (:class:`LayerSpec`), the
steps and, for ``planned``, every tensor's address. It is user input on the device: the reader
checks every field and names the first bad one. numpy + standard library.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..fileio import parse_json
from ..memorymodes import PROGRAM_MODES
from .layers import F32, OPS, LayerSpec, last_use, live_activation_bytes

FORMAT = "workbench-layer-program"
VERSION = 1
MODES = PROGRAM_MODES
KINDS = ("activation", "weight", "intermediate")
KERNELS = ("im2col", "direct", "-")


# Slots: a program holds one of these per step and per tensor (thousands for a transformer at a
# tight budget), and a process budget must hold them too.
@dataclass(frozen=True, slots=True)
class PStep:
    """One step: a layer, or one output-channel slice of it (``cols``), with its weight file."""

    layer: int
    cols: tuple[int, int] | None = None
    rows: int | None = None
    kernel: str = "-"
    first: bool = True
    shared: bool = False  # weight slices share one im2col matrix, built by the first slice
    file: str | None = None


@dataclass(frozen=True, slots=True)
class PTensor:
    """A tensor's place in the planned buffer (``planned`` only)."""

    kind: str
    addr: int
    size: int
    name: str = ""
    step: int | None = None  # weights and intermediates: the step they belong to
    time: int = 0  # weights: the step after which the loader may fill it
    pinned: bool = False  # loaded once, kept for every inference


@dataclass
class Program:
    mode: str
    name: str
    input_shape: tuple[int, ...]
    batch: int
    budget_bytes: int
    layers: list[LayerSpec]
    steps: list[PStep]
    tensors: list[PTensor]
    buffer_bytes: int = 0

    @property
    def files(self) -> list[str]:
        return sorted({s.file for s in self.steps if s.file})

    def file_bytes(self, s: PStep) -> int:
        """Bytes of a step's weight file."""
        return _file_bytes(self.layers, s)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "format": FORMAT, "version": VERSION, "mode": self.mode, "name": self.name,
            "input_shape": list(self.input_shape), "batch": self.batch,
            "budget_bytes": self.budget_bytes, "layers": [ly.spec() for ly in self.layers],
            "steps": [{k: v for k, v in (("layer", s.layer),
                                         ("cols", list(s.cols) if s.cols else None),
                                         ("rows", s.rows), ("kernel", s.kernel),
                                         ("first", s.first), ("shared", s.shared),
                                         ("file", s.file)) if v is not None}
                      for s in self.steps]}
        if self.mode == "planned":
            d["buffer_bytes"] = self.buffer_bytes
            d["tensors"] = [{f: getattr(t, f) for f in PTensor.__slots__ if getattr(t, f) is not None}
                            for t in self.tensors]
        return d

    @classmethod
    def from_dict(cls, d: Any, *, file: Any = None) -> "Program":
        """A checked program; the first field that is wrong is named in an InputError."""
        return _read(d, file)

    @classmethod
    def from_bytes(cls, blob: bytes, *, file: Any = None) -> "Program":
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", file=file) from None
        return _read(parse_json(text, file=file), file)


# --- reading ---------------------------------------------------------------------------------

def _bad(msg: str, file, where: str, value: Any = None) -> InputError:
    return InputError(msg, file=file, where=where, value=value)


def _int(v: Any, lo: int = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _get(d: dict, key: str, ok, what: str, file, where: str, default: Any = ...) -> Any:
    if not isinstance(d, dict):
        raise _bad("must be an object", file, where, type(d).__name__)
    if key not in d:
        if default is not ...:
            return default
        raise _bad(f"missing field '{key}'", file, where)
    if not ok(d[key]):
        raise _bad(f"must be {what}", file, f"{where}.{key}" if where else key, d[key])
    return d[key]


def _shape(v: Any) -> bool:
    return isinstance(v, list) and 0 < len(v) <= 4 and all(_int(n, 1) for n in v)


def _plain_name(v: Any) -> bool:
    return (isinstance(v, str) and 0 < len(v) <= 255 and v not in (".", "..")
            and not v.startswith(".") and not any(c in v for c in "/\\\0"))


def _check_transformer_attrs(spec: LayerSpec) -> None:
    """ValueError when a transformer op's attributes or weights do not fit its shapes."""
    a, sh, ins, w = spec.attrs, spec.shape, spec.in_shapes, spec.weight_shapes
    ok = True
    if spec.op == "attention":
        h = a["heads"]
        ok = (isinstance(h, int) and h > 0 and len(sh) == 2 and sh[-1] % h == 0
              and tuple(ins[0]) == (sh[0], 3 * sh[-1]))
    elif spec.op == "token":
        ok = isinstance(a.get("index", 0), int) and 0 <= a.get("index", 0) < ins[0][0]
    elif spec.op == "embed":
        ok = (len(sh) == 2 and w["wte"][1] == sh[1] and w["wpe"][1] == sh[1]
              and w["wpe"][0] >= sh[0])
    elif spec.op in ("layernorm", "cls_pos"):
        ok = all(s[-1] == sh[-1] for s in w.values())
    if not ok:
        raise ValueError(spec.op)


def _read(d: Any, file) -> Program:
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise _bad(f"not a {FORMAT}", file, "format",
                   d.get("format") if isinstance(d, dict) else type(d).__name__)
    if d.get("version") != VERSION:
        raise _bad(f"unsupported program version (this runtime reads {VERSION})", file,
                   "version", d.get("version"))
    mode = _get(d, "mode", lambda v: v in MODES, f"one of {', '.join(MODES)}", file, "")
    name = _get(d, "name", lambda v: isinstance(v, str), "a string", file, "")
    inp = tuple(_get(d, "input_shape", _shape, "a list of 1-4 positive sizes", file, ""))
    batch = _get(d, "batch", lambda v: _int(v, 1) and v <= 1024, "a whole number 1..1024",
                 file, "")
    budget = _get(d, "budget_bytes", lambda v: _int(v, 1), "a positive whole number", file, "")
    raw = _get(d, "layers", lambda v: isinstance(v, list) and v, "a non-empty list", file, "")
    layers: list[LayerSpec] = []
    known = {"input": inp}
    for i, ly in enumerate(raw):
        w = f"layers[{i}]"
        lname = _get(ly, "name", lambda v: isinstance(v, str) and v and v not in known,
                     "a new layer name", file, w)
        _get(ly, "op", lambda v: v in OPS, f"one of {', '.join(OPS)}", file, w)
        ins = _get(ly, "inputs", lambda v: isinstance(v, list) and 0 < len(v) <= 2
                   and all(isinstance(s, str) and s in known for s in v),
                   "1-2 names of earlier layers or 'input'", file, w)
        _get(ly, "shape", _shape, "a list of 1-4 positive sizes", file, w)
        in_shapes = _get(ly, "in_shapes", lambda v: isinstance(v, list) and len(v) == len(ins)
                         and all(_shape(s) for s in v), "one shape per input", file, w)
        if [tuple(s) for s in in_shapes] != [tuple(known[s]) for s in ins]:
            raise _bad("do not match the shapes of the inputs", file, f"{w}.in_shapes",
                       in_shapes)
        _get(ly, "attrs", lambda v: isinstance(v, dict), "an object", file, w, default={})
        _get(ly, "weights", lambda v: isinstance(v, dict) and all(
            isinstance(k, str) and _shape(s) for k, s in v.items()),
             "an object of weight shapes", file, w, default={})
        try:
            spec = LayerSpec.from_spec(ly)
            if spec.op in ("conv", "dwconv", "pool"):
                spec.geometry()  # k, s and padding present and sane
            _check_transformer_attrs(spec)
        except (KeyError, TypeError, ValueError, IndexError):
            raise _bad("attributes do not fit the op", file, f"{w}.attrs",
                       ly.get("attrs")) from None
        known[lname] = tuple(ly["shape"])
        layers.append(spec)
    steps: list[PStep] = []
    for i, s in enumerate(_get(d, "steps", lambda v: isinstance(v, list) and v,
                               "a non-empty list", file, "")):
        w = f"steps[{i}]"
        li = _get(s, "layer", lambda v: _int(v) and v < len(layers), "a layer index", file, w)
        ly = layers[li]
        cols = _get(s, "cols", lambda v: isinstance(v, list) and len(v) == 2 and _int(v[0])
                    and _int(v[1], 1) and v[0] < v[1] <= ly.cout, "[c0, c1] within the outputs",
                    file, w, default=None)
        rows = _get(s, "rows", lambda v: _int(v, 1), "a positive whole number", file, w,
                    default=None)
        fname = _get(s, "file", _plain_name, "a file name in the program's folder", file, w,
                     default=None)
        if bool(fname) != bool(ly.weight_shapes):
            raise _bad("a step has a weight file exactly when its layer has weights", file,
                       f"{w}.file", fname)
        steps.append(PStep(li, tuple(cols) if cols else None, rows,
                           _get(s, "kernel", lambda v: v in KERNELS, f"one of {KERNELS}", file,
                                w, default="-"),
                           _get(s, "first", lambda v: isinstance(v, bool), "true or false",
                                file, w, default=True),
                           _get(s, "shared", lambda v: isinstance(v, bool), "true or false",
                                file, w, default=False), fname))
    if sorted({s.layer for s in steps}) != list(range(len(layers))) or any(
            a.layer > b.layer for a, b in zip(steps, steps[1:])):
        raise _bad("must cover every layer, in order", file, "steps")
    if mode == "streamed" and (len(steps) != len(layers) or any(s.cols for s in steps)):
        raise _bad("a streamed program has one whole step per layer", file, "steps")
    tensors: list[PTensor] = []
    buffer = 0
    if mode == "planned":
        buffer = _get(d, "buffer_bytes", lambda v: _int(v, 1) and v <= budget,
                      "a positive whole number within budget_bytes", file, "")
        for i, t in enumerate(_get(d, "tensors", lambda v: isinstance(v, list), "a list",
                                   file, "")):
            w = f"tensors[{i}]"
            kind = _get(t, "kind", lambda v: v in KINDS, f"one of {KINDS}", file, w)
            addr = _get(t, "addr", _int, "a whole number", file, w)
            size = _get(t, "size", lambda v: _int(v) and addr + v <= buffer,
                        "a size that ends within buffer_bytes", file, w)
            step = _get(t, "step", lambda v: _int(v) and v < len(steps), "a step index",
                        file, w, default=None)
            if kind != "activation" and step is None:
                raise _bad("a weight or intermediate names its step", file, f"{w}.step")
            tname = _get(t, "name", lambda v: isinstance(v, str), "a string", file, w,
                         default="")
            if kind == "weight" and size < _file_bytes(layers, steps[step]):
                raise _bad("smaller than its step's weights", file, f"{w}.size", size)
            if kind == "activation" and tname not in known:
                raise _bad("not the name of a layer or 'input'", file, f"{w}.name", tname)
            tensors.append(PTensor(kind, addr, size, tname, step,
                                   _get(t, "time", _int, "a step index", file, w, default=0),
                                   _get(t, "pinned", lambda v: isinstance(v, bool),
                                        "true or false", file, w, default=False)))
        have = {t.name for t in tensors if t.kind == "activation"}
        missing = [n for n in known if n not in have]
        if missing:
            raise _bad("has no place in the buffer", file, "tensors", missing[0])
        wsteps = {t.step for t in tensors if t.kind == "weight"}
        lacking = [i for i, s in enumerate(steps) if s.file and i not in wsteps]
        if lacking:
            raise _bad("a step with weights has no weight tensor", file,
                       f"steps[{lacking[0]}]")
    return Program(mode, name, inp, batch, budget, layers, steps, tensors, buffer)


def _file_bytes(layers: list[LayerSpec], s: PStep) -> int:
    ly = layers[s.layer]
    c0, c1 = s.cols or (0, ly.cout)
    return ly.slice_bytes(c0, c1)


# --- running ---------------------------------------------------------------------------------

def _read_into(fd: int, mv: memoryview, nbytes: int, path: Path) -> None:
    got = os.preadv(fd, [mv[:nbytes]], 0)
    if got != nbytes:
        raise InputError(f"short read: {got} of {nbytes} bytes", file=path)


class _Files:
    """The program's weight files. Up to :attr:`KEEP_OPEN` stay open for the runner's life (one
    descriptor each); a program with more slices (a wide layer under a small budget can have
    thousands) opens each file for its read, so the process's descriptor limit is never what
    a budget runs into."""

    KEEP_OPEN = 256

    def __init__(self, prog: Program, root: Path) -> None:
        self.root = root
        self.fds: dict[str, int] = {}
        keep = len(prog.files) <= self.KEEP_OPEN
        try:
            for f in prog.files:
                if keep:
                    self.fds[f] = os.open(root / f, os.O_RDONLY)
                    size = os.fstat(self.fds[f]).st_size
                else:
                    size = os.stat(root / f).st_size
                want = next(prog.file_bytes(s) for s in prog.steps if s.file == f)
                if size != want:
                    raise InputError(f"weight file has {size} bytes, the program needs {want}",
                                     file=root / f)
        except BaseException:
            self.close()
            raise

    def read(self, f: str, mv: memoryview, nbytes: int) -> None:
        fd = self.fds.get(f)
        if fd is not None:
            _read_into(fd, mv, nbytes, self.root / f)
            return
        fd = os.open(self.root / f, os.O_RDONLY)
        try:
            _read_into(fd, mv, nbytes, self.root / f)
        finally:
            os.close(fd)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}


class PlanRunner:
    """Runs a ``planned`` program: one static buffer of the plan's size, weights read from the
    step files by a loader thread, computation on the caller's thread.

    Args:
        root: the folder holding the program's weight files.
        preload: False loads each step's weights just before computing it (FlexNN's
            "w.o. preload" ablation).
    """

    def __init__(self, prog: Program, root: str | Path, *, preload: bool = True) -> None:
        if prog.mode != "planned":
            raise InputError("not a planned program", where="mode", value=prog.mode)
        self.program = prog
        self.preload = preload
        self.root = Path(root)
        self.files = _Files(prog, self.root)
        self.buf = np.zeros(prog.buffer_bytes, np.uint8)  # committed now: RSS shows the budget
        self.acts = {t.name: t for t in prog.tensors if t.kind == "activation"}
        self.shapes = {"input": prog.input_shape, **{ly.name: ly.shape for ly in prog.layers}}
        self.w = {t.step: t for t in prog.tensors if t.kind == "weight"}
        self.m = {t.step: t for t in prog.tensors if t.kind == "intermediate"}
        steps = prog.steps
        for i, st in enumerate(steps):  # later weight slices use their layer's shared matrix
            if st.shared and not st.first:
                self.m[i] = self.m[next(j for j, x in enumerate(steps)
                                        if x.layer == st.layer and x.first)]
        self.loads = sorted((t for t in self.w.values() if not t.pinned),
                            key=lambda t: t.step)  # type: ignore[arg-type, return-value]
        for t in self.w.values():
            if t.pinned:
                self._load(t)

    def close(self) -> None:
        self.files.close()
        self.buf = None  # type: ignore[assignment]

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _view(self, t: PTensor, shape=None) -> np.ndarray:
        v = self.buf[t.addr: t.addr + t.size].view(np.float32)
        return v if shape is None else v[: math.prod(shape)].reshape(shape)

    def _load(self, t: PTensor) -> None:
        s = self.program.steps[t.step]  # type: ignore[index]
        self.files.read(s.file, self.buf.data[t.addr: t.addr + t.size],  # type: ignore[arg-type]
                        self.program.file_bytes(s))

    def run(self, x: np.ndarray, *, timings: list | None = None) -> np.ndarray:
        """One inference of ``program.batch`` samples. ``timings`` (a list) receives (step,
        compute seconds) pairs."""
        p = self.program
        x = np.asarray(x, np.float32)
        if x.shape != (p.batch,) + p.input_shape:
            raise ValueError(f"input shape {x.shape} is not the program's "
                             f"{(p.batch,) + p.input_shape}")
        batch = p.batch
        self._view(self.acts["input"], x.shape)[...] = x
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
            for i, s in enumerate(p.steps):
                ly = p.layers[s.layer]
                w = None
                if s.file:
                    wt = self.w[i]
                    if wt.pinned:
                        pass
                    elif th is None:
                        self._load(wt)
                    else:
                        loaded[i].wait()
                        if err:
                            raise err[0]
                    c0, c1 = s.cols or (0, ly.cout)
                    w = ly.views(self._view(wt), c0, c1)
                xs = [self._view(self.acts[n], (batch,) + self.shapes[n]) for n in ly.inputs]
                out = self._view(self.acts[ly.name], (batch,) + ly.shape)
                scratch = self._view(self.m[i]) if i in self.m else None
                t0 = time.perf_counter()
                ly.compute(xs, out, w=w, cols=s.cols, scratch=scratch, rows=s.rows,
                           kernel=s.kernel if s.kernel != "-" else "im2col",
                           build=s.first or not s.shared)
                if timings is not None:
                    timings.append((i, time.perf_counter() - t0))
                if th is not None:
                    with cv:
                        done[0] = i
                        cv.notify_all()
        finally:
            if th:
                with cv:
                    if not err and done[0] < len(p.steps) - 1:
                        err.append(RuntimeError("inference aborted"))
                    cv.notify_all()
                th.join()
        last = p.layers[-1]
        return self._view(self.acts[last.name], (batch,) + last.shape).copy()


def stream_needs(layers: list[LayerSpec], input_shape: tuple[int, ...],
                 batch: int = 1) -> list[int]:
    """Per layer: bytes besides weights while it runs in ``streamed`` mode (the activations live
    then, its output and its scratch)."""
    return [a + ly.scratch_bytes(batch)
            for a, ly in zip(live_activation_bytes(layers, input_shape, batch), layers)]


def stream_min_budget(layers: list[LayerSpec], input_shape: tuple[int, ...],
                      batch: int = 1) -> int:
    """The smallest budget a ``streamed`` run fits in: its largest layer with its weights."""
    return max(n + ly.weight_bytes
               for n, ly in zip(stream_needs(layers, input_shape, batch), layers))


class StreamRunner:
    """Runs a ``streamed`` program: a loader thread reads layer weights ahead of the computation
    while the bytes held (weights loaded and not yet used, plus the running layer's activations
    and scratch) stay within the budget; a layer's weights are freed once it has run.

    ``peak_bytes`` is that accounting's largest value over the runs so far (the budget holds it;
    measured memory is read from the process, not from here)."""

    def __init__(self, prog: Program, root: str | Path) -> None:
        if prog.mode != "streamed":
            raise InputError("not a streamed program", where="mode", value=prog.mode)
        need = stream_min_budget(prog.layers, prog.input_shape, prog.batch)
        if need > prog.budget_bytes:
            raise InputError(f"the largest layer needs {need} bytes, more than the budget",
                             where="budget_bytes", value=prog.budget_bytes)
        self.program = prog
        self.root = Path(root)
        self.files = _Files(prog, self.root)
        self.needs = stream_needs(prog.layers, prog.input_shape, prog.batch)
        self.last = last_use(prog.layers)
        self.peak_bytes = 0

    def close(self) -> None:
        self.files.close()

    def run(self, x: np.ndarray) -> np.ndarray:
        p = self.program
        x = np.ascontiguousarray(x, np.float32)
        if x.shape != (p.batch,) + p.input_shape:
            raise ValueError(f"input shape {x.shape} is not the program's "
                             f"{(p.batch,) + p.input_shape}")
        layers, budget = p.layers, p.budget_bytes
        order = [i for i, s in enumerate(p.steps) if s.file]
        weights: dict[int, dict] = {}
        held = [0, 0]  # weight bytes held, the layer running now
        cv = threading.Condition()
        err: list[BaseException] = []
        stop = [False]

        def ahead(j: int) -> int:  # what holding layer j's weights too would peak at
            return held[0] + layers[j].weight_bytes + max(self.needs[held[1]: j + 1])

        def loader():
            try:
                for j in order:
                    nbytes = p.file_bytes(p.steps[j])
                    with cv:
                        # Load j when it fits beside what is held, or when it is next to run.
                        while not (stop[0] or ahead(j) <= budget or held[1] >= j):
                            cv.wait()
                        if stop[0]:
                            return
                        self.peak_bytes = max(self.peak_bytes, ahead(j))
                        held[0] += layers[j].weight_bytes
                    flat = np.empty(nbytes // F32, np.float32)
                    self.files.read(p.steps[j].file, memoryview(flat).cast("B"), nbytes)
                    with cv:
                        ly = layers[j]
                        weights[j] = ly.views(flat, *(p.steps[j].cols or (0, ly.cout)))
                        cv.notify_all()
            except BaseException as e:
                with cv:
                    err.append(e)
                    cv.notify_all()

        th = threading.Thread(target=loader, daemon=True)
        acts = {"input": x}
        with cv:
            th.start()
        try:
            for i, ly in enumerate(layers):
                with cv:
                    held[1] = i
                    cv.notify_all()
                    while p.steps[i].file and i not in weights and not err:
                        cv.wait()
                    if err:
                        raise err[0]
                    w = weights.pop(i, None)
                out = np.empty((p.batch,) + ly.shape, np.float32)
                ly.compute([acts[s] for s in ly.inputs], out, w=w)
                acts[ly.name] = out
                for s in set(ly.inputs):
                    if self.last[s] == i:
                        acts.pop(s, None)
                if w is not None:
                    del w
                    with cv:
                        held[0] -= ly.weight_bytes
                        cv.notify_all()
        finally:
            with cv:
                stop[0] = True
                cv.notify_all()
            th.join()
        return acts[layers[-1].name]


def open_program(prog: Program, root: str | Path, *, preload: bool = True):
    """The runner of a program's mode (each has ``run(x)`` and ``close()``)."""
    return PlanRunner(prog, root, preload=preload) if prog.mode == "planned" else \
        StreamRunner(prog, root)
