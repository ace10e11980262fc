"""onnxruntime as a second engine of the runtime: ONNX models run behind the part of LiteRT's
``Interpreter`` API the workbench uses (input and output details, ``resize_tensor_input``,
``set_tensor``, ``invoke``, ``get_tensor``), so profiling, predicting and serving treat a
``.onnx`` variant as they treat a ``.tflite`` one.

onnxruntime is optional (``pip install onnxruntime``): this module imports it when a session is
opened, and a missing install is one line saying what to install.

What differs from LiteRT, and how it is bridged:

- **Several inputs.** The first input takes the samples; every other input is fed the value
  the file's metadata gives it (``models add --feed sr=16000``), else
  :func:`workbench.runtime.interpreter.placeholder` (zeros; ones for integer inputs), unless it
  was set (``open_interpreter`` passes the placeholder as ``fill``). A recurrent model's state input
  (silero-vad's ``state``) starts at zeros, which is its initial state.
- **Free dimensions.** The workbench writes the first input's shape into the variant file's
  metadata (and fixes the free dimensions but the batch in its graph where onnxruntime can still
  open it then); the batch follows ``resize_tensor_input``, and another input's free dimension
  of the same name (``batch`` in ``state[2, batch, 128]``) follows it; any other free dimension
  is 1.
- **XNNPACK.** onnxruntime's XNNPACK execution provider is used when the installed build has
  it; the PyPI CPU build has not, so the option with XNNPACK on cannot run and says so (the
  profiler records it as a failed row with this reason).
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

from ..errors import MissingExtra, WorkbenchError

#: onnxruntime's tensor type names -> numpy dtypes (the types the workbench's models use).
_DTYPES: dict[str, type[np.generic]] = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
           "tensor(double)": np.float64, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
           "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}
XNNPACK_PROVIDER = "XnnpackExecutionProvider"
#: Metadata of a variant file the workbench wrote: the first input's shape without the batch
#: ("576"), which binds its free dimensions ...
SHAPE_KEY = "workbench.input_shape"
#: ... and the value fed to another input ("workbench.feed.sr" = "16000.0") at every run.
FEED_PREFIX = "workbench.feed."


class NoXnnpack(WorkbenchError, RuntimeError):
    """XNNPACK was asked for and this onnxruntime build lacks its execution provider."""


def is_onnx(model: str | os.PathLike | bytes) -> bool:
    """An ONNX model: a path ending in ``.onnx``, or bytes that look like an ONNX protobuf
    (a ModelProto starts with its ``ir_version`` field, tag byte 0x08) and not like a LiteRT
    flatbuffer (``TFL3`` at offset 4). Where the file's name is known, pass it instead: the
    bytes are only a guess (a caller such as the runtime's executor says which it is)."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        head = bytes(model[:8])
        return head[:1] == b"\x08" and head[4:8] != b"TFL3"
    return str(model).lower().endswith(".onnx")


def _ort():
    try:
        import onnxruntime
    except ImportError:
        raise MissingExtra("onnxruntime", "torch", needs="an ONNX model",
                           hint="on a device: pip install onnxruntime alone") from None
    # Errors reach the caller as exceptions; onnxruntime's own log would print them again,
    # in colour, on the user's terminal.
    onnxruntime.set_default_logger_severity(4)
    return onnxruntime


def version() -> str | None:
    """The installed onnxruntime's version (None: not installed)."""
    try:
        return _ort().__version__
    except ImportError:
        return None


def has_xnnpack() -> bool:
    """Whether the installed onnxruntime has its XNNPACK execution provider."""
    return XNNPACK_PROVIDER in _ort().get_available_providers()


def open_session(model: str | os.PathLike | bytes, *, threads: int = 1, xnnpack: bool = False):
    """An onnxruntime session (a file or its bytes) with ``threads`` intra-op threads, run
    sequentially: the one way the workbench opens ONNX models (variants and multi-exit
    segments alike).

    Raises:
        ImportError: onnxruntime is not installed.
        RuntimeError: ``xnnpack`` asked for and this build has no XNNPACK provider.
    """
    ort = _ort()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 4  # errors reach the caller as exceptions, not as log lines
    providers: list[Any] = ["CPUExecutionProvider"]
    if xnnpack:
        have = ort.get_available_providers()
        if XNNPACK_PROVIDER not in have:
            raise NoXnnpack(f"onnxruntime {ort.__version__} here has no XNNPACK execution "
                               f"provider (it has {', '.join(have)}); with XNNPACK off it runs "
                               "its own CPU kernels")
        providers = [(XNNPACK_PROVIDER, {"intra_op_num_threads": threads}),
                     "CPUExecutionProvider"]
    source = bytes(model) if isinstance(model, (bytes, bytearray, memoryview)) else str(model)
    return ort.InferenceSession(source, opts, providers=providers)


class OrtInterpreter:
    """An onnxruntime session behind LiteRT's ``Interpreter`` API (the part the workbench uses).

    Tensor indices: inputs are 0..n-1 in the graph's order, outputs n..n+m-1."""

    def __init__(self, model: str | os.PathLike | bytes, *, threads: int = 1,
                 xnnpack: bool = False, fill: Callable[[dict], np.ndarray] | None = None) -> None:
        """``fill``: what an input not set is fed, given its details
        (:func:`workbench.runtime.interpreter.placeholder` when opened by ``open_interpreter``;
        zeros by default)."""
        self._sess = open_session(model, threads=threads, xnnpack=xnnpack)
        self._fill = fill or (lambda d: np.zeros(d["shape"], dtype=d["dtype"]))
        self._ins = self._sess.get_inputs()
        self._outs = self._sess.get_outputs()
        for t in [*self._ins, *self._outs]:
            if t.type not in _DTYPES:
                raise ValueError(f"tensor {t.name!r} has type {t.type}, which the workbench "
                                 "does not feed or read")
        self._bound: dict[str, int] = {}
        self._first: list[int] | None = None
        self._set: dict[int, np.ndarray] = {}
        self._result: list[np.ndarray] | None = None
        meta = self._sess.get_modelmeta().custom_metadata_map or {}
        self._feeds = {k[len(FEED_PREFIX):]: float(v) for k, v in meta.items()
                       if k.startswith(FEED_PREFIX)}
        if meta.get(SHAPE_KEY):
            batch = self._ins[0].shape[0] if self._ins[0].shape else 1
            self.resize_tensor_input(0, [batch if isinstance(batch, int) and batch >= 0 else 1,
                                         *(int(d) for d in meta[SHAPE_KEY].split(","))])

    # -- shapes --------------------------------------------------------------------------------
    def _shape(self, k: int, spec) -> list[int]:
        if k == 0 and self._first is not None:
            return list(self._first)
        batch = self._first[0] if self._first else 1
        # A named free dimension follows the first input's of that name; an unnamed one (as in
        # silero-vad's state[2, ?, 128]) is taken for the batch, the usual free dimension.
        return [d if isinstance(d, int) and d >= 0 else
                self._bound.get(str(d), 1) if d else batch for d in spec.shape]

    def _detail(self, k: int, spec, offset: int = 0) -> dict:
        shape = self._shape(k, spec) if offset == 0 else [
            d if isinstance(d, int) and d >= 0 else -1 for d in spec.shape]
        if offset and self._result is not None:
            shape = list(self._result[k].shape)
        return {"index": offset + k, "name": spec.name, "dtype": _DTYPES[spec.type],
                "shape": np.asarray(shape, dtype=np.int32),
                "shape_signature": np.asarray([d if isinstance(d, int) and d >= 0 else -1
                                               for d in spec.shape], dtype=np.int32),
                "quantization": (0.0, 0)}

    def get_input_details(self) -> list[dict]:
        return [self._detail(k, s) for k, s in enumerate(self._ins)]

    def get_output_details(self) -> list[dict]:
        return [self._detail(k, s, len(self._ins)) for k, s in enumerate(self._outs)]

    def get_signature_list(self) -> dict:
        return {}

    def resize_tensor_input(self, index: int, shape) -> None:
        shape = [int(d) for d in shape]
        spec = self._ins[index]
        if len(shape) != len(spec.shape) or any(
                isinstance(d, int) and d >= 0 and d != s for d, s in zip(spec.shape, shape)):
            raise ValueError(f"input {spec.name!r} has shape {list(spec.shape)}; cannot resize "
                             f"it to {shape}")
        if index != 0:
            return  # other inputs follow the first one's free dimensions
        self._first = shape
        self._bound = {str(d): s for d, s in zip(spec.shape, shape)
                       if d and not (isinstance(d, int) and d >= 0)}
        self._set.clear()

    def allocate_tensors(self) -> None:
        """Nothing to allocate ahead: onnxruntime allocates per run."""

    # -- running -------------------------------------------------------------------------------
    def set_tensor(self, index: int, value: np.ndarray) -> None:
        self._set[index] = np.asarray(value)

    def _feed(self) -> dict[str, np.ndarray]:
        feed = {}
        for k, spec in enumerate(self._ins):
            value = self._set.get(k)
            if value is None:
                detail: dict[str, Any] = {"shape": self._shape(k, spec),
                                          "dtype": _DTYPES[spec.type]}
                value = (np.full(detail["shape"], self._feeds[spec.name], dtype=detail["dtype"])
                         if spec.name in self._feeds else self._fill(detail))
            feed[spec.name] = value
        return feed

    def invoke(self) -> None:
        self._result = self._sess.run(None, self._feed())

    def get_tensor(self, index: int) -> np.ndarray:
        n = len(self._ins)
        if index < n:
            return self._feed()[self._ins[index].name]
        if self._result is None:
            raise ValueError("no output yet: invoke() the model first")
        return self._result[index - n]
