"""Delen's multi-exit nets built here: trained (PyTorch) on the host datasets, exported to ONNX,
their exits profiled for real with onnxruntime (:class:`Built`); the small zoo (:data:`MODELS`),
the full-size EfficientNet-Lite ports on Fashion-MNIST (:data:`REALS`) and the profile
``workbench multiexit`` writes (:func:`build_profile`)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ....host import datasets as ds
from ....multiexit.policies import ExitProfile
from ....multiexit.profiling import folder_size_mb, measure_exit_profile, store_multiexit
from ....multiexit.runner import SegmentedNet

#: Delen's reported numbers we set beside ours (data with its citation: workbench/data/papers).


MODELS = {  # name -> (task, backbone, in channels)
    "ResNet-ME (h1)": ("h1", "resnet", 1),
    "EffNet-ME (h3-vision)": ("h3-vision", "effnet", 3),
    "Audio1D-ME (h3-audio)": ("h3-audio", "audio1d", 1),
}


@dataclass
class Built:
    """A trained, exported and profiled multi-exit net."""

    name: str
    task: str
    net: SegmentedNet
    profile: ExitProfile
    x: np.ndarray
    y: np.ndarray
    train_accuracy: list[float]
    size_mb: float
    folder: str
    segment_mb: list[float] | None = None


@contextlib.contextmanager
def _scratch(folder: str | Path | None, prefix: str) -> Iterator[tuple[Path, bool]]:
    """The folder a build writes to, and whether it is a temporary one made here; a build that
    fails part-way removes the temporary folder it made (a given folder is the caller's)."""
    if folder is not None:
        yield Path(folder), False
        return
    made = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield made, True
    except BaseException:
        shutil.rmtree(made, ignore_errors=True)
        raise


def _finish(name: str, task: str, folder: Path, made: bool, *, arch: str, info: dict,
            flops: Any, exit_accuracy: list[float], shape: tuple[int, ...], x: np.ndarray,
            y: np.ndarray) -> Built:
    """What every build ends with: the exported segments stored as a multi-exit model, opened,
    profiled on the test inputs, and returned as a :class:`Built`. A temporary folder lives as
    long as its Built (the ONNX sessions are already open, so the nets keep running without
    it): removed when the Built is dropped or at exit, so a notebook's builds leave nothing in
    /tmp."""
    store_multiexit(folder, arch=arch, task=task, segments=info["segments"],
                    accuracy=exit_accuracy, flops=flops, input_shape=shape)
    sn = SegmentedNet(folder, info["segments"], flops=flops, accuracy=exit_accuracy)
    prof = measure_exit_profile(sn, x, y, flops=flops, repeats=1, name=name)
    built = Built(name, task, sn, prof, x, np.asarray(y), exit_accuracy,
                  folder_size_mb(folder, info["segments"]), str(folder),
                  [folder_size_mb(folder, [f]) for f in info["segments"]])
    if made:
        weakref.finalize(built, shutil.rmtree, built.folder, ignore_errors=True)
    return built


def build(name: str, *, quick: bool = False, width: int = 32, epochs: int | None = None,
          seed: int = 0, folder: str | Path | None = None) -> Built:
    """Train (PyTorch), export (ONNX) and profile (onnxruntime) one of :data:`MODELS`.

    Without ``folder`` the segments go to a temporary folder removed with the returned
    :class:`Built` (pass a folder to keep them, e.g. for a bundle)."""
    from ....multiexit.training import MultiExitNet, count_flops, export_onnx, to_torch, train

    task, arch, cin = MODELS[name]
    data = ds.load(task, quick=quick)
    net = MultiExitNet(arch, cin, data.n_classes, width=width)
    res = train(net, data, epochs=epochs or (8 if quick else 12), seed=seed, task=task)
    shape = (cin, *data.x_train.shape[1:-1])
    with _scratch(folder, "delen-") as (out, made):
        info = export_onnx(net, shape, out, plain=False)
        return _finish(name, task, out, made, arch=name.split(" ")[0], info=info,
                       flops=count_flops(net, shape), exit_accuracy=res.exit_accuracy,
                       shape=shape, x=to_torch(data.x_test, net.dims).numpy(), y=data.y_test)


#: The real-scale multi-exit nets: EfficientNet-Lite0/1/2 (ImageNet weights) on Fashion-MNIST.
REALS = {v: f"EffNetLite{v}-ME (fashion)" for v in (0, 1, 2)}

#: The real-scale net of the single-net figures (5, 7, 11-13) and IMG1 of Figs 9-10, 14-15.
REAL = REALS[0]


def real_folder(variant: int = 0) -> Path:
    """Where a real-scale net is kept (its segments and its cached backbone features)."""
    from .... import workspace

    return workspace.zoo_dir() / "multiexit" / REALS[variant].split(" ")[0]


def build_real(*, variant: int = 0, n_train: int = 5000, n_test: int = 2000,
               folder: str | Path | None = None, seed: int = 0,
               progress: Callable[[str], None] | None = None) -> Built:
    """EfficientNet-Lite``variant`` with four exits on Fashion-MNIST (``multiexit.pretrained``):
    the frozen pretrained backbone's pooled features of ``n_train`` training and ``n_test`` test
    images (cached in ``folder``: the backbone runs over them once), heads trained on them,
    segments exported to ONNX and the exit profile measured on the test images. Without
    ``folder`` all of it goes to a temporary folder removed with the returned :class:`Built`."""
    import torch

    from ....host import fashion
    from ....multiexit import pretrained as P
    from ....multiexit.training import count_flops, export_onnx

    name = REALS[variant]
    torch.set_num_threads(2)
    xtr, ytr, xte, yte = fashion.load()
    rng = np.random.default_rng(seed)
    itr = np.sort(rng.choice(len(xtr), n_train, replace=False))
    ite = np.sort(rng.choice(len(xte), n_test, replace=False))
    x_train, y_train = xtr[itr] / np.float32(255.0), ytr[itr]
    x_test, y_test = (xte[ite] / np.float32(255.0)).astype(np.float32), yte[ite]
    net = P.lite(variant, len(fashion.CLASSES))
    with _scratch(folder, "delen-real-") as (out, made):
        out.mkdir(parents=True, exist_ok=True)
        cache = out / f"features-{n_train}-{n_test}-{seed}.npz"
        if cache.is_file():
            z = np.load(cache)
            f_tr = [z[f"train{k}"] for k in range(4)]
            f_te = [z[f"test{k}"] for k in range(4)]
        else:
            def tick(what):
                return (lambda done, n: progress(f"  {name}: {what} features {done}/{n}")
                        if progress and (done == n or done % 1024 == 0) else None)
            f_tr = P.pooled_features(net, x_train, progress=tick("training"))
            f_te = P.pooled_features(net, x_test, progress=tick("test"))
            arrays: dict[str, Any] = {f"train{k}": a for k, a in enumerate(f_tr)}
            arrays.update({f"test{k}": a for k, a in enumerate(f_te)})
            np.savez(cache, **arrays)
        res = P.train_heads(net, f_tr, y_train, f_te, y_test, task="fashion", seed=seed)
        shape = (1, 28, 28)
        info = export_onnx(net, shape, out, plain=True)
        return _finish(name, "fashion", out, made, arch=name.split(" ")[0], info=info,
                       flops=count_flops(net, shape), exit_accuracy=res.exit_accuracy,
                       shape=shape, x=x_test.reshape(len(x_test), *shape), y=y_test)


def build_profile(*, quick: bool = False, width: int = 32, epochs: int | None = None,
                  points: int = 10, progress: Callable[[str], None] | None = None):
    """Train, export and measure every model of :data:`MODELS` and return a measured profile of
    their operating points (``workbench multiexit build``).

    Args:
        points: Pareto threshold vectors kept per model as configurations.
        progress: Called with a line of text before and after each model.
    """
    from .... import workspace
    from ....multiexit.profiling import multiexit_profile

    models = []
    for name in MODELS:
        if progress:
            progress(f"training, exporting and measuring {name} ...")
        # Kept in the zoo: bundles of these operating points carry the segments from there.
        b = build(name, quick=quick, width=width, epochs=epochs,
                  folder=workspace.zoo_dir(quick=quick) / "multiexit" / name.split(" ")[0])
        models.append({"profile": b.profile, "name": name, "task": b.task,
                       "arch": name.split(" ")[0], "size_mb": b.size_mb, "folder": b.folder,
                       "description": ds.load(b.task, quick=quick).description})
        if progress:
            acc = ", ".join(f"{a:.3f}" for a in b.profile.accuracy)
            progress(f"  exit accuracy {acc}; {b.size_mb:.2f} MB")
    return multiexit_profile(models, pareto_points=points)


def storage_rows(builds: list[Built]) -> list[dict[str, Any]]:
    """One stored multi-exit model against a separate model per operating depth (each exit's
    backbone prefix and head stored on its own), the saving CARIn/Delen's one-model design buys."""
    rows = []
    for b in builds:
        seg = b.segment_mb or []
        separate = float(sum(np.cumsum(seg)))
        rows.append({"model": b.name, "exits": len(seg), "multi_exit_mb": b.size_mb,
                     "separate_models_mb": separate,
                     "saving": separate / b.size_mb if b.size_mb else None})
    return rows
