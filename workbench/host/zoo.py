"""The host model zoo: Keras builders in the families of the papers' models, trained here.

| task | models (family, the paper's counterpart) |
|---|---|
| h1 | MobileNetV2-style at widths 0.5 and 1.0, EfficientNet-Lite-style (5x5 depthwise), RegNet-style (bottleneck stages), VGG-style with an FC-heavy head |
| h2 | BERT-style encoders as CARIn UC2 (ReLU and BatchNorm instead of GELU and LayerNorm): L2-H64, L4-H96 (XtremeDistil-like), L6-H48 (MobileBERT-like narrow and deep) |
| h3-vision | EfficientNet-Lite-style at two sizes, MobileNetV2-style |
| h3-audio | YAMNet-style 1-D depthwise-separable CNN |
| h4-* | one attribute net each, on a shared MobileNetV2-style backbone design (UC4) |

Everything trains on the 2-core CPU in minutes and is reproducible from a seed (Keras seeding and
TensorFlow's deterministic ops). Requires the ``ml`` extra (TensorFlow).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .. import workspace
from ..errors import InputError, WorkbenchError
from ..fileio import atomic_write_json
from . import datasets as ds
from .tf import keras as _keras


class TrainingFailed(WorkbenchError, RuntimeError):
    """A model's training process failed; the message carries the end of its stderr."""


# --- building blocks ------------------------------------------------------------------------------
# BatchNormalization momentum 0.9 (not Keras's 0.99): these datasets give a few hundred training
# steps, too few for 0.99's moving statistics to settle, and inference then runs at chance.

def _conv_bn(x, filters, k=3, s=1, act=True, name=None):
    L = _keras().layers
    x = L.Conv2D(filters, k, strides=s, padding="same", use_bias=False, name=name)(x)
    x = L.BatchNormalization(momentum=0.9)(x)
    return L.ReLU(6.0)(x) if act else x


def _inverted_residual(x, out_ch, expand, k=3, s=1):
    L = _keras().layers
    in_ch = x.shape[-1]
    h = _conv_bn(x, in_ch * expand, 1) if expand != 1 else x
    h = L.DepthwiseConv2D(k, strides=s, padding="same", use_bias=False)(h)
    h = L.ReLU(6.0)(L.BatchNormalization(momentum=0.9)(h))
    h = _conv_bn(h, out_ch, 1, act=False)
    if s == 1 and in_ch == out_ch:
        h = L.Add()([x, h])
    return h


def _head(x, n_classes):
    L = _keras().layers
    x = L.GlobalAveragePooling2D()(x) if len(x.shape) == 4 else L.GlobalAveragePooling1D()(x)
    if n_classes == 0:
        return L.Dense(1, name="value")(x)
    if n_classes == 2:
        return L.Dense(1, activation="sigmoid", name="prob")(x)
    return L.Dense(n_classes, activation="softmax", name="probs")(x)


def mobilenet_v2(input_shape, n_classes, *, width=1.0, name="mnv2"):
    """MobileNetV2-style: inverted residuals with 3x3 depthwise convolutions and ReLU6."""
    keras = _keras()
    c = lambda ch: max(8, int(ch * width + 4) // 8 * 8)  # noqa: E731
    inp = keras.Input(input_shape)
    x = _conv_bn(inp, c(32), 3, 1)
    for out, n, s in ((16, 1, 1), (24, 2, 2), (32, 2, 2), (64, 2, 2), (96, 1, 1)):
        for i in range(n):
            x = _inverted_residual(x, c(out), 1 if out == 16 else 4, 3, s if i == 0 else 1)
    x = _conv_bn(x, c(256), 1)
    return keras.Model(inp, _head(x, n_classes), name=name)


def efficientnet_lite(input_shape, n_classes, *, width=1.0, depth=1.0, name="effnet-lite"):
    """EfficientNet-Lite-style: MBConv with 5x5 depthwise stages, ReLU6, no squeeze-excite."""
    keras = _keras()
    c = lambda ch: max(8, int(ch * width + 4) // 8 * 8)  # noqa: E731
    inp = keras.Input(input_shape)
    x = _conv_bn(inp, c(32), 3, 1)
    for out, n, s, k in ((16, 1, 1, 3), (24, 2, 2, 3), (40, 2, 2, 5), (80, 2, 2, 3), (112, 1, 1, 5)):
        for i in range(max(1, round(n * depth))):
            x = _inverted_residual(x, c(out), 1 if out == 16 else 4, k, s if i == 0 else 1)
    x = _conv_bn(x, c(320), 1)
    return keras.Model(inp, _head(x, n_classes), name=name)


def regnet(input_shape, n_classes, *, widths=(24, 48, 96), depths=(1, 2, 2), name="regnet"):
    """RegNet-style: a stem and stages of residual bottleneck blocks whose widths grow."""
    keras = _keras()
    L = keras.layers
    inp = keras.Input(input_shape)
    x = _conv_bn(inp, 16, 3, 1)
    for w, d in zip(widths, depths):
        for i in range(d):
            s = 2 if i == 0 else 1
            h = _conv_bn(x, w, 1)
            h = _conv_bn(h, w, 3, s)
            h = _conv_bn(h, w, 1, act=False)
            sc = _conv_bn(x, w, 1, s, act=False) if (s != 1 or x.shape[-1] != w) else x
            x = L.ReLU()(L.Add()([h, sc]))
    return keras.Model(inp, _head(x, n_classes), name=name)


def vgg_fc(input_shape, n_classes, *, name="vgg-fc"):
    """VGG-style with an AlexNet/VGG-like fully-connected head, where most weights sit (the model
    family in which MASA and FlexNN save most memory)."""
    keras = _keras()
    L = keras.layers
    inp = keras.Input(input_shape)
    x = inp
    for f in (16, 32, 64):
        x = _conv_bn(x, f, 3)
        x = L.MaxPooling2D(2)(x)
    x = L.Flatten()(x)
    x = L.Dense(512, activation="relu")(x)
    x = L.Dense(256, activation="relu")(x)
    out = L.Dense(n_classes, activation="softmax", name="probs")(x)
    return keras.Model(inp, out, name=name)


def fc_net(input_shape, n_classes, *, convs=(32, 64, 128), fcs=(2048, 1024), k=3,
           name="alexnet-fc"):
    """AlexNet/VGG-S-style: a few conv+pool stages and a large fully-connected head (the
    families of MASA's FaceNet/SoS/MemNet/SceneNet/EmotionNet and of FlexNN's VGG-19 head)."""
    keras = _keras()
    L = keras.layers
    inp = keras.Input(input_shape)
    x = inp
    for f in convs:
        x = L.Conv2D(f, k, padding="same", activation="relu")(x)
        x = L.MaxPooling2D(2)(x)
    x = L.Flatten()(x)
    for f in fcs:
        x = L.Dense(f, activation="relu")(x)
    out = L.Dense(n_classes, activation="softmax", name="probs")(x)
    return keras.Model(inp, out, name=name)


def conv_net(input_shape, n_classes, *, stages=(64, 128, 256), pool_last=True, name="vgg-conv"):
    """VGG/Darknet-style conv-heavy net (two 3x3 convs per stage, global pooling head): most
    time in convolutions, memory in im2col intermediates (TinyYOLO's and VGG-19's conv part)."""
    keras = _keras()
    L = keras.layers
    inp = keras.Input(input_shape)
    x = inp
    for i, f in enumerate(stages):
        x = L.Conv2D(f, 3, padding="same", activation="relu")(x)
        x = L.Conv2D(f, 3, padding="same", activation="relu")(x)
        if pool_last or i < len(stages) - 1:
            x = L.MaxPooling2D(2)(x)
    x = L.GlobalAveragePooling2D()(x)
    out = L.Dense(n_classes, activation="softmax", name="probs")(x)
    return keras.Model(inp, out, name=name)


def bert(seq_len, vocab, n_classes, *, layers=2, hidden=64, heads=2, ffn=4, name="bert"):
    """A BERT-style encoder made mobile-friendly as CARIn UC2 did: ReLU for GELU, BatchNorm for
    LayerNorm."""
    keras = _keras()
    L = keras.layers
    inp = keras.Input((seq_len,), dtype="int32")
    x = L.Embedding(vocab, hidden)(inp)
    pos = L.Embedding(seq_len, hidden)(keras.ops.arange(seq_len)[None, :])
    x = L.Add()([x, pos])
    for _ in range(layers):
        a = L.MultiHeadAttention(heads, hidden // heads)(x, x)
        x = L.BatchNormalization(momentum=0.9)(L.Add()([x, a]))
        f = L.Dense(hidden * ffn, activation="relu")(x)
        f = L.Dense(hidden)(f)
        x = L.BatchNormalization(momentum=0.9)(L.Add()([x, f]))
    return keras.Model(inp, _head(x, n_classes), name=name)


def yamnet_1d(input_shape, n_classes, *, width=1.0, name="yamnet-1d"):
    """YAMNet-style for 1-D signals: a stem and depthwise-separable 1-D convolutions."""
    keras = _keras()
    L = keras.layers
    c = lambda ch: max(8, int(ch * width))  # noqa: E731
    inp = keras.Input(input_shape)
    x = L.ReLU()(L.BatchNormalization(momentum=0.9)(L.Conv1D(c(32), 5, strides=2, padding="same",
                                                  use_bias=False)(inp)))
    for f, s in ((64, 1), (128, 2), (128, 1), (256, 2)):
        x = L.DepthwiseConv1D(3, strides=s, padding="same", use_bias=False)(x)
        x = L.ReLU()(L.BatchNormalization(momentum=0.9)(x))
        x = L.ReLU()(L.BatchNormalization(momentum=0.9)(L.Conv1D(c(f), 1, use_bias=False)(x)))
    return keras.Model(inp, _head(x, n_classes), name=name)


@dataclass(frozen=True)
class Spec:
    """A zoo entry: which task, which builder, how long to train."""

    task: str
    model: str
    arch: str
    build: Callable
    epochs: int
    lr: float = 3e-3


def _spec(task, model, arch, build, epochs, lr=3e-3):
    return Spec(task, model, arch, build, epochs, lr)


SPECS: list[Spec] = [
    _spec("h1", "MobileNetV2-0.5", "MobileNetV2", lambda d: mobilenet_v2(d.input_shape, 10, width=0.5), 10),
    _spec("h1", "MobileNetV2-1.0", "MobileNetV2", lambda d: mobilenet_v2(d.input_shape, 10), 8),
    _spec("h1", "EfficientNetLite-S", "EfficientNetLite",
          lambda d: efficientnet_lite(d.input_shape, 10, width=0.75), 8),
    _spec("h1", "RegNet-S", "RegNet", lambda d: regnet(d.input_shape, 10), 10),
    _spec("h1", "VGG-FC", "VGG", lambda d: vgg_fc(d.input_shape, 10), 10, 1e-3),
    _spec("h2", "BERT-L2-H64", "BERT", lambda d: bert(d.meta["seq_len"], d.meta["vocab_size"], 6,
                                                        layers=2, hidden=64), 12, 2e-3),
    _spec("h2", "XtremeDistil-L4-H96", "BERT",
          lambda d: bert(d.meta["seq_len"], d.meta["vocab_size"], 6, layers=4, hidden=96, heads=4),
          12, 2e-3),
    _spec("h2", "MobileBERT-L6-H48", "MobileBERT",
          lambda d: bert(d.meta["seq_len"], d.meta["vocab_size"], 6, layers=6, hidden=48, heads=2,
                         ffn=2), 12, 2e-3),
    _spec("h3-vision", "EfficientNetLite-S", "EfficientNetLite",
          lambda d: efficientnet_lite(d.input_shape, 6, width=0.5), 10),
    _spec("h3-vision", "EfficientNetLite-M", "EfficientNetLite",
          lambda d: efficientnet_lite(d.input_shape, 6, width=1.0, depth=1.5), 6),
    _spec("h3-vision", "MobileNetV2-0.5", "MobileNetV2",
          lambda d: mobilenet_v2(d.input_shape, 6, width=0.5), 10),
    _spec("h3-audio", "YAMNet-1D", "YAMNet", lambda d: yamnet_1d(d.input_shape, 10), 20),
    _spec("h4-parity", "ParityNet-MNV2", "MobileNetV2",
          lambda d: mobilenet_v2(d.input_shape, 2, width=0.5), 12),
    _spec("h4-value", "ValueNet-MNV2", "MobileNetV2",
          lambda d: mobilenet_v2(d.input_shape, 0, width=0.5), 15),
    _spec("h4-group", "GroupNet-MNV2", "MobileNetV2",
          lambda d: mobilenet_v2(d.input_shape, 5, width=0.5), 12),
]


# Memory-study models (issue 6: MASA, FlexNN), trained on h1 like the rest but kept out of the
# host profile's model list: they exist to be streamed layer by layer, and stand in for the
# papers' networks by architecture family (documented in workbench.memory.models).
MEMORY_SPECS: list[Spec] = [
    _spec("h1", "AgeNet-S", "AgeNet", lambda d: fc_net(d.input_shape, 10, convs=(24, 48, 96),
                                                      fcs=(512, 512), name="agenet-s"), 8, 1e-3),
    _spec("h1", "GenderNet-S", "AgeNet", lambda d: fc_net(d.input_shape, 10, convs=(24, 48, 96),
                                                         fcs=(512, 512), name="gendernet-s"),
          6, 1e-3),
    _spec("h1", "AlexNet-FC", "AlexNet", lambda d: fc_net(d.input_shape, 10), 6, 5e-4),
    _spec("h1", "VGG-S", "VGG", lambda d: fc_net(d.input_shape, 10, convs=(48, 96, 192),
                                                 fcs=(3072, 2048), name="vgg-s"), 5, 3e-4),
    # The last stage keeps 8x8 maps (no pooling): compute per weight byte like VGG-19's at 224x224.
    _spec("h1", "VGG-Conv", "VGG", lambda d: conv_net(d.input_shape, 10, stages=(64, 128, 256, 512),
                                                      pool_last=False), 8, 1e-3),
]


def specs(tasks: list[str] | None = None, *, quick: bool = False) -> list[Spec]:
    """Zoo entries for the tasks (default all). Quick: one model per task."""
    if tasks:
        unknown = [t for t in tasks if t not in ds.TASKS and t not in ds.GROUPS]
        if unknown:
            raise InputError(f"unknown task; known: {', '.join(list(ds.GROUPS) + list(ds.TASKS))}",
                             where="task", value=unknown[0])
        tasks = [x for t in tasks for x in ds.GROUPS.get(t, (t,))]
    out = [s for s in SPECS if tasks is None or s.task in tasks]
    if quick:
        seen, first = set(), []
        for s in out:
            if s.task not in seen:
                seen.add(s.task)
                first.append(s)
        out = first
    return out


def model_dir(spec: Spec, root: Path | None = None) -> Path:
    """Where a zoo model and its variants live (default root: the workspace's zoo)."""
    return _root(root) / spec.task / spec.model


def _root(root: str | os.PathLike | None) -> Path:
    return Path(root) if root else workspace.zoo_dir()


def train(spec: Spec, *, quick: bool = False, seed: int = 0, root: Path | None = None,
          data_root: Path | None = None, verbose: int = 0, isolate: bool = True) -> dict:
    """Train one zoo model (reproducibly from ``seed``) and save it with its record.

    Training runs in a fresh process by default: TensorFlow's CPU numerics depend on what the
    process did before (thread pools started by other libraries change oneDNN's reduction
    order), so only a clean process with fixed threads gives the same weights every time.

    Returns:
        The record written beside the model: params, epochs, validation and test metric, time.
    """
    ds.load(spec.task, quick=quick, root=data_root)  # build the cache outside the trainer
    root = _root(root)
    if not isolate:
        return _train_here(spec, quick=quick, seed=seed, root=Path(root), data_root=data_root,
                           verbose=verbose)
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "workbench.host.zoo", spec.task, spec.model, "--seed", str(seed),
           "--root", str(root)] + (["--quick"] if quick else []) + (
        ["--data-root", str(data_root)] if data_root else [])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0",
               OMP_NUM_THREADS="2", PYTHONHASHSEED=str(seed))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise TrainingFailed(f"training {spec.task}/{spec.model} failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _train_here(spec: Spec, *, quick: bool, seed: int, root: Path, data_root: Path | None,
                verbose: int = 0) -> dict:
    keras = _keras()
    import tensorflow as tf

    # A fresh Keras state (layer names, seed generators) and every seed set.
    keras.backend.clear_session(free_memory=True)
    keras.utils.set_random_seed(seed)
    tf.config.experimental.enable_op_determinism()
    d = ds.load(spec.task, quick=quick, root=data_root)
    model = spec.build(d)
    if d.metric == "MAE":
        loss, metrics = "mae", ["mae"]
    elif d.n_classes == 2:
        loss, metrics = "binary_crossentropy", ["accuracy"]
    else:
        loss, metrics = "sparse_categorical_crossentropy", ["accuracy"]
    # No XLA: its CPU autotuning can pick different kernels from one run to the next.
    model.compile(optimizer=keras.optimizers.Adam(spec.lr), loss=loss, metrics=metrics,
                  jit_compile=False)
    # Quick: the small datasets, fewer epochs, smaller batches (enough steps to beat chance).
    epochs, batch = (min(spec.epochs, 6), 32) if quick else (spec.epochs, 64)
    t0 = time.perf_counter()
    # Shuffle here with a seeded generator (Keras's own shuffle draws from TensorFlow state that
    # other work in the process, e.g. a converter run, can advance): one pass over all epochs.
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(len(d.y_train)) for _ in range(epochs)])
    model.fit(d.x_train[order], d.y_train[order], validation_data=(d.x_val, d.y_val), epochs=1,
              batch_size=batch, verbose=verbose, shuffle=False)
    train_s = time.perf_counter() - t0
    pred = model.predict(d.x_test, batch_size=256, verbose=0)
    out_dir = model_dir(spec, root)
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "model.tmp.keras"
    model.save(tmp)
    os.replace(tmp, out_dir / "model.keras")
    record = {"task": spec.task, "model": spec.model, "arch": spec.arch, "seed": seed,
              "epochs": epochs, "quick": quick, "params": int(model.count_params()),
              "metric": d.metric, "test_metric": d.score(pred), "chance": d.chance,
              "val_metric": d.score(model.predict(d.x_val, batch_size=256, verbose=0), d.y_val),
              "train_seconds": round(train_s, 2), "input_shape": list(d.input_shape)}
    atomic_write_json(out_dir / "record.json", record)
    return record


def model_file(spec: Spec, root: Path | None = None) -> Path:
    """The trained model's ``.keras`` file.

    Raises:
        InputError: Not trained yet (says how to train it).
    """
    path = model_dir(spec, root) / "model.keras"
    if not path.exists():
        raise InputError("model not built yet: run `workbench zoo build`", file=path)
    return path


def load_model(spec: Spec, root: Path | None = None):
    return _keras().models.load_model(model_file(spec, root))


def record(spec: Spec, root: Path | None = None) -> dict | None:
    p = model_dir(spec, root) / "record.json"
    return json.loads(p.read_text()) if p.exists() else None


def build(tasks: list[str] | None = None, *, quick: bool = False, seed: int = 0,
          root: Path | None = None, data_root: Path | None = None, progress: bool = True,
          quantise: bool = True, workers: int | None = None) -> list[dict]:
    """Train every zoo model of the tasks and (by default) quantise each to the five precisions.

    Each model trains in its own process (see :func:`train`), ``workers`` at a time (default:
    one per CPU core): a trainer keeps about one core busy, so two at once nearly halve the
    wall time on two cores, and the weights do not depend on it (fixed threads, deterministic
    ops). Models are quantised here, in order, as their training finishes.

    Returns:
        One record per model (with, when quantised, its variants), in :func:`specs` order.
    """
    from concurrent.futures import ThreadPoolExecutor

    todo = specs(tasks, quick=quick)
    for task in dict.fromkeys(s.task for s in todo):
        ds.load(task, quick=quick, root=data_root)  # each cache built once, before the trainers
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), desc="zoo", unit="model")
    n = max(1, min(len(todo), workers or os.cpu_count() or 1))
    out = []
    with ThreadPoolExecutor(n) as pool:
        futures = [pool.submit(train, spec, quick=quick, seed=seed, root=root,
                               data_root=data_root) for spec in todo]
        try:
            for spec, fut in zip(todo, futures):
                if bar is not None:
                    bar.set_postfix_str(f"{spec.task}/{spec.model}")
                rec = fut.result()
                if quantise:
                    rec["variants"] = quantise_spec(spec, quick=quick, root=root,
                                                    data_root=data_root)
                    atomic_write_json(model_dir(spec, root) / "record.json", rec)
                out.append(rec)
                if bar is not None:
                    bar.update()
        except BaseException:
            for f in futures:  # a failure (or Ctrl-C) starts no more trainers
                f.cancel()
            raise
        finally:
            if bar is not None:
                bar.close()
    return out


def quantise_spec(spec: Spec, *, quick: bool = False, root: Path | None = None,
                  data_root: Path | None = None, precisions: tuple[str, ...] | None = None
                  ) -> list[dict]:
    """Convert a trained zoo model to every precision (beside it in the zoo) and measure each
    variant's test metric with LiteRT: see :func:`workbench.host.quantise.quantise_keras`."""
    from . import quantise

    d = ds.load(spec.task, quick=quick, root=data_root)
    n_rep = 20 if quick else quantise.REPRESENTATIVE_SAMPLES
    rep = d.x_train[np.random.default_rng(0).permutation(len(d.x_train))[:n_rep]]
    return quantise.quantise_keras(model_file(spec, root), model_dir(spec, root),
                                   representative=rep,
                                   x_test=d.x_test, score=d.score, metric=d.metric,
                                   precisions=precisions or quantise.PRECISIONS)


def _main(argv: list[str] | None = None) -> int:
    """``python -m workbench.host.zoo TASK MODEL [--quick] [--seed N] [--root DIR] [--data-root DIR]``:
    train one model in this (fresh) process and print its record as JSON."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("task")
    ap.add_argument("model")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--root", required=True)
    ap.add_argument("--data-root", default=None)
    a = ap.parse_args(argv)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    spec = next((s for s in SPECS + MEMORY_SPECS if s.task == a.task and s.model == a.model),
                None)
    if spec is None:
        raise SystemExit(f"no zoo model {a.task}/{a.model}")
    rec = _train_here(spec, quick=a.quick, seed=a.seed, root=Path(a.root),
                      data_root=Path(a.data_root) if a.data_root else None)
    print(json.dumps(rec))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
