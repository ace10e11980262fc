"""Analytical model of the papers' phones: modelled (not measured) device profiles.

Phones are not available to this project, so the profiles of the Pixel 7, Galaxy S20 FE, Galaxy
A71 and Xperia C5 are computed by the model below from published chip specs. Every number it uses
lives in ``workbench/data/phones/model_parameters.json`` with a note on its source; nothing is a
constant in this file. The model, per configuration (model variant x engine x options):

* **Latency.** ``L = invoke + per-op overhead + compute + memory traffic (+ I/O transfer and CPU
  fallback for delegates)``. CPU compute = workload / effective rate, where each core's rate is
  ``clock x FLOPs-per-cycle(precision) x kernel efficiency(family, XNNPACK)``; threads go to the
  fastest cores first and their rates combine as ``lb * sum + (1 - lb) * n * min`` (work-splitting
  balance) divided by ``1 + sync * (n - 1)``. Precisions the CPU does not run natively fall back
  (FP16 is dequantised to FP32 at load; DR8 uses hybrid kernels). Delegates (GPU, NPU, DSP) run
  the fraction of the graph they support at ``peak(precision path) x efficiency`` and hand the rest
  to the CPU with a cost per partition.
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
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from statistics import NormalDist
from typing import Any, Iterable

from .. import papers
from ..errors import InputError
from .importers import config_id
from .schema import (
    PRECISIONS,
    Accelerator,
    Config,
    CpuCluster,
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
    return json.loads(Path(path).read_text("utf-8"))


@lru_cache(maxsize=None)
def _device_row(device: str) -> dict[str, Any]:
    # Read-only inside this module: papers.device_rows() copies the tables on every call.
    return papers.device_rows()[device]


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


def _cores(device_row: dict[str, Any], P: dict[str, Any]) -> list[tuple[str, float]]:
    """(core type, GHz) of every core, fastest first (by fp32 rate)."""
    cores = []
    for cl in device_row["cpu"]:
        cores += [(cl["core"], float(cl["ghz"]))] * int(cl["count"])
    ct = P["core_types"]
    return sorted(cores, key=lambda c: -ct[c[0]]["fp32_flops_per_cycle"] * c[1])


def _cpu_rates(variant: Variant, cores: list[tuple[str, float]], xnnpack: bool,
               P: dict[str, Any], speed: float) -> list[float]:
    """Per-core achieved rate (FLOPs/ms) for this variant's kernels."""
    arch, cpu, ct = P["architectures"][variant.arch], P["cpu"], P["core_types"]
    out = []
    for core, ghz in cores:
        fp32 = ghz * 1e9 * ct[core]["fp32_flops_per_cycle"] * arch["cpu_eff"]
        if variant.precision in ("FX8", "FFX8"):
            r = ghz * 1e9 * ct[core]["int8_ops_per_cycle"] * arch["cpu_eff"] * cpu["int8_eff_ratio"]
            r *= arch["xnnpack_int8"] if xnnpack else 1.0
        elif variant.precision == "DR8":
            r = fp32 * cpu["dr8_gain"] * (cpu["dr8_xnnpack_gain"] if xnnpack else 1.0)
        else:  # FP32, and FP16 dequantised to FP32 at load time
            r = fp32 * (arch["xnnpack_fp32"] if xnnpack else 1.0)
        out.append(r * speed / 1e3)
    return out


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


def model_cpu(variant: Variant, device: str, threads: int, xnnpack: bool, *,
              P: dict[str, Any], governor: str | None = None) -> dict[str, float]:
    """Metrics of a variant on the CPU with `threads` threads and XNNPACK on or off."""
    dev, row = P["devices"][device], _device_row(device)
    gov = P["governors"][governor or dev["default_governor"]]
    cores = _cores(row, P)[:threads]
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
    all_cores = _cores(row, P)
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
    return _finish(variant, t, cv, mf, power, P)


def model_delegate(variant: Variant, device: str, kind: str, *, P: dict[str, Any]
                   ) -> dict[str, float] | None:
    """Metrics of a variant on a GPU, NPU or DSP, or None if the engine cannot run it."""
    dev, arch, cpu, mem = (P["devices"][device], P["architectures"][variant.arch], P["cpu"],
                           P["memory"])
    eng = dev["engines"].get(kind)
    if eng is None or variant.precision not in eng["precisions"]:
        return None
    frac, parts = arch["delegation"][kind]
    if frac <= 0:
        return None
    int8 = variant.precision in ("FX8", "FFX8")
    if kind == "GPU":  # the GPU delegate runs every precision in fp16 (int8 weights dequantised)
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
    row = _device_row(device)
    gov = P["governors"][dev["default_governor"]]
    fb_cores = _cores(row, P)[:cpu["fallback_threads"]]
    fb_rates = _cpu_rates(variant, fb_cores, False, P, gov["speed"])
    io_bytes = variant.input_elements * variant.batch * (1.0 if variant.precision == "FFX8" else 4.0)
    t = (eng["invoke_ms"] + io_bytes / (eng["transfer_gbps"] * 1e9) * 1e3
         + frac * work / rate * 1e3
         + ((1 - frac) * work / (sum(fb_rates) * 0.7) if frac < 1 else 0.0)
         + parts * eng["partition_ms"])
    cv = P["variability"][kind] * dev["variability_scale"] + (0.02 if frac < 1 else 0.0)
    S = size_mb(variant, P)
    act = arch["act_per_input"] * variant.input_elements * variant.batch
    mf = (mem["cpu_base_mb"] + S + mem[f"{kind.lower()}_runtime_mb"] + w_dev / 1e6
          + act * _act_bytes(variant.precision, kind) / 1e6)
    big = fb_cores[0]
    power = (dev["static_power_w"] + eng["power_w"]
             + 0.3 * P["core_types"][big[0]]["power_w"])  # the thread that drives the delegate
    return _finish(variant, t, cv, mf, power, P)


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

def _device(device: str, P: dict[str, Any]) -> Device:
    row, dev = _device_row(device), P["devices"][device]
    gpu_name, gpu_clock = papers.parse_clocked(row.get("gpu"))
    ram_gb, ram_mhz = papers.parse_ram(row["ram"])
    npu = row.get("npu")
    return Device(
        name=device, display_name=row["name"], soc=row["soc"], launch=row.get("launch"),
        os=dev.get("os"),
        cpu_clusters=[CpuCluster(core=c["core"], count=c["count"], ghz=c["ghz"]) for c in row["cpu"]],
        gpu=Accelerator(name=gpu_name, clock_mhz=gpu_clock) if gpu_name else None,
        npu=Accelerator(name=npu) if npu and "NPU" in dev["engines"] else None,
        dsp=Accelerator(name="Hexagon 688 DSP") if "DSP" in dev["engines"] else None,
        ram_gb=ram_gb, ram_mhz=ram_mhz, tdp_w=row.get("tdp_w"), battery_mah=dev.get("battery_mah"),
        governors=list(dev["governors"]))


def _engines(device: str, P: dict[str, Any]) -> list[Engine]:
    dev = P["devices"][device]
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


def build_profile(device: str, *, use_cases: Iterable[str] = USE_CASES,
                  parameters: dict[str, Any] | None = None) -> Profile:
    """A modelled profile of one phone for the models of the given CARIn use cases.

    Args:
        device: One of ``DEVICES``.
        use_cases: CARIn use cases whose models to include.
        parameters: Model parameters (default: the packaged file).

    Returns:
        A Profile whose every row has ``source='modelled'``. Same inputs, same bytes.
    """
    if device not in DEVICES:
        raise InputError(f"unknown device; the phone model knows {', '.join(DEVICES)}", value=device)
    P = parameters or _default_parameters()
    use_cases = tuple(use_cases)
    variants = paper_variants(use_cases)
    dev = P["devices"][device]
    configs: list[Config] = []
    for v in variants:
        for threads in THREADS:
            for xnn in XNNPACK:
                m = model_cpu(v, device, threads, xnn, P=P)
                configs.append(Config(
                    id=config_id(v.model, v.precision, "CPU", task=v.task, threads=threads,
                                 xnnpack=xnn),
                    task=v.task, model=v.model, arch=v.arch, precision=v.precision,
                    processor="CPU", threads=threads, xnnpack=xnn, batch=v.batch,
                    source="modelled", **m))
        for kind in dev["engines"]:
            m = model_delegate(v, device, kind, P=P)
            if m is None:
                continue
            dp = "fp16" if kind == "GPU" or v.precision in ("FP32", "FP16") else "int8"
            configs.append(Config(
                id=config_id(v.model, v.precision, kind, task=v.task), task=v.task, model=v.model,
                arch=v.arch, precision=v.precision, processor=kind, delegate_precision=dp,
                batch=v.batch, source="modelled", **m))
    tasks = []
    for uc in use_cases:
        for name in papers.use_case_tasks(uc):
            t = papers.model_table(name)
            tasks.append(Task(name=name, metric=t["metric"], higher_is_better=t["higher_is_better"],
                              dataset=t["dataset"], batch=int(t.get("batch", 1))))
    row = _device_row(device)
    cites = [papers.citation("carin")] + ([papers.citation("oodin")]
                                          if "oodin" in dev["paper"] else [])
    prov = Provenance(
        method=f"analytical model workbench.profiles.phone_model v{P['model_version']}",
        citation="; ".join(cites),
        notes=[
            "MODELLED, not measured: phones are not available; latency, memory and energy come "
            "from an analytical model of published chip specs.",
            f"device spec from {row['table']}; model accuracies, FLOPs and params from CARIn "
            "Tables 2-5",
            f"model parameters sha256[:16]={parameters_digest(P)} "
            "(workbench/data/phones/model_parameters.json)",
            "units: ms, MB, FLOPs (per inference call, x batch), mJ, samples/s",
        ])
    contention = {k: float(v) for k, v in P["contention"].items() if k != "source"}
    return Profile(device=_device(device, P), source="modelled", provenance=prov,
                   engines=_engines(device, P), tasks=tasks, configs=configs,
                   contention=contention)


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
