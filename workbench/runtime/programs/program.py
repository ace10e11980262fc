"""A layer program as the device reads it (``program.json``): the layers without their weights
(:class:`~..layers.LayerSpec`), the steps (:class:`PStep`, a layer or one output-channel slice
of it, with its weight file) and, for ``planned``, every tensor's place in the buffer
(:class:`PTensor`). It is user input on the device: the reader checks every field and names the
first bad one. numpy + standard library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import InputError
from ...fileio import parse_json
from ...memorymodes import PROGRAM_MODES
from ..kernels import ACTIVATIONS
from ..layers import OPS, LayerSpec

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


def _file_bytes(layers: list[LayerSpec], s: PStep) -> int:
    ly = layers[s.layer]
    c0, c1 = s.cols or (0, ly.cout)
    return ly.slice_bytes(c0, c1)


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
    """A checked program from its JSON: header, layers, steps, and a planned program's
    tensors, in that order (the first bad field is named)."""
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
    layers, known = _read_layers(raw, inp, file)
    steps = _read_steps(d, layers, file)
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
        tensors = _read_tensors(d, buffer, layers, steps, known, file)
    return Program(mode, name, inp, batch, budget, layers, steps, tensors, buffer)


def _read_layers(raw: list, inp: tuple[int, ...], file
                 ) -> tuple[list[LayerSpec], dict[str, tuple[int, ...]]]:
    """``layers``: each a new name, a known op, inputs among the earlier layers (their shapes
    matching), attributes that fit the op. Returns them and every tensor's shape by name."""
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
        act = ly["attrs"].get("act") if isinstance(ly.get("attrs"), dict) else None
        if act not in ACTIVATIONS:
            raise _bad(f"one of {', '.join(str(a) for a in ACTIVATIONS[1:])} or absent", file,
                       f"{w}.attrs.act", act)
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
    return layers, known


def _read_steps(d: dict, layers: list[LayerSpec], file) -> list[PStep]:
    """``steps``: each a layer index, an optional slice of its outputs, and a weight file
    exactly when the layer has weights."""
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
    return steps


def _read_tensors(d: dict, buffer: int, layers: list[LayerSpec], steps: list[PStep],
                  known: dict[str, tuple[int, ...]], file) -> list[PTensor]:
    """A planned program's ``tensors``: each within the buffer, every activation and every
    step's weights given a place."""
    tensors: list[PTensor] = []
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
    return tensors
