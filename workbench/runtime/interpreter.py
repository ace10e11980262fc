"""The LiteRT interpreter as the workbench uses it everywhere: threads, XNNPACK on/off, a batch
size, int8 inputs quantised with the tensor's own scale. numpy + ai_edge_litert only."""

from __future__ import annotations

import os

import numpy as np


def open_interpreter(model: str | os.PathLike | bytes, *, threads: int = 1, xnnpack: bool = True,
                     batch: int | None = None):
    """A LiteRT interpreter for a .tflite file or a model already in memory (``bytes``: the
    interpreter keeps that immutable buffer, so later changes to the file cannot reach it); with
    ``batch``, its input resized and tensors allocated (ready to invoke)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as e:  # pragma: no cover - depends on the install
        raise ImportError("the runtime needs the LiteRT interpreter: pip install ai-edge-litert"
                          ) from e
    resolver = OpResolverType.AUTO if xnnpack else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    source = {"model_content": model} if isinstance(model, bytes) else {"model_path": str(model)}
    it = Interpreter(**source, num_threads=threads, experimental_op_resolver_type=resolver)
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
