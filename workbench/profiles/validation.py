"""The phone model against held-out measurements: published latencies of mobile models on real
phones (``workbench/data/phones/validation.json``), never used to calibrate it.

Each row is predicted from the device's spec and the model's published mult-adds and parameters
(:func:`predict`), and :func:`error_by_engine` summarises the error per engine (CPU FP32, CPU
int8, GPU FP32, GPU FP16). Computation only; the CLI and the report draw it.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from . import phone_model as pm
from .schema import Device

#: The engines of the held-out rows, and how the model runs each (precision of the variant, and
#: whether the GPU keeps FP32).
ENGINES: dict[str, tuple[str, str, bool]] = {
    "CPU FP32": ("FP32", "CPU", False), "CPU int8": ("FX8", "CPU", False),
    "GPU FP32": ("FP32", "GPU", True), "GPU FP16": ("FP32", "GPU", False)}


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class EngineError:
    """Held-out error of one engine over its rows."""

    engine: str
    n: int
    median_abs_pct: float
    mean_pct: float
    max_abs_pct: float
    within_25_pct: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _variant(name: str, m: dict[str, Any], precision: str) -> pm.Variant:
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
    """Every held-out row with the model's prediction, from the devices' specs alone (the
    model's spec defaults: none of these phones is calibrated)."""
    P = parameters or pm.load_parameters()
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
                               source=source))
    return rows


def error_by_engine(rows: list[HeldOutRow]) -> list[EngineError]:
    """Median, mean (signed: + = the model is slow) and worst error per engine, in ENGINES order."""
    out = []
    for engine in ENGINES:
        errs = [r.error_pct for r in rows if r.engine == engine]
        if not errs:
            continue
        out.append(EngineError(engine=engine, n=len(errs),
                               median_abs_pct=statistics.median(abs(e) for e in errs),
                               mean_pct=statistics.fmean(errs),
                               max_abs_pct=max(abs(e) for e in errs),
                               within_25_pct=sum(abs(e) <= 25 for e in errs)))
    return out
