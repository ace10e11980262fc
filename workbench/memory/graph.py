"""Layer graphs: a model as layers with their weights, activations, scratch and FLOPs.

``from_keras`` turns a Keras model into a :class:`LayerGraph` whose layers run with the NumPy
kernels of :mod:`workbench.runtime.kernels` (BatchNormalization and activations folded into the
layer before them, as inference engines do). ``LayerGraph.run`` executes it in bulk (every weight
resident) and is the reference the streamed executors must equal; ``store`` writes each layer's
weights to a file of its own, the layout MASA's and FlexNN's executors load from.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from ..fileio import atomic_write_json
from ..runtime.layers import LayerOps, last_use, live_activation_bytes


@dataclass
class Layer(LayerOps):
    """One layer: its op, input layer names, output shape (without batch) and weights.

    Conv weights are stored pre-transformed as a ``(C*kh*kw, Cout)`` matrix (the im2col layout),
    depthwise as ``(kh, kw, C)``, dense as ``(in, out)``; ``b`` is the bias (BatchNorm folded).
    Sizes and execution come from :class:`workbench.runtime.layers.LayerOps`, which the device's
    memory-mode programs share.
    """

    name: str
    op: str
    inputs: list[str]
    shape: tuple[int, ...]
    attrs: dict = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    in_shapes: list[tuple[int, ...]] = field(default_factory=list)

    @property
    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        return {k: tuple(w.shape) for k, w in self.weights.items()}

    @property
    def kind(self) -> str:
        """``conv`` or ``fc`` for weighted layers (DeepEye's granularity), else ``other``."""
        return {"conv": "conv", "dwconv": "conv", "dense": "fc"}.get(self.op, "other")

    @property
    def flops(self) -> int:
        """Multiply-accumulates x 2 for one input."""
        if self.op == "conv":
            return 2 * self.out_elems * self.weights["w"].shape[0]
        if self.op == "dwconv":
            k = self.attrs["k"]
            return 2 * self.out_elems * k[0] * k[1]
        if self.op == "dense":  # per token when the output has tokens
            return 2 * self.weights["w"].size * math.prod(self.shape[:-1])
        if self.op == "attention":  # q k^T and the weighted sum of v, over every head
            t, d = self.shape
            return 4 * t * t * d
        return self.out_elems

    def weight_slice(self, c0: int, c1: int) -> list[np.ndarray]:
        """The weights producing output channels ``c0:c1`` (contiguous copies, file order)."""
        if self.op in ("conv", "dense"):
            out = [np.ascontiguousarray(self.weights["w"][:, c0:c1])]
            if "b" in self.weights:
                out.append(np.ascontiguousarray(self.weights["b"][c0:c1]))
            return out
        return [np.ascontiguousarray(w) for w in self.weights.values()]

    def compute(self, xs: list[np.ndarray], out: np.ndarray, *, w: dict | None = None,
                **kw) -> None:
        """:meth:`LayerOps.compute` with the layer's own weights unless ``w`` is given."""
        super().compute(xs, out, w=self.weights if w is None else w, **kw)


@dataclass
class LayerGraph:
    """A model as layers in execution (topological) order; ``input`` names the model input."""

    name: str
    input_shape: tuple[int, ...]
    layers: list[Layer]

    def __post_init__(self):
        self.index = {ly.name: i for i, ly in enumerate(self.layers)}

    @property
    def weight_bytes(self) -> int:
        return sum(ly.weight_bytes for ly in self.layers)

    @property
    def flops(self) -> int:
        return sum(ly.flops for ly in self.layers)

    def last_use(self) -> dict[str, int]:
        """For each layer output (and ``input``): the index of the last layer reading it (the
        model output lives to the end)."""
        return last_use(self.layers)

    def table(self, batch: int = 1) -> list[dict]:
        """Per layer: op, weights, output activation, intermediates (full im2col) and FLOPs."""
        return [{"layer": ly.name, "op": ly.op, "kind": ly.kind, "shape": list(ly.shape),
                 "weight_bytes": ly.weight_bytes, "activation_bytes": ly.out_bytes(batch),
                 "intermediate_bytes": ly.scratch_bytes(batch), "flops": ly.flops * batch}
                for ly in self.layers]

    def bulk_peak_bytes(self, batch: int = 1) -> int:
        """Tensor bytes at the peak of bulk execution: every weight resident, plus the live
        activations and the running layer's full intermediates."""
        return self.weight_bytes + self.activation_peak_bytes(batch, with_scratch=True)

    def live_activation_bytes(self, batch: int = 1, *, size=None) -> list[int]:
        """Per layer: bytes of the activations live while it runs (inputs still needed later,
        its output). ``size`` maps a tensor's bytes to what it occupies (e.g. aligned)."""
        return live_activation_bytes(self.layers, tuple(self.input_shape), batch, size=size)

    def activation_peak_bytes(self, batch: int = 1, *, with_scratch: bool = False,
                              weights: bool = False) -> int:
        """Peak over layers of live activations (+ that layer's scratch and/or weights)."""
        return max(a + (ly.scratch_bytes(batch) if with_scratch else 0)
                   + (ly.weight_bytes if weights else 0)
                   for a, ly in zip(self.live_activation_bytes(batch), self.layers))

    def sample_input(self, batch: int = 1, *, seed: int = 0) -> np.ndarray:
        """A random input the model accepts: token ids below the vocabulary for a model that
        starts with an embedding, else standard normal values."""
        rng = np.random.default_rng(seed)
        first = self.layers[0]
        shape = (batch,) + tuple(self.input_shape)
        if first.op == "embed":
            return rng.integers(0, first.weight_shapes["wte"][0], size=shape).astype(np.float32)
        return rng.normal(size=shape).astype(np.float32)

    def run(self, x: np.ndarray, *, kernel: str = "im2col") -> np.ndarray:
        """Bulk execution with every weight resident: the reference output. ``kernel="direct"``
        runs every convolution with the direct kernel (no im2col matrix: FlexNN's
        "NCNN-Direct" baseline)."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        if tuple(x.shape[1:]) != tuple(self.input_shape):
            raise InputError(f"input shape {tuple(x.shape[1:])} does not match the model's "
                             f"{tuple(self.input_shape)}", where=self.name)
        last = self.last_use()
        acts = {"input": x}
        for i, ly in enumerate(self.layers):
            out = np.empty((x.shape[0],) + ly.shape, np.float32)
            ly.compute([acts[s] for s in ly.inputs], out, kernel=kernel)
            acts[ly.name] = out
            for src in set(ly.inputs):
                if last[src] == i:
                    acts.pop(src, None)
        return acts[self.layers[-1].name]


# --- Keras -> LayerGraph --------------------------------------------------------------------------
# Each supported Keras layer class has a converter below. A converter returns the graph layer that
# holds the Keras layer's output: a new Layer, or ``fold_into`` itself when the Keras layer (a
# BatchNormalization or an activation) was folded into the layer before it, as inference engines do.

def _act_name(layer) -> str | None:
    cfg = layer.get_config()
    name = type(layer).__name__
    if name == "ReLU":
        if cfg.get("negative_slope", 0) or cfg.get("threshold", 0):
            raise InputError("leaky/thresholded ReLU is not supported", where=layer.name)
        mv = cfg.get("max_value")
        if mv is None:
            return "relu"
        if float(mv) == 6.0:
            return "relu6"
        raise InputError(f"ReLU max_value {mv} is not supported", where=layer.name)
    act = cfg.get("activation", "linear")
    act = act if isinstance(act, str) else getattr(act, "__name__", str(act))
    if act not in ("linear", "relu", "relu6", "sigmoid", "softmax"):
        raise InputError(f"activation {act!r} is not supported", where=layer.name)
    return None if act == "linear" else act


def _bn_parts(kl, wts):
    cfg = kl.get_config()
    it = iter(wts)
    gamma = next(it) if cfg.get("scale", True) else None
    beta = next(it) if cfg.get("center", True) else None
    mean, var = next(it), next(it)
    gamma = np.ones_like(mean) if gamma is None else gamma
    beta = np.zeros_like(mean) if beta is None else beta
    return gamma, beta, mean, var


Shape = tuple[int, ...]
# (keras layer, graph inputs, output shape, weights as float32, the foldable layer before or None)
_Converter = Callable[[Any, list[str], Shape, list[np.ndarray], "Layer | None"], Layer]


def _batchnorm(kl, ins: list[str], shape: Shape, wts: list[np.ndarray],
               fold_into: Layer | None) -> Layer:
    gamma, beta, mean, var = _bn_parts(kl, wts)
    scale = gamma / np.sqrt(var + kl.get_config()["epsilon"])
    shift = beta - mean * scale
    prev = fold_into
    if prev is not None and prev.op in ("conv", "dwconv", "dense") and not prev.attrs.get("act"):
        w = prev.weights["w"]
        if prev.op == "dwconv":
            prev.weights["w"] = (w * scale[None, None, :]).astype(np.float32)
        else:
            prev.weights["w"] = (w * scale[None, :]).astype(np.float32)
        b = prev.weights.get("b", np.zeros(prev.cout, np.float32))
        prev.weights["b"] = (b * scale + shift).astype(np.float32)
        return prev
    return Layer(kl.name, "affine", ins, shape,
                 weights={"scale": scale.astype(np.float32), "shift": shift.astype(np.float32)})


def _activation(kl, ins: list[str], shape: Shape, wts: list[np.ndarray],
                fold_into: Layer | None) -> Layer:
    act = _act_name(kl)
    prev = fold_into
    if prev is not None and prev.op in ("conv", "dwconv", "dense", "add", "affine") \
            and not prev.attrs.get("act"):
        prev.attrs["act"] = act
        return prev
    return Layer(kl.name, "act", ins, shape, {"act": act})


def _conv2d(kl, ins: list[str], shape: Shape, wts: list[np.ndarray], fold_into: Layer | None) -> Layer:
    cfg = kl.get_config()
    if cfg.get("groups", 1) != 1 or tuple(cfg["dilation_rate"]) != (1, 1):
        raise InputError("grouped or dilated Conv2D is not supported", where=kl.name)
    w = wts[0]
    kh, kw, c, co = w.shape
    weights = {"w": np.ascontiguousarray(w.transpose(2, 0, 1, 3).reshape(c * kh * kw, co))}
    if cfg["use_bias"]:
        weights["b"] = wts[1]
    return Layer(kl.name, "conv", ins, shape, {"k": (kh, kw), "s": int(cfg["strides"][0]),
                                               "padding": cfg["padding"], "act": _act_name(kl)},
                 weights)


def _depthwise(kl, ins: list[str], shape: Shape, wts: list[np.ndarray],
               fold_into: Layer | None) -> Layer:
    cfg = kl.get_config()
    if cfg.get("depth_multiplier", 1) != 1:
        raise InputError("depth_multiplier != 1 is not supported", where=kl.name)
    w = wts[0][..., 0]
    weights = {"w": np.ascontiguousarray(w)}
    if cfg["use_bias"]:
        weights["b"] = wts[1]
    return Layer(kl.name, "dwconv", ins, shape, {"k": w.shape[:2], "s": int(cfg["strides"][0]),
                                                 "padding": cfg["padding"], "act": _act_name(kl)},
                 weights)


def _dense(kl, ins: list[str], shape: Shape, wts: list[np.ndarray], fold_into: Layer | None) -> Layer:
    if len(shape) != 1:
        raise InputError("Dense on a non-flat input is not supported", where=kl.name)
    weights = {"w": wts[0]}
    if kl.get_config()["use_bias"]:
        weights["b"] = wts[1]
    return Layer(kl.name, "dense", ins, shape, {"act": _act_name(kl)}, weights)


def _pool(kl, ins: list[str], shape: Shape, wts: list[np.ndarray], fold_into: Layer | None) -> Layer:
    cls = type(kl).__name__
    cfg = kl.get_config()
    if cls == "AveragePooling2D" and cfg["padding"] == "same":
        raise InputError("AveragePooling2D with same padding is not supported", where=kl.name)
    return Layer(kl.name, "pool", ins, shape, {
        "kind": "max" if cls.startswith("Max") else "avg",
        "k": tuple(cfg["pool_size"]), "s": int((cfg["strides"] or cfg["pool_size"])[0]),
        "padding": cfg["padding"]})


def _global_pool(kl, ins: list[str], shape: Shape, wts: list[np.ndarray],
                 fold_into: Layer | None) -> Layer:
    if kl.get_config().get("keepdims"):
        raise InputError("keepdims pooling is not supported", where=kl.name)
    return Layer(kl.name, "gap", ins, shape)


def _flatten(kl, ins: list[str], shape: Shape, wts: list[np.ndarray], fold_into: Layer | None) -> Layer:
    return Layer(kl.name, "flatten", ins, shape)


def _zeropad(kl, ins: list[str], shape: Shape, wts: list[np.ndarray], fold_into: Layer | None) -> Layer:
    # ResNet-50's and MobileNetV2's explicit padding
    (pt, pb), (pl, pr) = kl.get_config()["padding"]
    return Layer(kl.name, "zeropad", ins, shape, {"pads": (pt, pb, pl, pr)})


def _add(kl, ins: list[str], shape: Shape, wts: list[np.ndarray], fold_into: Layer | None) -> Layer:
    if len(ins) != 2:
        raise InputError("Add of more than two inputs is not supported", where=kl.name)
    return Layer(kl.name, "add", ins, shape, {"act": None})


def _concat(kl, ins: list[str], shape: Shape, wts: list[np.ndarray], fold_into: Layer | None) -> Layer:
    if kl.get_config()["axis"] not in (-1, len(shape)):
        raise InputError("Concatenate along another axis than the channels is not supported",
                         where=kl.name)
    return Layer(kl.name, "concat", ins, shape)


_CONVERTERS: dict[str, _Converter] = {
    "BatchNormalization": _batchnorm, "ReLU": _activation, "Activation": _activation,
    "Conv2D": _conv2d, "DepthwiseConv2D": _depthwise, "Dense": _dense,
    "MaxPooling2D": _pool, "AveragePooling2D": _pool,
    "GlobalAveragePooling2D": _global_pool, "GlobalAveragePooling1D": _global_pool,
    "Flatten": _flatten, "ZeroPadding2D": _zeropad, "Add": _add, "Concatenate": _concat,
}
# Layers that are the identity at inference: their output is their input's.
_PASS_THROUGH = ("Dropout", "SpatialDropout2D", "GaussianNoise")


def _keras_edges(model) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Each Keras layer's input layer names (``input`` for the model input) and how many layers
    read each layer's output."""
    src_of: dict[str, list[str]] = {}
    consumers: dict[str, int] = {}
    own = {kl.name for kl in model.layers}
    for kl in model.layers:
        nodes = kl._inbound_nodes
        ins = [t._keras_history.operation.name for t in nodes[0].input_tensors] if nodes else []
        # A Sequential model's input layer is not one of its layers: read it as the input.
        ins = [s if s in own else "input" for s in ins]
        src_of[kl.name] = ins
        for s in ins:
            consumers[s] = consumers.get(s, 0) + 1
    return src_of, consumers


def from_keras(model, *, name: str | None = None) -> LayerGraph:
    """Convert a Keras functional model; unsupported layers raise an error naming the layer."""
    src_of, consumers = _keras_edges(model)
    alias: dict[str, str] = {}  # keras layer -> graph layer holding its output
    layers: list[Layer] = []
    by_name: dict[str, Layer] = {}
    input_shape = tuple(int(d) for d in model.inputs[0].shape[1:]) if model.inputs else None

    def resolve(n: str) -> str:
        while n in alias:
            n = alias[n]
        return n

    def shape_of(n: str) -> Shape:
        if n != "input":
            return by_name[n].shape
        if input_shape is None:
            raise InputError("the model has no Input layer", where=model.name)
        return input_shape

    for kl in model.layers:
        cls = type(kl).__name__
        ins = [resolve(s) for s in src_of[kl.name]]
        shape = tuple(int(d) for d in kl.output.shape[1:])
        if cls == "InputLayer":
            input_shape = shape
            alias[kl.name] = "input"
            continue
        if cls in _PASS_THROUGH:
            alias[kl.name] = ins[0]
            continue
        convert = _CONVERTERS.get(cls)
        if convert is None:
            raise InputError(f"layer type {cls} is not supported by the layer executor",
                             where=kl.name)
        prev = by_name.get(ins[0]) if len(ins) == 1 else None
        # Folding into the layer before is only sound when nothing else reads that layer's output.
        foldable = prev is not None and consumers.get(src_of[kl.name][0], 0) == 1
        wts = [np.asarray(w, np.float32) for w in kl.get_weights()]
        ly = convert(kl, ins, shape, wts, prev if foldable else None)
        if ly is prev:
            alias[kl.name] = ly.name
            continue
        ly.in_shapes = [shape_of(s) for s in ins]
        layers.append(ly)
        by_name[ly.name] = ly
    if input_shape is None:
        raise InputError("the model has no Input layer", where=model.name)
    return LayerGraph(name or model.name, input_shape, layers)


# --- storage: one weight file per layer (or per weight slice) --------------------------------------

def weight_file(root: Path, layer: Layer, c0: int = 0, c1: int | None = None) -> Path:
    c1 = layer.cout if c1 is None else c1
    whole = c0 == 0 and c1 == layer.cout
    return Path(root) / (f"{layer.name}.bin" if whole else f"{layer.name}.{c0}-{c1}.bin")


def write_weights(root: Path, layer: Layer, c0: int = 0, c1: int | None = None) -> Path:
    """Write the weights of channels ``c0:c1`` (whole layer by default) as raw float32, atomically."""
    path = weight_file(root, layer, c0, c1)
    if path.exists() and path.stat().st_size == layer.slice_bytes(c0, c1 or layer.cout):
        return path
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        for a in layer.weight_slice(c0, layer.cout if c1 is None else c1):
            f.write(a.tobytes())
    os.replace(tmp, path)
    return path


def store(graph: LayerGraph, root: str | Path) -> Path:
    """Write ``graph.json`` and one weight file per weighted layer under ``root``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    files = {}
    for ly in graph.layers:
        if ly.weights:
            files[ly.name] = write_weights(root, ly).name
    atomic_write_json(root / "graph.json", {
        "name": graph.name, "input_shape": list(graph.input_shape), "files": files,
        "layers": graph.table(), "weight_bytes": graph.weight_bytes, "flops": graph.flops})
    return root


def read_weights(root: Path, layer: Layer, c0: int = 0, c1: int | None = None) -> dict:
    """Load one layer's (slice of) weights from its file into fresh arrays."""
    c1 = layer.cout if c1 is None else c1
    path = weight_file(root, layer, c0, c1)
    flat = np.fromfile(path, dtype=np.float32)
    if flat.nbytes != layer.slice_bytes(c0, c1):
        raise InputError(f"weight file has {flat.nbytes} bytes, expected "
                         f"{layer.slice_bytes(c0, c1)}", file=path)
    return layer.views(flat, c0, c1)

