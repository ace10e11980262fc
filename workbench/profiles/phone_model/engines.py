"""The analytical model itself: a variant's metrics (latency and its statistics, throughput,
memory, energy, size) on the CPU with given threads and kernels, or on a delegate (GPU, NPU, DSP),
and the public calibration of a device modelled from its spec alone. See the package docstring
for the model's terms."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, TypedDict

from .device import ModelDevice
from .variants import Variant

_BYTES = {"FP32": 4.0, "FP16": 2.0, "DR8": 1.0, "FX8": 1.0, "FFX8": 1.0}


class LatencyStats(TypedDict):
    """The mean latency and its statistics (ms), named as a profile's columns."""

    L: float
    L_std: float
    L_p50: float
    L_p90: float
    L_p99: float
    L_min: float
    L_max: float


class ModelledMetrics(LatencyStats):
    """What the model gives for one configuration, named as a profile's columns (a row's
    metrics: ``Config(**metrics, ...)``), in their units."""

    TP: float
    MF: float
    E: float
    S: float
    W: float
    params: float
    A: float


def _lognormal_stats(mean: float, cv: float, runs: int) -> LatencyStats:
    """Std, quantiles and expected extremes of `runs` log-normal samples with this mean and CV."""
    s2 = math.log1p(cv * cv)
    s, mu = math.sqrt(s2), math.log(mean) - s2 / 2
    z = NormalDist().inv_cdf

    def q(p: float) -> float:
        return math.exp(mu + s * z(p))

    return LatencyStats(L=mean, L_std=cv * mean, L_p50=q(0.5), L_p90=q(0.9), L_p99=q(0.99),
                        L_min=q(0.5 / runs), L_max=q(1 - 0.5 / runs))


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
              P: dict[str, Any], governor: str | None = None) -> ModelledMetrics:
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
                   gpu_fp32: bool = False) -> ModelledMetrics | None:
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
            P: dict[str, Any]) -> ModelledMetrics:
    s = _lognormal_stats(t, cv, P["variability"]["runs"])
    return ModelledMetrics(
        L=_r(s["L"]), L_std=_r(s["L_std"]), L_p50=_r(s["L_p50"]), L_p90=_r(s["L_p90"]),
        L_p99=_r(s["L_p99"]), L_min=_r(s["L_min"]), L_max=_r(s["L_max"]),
        TP=_r(1000.0 * variant.batch / t), MF=_r(mf), E=_r(power_w * t),
        S=_r(size_mb(variant, P)), W=variant.flops * variant.batch, params=variant.params,
        A=variant.accuracy)


def _r(x: float) -> float:
    return float(f"{x:.5g}")  # deterministic, readable numbers in the JSON


def _nnapi_dr8(variant: Variant, md: ModelDevice, kind: str, P: dict[str, Any]
               ) -> ModelledMetrics | None:
    """NNAPI given a dynamic-range (hybrid) model: its drivers have no hybrid kernels, so the
    graph runs on NNAPI's CPU reference path (one thread, builtin kernels) plus the NNAPI call."""
    if kind not in md.params["engines"]:
        return None
    m = model_cpu(variant, md, 1, False, P=P)
    extra = md.params["engines"][kind]["invoke_ms"]
    return _finish(variant, m["L"] + extra, P["variability"][kind] * md.params["variability_scale"],
                   m["MF"] + P["memory"][f"{kind.lower()}_runtime_mb"],
                   md.params["static_power_w"] + 0.3 * P["core_types"][md.cores[0][0]]["power_w"], P)

