"""Measuring a converted variant: the evaluation inputs, A of its outputs (:func:`score`), how far
each output is from FP32's, and the variant record that holds it all."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from ... import taskmetrics
from ...errors import InputError
from ...fileio import staging
from ..intake import first_line, load_npz
from .records import GENERATED_SAMPLES, PRECISIONS, ModelRecord, VariantRecord


def _arrays(folder: Path, rec: ModelRecord) -> dict[str, np.ndarray]:
    if rec.data is None:
        rng = np.random.default_rng(0)
        shape = (GENERATED_SAMPLES, *rec.input_shape)
        if np.dtype(rec.input_dtype).kind in "iu":
            x = rng.integers(0, 100, shape).astype(rec.input_dtype)
        else:
            x = rng.uniform(-1, 1, shape).astype(np.float32)
        return {"x": x}
    return load_npz(folder / rec.data.file)


def score(rec: ModelRecord, y_pred: np.ndarray, arrays: dict[str, np.ndarray],
          reference: np.ndarray | None) -> taskmetrics.Score | None:
    """A of one variant's outputs, with its sample count and 95% interval (None: a relative
    metric with no FP32 reference yet)."""
    m = rec.task_metric
    target = reference if m.relative else arrays["y"]
    if target is None:
        return None
    y_pred = np.asarray(y_pred, dtype=np.float64)
    return m.score(y_pred.reshape(np.shape(target)) if m.labels == "values" else y_pred, target)


def _unavailable(precision: str, reason: str) -> VariantRecord:
    return VariantRecord(precision=precision, available=False, reason=reason[:400])


def _set(rec: ModelRecord, v: VariantRecord) -> None:
    rec.variants = sorted([x for x in rec.variants if x.precision != v.precision] + [v],
                          key=lambda x: PRECISIONS.index(x.precision))


def _measure(folder: Path, rec: ModelRecord, prec: str, target: Path, blob: bytes,
             arrays: dict[str, np.ndarray], seconds: float, strict: bool) -> VariantRecord:
    from .. import quantise as q

    # Every output of a multi-output model, to check each against FP32's (A reads one).
    refs = [(k, o.key, o.name) for k, o in enumerate(rec.outputs)]
    # onnxruntime's DR8 quantises activations with one scale per tensor, so a batch of 64
    # changes each sample's answer (one outlier sets every sample's scale); A is measured one
    # sample at a time, as the runtime serves them. LiteRT's hybrid kernels scale each sample
    # on its own, so its batches give the same answers.
    batch = 1 if target.suffix == ".onnx" else 64
    try:
        info = q.analyse(target)
        out, *every = q.predict_outputs(target, arrays["x"].astype(rec.input_dtype),
                                        [rec.output_ref, *refs], batch=batch)
    except Exception as exc:  # noqa: BLE001 - a variant LiteRT cannot run is unavailable
        target.unlink(missing_ok=True)
        engine = "onnxruntime" if target.suffix == ".onnx" else "LiteRT"
        why = f"{engine} cannot run it: {first_line(exc)}"
        if strict:
            raise InputError(why, file=rec.source) from None
        return _unavailable(prec, why)
    ref_path = folder / "fp32-outputs.npy"
    if prec == "FP32":
        tmp = staging(ref_path)  # whole or not at all: a torn file would fail every later run
        try:
            with open(tmp, "wb") as fh:
                np.save(fh, out.astype(np.float32))
            os.replace(tmp, ref_path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    every_path = folder / "fp32-every-output.npz"
    if prec == "FP32" and every:
        tmp = staging(every_path)
        try:
            with open(tmp, "wb") as fh:
                np.savez(fh, *[o.astype(np.float32) for o in every])
            os.replace(tmp, every_path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    parity = None
    if prec != "FP32" and every and every_path.is_file():
        with np.load(every_path) as z:
            parity = {o.name: output_error(got, z[f"arr_{k}"])
                      for k, (o, got) in enumerate(zip(rec.outputs, every))
                      if z[f"arr_{k}"].shape == got.shape}
    reference = np.load(ref_path) if ref_path.is_file() else None
    fp32 = rec.variant("FP32")
    if prec != "FP32" and fp32 is not None and fp32.available and fp32.flops is not None:
        # One network, one workload: a scheme changes the precision, not the arithmetic. The
        # graph a converter writes adds (de)quantise steps and folds or splits a bias, which
        # would give each scheme a W of its own (a few FLOPs apart) for the tie-break to read.
        info = {**info, "params": fp32.params, "flops": fp32.flops, "uncounted": {},
                "lower": "lower bound" in (fp32.note or "")}
    actual = q.detect_precision(target)
    note = None if actual == prec else (
        f"onnxruntime's tool produced a file that is effectively {actual}"
        if target.suffix == ".onnx" else
        f"the converter produced a file that is effectively {actual} (it leaves small weight "
        "tensors, under 1024 elements, in float)")
    lower = None
    if info.get("uncounted"):
        ops = ", ".join(f"{n} {op}" for op, n in info["uncounted"].items())
        lower = (f"W (FLOPs) is a lower bound: {ops} operator(s) have shapes that shape "
                 "inference cannot give (inside an If branch, for example) and are not counted")
    elif info.get("lower"):
        lower = "W (FLOPs) is FP32's, a lower bound (see FP32's note)"
    if lower:
        note = f"{note}; {lower}" if note else lower
    a = score(rec, out, arrays, reference)
    return VariantRecord(precision=prec, available=True, file=target.name, note=note,
                         sha256=hashlib.sha256(blob).hexdigest(), size_mb=len(blob) / 1e6,
                         params=info["params"], flops=info["flops"], n_ops=info["n_ops"],
                         ops=info["ops"], metric=None if a is None else a.value,
                         metric_n=None if a is None else a.n,
                         metric_lo=None if a is None else a.lo,
                         metric_hi=None if a is None else a.hi,
                         convert_seconds=round(seconds, 2), output_error=parity)


def output_error(got: np.ndarray, ref: np.ndarray) -> float:
    """How far one output is from FP32's: the mean absolute difference over every value, in %
    of the range of FP32's values (a constant FP32 output: of its magnitude, or 1). Unlike a
    cosine it sees a single-value output change (a probability 0.9 -> 0.1)."""
    ref = np.asarray(ref, np.float64)
    span = float(ref.max() - ref.min()) if ref.size else 0.0
    scale = span or float(np.abs(ref).max(initial=0.0)) or 1.0
    return 100.0 * float(np.abs(np.asarray(got, np.float64) - ref).mean()) / scale
