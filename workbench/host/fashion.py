"""A measured task at real scale: Fashion-MNIST (Debian's ``dataset-fashion-mnist``: 60,000 training
and 10,000 test images, 28x28 grey, 10 classes, MIT) classified by a full-size ImageNet backbone at
its own resolution with a trained linear head.

The model takes the dataset's 28x28x1 images in [0, 1] and does in-graph what a camera pipeline
would: bilinear upsampling to the backbone's size (224 for MobileNetV2; x8), grey to RGB, the
backbone's normalisation; then the frozen pretrained backbone, global pooling and a softmax layer.
The head is a multinomial logistic regression (scikit-learn, deterministic) on the backbone's
pooled features of ``n_train`` training images (default 10,000: feature extraction runs at ~55
images/s on 2 cores; 60,000 takes ~20 min). Accuracy is measured on held-out test images with
LiteRT for every scheme (``workbench quantise``), never cited.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import WorkbenchError

DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")
CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot")


def _idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(root: str | os.PathLike | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                          np.ndarray]:
    """(x_train, y_train, x_test, y_test): uint8 images (N, 28, 28) and labels, from the Debian
    package's IDX files.

    Raises:
        WorkbenchError: The package is not installed (says how to install it).
    """
    root = Path(root) if root else Path(os.environ.get("WORKBENCH_FASHION_MNIST", DEBIAN_DIR))
    names = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    missing = [n for n in names if not (root / n).is_file()]
    if missing:
        raise WorkbenchError(f"Fashion-MNIST is not installed ({root / missing[0]} is missing): "
                             "apt-get install dataset-fashion-mnist (make setup does it)")
    x_train, y_train, x_test, y_test = (_idx(root / n) for n in names)
    return x_train, y_train, x_test, y_test


def model(backbone: str = "MobileNetV2-1.0", *, head: tuple[np.ndarray, np.ndarray] | None = None):
    """The 28x28x1 -> 10-class model on a pretrained backbone (head weights (1280, 10), (10,))."""
    from . import pretrained
    from .tf import keras as _keras

    keras = _keras()
    L = keras.layers
    spec = pretrained.get(backbone)
    if not spec.pretrained:
        raise WorkbenchError(f"{backbone} has no pretrained weights to transfer")
    inp = keras.Input((28, 28, 1), name="image")
    # UpSampling2D, not Resizing: with a Resizing layer in the graph the exported model keeps
    # its batch norms in training mode (batch statistics; accuracy then depends on the batch).
    k = -(-spec.size // 28)
    x = L.UpSampling2D(k, interpolation="bilinear")(inp)
    extra = 28 * k - spec.size
    if extra:
        x = L.Cropping2D(((extra // 2, extra - extra // 2),) * 2)(x)
    x = L.Concatenate()([x, x, x])
    if spec.preprocessing == "torchvision":
        mean, std = pretrained.TORCHVISION_MEAN, pretrained.TORCHVISION_STD
        x = L.Normalization(mean=mean.tolist(), variance=(std ** 2).tolist())(x)
    else:
        x = L.Rescaling(255.0 / 128.0, offset=-127.0 / 128.0)(x)
    imagenet: Any = spec.build(spec, inputs=(inp, x))
    f = imagenet.layers[-2].output  # global pooling, before the ImageNet logits
    out = L.Dense(10, activation="softmax", name="head")(f)
    net = keras.Model(inp, out, name=f"fashion-{backbone.lower()}")
    if head is not None:
        net.get_layer("head").set_weights([head[0].astype(np.float32),
                                           head[1].astype(np.float32)])
    return net


def train_head(backbone: str = "MobileNetV2-1.0", *, n_train: int = 10000, seed: int = 0,
               progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Fit the linear head on the frozen backbone's features of ``n_train`` training images
    (a seeded, class-stratified sample)."""
    from sklearn.linear_model import LogisticRegression

    x_train, y_train, _, _ = load()
    rng = np.random.default_rng(seed)
    per = max(1, n_train // 10)
    idx = np.concatenate([rng.permutation(np.flatnonzero(y_train == c))[:per] for c in range(10)])
    net = model(backbone)
    features = net.get_layer("head").input
    from .tf import keras as _keras

    extract = _keras().Model(net.input, features)
    feats = extract.predict(x_train[idx, :, :, None].astype(np.float32) / 255.0, batch_size=64,
                            verbose=1 if progress else 0)
    clf = LogisticRegression(max_iter=2000, C=1.0)
    clf.fit(feats, y_train[idx])
    return clf.coef_.T.copy(), clf.intercept_.copy()


def register(name: str = "fashion-mnv2", *, backbone: str = "MobileNetV2-1.0",
             n_train: int = 10000, n_test: int = 1000, seed: int = 0, progress: bool = True,
             overwrite: bool = False):
    """Train the head, then add the model to the registry (task ``fashion``) with ``n_test``
    held-out test images as its data and 100 training images (not used for the head's test) as
    int8 calibration. Returns the registry record (FP32 measured; ``workbench quantise`` does
    the rest)."""
    from . import registry

    w, b = train_head(backbone, n_train=n_train, seed=seed, progress=progress)
    _, _, x_test, y_test = load()
    x_train, _, _, _ = load()
    rng = np.random.default_rng(seed + 1)
    test = rng.permutation(len(x_test))[:n_test]
    calib = rng.permutation(len(x_train))[:100]
    with tempfile.TemporaryDirectory(prefix="workbench-fashion-") as tmp:
        path = Path(tmp) / "model.keras"
        model(backbone, head=(w, b)).save(path)
        data = Path(tmp) / "fashion-mnist.npz"
        np.savez(data, x=x_test[test, :, :, None].astype(np.float32) / 255.0,
                 y=y_test[test].astype(np.int64),
                 x_calib=x_train[calib, :, :, None].astype(np.float32) / 255.0)
        return registry.add(path, name=name, task="fashion", data=data, metric="accuracy",
                            arch=backbone, overwrite=overwrite, progress=progress)
