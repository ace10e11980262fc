"""Post-training quantisation with the TFLite converter, exactly CARIn Table 1's five schemes.

| scheme | converter settings | inputs/outputs | weights | activations |
|---|---|---|---|---|
| FP32 | none | fp32 | fp32 | fp32 |
| FP16 | DEFAULT + supported_types=[float16] | fp32 | fp16 | fp16/fp32 |
| DR8 | DEFAULT (dynamic range) | fp32 | int8 | fp32 |
| FX8 | DEFAULT + representative data | fp32 | int8 | int8/fp32 fallback |
| FFX8 | FX8 + TFLITE_BUILTINS_INT8 only + int8 inputs/outputs | int8 | int8 | int8 |

For every variant: the file size, #params and FLOPs counted from the .tflite graph itself, and the
task metric on the test split measured with the LiteRT interpreter. A variant that cannot be
converted is recorded as unavailable with the converter's reason (like '-' in CARIn Table 2).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from ..errors import InputError, WorkbenchError
from ..fileio import atomic_write_json
from ..precisions import PRECISIONS as PRECISIONS
from ..runtime.interpreter import from_output as _from_output
from ..runtime.interpreter import open_interpreter, output_detail, placeholder
from ..runtime.interpreter import to_input as _to_input
from .tf import keras as _keras
from .tf import quiet

REPRESENTATIVE_SAMPLES = 100


# One home for silencing the converter (workbench.host.tf); the name stays for callers here.
_quiet = quiet


class ConversionError(WorkbenchError, RuntimeError):
    """The converter refused a variant; the message is its reason."""


def _strip_locations(text: str) -> str:
    """The converter's text without its MLIR source locations (``loc(callsite(fused[...]))``:
    hundreds of characters of graph paths that say nothing to a user)."""
    out, i = [], 0
    while True:
        j = text.find("loc(", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        depth, k = 0, j + 3
        while k < len(text):
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
            if depth == 0:
                break
        i = k
        if text[i:i + 2] == ": ":
            i += 2


def converter_reason(message: str) -> str:
    """The TFLite converter's error in one readable line: a recurrent layer's loop (TensorList
    ops) says how to convert it; anything else keeps the converter's words, locations dropped."""
    text = " ".join(message.split())
    if "TensorList" in text:
        return ("a recurrent layer (LSTM, GRU, RNN) kept as a loop with a dynamic shape "
                "(tf.TensorList ops) does not convert: give the model a fixed sequence length "
                "(--input-shape) so that its recurrent layers are unrolled")
    text = _strip_locations(text).replace("<unknown>:0: ", "")
    text = re.sub(r"\s*(note: )?see current operation:.*", "", text)
    text = re.sub(r"^error: ", "", text.strip())
    return text.strip()[:400]


def convert(model, precision: str, representative: np.ndarray, *,
            others: tuple[str, dict[str, np.ndarray]] | None = None) -> bytes:
    """Convert a Keras model (or the path of its exported SavedModel, which saves re-tracing it
    for every precision) to a .tflite flatbuffer with one of the five schemes. ``others``: for a
    model with several inputs, (the data input's signature key, one sample of each other input
    by key): int8 calibration feeds them with every representative sample."""
    import tensorflow as tf

    if precision not in PRECISIONS:
        raise InputError(f"unknown precision; expected one of {', '.join(PRECISIONS)}", value=precision)
    if isinstance(model, (str, os.PathLike)):
        conv = tf.lite.TFLiteConverter.from_saved_model(str(model))
    else:
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if precision != "FP32":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if precision == "FP16":
        conv.target_spec.supported_types = [tf.float16]
    if precision in ("FX8", "FFX8"):
        def gen():
            for i in range(len(representative)):
                if others is None:
                    yield [representative[i:i + 1]]
                else:  # by signature key: the converter orders the inputs its own way
                    yield {others[0]: representative[i:i + 1], **others[1]}
        conv.representative_dataset = gen
    if precision == "FFX8":
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if representative.dtype.kind == "f":  # integer token inputs stay int32 (CARIn Table 1)
            conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    try:
        with _quiet():
            return conv.convert()
    except Exception as exc:  # noqa: BLE001 - the converter raises many kinds; keep its words
        raise ConversionError(converter_reason(str(exc)) or type(exc).__name__) from None


def with_input_plan(blob: bytes, plan: dict) -> bytes:
    """A .tflite flatbuffer with its input plan (which input takes the data, what the others
    are fed) stored in its metadata under :data:`workbench.runtime.interpreter.INPUTS_KEY`,
    replacing any there: the runtime reads it back, so the file alone says how to run it."""
    import json

    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    from ..runtime.interpreter import INPUTS_KEY

    m = schema.ModelT.InitFromPackedBuf(bytearray(blob), 0)
    m.buffers = list(m.buffers or [])
    m.metadata = [md for md in (m.metadata or []) if _text(md.name) != INPUTS_KEY]
    buf = schema.BufferT()
    buf.data = np.frombuffer(json.dumps(plan, sort_keys=True).encode(), np.uint8).copy()
    m.buffers.append(buf)
    md = schema.MetadataT()
    md.name, md.buffer = INPUTS_KEY, len(m.buffers) - 1
    m.metadata.append(md)
    b = flatbuffers.Builder(len(blob) + 4096)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


# --- reading a .tflite graph ------------------------------------------------------------------

def ops_of(model: str | os.PathLike | bytes) -> list[dict]:
    """The main subgraph's operators in execution order, read with the flatbuffer schema that
    ai-edge-litert ships (not the interpreter's private op details): each one's ``op_name``
    (the builtin's name, or a custom op's code), ``inputs`` and ``outputs`` (tensor indices, -1
    for an omitted optional input)."""
    from ai_edge_litert import schema_py_generated as schema

    buf = model if isinstance(model, (bytes, bytearray)) else Path(model).read_bytes()
    m = schema.Model.GetRootAs(buf, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items()
             if not k.startswith("_") and isinstance(v, int)}
    codes = []
    for i in range(m.OperatorCodesLength()):
        oc = m.OperatorCodes(i)
        # Codes past 127 live in builtin_code; older files keep them in the deprecated byte.
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        name = names.get(code, str(code))
        if name == "CUSTOM" and oc.CustomCode():
            name = oc.CustomCode().decode(errors="replace")
        codes.append(name)
    g = m.Subgraphs(0)
    out = []
    for j in range(g.OperatorsLength()):
        op = g.Operators(j)
        out.append({"index": j, "op_name": codes[op.OpcodeIndex()],
                    "inputs": [int(v) for v in op.InputsAsNumpy()] if op.InputsLength() else [],
                    "outputs": [int(v) for v in op.OutputsAsNumpy()] if op.OutputsLength()
                    else []})
    return out

_ELEMENTWISE = {"ADD", "SUB", "MUL", "DIV", "RELU", "RELU6", "RELU_N1_TO_1", "LOGISTIC", "TANH",
                "MAXIMUM", "MINIMUM", "HARD_SWISH", "SQUARED_DIFFERENCE", "RSQRT", "SQRT",
                "POW", "EXP", "LEAKY_RELU", "PRELU", "ABS", "NEG"}


def analyse(path: str | os.PathLike) -> dict:
    """Parameters, FLOPs and operators counted from a .tflite graph.

    A parameter is an element of a constant weight tensor: one no operator produces and the
    graph does not take as input, holding floats or 8-bit integers, or int32 biases of
    convolutions and fully-connected layers (int32 shape and axis operands are not parameters). FLOPs count a multiply-add as 2: CONV_2D ``2 * out * kh * kw * cin``,
    DEPTHWISE_CONV_2D ``2 * out * kh * kw``, FULLY_CONNECTED ``2 * rows * in * out``,
    BATCH_MATMUL ``2 * batch * m * n * k``; element-wise operators one per output element,
    SOFTMAX three, pooling and MEAN one per input element. Counted at batch 1.
    """
    if str(path).endswith(".onnx"):
        from .onnxgraph import analyse as analyse_onnx

        return analyse_onnx(path)
    it = open_interpreter(path)
    # One run on a placeholder: tensors whose shape is computed at run time (a Keras Dense on a
    # sequence reshapes by a runtime Shape op) only have their real shapes after an invoke.
    with contextlib.suppress(Exception):
        it.allocate_tensors()
        for d in it.get_input_details():
            it.set_tensor(d["index"], placeholder(d))
        it.invoke()
    tensors = {t["index"]: t for t in it.get_tensor_details()}
    ops = ops_of(path)
    produced = {o for op in ops for o in op["outputs"]}
    graph_inputs = {d["index"] for d in it.get_input_details()}
    weight_types = (np.float32, np.float16, np.int8, np.uint8)
    bias_of = {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV"}
    consts = set()
    for op in ops:
        for pos, i in enumerate(op["inputs"]):
            if i < 0 or i in produced or i in graph_inputs:
                continue
            dtype = tensors[i]["dtype"]
            if dtype in weight_types or (pos == 2 and op["op_name"] in bias_of):
                consts.add(i)
    params = int(sum(int(np.prod(tensors[i]["shape"])) for i in consts))
    shape = lambda i: [int(x) for x in tensors[i]["shape"]]  # noqa: E731
    flops = 0
    counts: Counter = Counter()
    for op in ops:
        name = op["op_name"]
        counts[name] += 1
        ins = [i for i in op["inputs"] if i >= 0]
        out = shape(op["outputs"][0]) if len(op["outputs"]) else []
        n_out = int(np.prod(out)) if out else 0
        if name == "CONV_2D" and len(ins) >= 2:
            _, kh, kw, cin = shape(ins[1])
            flops += 2 * n_out * kh * kw * cin
        elif name == "DEPTHWISE_CONV_2D" and len(ins) >= 2:
            _, kh, kw, _ = shape(ins[1])
            flops += 2 * n_out * kh * kw
        elif name == "FULLY_CONNECTED" and len(ins) >= 2:
            w = shape(ins[1])
            rows = int(np.prod(shape(ins[0]))) // max(w[1], 1)
            flops += 2 * rows * w[0] * w[1]
        elif name == "BATCH_MATMUL" and len(ins) >= 2:
            a = shape(ins[0])
            k = a[-1] if not op.get("adj_x") else a[-2]
            flops += 2 * n_out * k
        elif name == "SOFTMAX":
            flops += 3 * n_out
        elif name in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "MEAN", "SUM"):
            flops += int(np.prod(shape(ins[0])))
        elif name in _ELEMENTWISE:
            flops += n_out
    return {"params": params, "flops": int(flops), "ops": dict(sorted(counts.items())),
            "n_ops": len(ops)}


def detect_precision(path: str | os.PathLike) -> str:
    """Which of the five schemes a .tflite file was converted with, read from its tensors:
    int8 inputs or outputs are FFX8 (a model of token ids keeps its int32 input); int8
    activations (tensors an operator other than a table lookup produces) FX8; int8 weights alone
    DR8; float16 weights FP16; otherwise FP32. An ONNX file is read by
    :func:`workbench.host.onnxgraph.detect_precision`."""
    if str(path).endswith(".onnx"):
        from .onnxgraph import detect_precision as detect_onnx

        return detect_onnx(path)
    it = open_interpreter(path)
    io = [*it.get_input_details(), *it.get_output_details()]
    if any(d["dtype"] in (np.int8, np.uint8) for d in io):
        return "FFX8"
    tensors = it.get_tensor_details()
    ops = ops_of(path)
    # DR8 looks embedding rows up in their int8 table (GATHER yields int8, dequantised after):
    # that is a weight read, not an int8 activation.
    produced = {o for op in ops if op["op_name"] not in ("GATHER", "EMBEDDING_LOOKUP")
                for o in op["outputs"]}
    int8 = {t["index"] for t in tensors if t["dtype"] in (np.int8, np.uint8)}
    if int8 & produced:
        return "FX8"
    if int8:
        return "DR8"
    if any(t["dtype"] == np.float16 for t in tensors):
        return "FP16"
    return "FP32"


def predict(path: str | os.PathLike, x: np.ndarray, *, batch: int = 64, threads: int = 2,
            output: tuple[int, str | None, str | None] | None = None) -> np.ndarray:
    """Run a .tflite model over inputs with the LiteRT interpreter (quantising int8 inputs and
    dequantising int8 outputs with the tensors' scale and zero point); the outputs of the one
    :func:`output_detail` picks (default: the first)."""
    return predict_outputs(path, x, [output], batch=batch, threads=threads)[0]


def predict_outputs(path: str | os.PathLike, x: np.ndarray,
                    outputs: list[tuple[int, str | None, str | None] | None], *, batch: int = 64,
                    threads: int = 2) -> list[np.ndarray]:
    """:func:`predict` of several outputs in one pass over ``x``: one array per entry of
    ``outputs`` (each found by :func:`output_detail`)."""
    it = open_interpreter(path, threads=threads)
    inp = it.get_input_details()[0]
    outs: list[list[np.ndarray]] = [[] for _ in outputs]
    size = None
    for s in range(0, len(x), batch):
        xb = x[s:s + batch]
        if size != len(xb):
            try:
                it.resize_tensor_input(inp["index"], [len(xb), *inp["shape"][1:]])
                it.allocate_tensors()
            except (RuntimeError, ValueError):
                if batch == 1 or len(xb) == 1:
                    raise
                # A graph built for one sample (reshapes with a fixed batch, as MediaPipe's
                # are) runs one sample at a time.
                return predict_outputs(path, x, outputs, batch=1, threads=threads)
            size = len(xb)
        it.set_tensor(inp["index"], _to_input(xb, inp))
        it.invoke()
        for k, ref in enumerate(outputs):
            out = output_detail(it, ref)
            outs[k].append(_from_output(it.get_tensor(out["index"]), out))
    return [np.concatenate(o) for o in outs]


@contextlib.contextmanager
def exported(model_path: str | os.PathLike, custom: str | os.PathLike | None = None
             ) -> Iterator[tuple[str, float]]:
    """A .keras model exported once as a SavedModel in a temporary folder (traced once,
    converted to every scheme from it): yields (its folder, the export's seconds); removed
    afterwards. ``custom``: the model's custom objects file (imported first)."""
    t0 = time.perf_counter()
    export_dir = tempfile.mkdtemp(prefix="workbench-export-")
    try:
        if custom is not None:
            from .intake import load_keras

            model = load_keras(Path(model_path), Path(custom))
        else:
            model = _keras().models.load_model(model_path, compile=False)
        with _quiet():
            model.export(export_dir)
        yield export_dir, time.perf_counter() - t0
    finally:
        shutil.rmtree(export_dir, ignore_errors=True)


def write_variant(out_dir: Path, precision: str, blob: bytes, *, suffix: str = ".tflite") -> Path:
    """``<out_dir>/<PRECISION>.tflite`` (or ``suffix``), written whole or not at all."""
    target = out_dir / f"{precision}{suffix}"
    tmp = target.with_suffix(".tmp")
    tmp.write_bytes(blob)
    os.replace(tmp, target)
    return target


def quantise_keras(model_path: str | os.PathLike, out_dir: str | os.PathLike, *,
                   representative: np.ndarray, x_test: np.ndarray | None = None,
                   score: Callable[[np.ndarray], float] | None = None, metric: str | None = None,
                   precisions: tuple[str, ...] = PRECISIONS) -> list[dict]:
    """Convert a saved Keras model to every precision and measure each variant.

    Args:
        model_path: A ``.keras`` file.
        out_dir: Where ``<PRECISION>.tflite`` files and ``variants.json`` go.
        representative: Calibration inputs for FX8/FFX8.
        x_test, score, metric: Test inputs, a function scoring the LiteRT outputs on them, and
            the metric's name; without them no test metric is recorded.

    Returns:
        One dict per precision: available (bool), reason (if not), file, sha256, size_mb,
        params, flops, ops, test metric (LiteRT), conversion time.
    """
    with exported(model_path) as (export_dir, t_export):
        return _convert_all(Path(out_dir), export_dir, t_export, representative, x_test, score,
                            metric, precisions)


def _convert_all(out_dir: Path, export_dir: str, t_export: float, rep: np.ndarray,
                 x_test: np.ndarray | None, score: Callable[[np.ndarray], float] | None,
                 metric: str | None, precisions) -> list[dict]:
    out: list[dict] = []
    out_dir.mkdir(parents=True, exist_ok=True)
    for prec in precisions:
        t0 = time.perf_counter()
        try:
            blob = convert(export_dir, prec, rep)
        except ConversionError as exc:
            out.append({"precision": prec, "available": False, "reason": str(exc)})
            continue
        target = write_variant(out_dir, prec, blob)
        conv_s = time.perf_counter() - t0
        try:
            info = analyse(target)
            value = score(predict(target, x_test)) if score is not None and x_test is not None \
                else None
        except Exception as exc:  # noqa: BLE001 - a variant LiteRT cannot run is unavailable
            target.unlink(missing_ok=True)
            out.append({"precision": prec, "available": False,
                        "reason": f"LiteRT cannot run it: {' '.join(str(exc).split())[:300]}"})
            continue
        out.append({"precision": prec, "available": True, "file": target.name,
                    "sha256": hashlib.sha256(blob).hexdigest(), "size_mb": len(blob) / 1e6,
                    "params": info["params"], "flops": info["flops"], "n_ops": info["n_ops"],
                    "ops": info["ops"], "metric": metric, "test_metric": value,
                    "convert_seconds": round(conv_s + t_export / len(precisions), 2)})
    atomic_write_json(out_dir / "variants.json", out)
    return out
