"""The LiteRT interpreter as the workbench uses it everywhere: threads, XNNPACK on/off, a batch
size, int8 inputs quantised with the tensor's own scale. numpy + ai_edge_litert only.

Every model is checked before LiteRT sees it (:func:`check_model`): LiteRT allocates what a
file's tensor shapes say, so one flipped byte in a shape vector of a 4.5 kB model asks for
gigabytes at ``allocate_tensors`` (or a negative size). The check reads the flatbuffer's tensor
tables with the schema LiteRT ships (``ai_edge_litert.schema_py_generated``), touching only those
pages of a file, and refuses a model whose non-constant tensors need more than a limit.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import stat
import struct
from typing import Any

import numpy as np

from ..errors import InputError, MissingExtra
from ..names import printable

#: The most memory the non-constant tensors of a model (activations, inputs, outputs, variables;
#: every subgraph) may need, summed as the file's shapes give them. LiteRT's arena reuses memory,
#: so a model needs less than this sum; the largest models the workbench runs need well under
#: 1 GiB by it, while a corrupt shape asks for tens of GiB or more.
MAX_TENSOR_BYTES = 2 << 30
#: More dimensions than this is a corrupt shape vector, not a tensor.
MAX_RANK = 16
#: Bits per element by ``TensorType`` (schema.fbs); a type not listed counts 64.
_ELEMENT_BITS = {0: 32, 1: 16, 2: 32, 3: 8, 4: 64, 5: 8, 6: 8, 7: 16, 8: 64, 9: 8, 10: 64,
                 11: 128, 12: 64, 13: 8, 14: 8, 15: 32, 16: 16, 17: 4, 18: 16, 19: 2, 20: 4,
                 21: 8, 22: 8}


def _gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def check_model(model: str | os.PathLike | bytes, *, file: Any = None,
                limit: int = MAX_TENSOR_BYTES) -> int:
    """Check a .tflite model's tensor shapes before an interpreter is built; returns the bytes its
    non-constant tensors need (summed over every subgraph, as stored in the file).

    Raises:
        InputError: Not a LiteRT flatbuffer; a tensor with a negative dimension or more than
            MAX_RANK of them; non-constant tensors needing more than ``limit`` bytes. The message
            names the file, the subgraph and tensor (the largest one, for the limit) and the limit.
    """
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _check_buffer(model, file=file, limit=limit)
    file = model if file is None else file
    try:
        # O_NONBLOCK: a FIFO given as a model must not hang the caller.
        fd = os.open(model, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return 0  # LiteRT reports a file it cannot open in its own words
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise InputError("not a regular file", file=file)
        if st.st_size < 8:
            raise InputError("not a LiteRT model: too short for a flatbuffer", file=file,
                             value=st.st_size)
        # A file checked before and unchanged since (same inode, size and mtime) is not read
        # again: profiling opens one model hundreds of times.
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, limit)
        if key in _CHECKED:
            return _CHECKED[key]
        # Mapped, not read: only the pages of the tensor tables are touched.
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            need = _check_buffer(buf, file=file, limit=limit)
        if len(_CHECKED) >= 1024:
            _CHECKED.clear()
        _CHECKED[key] = need
        return need


#: Files that passed :func:`check_model`, by (device, inode, size, mtime, limit).
_CHECKED: dict[tuple[int, int, int, int, int], int] = {}


def _check_buffer(buf, *, file: Any, limit: int) -> int:
    from ai_edge_litert.schema_py_generated import Model

    size = len(buf)
    if size < 8 or not Model.ModelBufferHasIdentifier(buf, 0):
        raise InputError("not a LiteRT model (no TFL3 flatbuffer identifier)", file=file)
    total = 0
    largest: tuple[int, str, list[int]] = (-1, "", [])
    try:
        m = Model.GetRootAs(buf, 0)
        n_buffers = m.BuffersLength()
        # Counts bounded by the file's size: a corrupt length must not become a long loop.
        budget = size // 4
        n_sub = m.SubgraphsLength()
        if not 0 <= n_sub <= budget:
            raise ValueError("subgraph count")
        for i in range(n_sub):
            sg = m.Subgraphs(i)
            n_t = sg.TensorsLength()
            budget -= n_t
            if n_t < 0 or budget < 0:
                raise ValueError("tensor count")
            for j in range(n_t):
                t = sg.Tensors(j)
                rank = t.ShapeLength()
                name = (t.Name() or b"").decode("utf-8", "replace")
                where = f"subgraph {i}, tensor {j} '{printable(name)}'"
                if not 0 <= rank <= MAX_RANK:
                    raise InputError(f"a shape of {rank} dimensions (at most {MAX_RANK}): a "
                                     "corrupt file?", file=file, where=where)
                shape = [t.Shape(k) for k in range(rank)]
                if any(d < 0 for d in shape):
                    raise InputError("a negative dimension: a corrupt file?", file=file,
                                     where=where, value=shape)
                b = t.Buffer()
                if not 0 <= b < max(n_buffers, 1):
                    raise ValueError("buffer index")
                constant = b > 0 and (m.Buffers(b).DataLength() > 0 or m.Buffers(b).Size() > 0)
                if constant and not t.IsVariable():
                    continue  # its bytes are in the file; LiteRT checks them against the shape
                need = (math.prod(shape) * _ELEMENT_BITS.get(t.Type(), 64) + 7) // 8
                total += need
                if need > largest[0]:
                    largest = (need, where, shape)
    except InputError:
        raise
    except (struct.error, IndexError, ValueError, TypeError, OverflowError):
        raise InputError("not a LiteRT model: its flatbuffer is cut short or corrupt",
                         file=file) from None
    if total > limit:
        need, where, shape = largest
        raise InputError(f"non-constant tensors need {_gib(total)}, over the {_gib(limit)} limit "
                         f"(this one, the largest: {_gib(need)}): a corrupt shape?", file=file,
                         where=where, value=shape)
    return total


#: The metadata entry of a .tflite file with several inputs that says how to feed them
#: (written by ``workbench models add``): JSON ``{"data": NAME, "feeds": {NAME: NUMBER}}``, NAME
#: an input's signature key (else its tensor name). So the file alone says how to run it, on the
#: host and on a device, as an ONNX file's metadata does (:mod:`.ort`).
INPUTS_KEY = "workbench.inputs"


def read_input_plan(model: str | os.PathLike | bytes) -> dict | None:
    """The input plan a .tflite file's metadata holds (None: it has none).

    Raises:
        InputError: The entry is there but is not such a plan.
    """
    from ai_edge_litert.schema_py_generated import Model

    def plan_of(buf) -> dict | None:
        try:
            m = Model.GetRootAs(buf, 0)
            for i in range(m.MetadataLength()):
                md = m.Metadata(i)
                if md.Name() == INPUTS_KEY.encode():
                    raw = m.Buffers(md.Buffer()).DataAsNumpy()
                    plan = json.loads(bytes(raw) if not isinstance(raw, int) else b"")
                    break
            else:
                return None
        except (struct.error, IndexError, ValueError, TypeError, OverflowError):
            plan = None
        feeds = plan.get("feeds", {}) if isinstance(plan, dict) else None
        if not (isinstance(plan, dict) and isinstance(plan.get("data"), (str, type(None)))
                and isinstance(feeds, dict) and all(
                    isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
                    and math.isfinite(v) for k, v in feeds.items())):
            raise InputError(f"its {INPUTS_KEY!r} metadata is not an input plan "
                             '({"data": NAME, "feeds": {NAME: NUMBER}})', file=model
                             if not isinstance(model, (bytes, bytearray, memoryview)) else None)
        return plan

    if isinstance(model, (bytes, bytearray, memoryview)):
        return plan_of(model)
    with open(model, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        return plan_of(buf)


def _signature(it, io: str) -> dict[str, dict]:
    """The details of the inputs (``io="input"``) or outputs of a model's serving signature, by
    key; empty unless the model has exactly one signature."""
    sigs = it.get_signature_list() or {}
    if len(sigs) != 1:
        return {}
    try:
        runner = it.get_signature_runner(next(iter(sigs)))
        return runner.get_input_details() if io == "input" else runner.get_output_details()
    except (ValueError, KeyError, RuntimeError):
        return {}


def input_names(it) -> dict[int, str]:
    """Each input's tensor index -> the name a user knows it by: its serving-signature key (a
    Keras model's input names) where the model has one signature, else its tensor name."""
    names = {d["index"]: d["name"] for d in it.get_input_details()}
    names.update({d["index"]: k for k, d in _signature(it, "input").items()
                  if d["index"] in names})
    return names


class FedInterpreter:
    """A LiteRT interpreter of a model with several inputs, as the workbench runs every model:
    one input takes the data and is listed first; every other input is set after each
    ``allocate_tensors`` to its feed (the file's input plan, :data:`INPUTS_KEY`) or else
    :func:`placeholder`, and follows the data input's batch size. Everything else is the
    interpreter's own."""

    def __init__(self, it, plan: dict | None) -> None:
        self._it = it
        names = input_names(it)
        by_name = {n: i for i, n in names.items()}
        plan = plan or {}
        first = it.get_input_details()[0]["index"]
        self._data = by_name.get(str(plan["data"]), first) if plan.get("data") else first
        self._feeds = {by_name[n]: float(v) for n, v in (plan.get("feeds") or {}).items()
                       if n in by_name}

    def __getattr__(self, attr: str):
        return getattr(self._it, attr)

    def get_input_details(self) -> list[dict]:
        return sorted(self._it.get_input_details(), key=lambda d: d["index"] != self._data)

    def resize_tensor_input(self, index: int, shape, strict: bool = False) -> None:
        before = {d["index"]: d["shape"] for d in self._it.get_input_details()}
        self._it.resize_tensor_input(index, shape, strict=strict)
        if index != self._data:
            return
        for i, old in before.items():
            # Another input whose first dimension was the data's batch follows it.
            if i != index and len(old) and old[0] == before[index][0] and old[0] != shape[0]:
                self._it.resize_tensor_input(i, [shape[0], *old[1:]], strict=strict)

    def allocate_tensors(self) -> None:
        self._it.allocate_tensors()
        for d in self._it.get_input_details():
            if d["index"] != self._data:
                v = self._feeds.get(d["index"])
                self._it.set_tensor(d["index"], placeholder(d) if v is None else
                                    to_input(np.full(d["shape"], v), d))


def open_interpreter(model: str | os.PathLike | bytes, *, threads: int = 1,
                     xnnpack: bool | None = None, batch: int | None = None,
                     onnx: bool | None = None):
    """A LiteRT interpreter for a .tflite file or a model already in memory (``bytes``: the
    interpreter keeps that immutable buffer, so later changes to the file cannot reach it); with
    ``batch``, its input resized and tensors allocated (ready to invoke). A ``.onnx`` file (or
    ONNX bytes) opens an onnxruntime session behind the same API (:mod:`workbench.runtime.ort`).
    ``xnnpack``: True or False asks for XNNPACK on or off (an engine without it cannot run the
    first); None (default) uses it where the engine has it. ``onnx``: whether the model is
    ONNX (None: from the path's suffix, or a guess from the bytes).

    Raises:
        InputError: The model fails :func:`check_model` (nothing was allocated).
    """
    from .ort import OrtInterpreter, has_xnnpack, is_onnx

    if is_onnx(model) if onnx is None else onnx:
        # onnxruntime behind the same API (workbench.runtime.ort); its own checks apply.
        it: Any = OrtInterpreter(model, threads=threads, fill=placeholder,
                                 xnnpack=has_xnnpack() if xnnpack is None else xnnpack)
        if batch is not None:
            it.resize_tensor_input(0, [batch, *it.get_input_details()[0]["shape"][1:]])
        return it
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as e:  # pragma: no cover - depends on the install
        raise MissingExtra("ai-edge-litert", "runtime", needs="the runtime",
                           hint="or pip install ai-edge-litert alone") from e
    check_model(model)
    resolver = (OpResolverType.AUTO if xnnpack is not False
                else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    source = {"model_content": model} if isinstance(model, bytes) else {"model_path": str(model)}
    it = Interpreter(**source, num_threads=threads, experimental_op_resolver_type=resolver)
    if len(it.get_input_details()) > 1:
        it = FedInterpreter(it, read_input_plan(model))
    if batch is not None:
        inp = it.get_input_details()[0]
        if batch != inp["shape"][0]:
            it.resize_tensor_input(inp["index"], [batch, *inp["shape"][1:]])
        it.allocate_tensors()
    return it


def to_input(x: np.ndarray, detail: dict) -> np.ndarray:
    """Float samples as the input tensor wants them (quantised with its scale for int8 inputs)."""
    if detail["dtype"] in (np.int8, np.uint8) and x.dtype.kind == "f":
        scale, zp = detail["quantization"]
        info = np.iinfo(detail["dtype"])
        return np.clip(np.round(x / scale + zp), info.min, info.max).astype(detail["dtype"])
    return x.astype(detail["dtype"])


def from_output(y: np.ndarray, detail: dict) -> np.ndarray:
    """An output tensor as float32 (dequantised for int8 outputs)."""
    if detail["dtype"] in (np.int8, np.uint8):
        scale, zp = detail["quantization"]
        return (y.astype(np.float32) - zp) * scale
    return y.astype(np.float32)


def placeholder(detail: dict) -> np.ndarray:
    """An input for when no sample is at hand (graph analysis, memory probes): zeros, but ones for
    integer inputs, whose 0 is usually the padding token (an all-padding input is degenerate: an
    int8 graph may divide by its zero token count). ``workbench.host._memprobe`` keeps a copy of
    this rule: it imports nothing of the workbench, so that its baseline memory stays small."""
    fill = np.ones if np.dtype(detail["dtype"]).kind in "iu" else np.zeros
    return fill(detail["shape"], dtype=detail["dtype"])


def fill_batch(x: np.ndarray, batch: int) -> np.ndarray:
    """``x`` repeated (or cut) to exactly ``batch`` samples."""
    reps = int(np.ceil(batch / len(x)))
    return np.concatenate([x] * reps)[:batch]


def output_names(it) -> list[tuple[str, dict]]:
    """Every output, each with the name a user knows it by: the serving signature's keys (a
    Keras model's outputs ``output_0``, ... or a SavedModel's own keys) where the model has one
    signature that names them all, else the tensor names (an ONNX graph's output names)."""
    details = it.get_output_details()
    by_index = {d["index"]: d for d in details}
    named = [(k, by_index[v["index"]]) for k, v in _signature(it, "output").items()
             if v["index"] in by_index]
    return named if named and len(named) == len(details) else [(d["name"], d) for d in details]


def output_detail(it, output: tuple[int, str | None, str | None] | None = None) -> dict:
    """The output tensor's details of the output a model's metric reads.

    ``output`` is (its index in the source model, its signature key, its tensor name). The
    converter reorders a multi-output model's tensors ("StatefulPartitionedCall:1" may come
    first), but keeps the serving signature's keys ("output_0", ... in the Keras model's
    order, or a SavedModel's own keys): those are looked up first, then the tensor name (a
    .tflite file registered as it is), then the index."""
    details = it.get_output_details()
    if output is None:
        return details[0]
    k, key, name = output
    if key is not None:
        sig = _signature(it, "output")
        if key in sig:
            want = sig[key]["index"]
            return next(d for d in details if d["index"] == want)
    if name is not None:
        hit = [d for d in details if d["name"] == name]
        if len(hit) == 1:
            return hit[0]
    return details[k]
