"""Adding a model (``workbench models add``): checked, copied into a staging folder with its data,
its FP32 variant converted and compared with Keras, then renamed into place."""

from __future__ import annotations

import hashlib
import os
import shutil
from datetime import date
from pathlib import Path
from typing import Iterable

import numpy as np

from ... import taskmetrics
from ...errors import InputError
from ...fileio import replace_dir
from ..intake import (
    Kind,
    check_data,
    choose_output,
    copy_file,
    copy_tree,
    inspect_model,
    kind_of,
    load_npz,
    parse_feeds,
    parse_shape,
    shown,
)
from .converting import _quantise_in
from .entries import _locked, _recover, _staging, _write, check_name, model_dir
from .measuring import _arrays
from .records import (
    CALIBRATION_SAMPLES,
    CUSTOM_OBJECTS,
    NAME_RE,
    RELATIVE,
    SOURCE,
    DataRecord,
    ModelRecord,
    OutputRecord,
)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def add(path: str | os.PathLike, *, name: str, task: str, data: str | os.PathLike | None = None,
        metric: str | None = None, input_shape: str | Iterable[int] | None = None,
        arch: str | None = None, overwrite: bool = False, progress: bool = False,
        cited: dict[str, float] | None = None, citation: str | None = None,
        output: str | int | None = None,
        custom_objects: str | os.PathLike | None = None,
        feeds: dict[str, float] | Iterable[str] | None = None) -> ModelRecord:
    """Register a model (a ``.keras`` file, a SavedModel folder or a ``.tflite`` file).

    The model is read and checked, the data checked against it, both copied into the registry,
    and the FP32 variant converted and measured (a ``.tflite`` file is registered as the one
    scheme it holds). Nothing is left behind when any step fails.

    A model with several outputs is profiled whole; ``output`` (an index or a name: a Keras
    output's name, a SavedModel's signature key, a .tflite tensor's name) says which one the
    metric reads (default: the first). An ONNX model's inputs after the first are fed
    ``feeds`` (``{"sr": 16000}`` or ``["sr=16000"]``), else zeros (ones if integer).

    Raises:
        InputError: A bad name or task, an unreadable or unsupported model, data that does not
            fit it, or the name taken (unless ``overwrite``).
    """
    check_name(name)
    if not isinstance(task, str) or not NAME_RE.match(task):
        raise InputError("a task name is 1-64 letters, digits, '.', '_' or '-'", where="task",
                         value=task)
    if arch is not None:  # shown in profiles, tables and the explorer as the model's family
        from ...names import check_name as check_label

        check_label(arch, what="model family", where="--arch")
    if metric is not None and metric not in taskmetrics.BY_NAME:
        raise InputError(f"unknown metric; expected one of {', '.join(taskmetrics.NAMES)}",
                         where="metric", value=metric)
    src = Path(path).expanduser()
    if not src.exists():
        raise InputError("no such model file", file=shown(src))
    folder = model_dir(name)
    if folder.exists() and not overwrite:
        raise _taken(name, folder)
    kind = kind_of(src)
    shape = parse_shape(input_shape)
    custom = Path(custom_objects).expanduser() if custom_objects is not None else None
    feed_values = parse_feeds(feeds)
    data_path = Path(data).expanduser() if data is not None else None
    arrays = load_npz(data_path) if data_path is not None else None
    model, fixed, dtype, outs, notes, plan = inspect_model(
        src, kind, shape, custom, feed_values,
        data_shape=tuple(arrays["x"].shape[1:]) if arrays is not None else None)
    k = choose_output(outs, output, src)
    if any(d is None for d in outs[k].shape):
        raise InputError(f"the model's output {outs[k].name!r} has free dimensions "
                         f"{tuple(outs[k].shape)}" + ("; choose a fixed one with --output"
                                                      if len(outs) > 1 else ""),
                         file=shown(src))
    out_shape = [int(d) for d in outs[k].shape]
    outputs = [OutputRecord(name=o.name, key=o.key, shape=list(o.shape)) for o in outs] \
        if len(outs) > 1 else []
    if arrays is None or data_path is None:  # no data (they are given together)
        if metric is not None and not taskmetrics.get(metric).relative:
            raise InputError(f"metric {metric} needs task data: give --data DATA.npz with x and y",
                             where="metric", value=metric)
        metric = metric if metric in RELATIVE else "agreement"
    else:
        metric = check_data(data_path, arrays, input_shape=fixed, input_dtype=dtype,
                            output_shape=out_shape, metric=metric)
    with _locked(name, wait=False):
        _recover(name)
        if folder.exists() and not overwrite:
            raise _taken(name, folder)
        return _build(folder, src, kind, model, name=name, task=task, data_path=data_path,
                      arrays=arrays, metric=metric, fixed=fixed, dtype=dtype,
                      out_shape=out_shape, arch=arch, cited=cited, citation=citation,
                      progress=progress, outputs=outputs, output=k if outputs else 0,
                      notes=notes, custom=custom, feeds=feed_values,
                      data_input=plan["data"] if plan else None)


def _taken(name: str, folder: Path) -> InputError:
    return InputError(f"a model named {name!r} is registered already (remove it first, or pass "
                      "--force to replace it)", file=shown(folder))


def _build(folder: Path, src: Path, kind: Kind, model, *, name: str, task: str,
           data_path: Path | None, arrays: dict[str, np.ndarray] | None, metric: str,
           fixed: tuple[int, ...], dtype: str, out_shape: list[int], arch: str | None,
           cited: dict[str, float] | None, citation: str | None, progress: bool,
           outputs: list[OutputRecord] | None = None, output: int = 0,
           notes: list[str] | None = None, custom: Path | None = None,
           feeds: dict[str, float] | None = None, data_input: str | None = None) -> ModelRecord:
    """With the lock held: the new entry built in a staging folder beside ``folder``, then
    renamed into place (swapped with the old one for --force)."""
    tmp = _staging(folder)
    try:
        target = tmp / SOURCE[kind]
        if model is not None:  # Keras: saved again (a fixed input shape may have been given)
            from ..quantise import _quiet

            with _quiet():
                model.save(target)
        elif kind == "savedmodel":
            copy_tree(src, target)
        else:
            copy_file(src.resolve(), target)  # the path the user named may be a link
        if custom is not None:  # kept with the model: quantise and profile load it again
            copy_file(custom.resolve(), tmp / CUSTOM_OBJECTS)
        data_rec = None
        if arrays is not None and data_path is not None:
            copy_file(data_path.resolve(), tmp / "data.npz")
            n_calib = len(arrays.get("x_calib", arrays["x"][:CALIBRATION_SAMPLES]))
            data_rec = DataRecord(sha256=_sha256(tmp / "data.npz"), source=data_path.name,
                                  n_eval=len(arrays["x"]), n_calib=n_calib,
                                  calibration="x_calib" if "x_calib" in arrays else
                                  f"the first {n_calib} samples of x")
        rec = ModelRecord(name=name, task=task, arch=arch or (getattr(model, "name", None) or name),
                          kind=kind, file=SOURCE[kind], sha256=_sha256(target), source=str(src),
                          added=date.today().isoformat(), input_shape=list(fixed),
                          input_dtype=dtype, output_shape=out_shape, metric=metric,
                          outputs=outputs or [], output=output, notes=list(notes or []),
                          custom_objects=CUSTOM_OBJECTS if custom is not None else None,
                          feeds=dict(feeds or {}), data_input=data_input,
                          data=data_rec, cited=dict(cited or {}), citation=citation)
        _write(rec, tmp)
        rec = _quantise_in(tmp, rec, ("FP32",) if kind != "tflite" else (), progress=progress,
                           force=False, strict=True)
        if model is not None:
            _check_fp32(tmp, rec, model, (arrays or _arrays(tmp, rec))["x"])
        replace_dir(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return rec


def _check_fp32(folder: Path, rec: ModelRecord, model, x_eval: np.ndarray) -> None:
    """Compare the FP32 .tflite with Keras one sample at a time: a conversion that changes what
    the model computes (for example a Resizing layer makes the exported graph keep its batch
    norms in training mode) is noted on the FP32 variant, and ``models add`` prints it."""
    from .. import quantise as q

    v = rec.variant("FP32")
    if v is None or not v.available or not v.file:
        return
    x = x_eval[:8].astype(rec.input_dtype)
    if len(model.inputs) > 1:  # the other inputs as the runtime feeds them
        from ...runtime.interpreter import placeholder

        rest = [np.full((len(x), *i.shape[1:]), rec.feeds[i.name], dtype=i.dtype)
                if i.name in rec.feeds else
                placeholder({"shape": (len(x), *i.shape[1:]), "dtype": np.dtype(i.dtype)})
                for i in model.inputs[1:]]
        want = model.predict([x, *rest], verbose=0)
    else:
        want = model.predict(x, verbose=0)
    if isinstance(want, (list, tuple)):
        want = want[rec.output]
    elif isinstance(want, dict):  # outputs given as a dict: by its key
        want = want[rec.outputs[rec.output].name] if rec.outputs else next(iter(want.values()))
    want = np.asarray(want, np.float64).reshape(len(x), -1)
    got = np.asarray(q.predict(folder / v.file, x, batch=1, output=rec.output_ref),
                     np.float64).reshape(len(x), -1)
    diff = float(np.abs(want - got).max())
    if diff > 1e-3 * (1.0 + float(np.abs(want).max())):
        v.note = (f"LiteRT's FP32 output differs from Keras's by up to {diff:.3g}: the conversion "
                  "changed the model (a Resizing layer, for example, exports batch norms in "
                  "training mode); its A is what LiteRT computes")
        _write(rec, folder)
