"""ONNX models in the registry: reading one, its schemes with onnxruntime's own tools, and
counting its graph. The variants run with onnxruntime (:mod:`workbench.runtime.ort`).

| scheme | how (onnxruntime's tools) | inputs/outputs | weights | activations |
|---|---|---|---|---|
| FP32 | the model, free dimensions but the batch fixed | fp32 | fp32 | fp32 |
| FP16 | ``float16.convert_float_to_float16(keep_io_types=True)`` | fp32 | fp16 | fp16 |
| DR8 | ``quantization.quantize_dynamic`` (QInt8 weights) | fp32 | int8 | int8, scaled per run |
| FX8 | ``quant_pre_process``, ``quantize_static`` (QDQ, calibrated) | fp32 | int8 | int8 |
| FFX8 | not made: onnxruntime's int8 keeps float inputs and outputs | | | |

FX8 is calibrated on the model's calibration data (``x_calib``, else the first samples of ``x``),
one sample at a time.

Nothing here imports TensorFlow; ``onnx`` and ``onnxruntime`` are imported when used.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError, WorkbenchError
from ..names import printable

#: Why FFX8 has no ONNX variant (recorded as the scheme's reason).
NO_FFX8 = ("onnxruntime's int8 schemes keep float inputs and outputs (the graph quantises at its "
           "edges); FFX8, int8 inputs and outputs, is a LiteRT scheme")
#: ONNX element types -> numpy dtype names (inputs the workbench can feed).
ELEMENT_TYPES = {1: "float32", 10: "float16", 11: "float64", 7: "int64", 6: "int32", 3: "int8",
         2: "uint8", 9: "bool"}


class OnnxError(WorkbenchError, RuntimeError):
    """onnx or onnxruntime refused a scheme; the message is its reason."""


def _onnx():
    try:
        import onnx
    except ImportError:
        raise InputError("ONNX models need the onnx package: pip install onnx onnxruntime"
                         ) from None
    return onnx


def dims_of(value_info) -> list[int | str]:
    """A tensor's dimensions: ints where fixed, the dimension's name (or '?') where free."""
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
            for d in value_info.type.tensor_type.shape.dim]


def external_data(path: Path) -> str | None:
    """The file an ONNX model keeps its tensors in, when it keeps them outside itself (None:
    one self-contained file)."""
    onnx = _onnx()
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - load() says what is wrong with the file
        return None
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            where = {e.key: e.value for e in t.external_data}.get("location", "?")
            return where
    return None


def load(path: Path):
    """The ONNX model at ``path`` (checked), or an InputError naming it."""
    onnx = _onnx()
    try:
        model = onnx.load(str(path))
        onnx.checker.check_model(model)
    except Exception as exc:  # noqa: BLE001 - onnx raises DecodeError, ValidationError, ...
        text = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise InputError(f"not a valid ONNX model: {text}", file=printable(path)) from None
    return model


def graph_inputs(model) -> list:
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def with_fixed_dims(model, input_shape: Sequence[int], *, batch: int | None = None):
    """A copy of ``model`` with the first input's free dimensions but the batch fixed to
    ``input_shape`` (and the batch to ``batch`` when given); another input's free dimension of
    the same name is fixed alike. Outputs keep their free dimensions (onnxruntime infers
    them)."""
    import copy

    model = copy.deepcopy(model)
    ins = graph_inputs(model)
    names: dict[str, int] = {}
    first = ins[0].type.tensor_type.shape.dim
    values = [batch, *input_shape] if batch is not None else [None, *input_shape]
    for d, value in zip(list(first), values):
        if value is None:
            continue
        if not d.HasField("dim_value"):
            if d.dim_param:
                names[d.dim_param] = int(value)
            d.ClearField("dim_param")
            d.dim_value = int(value)
    for i in ins[1:]:
        for d in i.type.tensor_type.shape.dim:
            if not d.HasField("dim_value") and d.dim_param in names:
                p = d.dim_param
                d.ClearField("dim_param")
                d.dim_value = names[p]
    return model


def _bytes(model) -> bytes:
    return model.SerializeToString()


def prepared(model, input_shape: Sequence[int], feeds: dict[str, float] | None = None):
    """The model as the registry stores its variants: the first input's shape and the values
    fed to other inputs written into its metadata (:data:`workbench.runtime.ort.SHAPE_KEY`,
    :data:`~workbench.runtime.ort.FEED_PREFIX`), so that the file alone says how it runs,
    on the host and on a device; its free dimensions fixed too where onnxruntime can still open
    it then (fixing them breaks shape inference inside some If branches: silero-vad's
    original graph)."""
    from ..runtime.ort import open_session

    fixed = with_fixed_dims(model, input_shape)
    try:
        open_session(_bytes(fixed))
        model = fixed
    except ImportError:
        raise
    except Exception:  # noqa: BLE001 - onnxruntime's own error types: keep the free dims
        import copy

        model = copy.deepcopy(model)
    return with_metadata(model, input_shape, feeds)


def with_metadata(model, input_shape: Sequence[int], feeds: dict[str, float] | None = None):
    """``model`` with the workbench's metadata set (replacing any there was)."""
    from ..runtime.ort import FEED_PREFIX, SHAPE_KEY

    keep = [(p.key, p.value) for p in model.metadata_props
            if p.key != SHAPE_KEY and not p.key.startswith(FEED_PREFIX)]
    del model.metadata_props[:]
    for k, v in keep:
        model.metadata_props.add(key=k, value=v)
    model.metadata_props.add(key=SHAPE_KEY, value=",".join(str(int(d)) for d in input_shape))
    for name, value in (feeds or {}).items():
        model.metadata_props.add(key=FEED_PREFIX + name, value=repr(float(value)))
    return model


class _Reader:
    """onnxruntime's CalibrationDataReader over the calibration samples, one at a time (the
    other inputs fed as the runtime feeds them)."""

    def __init__(self, path: Path, calib: np.ndarray) -> None:
        from ..runtime.interpreter import open_interpreter

        it = open_interpreter(path, batch=1)
        self._names = [d["name"] for d in it.get_input_details()]
        self._rest = {d["name"]: it.get_tensor(d["index"]) for d in it.get_input_details()[1:]}
        self._samples = iter(calib)

    def get_next(self):
        x = next(self._samples, None)
        if x is None:
            return None
        return {self._names[0]: x[None], **self._rest}

    def rewind(self) -> None:  # pragma: no cover - onnxruntime calls it in some methods only
        pass


@contextlib.contextmanager
def _quiet():
    """onnxruntime's quantisation tools log warnings and print to stdout; keep the user's
    terminal for the workbench's own output."""
    import logging

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        root.setLevel(level)


def convert(source: Path, precision: str, input_shape: Sequence[int],
            calib: np.ndarray, feeds: dict[str, float] | None = None) -> bytes:
    """The ``precision`` variant of an ONNX model, as bytes (:func:`prepared`: its input shape
    and feeds in its metadata).

    Raises:
        OnnxError: The scheme cannot be made (FFX8; a tool's refusal, with its first line).
    """
    if precision == "FFX8":
        raise OnnxError(NO_FFX8)
    model = prepared(load(source), input_shape, feeds)
    if precision == "FP32":
        return _bytes(model)
    onnx = _onnx()

    def stamped(blob: bytes) -> bytes:
        # onnxruntime's tools may drop the metadata: the variant carries it again.
        return _bytes(with_metadata(onnx.load_from_string(blob), input_shape, feeds))

    try:
        with _quiet(), tempfile.TemporaryDirectory(prefix="workbench-onnx-") as tmp:
            fp32 = Path(tmp) / "fp32.onnx"
            fp32.write_bytes(_bytes(model))
            out = Path(tmp) / "out.onnx"
            if precision == "FP16":
                from onnxruntime.transformers.float16 import convert_float_to_float16

                return stamped(_bytes(convert_float_to_float16(model, keep_io_types=True)))
            from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static
            if precision == "DR8":
                quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8)
                return stamped(out.read_bytes())
            if precision == "FX8":
                from onnxruntime.quantization.shape_inference import quant_pre_process

                pre = Path(tmp) / "pre.onnx"
                quant_pre_process(str(fp32), str(pre))
                quantize_static(str(pre), str(out), _Reader(fp32, calib),
                                quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8,
                                weight_type=QuantType.QInt8)
                return stamped(out.read_bytes())
    except Exception as exc:  # noqa: BLE001 - onnx/onnxruntime raise many types
        text = " ".join(str(exc).split())[:300]
        if not text:  # a bare AssertionError says nothing to a user
            text = (f"its quantisation tool stopped on an internal check "
                    f"({type(exc).__name__} with no message)")
        raise OnnxError(f"onnxruntime cannot make {precision}: {text}") from None
    raise OnnxError(f"unknown scheme {precision}")


def _run_shapes(model) -> dict[str, list[int]]:
    """The shape of every value of the main graph (not of its subgraphs), read from one
    onnxruntime run at batch 1 on the inputs the runtime feeds it ({} when it cannot run)."""
    import copy

    from ..runtime.interpreter import open_interpreter

    onnx = _onnx()
    m = copy.deepcopy(model)
    known = {o.name for o in m.graph.output}
    names = [o for n in m.graph.node for o in n.output if o and o not in known]
    m.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names)
    try:
        it = open_interpreter(_bytes(m), batch=1)
        it.invoke()
        return {d["name"]: [int(x) for x in it.get_tensor(d["index"]).shape]
                for d in it.get_output_details()}
    except Exception:  # noqa: BLE001 - a graph that will not run so: inference's shapes stand
        return {}


def _graphs(graph):
    """A graph and every subgraph in it (an If's branches, a Loop's body)."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("g"):
                yield from _graphs(attr.g)
            for g in attr.graphs:
                yield from _graphs(g)


def _nodes(graph):
    """Every node of a graph and of its subgraphs (an If's branches, a Loop's body)."""
    for g in _graphs(graph):
        yield from g.node


#: Element-wise operators: one FLOP per output element.
_ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh", "Max", "Min", "Pow",
                "Sqrt", "Exp", "LeakyRelu", "PRelu", "Abs", "Neg", "HardSwish", "Clip", "Erf"}


def analyse(path: str | os.PathLike) -> dict:
    """Parameters, FLOPs and operators counted from an ONNX graph, as
    :func:`workbench.host.quantise.analyse` counts them from a .tflite one: a parameter is an
    element of a float or 8-bit initializer (int64 shape operands are not); FLOPs count a
    multiply-add as 2 (Conv ``2 * out * kh * kw * cin / group``, MatMul and Gemm
    ``2 * m * n * k``, their integer and QLinear forms alike), element-wise operators one per
    output element, LSTM/GRU/RNN ``2 * seq * batch * dirs * gates * hidden * (input +
    hidden)``; shapes from ONNX shape inference at batch 1. A compute operator whose shapes it
    cannot infer (as inside an If) adds no FLOPs and is listed under ``uncounted``: the FLOPs
    are then a lower bound, and the registry says so in the variant's note."""
    onnx = _onnx()
    from ..runtime.ort import SHAPE_KEY

    model = onnx.load(str(path))
    shape = {p.key: p.value for p in model.metadata_props}.get(SHAPE_KEY)
    ins = graph_inputs(model)
    given = [int(d) for d in shape.split(",")] if shape else [
        d if isinstance(d, int) else 1 for d in dims_of(ins[0])[1:]]
    # Counted at batch 1 with every free dimension of the first input fixed: a dimension still
    # free after inference is unknown, and an operator that needs it is not counted.
    model = with_fixed_dims(model, given, batch=1)
    weights = _weights(model)
    params = sum(int(np.prod(d)) for d in weights.values())
    model, shapes = _shapes(model, weights)
    counts: Counter = Counter()
    flops = 0
    uncounted: Counter = Counter()  # compute operators whose shapes are not known here
    for node in _nodes(model.graph):
        counts[node.op_type] += 1
        f = _node_flops(node, shapes)
        if f is None:
            uncounted[node.op_type] += 1
        else:
            flops += f
    n_ops = sum(counts.values())
    return {"params": int(params), "flops": int(flops), "ops": dict(sorted(counts.items())),
            "n_ops": n_ops, "uncounted": dict(sorted(uncounted.items()))}


def _weights(model) -> dict[str, list[int]]:
    """The shape of every weight: initializers and Constant nodes of a float or 8-bit type, in
    the graph and in its subgraphs (an If's branches hold silero-vad's)."""
    weight_types = {1, 10, 3, 2, 16}  # float, float16, int8, uint8, bfloat16
    weights: dict[str, list[int]] = {}
    for g in _graphs(model.graph):
        for i in g.initializer:
            if i.data_type in weight_types:
                weights[i.name] = list(i.dims)
        for n in g.node:
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value" and a.t.data_type in weight_types:
                        weights[n.output[0]] = list(a.t.dims)
    return weights


def _shapes(model, weights: dict[str, list[int]]) -> tuple[Any, dict[str, list[int] | None]]:
    """The model after shape inference, and the shape of every value it knows (None: unknown)."""
    from onnx import shape_inference

    with contextlib.suppress(Exception):
        model = shape_inference.infer_shapes(model)
    shapes: dict[str, list[int] | None] = {}
    for g in _graphs(model.graph):
        for vi in [*g.value_info, *g.input, *g.output]:
            dims = dims_of(vi)
            shapes[vi.name] = ([int(d) for d in dims] if dims and all(isinstance(d, int) for d in dims)
                               else None)
    # What inference leaves open (shapes computed at run time: a Reshape by a Shape op) is read
    # from one run of the main graph at batch 1 with every value exposed.
    shapes.update({k: v for k, v in _run_shapes(model).items() if shapes.get(k) is None})
    shapes.update(weights)
    for g in _graphs(model.graph):
        for i in g.initializer:
            shapes[i.name] = list(i.dims)
    return model, shapes


def _node_flops(node, shapes: dict[str, list[int] | None]) -> int | None:
    """One node's FLOPs (None: a compute operator whose shapes are not known here)."""
    op = node.op_type
    out = shapes.get(node.output[0]) if node.output else None
    n_out = int(np.prod(out)) if out else 0
    ins = [shapes.get(n) for n in node.input]
    if op in ("Conv", "ConvInteger", "QLinearConv"):
        w = ins[3] if op == "QLinearConv" and len(ins) > 3 else (ins[1] if len(ins) > 1
                                                                  else None)
        return 2 * n_out * int(np.prod(w[1:])) if w and out else None
    if op in ("LSTM", "GRU", "RNN", "DynamicQuantizeLSTM"):
        # Per step and direction: gates x (input + hidden) multiply-adds (LSTM 4 gates,
        # GRU 3, RNN 1) from W [dirs, gates*hidden, input] and R [dirs, gates*hidden,
        # hidden] (DynamicQuantizeLSTM, onnxruntime's DR8 form, stores them transposed:
        # [dirs, input, gates*hidden]); X is [seq, batch, input] (layout 0).
        x, w, r = (ins + [None, None, None])[:3]
        if not (x and w and r and len(x) == 3):
            return None
        if op == "DynamicQuantizeLSTM":
            return 2 * x[0] * x[1] * w[0] * w[2] * (w[1] + r[1])
        return 2 * x[0] * x[1] * w[0] * w[1] * (w[2] + r[2])
    if op in ("MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "QGemm",
              "DynamicQuantizeMatMul", "MatMulIntegerToFloat"):
        a = ins[0]
        if not (a and out):
            return None
        k = a[-1] if not any(x.name == "transA" and x.i for x in node.attribute) else a[-2]
        return 2 * n_out * int(k)
    if op == "Softmax":
        return 3 * n_out
    if op in ("AveragePool", "MaxPool", "GlobalAveragePool", "ReduceMean"):
        return int(np.prod(ins[0])) if ins and ins[0] else 0
    if op in _ELEMENTWISE:
        return n_out
    return 0


def detect_precision(path: str | os.PathLike) -> str:
    """Which scheme an ONNX file holds, read from its graph: QuantizeLinear on activations (QDQ)
    or QLinear operators are FX8; dynamic quantisation operators or int8/uint8 weights (an
    embedding table looked up in int8) with float activations DR8; float16 initializers FP16;
    otherwise FP32."""
    onnx = _onnx()
    model = onnx.load(str(path))
    ops = {n.op_type for n in _nodes(model.graph)}
    if ops & {"QuantizeLinear", "QLinearConv", "QLinearMatMul"} and \
            "DynamicQuantizeLinear" not in ops:
        return "FX8"
    types = {i.data_type for g in _graphs(model.graph) for i in g.initializer}
    if ops & {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger", "DynamicQuantizeLSTM",
              "DynamicQuantizeMatMul"} or types & {2, 3}:  # int8/uint8 weights
        return "DR8"
    if 10 in types:
        return "FP16"
    return "FP32"
