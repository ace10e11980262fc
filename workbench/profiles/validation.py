"""The phone model against published measurements: latencies of mobile models on real phones
(``workbench/data/phones/validation.json``), none of them the papers' phones.

Each row is predicted from the device's spec and the model's published mult-adds and parameters
(:func:`predict`). A split fixed in the data before any fit (:func:`split_of`) puts some rows in
a calibration set: per engine, one fixed and one proportional term (:class:`Calibration`,
``calibrated = fixed_ms + scale x modelled``) are fitted to them, and :func:`error_by_engine`
summarises the error on the other rows per engine and precision (CPU FP32, CPU int8, GPU FP32,
GPU FP16, NNAPI FP32, NNAPI int8). Computation only; the CLI and the report draw it.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from . import phone_model as pm
from .schema import Device, Precision

#: The engines of the rows, and how the model runs each (precision of the variant, the engine
#: of the model, and whether the GPU keeps FP32). NNAPI is where the 2019-2020 Qualcomm drivers
#: sent the work (the data's "nnapi" note): float to the GPU at FP32, quantised to the DSP.
ENGINES: dict[str, tuple[Precision, str, bool]] = {
    "CPU FP32": ("FP32", "CPU", False), "CPU int8": ("FX8", "CPU", False),
    "GPU FP32": ("FP32", "GPU", True), "GPU FP16": ("FP32", "GPU", False),
    "NNAPI FP32": ("FP32", "GPU", True), "NNAPI int8": ("FX8", "DSP", False),
    "DSP int8": ("FX8", "DSP", False)}

#: An engine with no calibration rows takes another engine's terms: the GPU delegate's dispatch
#: and driver costs do not depend on the arithmetic's precision, and the Pixel 3's NNAPI ran
#: quantised models on its Hexagon DSP.
BORROWS = {"GPU FP32": "GPU FP16", "DSP int8": "NNAPI int8"}

SPLITS = ("calibration", "held-out")
_CAL_DEVICE, _CAL_FAMILY, _CAL_SIZES = "pixel3", "MobileNet V1 ", (128, 224)


#: How far a held-out row is from the calibration rows: the same phone and family at other sizes
#: (interpolation), another family on the same phone, or another phone. The headline error is
#: over the last two ("transfer"): interpolation says little about a phone the model never saw.
GROUPS = ("calibration", "interpolation", "other family", "other phone")
TRANSFER = ("other family", "other phone")


def group_of(device: str, model: str) -> str:
    if split_of(device, model) == "calibration":
        return "calibration"
    if device != _CAL_DEVICE:
        return "other phone"
    return "interpolation" if model.startswith(_CAL_FAMILY) else "other family"


def split_of(device: str, model: str) -> str:
    """The data's split (its "split" note), decided before any fit: the Pixel 3's MobileNet V1
    rows at 128 and 224 pixels calibrate; every other row is held out."""
    m = re.fullmatch(r"MobileNet V1 [0-9.]+ (\d+)", model)
    return ("calibration" if device == _CAL_DEVICE and m and int(m.group(1)) in _CAL_SIZES
            else "held-out")


@lru_cache(maxsize=1)
def _data_text() -> str:
    return resources.files("workbench.data.phones").joinpath("validation.json").read_text("utf-8")


def data() -> dict[str, Any]:
    """The held-out data set (a fresh copy)."""
    return json.loads(_data_text())


@dataclass(frozen=True)
class HeldOutRow:
    """One published latency beside the model's prediction (error = modelled / measured - 1)."""

    device: str
    model: str
    engine: str
    #: CPU threads and kernels ("xnnpack", or "unstated": predicted with the builtin kernels).
    threads: int | None
    kernels: str | None
    measured_ms: float
    modelled_ms: float
    error_pct: float
    #: Rows with unstated CPU kernels predicted with XNNPACK on instead (reported, not chosen).
    modelled_xnnpack_ms: float | None
    source: str
    split: str = "held-out"
    group: str = "other phone"
    #: The prediction with the calibration's terms (None: the engine has none).
    calibrated_ms: float | None = None
    calibrated_error_pct: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Calibration:
    """Per calibrated engine: ``calibrated = fixed_ms + scale x modelled``, fitted (non-negative
    least squares on relative error) to the calibration rows; the rows each fit used."""

    terms: dict[str, tuple[float, float]]
    rows: dict[str, int]
    borrowed: dict[str, str]

    def key(self, engine: str, kernels: str | None) -> str | None:  # noqa: ARG002
        """The terms a row takes: its engine's, or the engine's it borrows from. CPU rows take
        them whatever their kernels (every calibration row ran builtin kernels; the phone model
        applies them to XNNPACK too, so that the two libraries keep the spec's ratio)."""
        k = BORROWS.get(engine, engine) if engine not in self.terms else engine
        return k if k in self.terms else None

    def apply(self, engine: str, kernels: str | None, modelled_ms: float) -> float | None:
        k = self.key(engine, kernels)
        if k is None:
            return None
        fixed, scale = self.terms[k]
        return fixed + scale * modelled_ms

    def to_dict(self) -> dict[str, Any]:
        return {"terms": {k: {"fixed_ms": round(a, 4), "scale": round(b, 4)}
                          for k, (a, b) in self.terms.items()},
                "rows": self.rows, "borrowed": self.borrowed}


def fit_calibration(rows: list[HeldOutRow]) -> Calibration:
    """Fit each engine's two terms to its calibration rows (builtin CPU kernels only)."""
    import numpy as np
    from scipy.optimize import nnls

    terms, used = {}, {}
    for engine in ENGINES:
        cal = [r for r in rows if r.engine == engine and r.split == "calibration"
               and r.kernels != "xnnpack"]
        if len(cal) < 3:  # two terms need more rows than that to say anything
            continue
        y = np.array([r.measured_ms for r in cal])
        m = np.array([r.modelled_ms for r in cal])
        (a, b), _ = nnls(np.column_stack([1.0 / y, m / y]), np.ones(len(y)))
        terms[engine], used[engine] = (float(a), float(b)), len(cal)
    borrowed = {e: src for e, src in BORROWS.items() if e not in terms and src in terms}
    return Calibration(terms=terms, rows=used, borrowed=borrowed)


@dataclass(frozen=True)
class EngineError:
    """Error of one engine over its rows (by default: held out, calibrated)."""

    engine: str
    n: int
    median_abs_pct: float
    #: Mean absolute percentage error (MAPE).
    mape_pct: float
    mean_pct: float
    max_abs_pct: float
    within_25_pct: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _variant(name: str, m: dict[str, Any], precision: Precision) -> pm.Variant:
    h, w = (int(x) for x in m["input"].split("x"))
    return pm.Variant(task="held-out", model=name, arch=m["arch"], precision=precision,
                      flops=2.0 * float(m["madds"]), params=float(m["params"]),
                      input_elements=h * w * 3, batch=1, accuracy=0.0)


def predict(device: pm.ModelDevice, variant: pm.Variant, engine: str, *, P: dict[str, Any],
            threads: int = 4, xnnpack: bool = False) -> float:
    """The model's mean latency (ms) of ``variant`` on ``engine`` (CPU: ``threads`` threads on
    the fastest cores, XNNPACK on or off)."""
    _, proc, fp32 = ENGINES[engine]
    if proc == "CPU":
        return pm.model_cpu(variant, device, threads, xnnpack, P=P)["L"]
    out = pm.model_delegate(variant, device, proc, P=P, gpu_fp32=fp32)
    if out is None:
        raise ValueError(f"{device.spec.name} cannot run {variant.model} on {engine}")
    return out["L"]


def held_out(parameters: dict[str, Any] | None = None) -> list[HeldOutRow]:
    """Every row with the model's prediction from the device's spec alone (the model's spec
    defaults: none of these phones is one of the papers'), and with the terms fitted to the
    calibration rows (:func:`fit_calibration`)."""
    P = dict(parameters or pm.load_parameters())
    P.pop("public_calibration", None)  # predict from the spec alone; the fit below is the calibration
    d = data()
    devices = {k: pm.model_device(Device.model_validate(v), P) for k, v in d["devices"].items()}
    rows = []
    for device, model, engine, threads, kernels, ms, source in d["rows"]:
        v = _variant(model, d["models"][model], ENGINES[engine][0])
        cpu = ENGINES[engine][1] == "CPU"
        # Unstated kernels: builtin (decided before comparing, see the data's "kernels" note).
        got = predict(devices[device], v, engine, P=P, threads=threads or 4,
                      xnnpack=kernels == "xnnpack")
        alt = (predict(devices[device], v, engine, P=P, threads=threads or 4, xnnpack=True)
               if cpu and kernels == "unstated" else None)
        rows.append(HeldOutRow(device=device, model=model, engine=engine, threads=threads,
                               kernels=kernels, measured_ms=float(ms), modelled_ms=got,
                               error_pct=100.0 * (got / ms - 1.0), modelled_xnnpack_ms=alt,
                               source=source, split=split_of(device, model),
                               group=group_of(device, model)))
    cal = fit_calibration(rows)
    out = []
    for r in rows:
        c = cal.apply(r.engine, r.kernels, r.modelled_ms)
        out.append(HeldOutRow(**(r.to_dict() | {
            "calibrated_ms": c,
            "calibrated_error_pct": None if c is None else 100.0 * (c / r.measured_ms - 1.0)})))
    return out


def calibration(parameters: dict[str, Any] | None = None) -> Calibration:
    """The terms fitted to the calibration rows."""
    return fit_calibration(held_out(parameters))


def error_by_engine(rows: list[HeldOutRow], *, split: str | None = "held-out",
                    calibrated: bool = True, devices: set[str] | None = None,
                    groups: tuple[str, ...] | None = None) -> list[EngineError]:
    """Median, mean (signed: + = the model is slow) and worst error per engine, in ENGINES order,
    over the rows of ``split`` (None: all) in ``groups`` (None: all) on ``devices`` (None: all);
    ``calibrated`` uses the calibrated prediction where the row has one, else the spec-only one."""
    out = []
    for engine in ENGINES:
        sel = [r for r in rows if r.engine == engine and (split is None or r.split == split)
               and (devices is None or r.device in devices)
               and (groups is None or r.group in groups)]
        errs = [r.calibrated_error_pct if calibrated and r.calibrated_error_pct is not None
                else r.error_pct for r in sel]
        if not errs:
            continue
        out.append(EngineError(engine=engine, n=len(errs),
                               median_abs_pct=statistics.median(abs(e) for e in errs),
                               mape_pct=statistics.fmean(abs(e) for e in errs),
                               mean_pct=statistics.fmean(errs),
                               max_abs_pct=max(abs(e) for e in errs),
                               within_25_pct=sum(abs(e) <= 25 for e in errs)))
    return out
