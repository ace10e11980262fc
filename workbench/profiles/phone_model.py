"""Analytical model of the papers' phones: modelled (not measured) device profiles.

Phones are not available to this project, so the profiles of the Pixel 7, Galaxy S20 FE, Galaxy
A71 and Xperia C5 are computed by the model below from published chip specs. Every number it uses
lives in ``workbench/data/phones/model_parameters.json`` with a note on its source; nothing is a
constant in this file. The model, per configuration (model variant x engine x options):

* **Latency.** ``L = invoke + per-op overhead + compute + memory traffic (+ I/O transfer and CPU
  fallback for delegates)``. CPU compute = workload / effective rate, where each core's rate is
  ``clock x FLOPs-per-cycle(precision) x kernel efficiency``, per operator: the family's dense
  (GEMM-like) and depthwise multiply-adds at the kernel library's (builtin or XNNPACK)
  efficiency for each class, combined harmonically (:func:`kernel_efficiency`); threads go to the
  fastest cores first and their rates combine as ``lb * sum + (1 - lb) * n * min`` (work-splitting
  balance) divided by ``1 + sync * (n - 1)``. Precisions the CPU does not run natively fall back
  (FP16 is dequantised to FP32 at load; DR8 uses hybrid kernels). Delegates (GPU, NPU, DSP) run
  the fraction of the graph they support at ``peak(precision path) x efficiency`` and hand the rest
  to the CPU with a cost per partition; a GPU pays a fixed cost per kernel (one per operator).
* **Variability.** Latency samples are log-normal with a coefficient of variation that grows with
  threads and with LITTLE cores; std, p50/p90/p99 and the expected min/max of 100 runs follow.
* **Memory** (peak footprint MF): runtime base + the mmapped model file + weights as executed
  (XNNPACK's repacked copy, FP16 dequantised to FP32, a delegate's own copy) + activation arena +
  delegate runtime.
* **Energy** E = (static power + power of the engines in use) x latency.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from statistics import NormalDist
from typing import Any, Iterable, Sequence

from .. import papers
from ..errors import InputError
from .importers import config_id
from .schema import (
    PRECISIONS,
    Config,
    Device,
    Engine,
    EngineOptions,
    Profile,
    Provenance,
    Task,
)

#: The devices the model knows (their parameters are in model_parameters.json).
DEVICES = ("pixel7", "s20fe", "a71", "xperia-c5")
#: CARIn's use cases whose models are profiled by default.
USE_CASES = ("uc1", "uc2", "uc3", "uc4")
#: CPU options swept, CARIn section 6.4.
THREADS = (1, 2, 4, 8)
XNNPACK = (True, False)

_BYTES = {"FP32": 4.0, "FP16": 2.0, "DR8": 1.0, "FX8": 1.0, "FFX8": 1.0}


@dataclass(frozen=True)
class Variant:
    """A model variant m = (arch, params, s_in, task, precision) from CARIn Tables 2-5."""

    task: str
    model: str
    arch: str
    precision: str
    flops: float
    params: float
    input_elements: int
    batch: int
    accuracy: float


def _param_text() -> str:
    return resources.files("workbench.data.phones").joinpath("model_parameters.json").read_text(
        "utf-8")


@lru_cache(maxsize=1)
def _default_parameters() -> dict[str, Any]:
    return json.loads(_param_text())


def load_parameters(path: str | Path | None = None) -> dict[str, Any]:
    """The model's parameters: the packaged file, or a copy of it the user edited."""
    if path is None:
        return json.loads(json.dumps(_default_parameters()))
    from ..fileio import parse_json, read_text

    # A user's file: bounded, strictly decoded, duplicate keys refused (fileio's one reader).
    data = parse_json(read_text(path, what="phone-model parameters file"), file=path)
    if not isinstance(data, dict):
        raise InputError("a parameters file holds a JSON object", file=path)
    return data


def paper_spec(device: str) -> Device:
    """The spec of one of the papers' phones (``workbench/data/phones/specs/<device>.json``), in
    the form of a profile's ``device`` section: what ``--spec`` takes for any other device."""
    if device not in DEVICES:
        raise InputError(f"unknown device; the phone model knows {', '.join(DEVICES)} (or give "
                         "any device's spec with --spec)", value=device)
    text = resources.files("workbench.data.phones").joinpath("specs", f"{device}.json").read_text(
        "utf-8")
    return Device.model_validate_json(text)


def load_spec(path: str | Path) -> Device:
    """A device spec file: a profile's ``device`` section, alone or inside ``{"device": ...}``
    (so a profile can be given too). A bad file is one InputError naming the file and field."""
    from pydantic import ValidationError

    from ..fileio import parse_json, read_text
    from .store import error_from_validation

    data = parse_json(read_text(path, what="device spec"), file=path)
    if isinstance(data, dict) and isinstance(data.get("device"), dict):
        data = data["device"]
    if not isinstance(data, dict):
        raise InputError("a device spec is a JSON object (a profile's device section)", file=path)
    try:
        return Device.model_validate(data)
    except ValidationError as e:  # one line naming the file, JSON path and value, as profiles do
        raise error_from_validation(e, file=path) from None


@dataclass(frozen=True)
class ModelDevice:
    """A device as the model runs it: its spec, every core (type, GHz) fastest first, and the
    parameters the model needs, derived from the spec and, for the papers' phones, overlaid with
    what was calibrated for them (``calibrated``)."""

    spec: Device
    cores: tuple[tuple[str, float], ...]
    params: dict[str, Any]
    calibrated: bool


def model_device(device: str | Device, P: dict[str, Any]) -> ModelDevice:
    """Resolve a papers' phone by name (its spec and its calibration) or any spec (defaults)."""
    spec = paper_spec(device) if isinstance(device, str) else device
    cal = P["devices"].get(device) if isinstance(device, str) else None
    known = [k for k in P["core_types"] if k != "source"]
    if not spec.cpu_clusters:
        raise InputError("a device spec needs cpu_clusters (core, count, ghz)", where="cpu_clusters")
    for i, cl in enumerate(spec.cpu_clusters):
        if cl.core not in P["core_types"] or cl.core == "source":
            raise InputError(f"unknown core type; the model knows {', '.join(known)}",
                             where=f"cpu_clusters[{i}].core", value=cl.core)
    D = P["spec_defaults"]
    governors = list(spec.governors) or list(D["governors"])
    unknown = [g for g in governors if g not in P["governors"]]
    if unknown:
        raise InputError("unknown governor; the model knows "
                         + ", ".join(k for k in P["governors"] if k != "source"),
                         where="governors", value=unknown[0])
    if spec.dram_gbps is not None:
        dram = spec.dram_gbps
    elif spec.ram_mhz is not None:
        dram = spec.ram_mhz * 2 * D["bus_bytes"] / 1e3
    else:
        raise InputError("a device spec needs dram_gbps or ram_mhz (memory traffic is modelled)",
                         where="dram_gbps")
    engines: dict[str, dict[str, Any]] = {}
    for kind, acc in (("GPU", spec.gpu), ("NPU", spec.npu), ("DSP", spec.dsp)):
        if acc is None:
            continue
        if kind == "GPU":
            fp32 = acc.fp32_gflops or (acc.fp16_gflops / 2 if acc.fp16_gflops else None)
            if fp32 is None:
                raise InputError("a GPU is modelled from its throughput: give fp32_gflops (and "
                                 "fp16_gflops if not twice that)", where="gpu.fp32_gflops")
            figures = {"fp32_gflops": fp32, "fp16_gflops": acc.fp16_gflops or 2 * fp32}
        else:
            if acc.int8_tops is None:  # modelled from its throughput, never from its name
                raise InputError(f"the {kind} is modelled from its throughput: give int8_tops (and "
                                 "fp16_tflops if it runs floats)", where=f"{kind.lower()}.int8_tops")
            figures = {"int8_tops": acc.int8_tops, "fp16_tflops": acc.fp16_tflops or 0.0}
        base = dict(D["engines"][kind])
        if kind != "GPU" and not figures["fp16_tflops"]:
            base["precisions"] = ["FX8", "FFX8"]  # integer-only accelerators
        if cal is not None:
            if kind not in cal["engines"]:
                continue
            base.update(cal["engines"][kind])
        engines[kind] = base | figures
    params = {"dram_gbps": dram, "static_power_w": D["static_power_w"],
              "variability_scale": D["variability_scale"],
              "default_governor": (D["default_governor"] if D["default_governor"] in governors
                                   else governors[0]),
              "governors": governors, "paper": ""}
    if cal is not None:
        params.update({k: v for k, v in cal.items() if k != "engines"})
    params["engines"] = engines
    cores = []
    for cl in spec.cpu_clusters:
        cores += [(cl.core, float(cl.ghz))] * int(cl.count)
    ct = P["core_types"]
    cores.sort(key=lambda c: -ct[c[0]]["fp32_flops_per_cycle"] * c[1])
    return ModelDevice(spec=spec, cores=tuple(cores), params=params, calibrated=cal is not None)


def _input_elements(spec: str, kind: str) -> int:
    dims = [int(x) for x in spec.lower().split("x")]
    n = math.prod(dims)
    return n * 3 if kind == "image" else n


def paper_variants(use_cases: Iterable[str] = USE_CASES) -> list[Variant]:
    """Every model variant of the given CARIn use cases that exists ('-' variants are skipped)."""
    out = []
    for uc in use_cases:
        for task in papers.use_case_tasks(uc):
            t = papers.model_table(task)
            for m in t["models"]:
                for prec in PRECISIONS:
                    acc = m["accuracy"].get(prec)
                    if acc is None:
                        continue
                    out.append(Variant(
                        task=task, model=m["model"], arch=m["arch"], precision=prec,
                        flops=float(m["flops"]), params=float(m["params"]),
                        input_elements=_input_elements(m["input"], t["input_kind"]),
                        batch=int(t.get("batch", 1)), accuracy=float(acc)))
    return out


#: OODIn Table II's models and the families whose parameters the model uses for them.
OODIN_FAMILIES = {"MobileNetV2": "MobileNetV2", "EfficientNetLite": "EfficientNetLite",
                  "ResNetV2": "ResNet", "InceptionV3": "Inception", "DeepLabV3": "DeepLabV3"}
#: OODIn's phones (Table I).
OODIN_DEVICES = ("xperia-c5", "a71", "s20fe")
#: OODIn's recognition rates r modelled (section III-B: r = 1 runs inference on every frame,
#: r = 0.5 on every second one).
OODIN_RATES = (1.0, 0.5, 0.25)


def oodin_task(row: dict[str, Any]) -> str:
    """The task name of one evaluated DNN of OODIn Table II, e.g. ``mobilenetv2-1.0-int8``."""
    return f"{row['model']} {row['precision']}".lower().replace(" ", "-")


def oodin_variants() -> list[Variant]:
    """OODIn Table II's eleven evaluated DNNs, each its own task. OODIn's INT8 is TFLite
    dynamic-range quantisation (section III-E): DR8 here."""
    out = []
    for r in papers.paper("oodin")["models"]["rows"]:
        family = next(v for k, v in OODIN_FAMILIES.items() if r["model"].replace(" ", "").startswith(k))
        out.append(Variant(task=oodin_task(r), model=r["model"], arch=family,
                           precision="DR8" if r["precision"] == "INT8" else r["precision"],
                           flops=float(r["flops"]), params=float(r["params"]),
                           input_elements=_input_elements(r["resolution"], "image"), batch=1,
                           accuracy=float(r["accuracy"])))
    return out


# --- the model ---------------------------------------------------------------------------------

def _lognormal_stats(mean: float, cv: float, runs: int) -> dict[str, float]:
    """Std, quantiles and expected extremes of `runs` log-normal samples with this mean and CV."""
    s2 = math.log1p(cv * cv)
    s, mu = math.sqrt(s2), math.log(mean) - s2 / 2
    z = NormalDist().inv_cdf

    def q(p: float) -> float:
        return math.exp(mu + s * z(p))

    return {"L": mean, "L_std": cv * mean, "L_p50": q(0.5), "L_p90": q(0.9), "L_p99": q(0.99),
            "L_min": q(0.5 / runs), "L_max": q(1 - 0.5 / runs)}


def kernel_efficiency(arch: dict[str, Any], kernels: str, precision: str,
                      P: dict[str, Any]) -> float:
    """Fraction of a core's peak (fp32 FMA or int8 dot-product) that ``arch``'s layers reach
    with ``kernels`` ("builtin" or "xnnpack") at ``precision`` ("fp32" or "int8"): per operator
    class, dense (GEMM-like: 1x1 and full convolutions, fully connected, matmul) and depthwise,
    weighted by the family's share of multiply-adds in each (time adds up, so rates combine
    harmonically), times the family's fit for what the classes do not capture."""
    eff = P["cpu"]["kernels"][kernels][precision]
    dw = arch["dw_share"]
    return arch["cpu_fit"] / ((1.0 - dw) / eff["dense"] + dw / eff["depthwise"])


def _cpu_rates(variant: Variant, cores: list[tuple[str, float]], xnnpack: bool,
               P: dict[str, Any], speed: float) -> list[float]:
    """Per-core achieved rate (FLOPs/ms) for this variant's kernels."""
    arch, cpu, ct = P["architectures"][variant.arch], P["cpu"], P["core_types"]
    lib = "xnnpack" if xnnpack else "builtin"
    int8 = variant.precision in ("FX8", "FFX8")
    if int8:
        peak, eff = "int8_ops_per_cycle", kernel_efficiency(arch, lib, "int8", P)
    elif variant.precision == "DR8":
        # DR8's hybrid kernels are builtin: XNNPACK takes few hybrid operators, so they gain
        # only dr8_xnnpack_gain from it.
        peak = "fp32_flops_per_cycle"
        eff = (kernel_efficiency(arch, "builtin", "fp32", P) * cpu["dr8_gain"]
               * (cpu["dr8_xnnpack_gain"] if xnnpack else 1.0))
    else:  # FP32, and FP16 dequantised to FP32 at load time
        peak, eff = "fp32_flops_per_cycle", kernel_efficiency(arch, lib, "fp32", P)
    return [ghz * 1e9 * ct[core][peak] * eff * speed / 1e3 for core, ghz in cores]


def _cpu_compute_ms(work: float, rates: list[float], xnnpack: bool, P: dict[str, Any]) -> float:
    kind = "xnnpack" if xnnpack else "builtin"
    lb, sync = P["cpu"]["load_balance"][kind], P["cpu"]["sync"][kind]
    n = len(rates)
    eff = (lb * sum(rates) + (1 - lb) * n * min(rates)) / (1 + sync * (n - 1))
    return work / eff


def _act_bytes(precision: str, engine_kind: str) -> float:
    if engine_kind in ("GPU",):
        return 2.0
    if engine_kind in ("NPU", "DSP"):
        return 1.0 if precision in ("FX8", "FFX8") else 2.0
    return 1.0 if precision in ("FX8", "FFX8") else 4.0


def size_mb(variant: Variant, P: dict[str, Any]) -> float:
    """Model file size S (MB): parameters at the stored precision plus graph overhead."""
    return variant.params * _BYTES[variant.precision] / 1e6 * (1 + P["memory"]["graph_overhead"])


def model_cpu(variant: Variant, device: ModelDevice, threads: int, xnnpack: bool, *,
              P: dict[str, Any], governor: str | None = None) -> dict[str, float]:
    """Metrics of a variant on the CPU with `threads` threads and XNNPACK on or off."""
    dev = device.params
    gov = P["governors"][governor or dev["default_governor"]]
    cores = list(device.cores[:threads])
    rates = _cpu_rates(variant, cores, xnnpack, P, gov["speed"])
    arch, cpu, mem, var = (P["architectures"][variant.arch], P["cpu"], P["memory"],
                           P["variability"])
    work = variant.flops * variant.batch
    w_exec = variant.params * (4.0 if variant.precision in ("FP32", "FP16") else 1.0)  # bytes
    act = arch["act_per_input"] * variant.input_elements * variant.batch
    traffic = w_exec + act * _act_bytes(variant.precision, "CPU") * 2  # write + read
    t = (cpu["invoke_ms"] + arch["n_ops"] * cpu["per_op_us"]["xnnpack" if xnnpack else "builtin"]
         / 1e3 + _cpu_compute_ms(work, rates, xnnpack, P)
         + traffic / (dev["dram_gbps"] * 1e9 * cpu["dram_efficiency"]) * 1e3)
    all_cores = device.cores
    slowest = all_cores[-1][0]
    n_fast = sum(1 for c in all_cores if c[0] != slowest) or len(all_cores)
    cv = (var["cpu_base"] + var["cpu_per_thread"] * (threads - 1)
          + (var["cpu_little_cores"] if threads > n_fast else 0.0)
          + (0.0 if xnnpack else var["cpu_builtin_extra"]) + gov["cv"]) * dev["variability_scale"]
    S = size_mb(variant, P)
    mf = mem["cpu_base_mb"] + mem["per_thread_mb"] * threads + S + act * _act_bytes(
        variant.precision, "CPU") / 1e6
    if variant.precision == "FP16":
        mf += variant.params * 4 / 1e6          # dequantised fp32 copy
    if xnnpack and variant.precision != "DR8":  # XNNPACK repacks the weights it runs
        mf += w_exec / 1e6 + mem["xnnpack_workspace_mb"]
    if variant.precision == "FX8":              # float input/output buffers around the int8 graph
        mf += variant.input_elements * variant.batch * 4 / 1e6
    power = dev["static_power_w"] + sum(P["core_types"][c]["power_w"] for c, _ in cores) * gov[
        "speed"]
    # Both kernel libraries take the CPU terms (fitted on builtin-kernel rows): terms on one alone
    # would turn the spec's XNNPACK advantage around (an outside review found RASS then
    # preferring builtin kernels on every spec-only phone); DR8 and FP16 take the FP32 terms.
    t = public_calibration(t, device, "CPU int8" if variant.precision in ("FX8", "FFX8")
                           else "CPU FP32", P)
    return _finish(variant, t, cv, mf, power, P)


def model_delegate(variant: Variant, device: ModelDevice, kind: str, *, P: dict[str, Any],
                   gpu_fp32: bool = False) -> dict[str, float] | None:
    """Metrics of a variant on a GPU, NPU or DSP, or None if the engine cannot run it.
    ``gpu_fp32``: the GPU delegate without precision loss (FP32 arithmetic and tensors)."""
    dev, arch, cpu, mem = (device.params, P["architectures"][variant.arch], P["cpu"],
                           P["memory"])
    eng = dev["engines"].get(kind)
    if eng is None or variant.precision not in eng["precisions"]:
        return None
    frac, parts = arch["delegation"][kind]
    if frac <= 0:
        return None
    int8 = variant.precision in ("FX8", "FFX8")
    if kind == "GPU" and gpu_fp32:
        rate = eng["fp32_gflops"] * 1e9 * eng["eff"] * arch["gpu_eff"]
        w_dev = variant.params * 4.0
    elif kind == "GPU":  # the GPU delegate runs every precision in fp16 (int8 weights dequantised)
        rate = eng["fp16_gflops"] * 1e9 * eng["eff"] * arch["gpu_eff"]
        w_dev = variant.params * 2.0
    elif int8:
        rate = eng["int8_tops"] * 1e12 * eng["eff_int8"] * arch["npu_eff"]
        w_dev = variant.params * 1.0
    else:
        rate = eng["fp16_tflops"] * 1e12 * eng["eff_fp16"] * arch["npu_eff"]
        w_dev = variant.params * 2.0
    if rate <= 0:
        return None
    work = variant.flops * variant.batch
    gov = P["governors"][dev["default_governor"]]
    fb_cores = list(device.cores[:cpu["fallback_threads"]])
    fb_rates = _cpu_rates(variant, fb_cores, False, P, gov["speed"])
    io_bytes = variant.input_elements * variant.batch * (1.0 if variant.precision == "FFX8" else 4.0)
    # A GPU delegate dispatches one kernel per operator and each pays a fixed cost (launch,
    # pipeline fill and tail) whatever its size: small models reach less of the peak than big
    # ones. NPU and DSP drivers take the graph as one submission.
    kernels_ms = frac * arch["n_ops"] * P["gpu"]["kernel_us"] / 1e3 if kind == "GPU" else 0.0
    t = (eng["invoke_ms"] + io_bytes / (eng["transfer_gbps"] * 1e9) * 1e3 + kernels_ms
         + frac * work / rate * 1e3
         + ((1 - frac) * work / (sum(fb_rates) * 0.7) if frac < 1 else 0.0)
         + parts * eng["partition_ms"])
    cv = P["variability"][kind] * dev["variability_scale"] + (0.02 if frac < 1 else 0.0)
    S = size_mb(variant, P)
    act = arch["act_per_input"] * variant.input_elements * variant.batch
    act_bytes = 4.0 if gpu_fp32 else _act_bytes(variant.precision, kind)
    mf = (mem["cpu_base_mb"] + S + mem[f"{kind.lower()}_runtime_mb"] + w_dev / 1e6
          + act * act_bytes / 1e6)
    big = fb_cores[0]
    power = (dev["static_power_w"] + eng["power_w"]
             + 0.3 * P["core_types"][big[0]]["power_w"])  # the thread that drives the delegate
    if kind == "GPU":
        t = public_calibration(t, device, "GPU FP32" if gpu_fp32 else "GPU FP16", P)
    elif kind == "DSP" and int8:
        t = public_calibration(t, device, "NNAPI int8", P)  # calibrated on Hexagon DSPs
    return _finish(variant, t, cv, mf, power, P)


def public_calibration(t: float, device: ModelDevice, engine: str, P: dict[str, Any]) -> float:
    """``t`` with the terms fitted to public phone measurements (``P["public_calibration"]``,
    :mod:`workbench.profiles.validation`) for a device modelled from its spec alone; the
    papers' phones keep their own calibration."""
    terms = (P.get("public_calibration") or {}).get("terms", {}).get(engine)
    if device.calibrated or terms is None:
        return t
    return terms[0] + terms[1] * t


def _finish(variant: Variant, t: float, cv: float, mf: float, power_w: float,
            P: dict[str, Any]) -> dict[str, float]:
    stats = _lognormal_stats(t, cv, P["variability"]["runs"])
    out = {k: _r(v) for k, v in stats.items()}
    out.update(TP=_r(1000.0 * variant.batch / t), MF=_r(mf), E=_r(power_w * t),
               S=_r(size_mb(variant, P)), W=variant.flops * variant.batch, params=variant.params,
               A=variant.accuracy)
    return out


def _r(x: float) -> float:
    return float(f"{x:.5g}")  # deterministic, readable numbers in the JSON


# --- profile assembly --------------------------------------------------------------------------

def _engines(device: ModelDevice) -> list[Engine]:
    dev = device.params
    out = [Engine(name="CPU", kind="CPU", precisions=list(PRECISIONS), native=["fp32", "int8"],
                  options=EngineOptions(threads=list(THREADS), xnnpack=list(XNNPACK),
                                        governors=list(dev["governors"])))]
    for kind, eng in dev["engines"].items():
        native = ["fp16", "fp32"] if kind == "GPU" else (
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
            m = (model_delegate(replace(v, precision="FP16"), md, kind, P=P) if kind == "GPU"
                 else _nnapi_dr8(v, md, kind, P))
        else:
            m = model_delegate(v, md, kind, P=P)
        if m is None:
            continue
        dp = "fp16" if kind == "GPU" or v.precision in ("FP32", "FP16") else "int8"
        rows.append(Config(
            id=config_id(v.model, v.precision, kind, task=v.task), task=v.task, model=v.model,
            arch=v.arch, precision=v.precision, processor=kind, delegate_precision=dp,
            batch=v.batch, source="modelled", **m))
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
    P = parameters or _default_parameters()
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


def _nnapi_dr8(variant: Variant, md: ModelDevice, kind: str, P: dict[str, Any]
               ) -> dict[str, float] | None:
    """NNAPI given a dynamic-range (hybrid) model: its drivers have no hybrid kernels, so the
    graph runs on NNAPI's CPU reference path (one thread, builtin kernels) plus the NNAPI call."""
    if kind not in md.params["engines"]:
        return None
    m = model_cpu(variant, md, 1, False, P=P)
    extra = md.params["engines"][kind]["invoke_ms"]
    return _finish(variant, m["L"] + extra, P["variability"][kind] * md.params["variability_scale"],
                   m["MF"] + P["memory"][f"{kind.lower()}_runtime_mb"],
                   md.params["static_power_w"] + 0.3 * P["core_types"][md.cores[0][0]]["power_w"], P)


def build_oodin_profile(device: str | Device, *, parameters: dict[str, Any] | None = None
                        ) -> Profile:
    """A modelled profile of OODIn Table II's DNNs (one task each) with OODIn's system
    parameters: engine (CPU, GPU, NNAPI's NPU or DSP), CPU threads 1..N_cores with XNNPACK on
    or off, every DVFS governor of the device (CPU rows; delegates run under the default) and
    the recognition rates :data:`OODIN_RATES`.
    A DR8 (OODIn "INT8") model runs on the GPU dequantised to FP16 and on NNAPI through its
    CPU reference path (:func:`_nnapi_dr8`)."""
    P = parameters or _default_parameters()
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
    from .store import save_profile

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
