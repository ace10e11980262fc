"""Converting a registered model to its schemes (``workbench quantise``): in a child process that a
converter crash cannot take down, scheme by scheme with the record rewritten after each; a
``.tflite`` model registered as the one scheme it holds."""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from pathlib import Path
from typing import Iterable

import numpy as np

from ...errors import InputError
from ...fileio import atomic_write_text
from ..intake import shown
from .entries import _locked, _recover, _write, get, model_dir
from .measuring import _arrays, _measure, _set, _unavailable
from .records import CALIBRATION_SAMPLES, PRECISIONS, RECORD, RELATIVE, ModelRecord


def quantise(name: str, schemes: Iterable[str] = PRECISIONS, *, force: bool = False,
             progress: bool = True) -> ModelRecord:
    """Convert a registered model to the schemes it lacks and measure each with LiteRT.

    The record is rewritten after every scheme, so a killed run keeps what was done and the next
    run converts only the rest. A ``.tflite`` model holds one scheme: asking for others records
    them as unavailable with the reason.

    Raises:
        InputError: Unknown scheme or model, or the FP32 conversion itself fails (the model uses
            something the TFLite converter cannot handle; the converter's reason is kept).
    """
    schemes = tuple(schemes)
    for s in schemes:
        if s not in PRECISIONS:
            raise InputError(f"unknown scheme; expected some of {', '.join(PRECISIONS)}",
                             where="schemes", value=s)
    with _locked(name, wait=True, note=progress):
        _recover(name)
        rec = get(name)  # read with the lock held: a run that finished meanwhile is kept
        if rec.kind == "tflite":
            return _quantise_in(model_dir(name), rec, schemes, progress=progress, force=force,
                                strict=False)
        return _quantise_isolated(model_dir(name), rec, schemes, progress=progress, force=force)


#: Names the scheme a conversion process is converting (see :func:`_quantise_isolated`).
CONVERTING = ".converting"


def _todo(folder: Path, rec: ModelRecord, schemes: tuple[str, ...], force: bool) -> list[str]:
    """The schemes a quantise call converts, FP32 first (agreement compares every scheme with
    it, so it is converted when its outputs are missing)."""
    ref_path = folder / "fp32-outputs.npy"
    todo = [s for s in PRECISIONS if s in schemes or (s == "FP32" and rec.metric in RELATIVE
                                                        and schemes and not ref_path.is_file())]
    return [s for s in todo if force or rec.variant(s) is None]


def _quantise_isolated(folder: Path, rec: ModelRecord, schemes: tuple[str, ...], *,
                       progress: bool, force: bool) -> ModelRecord:
    """Convert in a child process (``python -m workbench.host._convert``), so that a converter
    or LiteRT crash (calibrating some graphs' int8 schemes has crashed the process here) costs
    only the scheme it hit: that scheme is recorded unavailable with the signal, and the
    remaining ones are converted in a new process. The child writes the record after every
    scheme, as an in-process run does, so nothing converted is lost."""
    import signal
    import subprocess

    todo = _todo(folder, rec, schemes, force)
    marker = folder / CONVERTING
    while todo:
        cmd = [sys.executable, "-m", "workbench.host._convert", str(folder), ",".join(todo)]
        if progress:
            cmd.append("--progress")
        marker.unlink(missing_ok=True)
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=None if progress else
                           subprocess.PIPE, text=True)
        rec = ModelRecord.model_validate_json((folder / RECORD).read_text())
        crashed = marker.read_text().strip() if marker.is_file() else None
        marker.unlink(missing_ok=True)
        if r.returncode == 0:
            break
        if crashed not in todo:
            tail = (r.stderr or "").strip().splitlines()
            raise InputError("the conversion process failed: " + (tail[-1][:300] if tail else
                             f"exit status {r.returncode}"), file=rec.source)
        try:
            how = f"signal {signal.Signals(-r.returncode).name}" if r.returncode < 0 else \
                f"exit status {r.returncode}"
        except ValueError:
            how = f"signal {-r.returncode}"
        _set(rec, _unavailable(crashed, f"the converter or LiteRT crashed the process ({how}) "
                                        f"while converting and measuring {crashed}"))
        _write(rec, folder)
        todo = todo[todo.index(crashed) + 1:]
    return rec


def _quantise_in(folder: Path, rec: ModelRecord, schemes: tuple[str, ...], *, progress: bool,
                 force: bool, strict: bool, marker: bool = False) -> ModelRecord:
    from .. import quantise as q

    arrays = _arrays(folder, rec)
    if rec.kind == "tflite":
        return _register_tflite(folder, rec, schemes, arrays)
    todo = _todo(folder, rec, schemes, force)
    if not todo:
        return rec
    calib = arrays.get("x_calib", arrays["x"][:CALIBRATION_SAMPLES])
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), desc=f"quantise {rec.name}", unit="scheme")
    with contextlib.ExitStack() as stack:
        if bar is not None:
            stack.callback(bar.close)
        if rec.kind == "keras":
            custom = folder / rec.custom_objects if rec.custom_objects else None
            source, _ = stack.enter_context(q.exported(folder / rec.file, custom))
        else:
            source = str(folder / rec.file)
        if rec.kind == "onnx":
            from .. import onnxgraph

            def convert(prec: str) -> bytes:
                try:
                    return onnxgraph.convert(folder / rec.file, prec, rec.input_shape,
                                             calib.astype(rec.input_dtype), rec.feeds)
                except onnxgraph.OnnxError as exc:
                    raise q.ConversionError(str(exc)) from None
        else:
            def convert(prec: str) -> bytes:
                calibrated = rec.input_plan is not None and prec in ("FX8", "FFX8")
                blob = q.convert(source, prec, calib.astype(rec.input_dtype),
                                 others=(rec.data_input, _other_samples(folder, rec))
                                 if calibrated and rec.data_input is not None else None)
                return q.with_input_plan(blob, rec.input_plan) if rec.input_plan else blob
        for prec in todo:
            if bar is not None:
                bar.set_postfix_str(prec)
            t0 = time.perf_counter()
            if marker:
                atomic_write_text(folder / CONVERTING, prec)
            try:
                blob = convert(prec)
            except q.ConversionError as exc:
                if prec == "FP32" and strict:
                    tool = "onnxruntime" if rec.kind == "onnx" else "the TFLite converter"
                    raise InputError(f"{tool} cannot convert it: {exc}",
                                     file=rec.source) from None
                _set(rec, _unavailable(prec, str(exc)))
                _write(rec, folder)
                (folder / CONVERTING).unlink(missing_ok=True)
                if bar is not None:
                    bar.update()
                continue
            target = q.write_variant(folder, prec, blob,
                                     suffix=".onnx" if rec.kind == "onnx" else ".tflite")
            seconds = time.perf_counter() - t0
            _set(rec, _measure(folder, rec, prec, target, blob, arrays, seconds, strict))
            _write(rec, folder)
            (folder / CONVERTING).unlink(missing_ok=True)
            if bar is not None:
                bar.update()
    return rec


def _other_samples(folder: Path, rec: ModelRecord) -> dict[str, np.ndarray]:
    """For int8 calibration of a model with several inputs: one sample of each input the data
    does not feed (by signature key), as the runtime feeds them, read from the FP32 variant
    (converted first)."""
    from ...runtime.interpreter import input_names, open_interpreter

    fp32 = rec.variant("FP32")
    if fp32 is None or not fp32.file:
        raise InputError("int8 calibration of a model with several inputs needs its FP32 "
                         "variant: quantise FP32 first", file=shown(folder))
    it = open_interpreter(folder / fp32.file, batch=1)
    names = input_names(it)
    return {names[d["index"]]: it.get_tensor(d["index"]) for d in it.get_input_details()[1:]}


def _register_tflite(folder: Path, rec: ModelRecord, schemes: tuple[str, ...],
                     arrays: dict[str, np.ndarray]) -> ModelRecord:
    from .. import quantise as q

    src = folder / rec.file
    prec = q.detect_precision(src)
    if rec.variant(prec) is None:
        target = folder / f"{prec}.tflite"
        if rec.input_plan:  # the copy carries how to feed it (the user's file is not touched)
            target.write_bytes(q.with_input_plan(src.read_bytes(), rec.input_plan))
        else:
            shutil.copyfile(src, target)
        v = _measure(folder, rec, prec, target, target.read_bytes(), arrays, 0.0, strict=True)
        if rec.metric in RELATIVE:
            # A lone file agrees with itself: that says nothing, so no A.
            v.metric = v.metric_n = v.metric_lo = v.metric_hi = None
        _set(rec, v)
    for s in schemes:
        if s != prec and rec.variant(s) is None:
            _set(rec, _unavailable(s, f"a .tflite file holds one scheme ({prec}); add the Keras "
                                       "model or SavedModel to get the others"))
    _write(rec, folder)
    return rec
