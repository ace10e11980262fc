"""Modelled profiles: every configuration of each variant (CPU options, delegates, OODIn's
recognition rates) as profile rows with their engines, tasks and provenance; CARIn's profiles
of the papers' phones (or any spec), OODIn's, and the committed files regenerated."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Sequence

from ... import papers
from ..importers import config_id
from ..schema import (
    PRECISIONS,
    Arithmetic,
    Config,
    Device,
    Engine,
    EngineOptions,
    Profile,
    Provenance,
    Task,
)
from .device import DEVICES, ModelDevice, _default_parameters, model_device
from .engines import _nnapi_dr8, _r, model_cpu, model_delegate
from .variants import OODIN_RATES, USE_CASES, Variant, oodin_variants, paper_variants

#: CPU options swept, CARIn section 6.4.
THREADS = (1, 2, 4, 8)
XNNPACK = (True, False)


def _engines(device: ModelDevice) -> list[Engine]:
    dev = device.params
    out = [Engine(name="CPU", kind="CPU", precisions=list(PRECISIONS), native=["fp32", "int8"],
                  options=EngineOptions(threads=list(THREADS), xnnpack=list(XNNPACK),
                                        governors=list(dev["governors"])))]
    for kind, eng in dev["engines"].items():
        native: list[Arithmetic] = ["fp16", "fp32"] if kind == "GPU" else (
            ["int8", "fp16"] if eng.get("fp16_tflops") else ["int8"])
        out.append(Engine(name=kind, kind=kind, precisions=list(eng["precisions"]), native=native,
                          options=EngineOptions(delegate_precision=(
                              ["fp16"] if kind == "GPU" else
                              (["fp16", "int8"] if eng.get("fp16_tflops") else ["int8"])))))
    return out


def parameters_digest(P: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(P, sort_keys=True).encode()).hexdigest()[:16]


def _at_rate(c: Config, r: float | None) -> Config:
    """A row at recognition rate ``r`` (OODIn): inference on a fraction ``r`` of the frames,
    so the frames served per second are TP / r and the energy per frame E x r; a recognition
    takes as long as before. ``None`` leaves the row as it is (no such knob)."""
    if r is None:
        return c
    if r == 1:
        return c.model_copy(update={"recognition_rate": 1.0})
    assert c.TP is not None and c.E is not None
    return c.model_copy(update={"id": f"{c.id}:r{r:g}", "recognition_rate": r,
                                "TP": _r(c.TP / r), "E": _r(c.E * r)})


def _variant_rows(v: Variant, md: ModelDevice, P: dict[str, Any], *, threads: Iterable[int],
                  governors: Sequence[str | None] = (None,), dr8_on_delegates: bool = False,
                  rates: Sequence[float | None] = (None,)) -> list[Config]:
    """Every configuration of one variant: CPU rows for each governor (None: the default, and
    no governor field) x thread count x XNNPACK on/off, then a row for each delegate that runs
    it, each at every recognition rate in ``rates`` (None: no such knob). ``dr8_on_delegates``:
    OODIn's dynamic-range models also run on the GPU (dequantised to FP16) and on NNAPI (its CPU
    reference path, :func:`_nnapi_dr8`); CARIn's profiles keep DR8 on the CPU only."""
    rows = []
    for gov in governors:
        for t in threads:
            for xnn in XNNPACK:
                m = model_cpu(v, md, t, xnn, P=P, governor=gov)
                rows.append(Config(
                    id=config_id(v.model, v.precision, "CPU", task=v.task, threads=t, xnnpack=xnn,
                                 extra=gov),
                    task=v.task, model=v.model, arch=v.arch, precision=v.precision,
                    processor="CPU", threads=t, xnnpack=xnn, governor=gov, batch=v.batch,
                    source="modelled", **m))
    for kind in md.params["engines"]:
        if dr8_on_delegates and v.precision == "DR8":
            d = (model_delegate(replace(v, precision="FP16"), md, kind, P=P) if kind == "GPU"
                 else _nnapi_dr8(v, md, kind, P))
        else:
            d = model_delegate(v, md, kind, P=P)
        if d is None:
            continue
        dp: Arithmetic = "fp16" if kind == "GPU" or v.precision in ("FP32", "FP16") else "int8"
        rows.append(Config(
            id=config_id(v.model, v.precision, kind, task=v.task), task=v.task, model=v.model,
            arch=v.arch, precision=v.precision, processor=kind, delegate_precision=dp,
            batch=v.batch, source="modelled", **d))
    return [_at_rate(c, r) for c in rows for r in rates]


def build_profile(device: str | Device, *, use_cases: Iterable[str] = USE_CASES,
                  parameters: dict[str, Any] | None = None) -> Profile:
    """A modelled profile of one phone for the models of the given CARIn use cases.

    Args:
        device: One of ``DEVICES`` (its spec and its calibration), or any device's spec
            (:func:`load_spec`; modelled with the papers' phones' median calibration).
        use_cases: CARIn use cases whose models to include.
        parameters: Model parameters (default: the packaged file).

    Returns:
        A Profile whose every row has ``source='modelled'``. Same inputs, same bytes.
    """
    P = _default_parameters() if parameters is None else parameters
    md = model_device(device, P)
    use_cases = tuple(use_cases)
    variants = paper_variants(use_cases)
    dev = md.params
    configs = [c for v in variants for c in _variant_rows(v, md, P, threads=THREADS)]
    tasks = []
    for uc in use_cases:
        for name in papers.use_case_tasks(uc):
            t = papers.model_table(name)
            tasks.append(Task(name=name, metric=t["metric"], higher_is_better=t["higher_is_better"],
                              dataset=t["dataset"], batch=int(t.get("batch", 1))))
    cites = [papers.citation("carin")] + ([papers.citation("oodin")]
                                          if "oodin" in dev["paper"] else [])
    if md.calibrated:
        spec_note = (f"device spec: workbench/data/phones/specs/{md.spec.name}.json ({dev['paper']}); "
                     "model parameters calibrated on the papers' published designs (CARIn Table 7)")
    else:
        spec_note = ("device spec given by the user; NOT calibrated on this device: engine "
                     "efficiencies and overheads are the median of the papers' phones' calibrated "
                     "values (model_parameters.json spec_defaults)"
                     + ("; latencies of the CPU, GPU and DSP then take the public calibration "
                        "(fitted to published Pixel 3 measurements: model_parameters.json "
                        "public_calibration)" if P.get("public_calibration") else ""))
    prov = Provenance(
        method=f"analytical model workbench.profiles.phone_model v{P['model_version']}",
        citation="; ".join(cites),
        notes=[
            "MODELLED, not measured: phones are not available; latency, memory and energy come "
            "from an analytical model of published chip specs.",
            spec_note,
            "model accuracies, FLOPs and params from CARIn Tables 2-5",
            f"model parameters sha256[:16]={parameters_digest(P)} "
            "(workbench/data/phones/model_parameters.json)",
            "units: ms, MB, FLOPs (per inference call, x batch), mJ, samples/s",
        ])
    contention = {k: float(v) for k, v in P["contention"].items() if k != "source"}
    return Profile(device=md.spec, source="modelled", provenance=prov,
                   engines=_engines(md), tasks=tasks, configs=configs,
                   contention=contention)


def build_oodin_profile(device: str | Device, *, parameters: dict[str, Any] | None = None
                        ) -> Profile:
    """A modelled profile of OODIn Table II's DNNs (one task each) with OODIn's system
    parameters: engine (CPU, GPU, NNAPI's NPU or DSP), CPU threads 1..N_cores with XNNPACK on
    or off, every DVFS governor of the device (CPU rows; delegates run under the default) and
    the recognition rates :data:`OODIN_RATES`.
    A DR8 (OODIn "INT8") model runs on the GPU dequantised to FP16 and on NNAPI through its
    CPU reference path (:func:`_nnapi_dr8`)."""
    P = _default_parameters() if parameters is None else parameters
    md = model_device(device, P)
    dev = md.params
    configs: list[Config] = []
    tasks: dict[str, Task] = {}
    for v in oodin_variants():
        tasks.setdefault(v.task, Task(name=v.task, metric="mIoU" if v.arch == "DeepLabV3" else "top1",
                                      higher_is_better=True,
                                      dataset="PASCAL VOC 2012" if v.arch == "DeepLabV3" else "ImageNet"))
        configs += _variant_rows(v, md, P, threads=range(1, len(md.cores) + 1),
                                 governors=dev["governors"], dr8_on_delegates=True,
                                 rates=OODIN_RATES)
    prov = Provenance(
        method=f"analytical model workbench.profiles.phone_model v{P['model_version']} (OODIn Table II)",
        citation=papers.citation("oodin"),
        notes=["MODELLED, not measured: phones are not available.",
               "models from OODIn Table II (INT8 = dynamic-range DR8); ResNet, Inception and "
               "DeepLabV3 families are estimates, never calibrated",
               f"model parameters sha256[:16]={parameters_digest(P)}"])
    contention = {k: float(v) for k, v in P["contention"].items() if k != "source"}
    return Profile(device=md.spec, source="modelled", provenance=prov, engines=_engines(md),
                   tasks=list(tasks.values()), configs=configs, contention=contention)


def regenerate(out_dir: str | Path, *, devices: Iterable[str] = DEVICES,
               use_cases: Iterable[str] = USE_CASES, parameters: dict[str, Any] | None = None,
               progress: bool = False) -> list[Path]:
    """Write ``<out_dir>/<device>.json`` for each device; returns the paths written."""
    from ..store import save_profile

    devices = list(devices)
    it: Iterable[str] = devices
    if progress:
        from tqdm import tqdm
        it = tqdm(devices, desc="modelling profiles", unit="device")
    paths = []
    for d in it:
        prof = build_profile(d, use_cases=use_cases, parameters=parameters)
        paths.append(save_profile(prof, Path(out_dir) / f"{d}.json"))
    return paths
