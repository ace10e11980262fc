"""Measuring one model file under one option: an interpreter pinned to its cores, latency samples
and their statistics, peak memory in a fresh process, the RAPL energy counter, and why a model
could not run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from ...errors import InputError
from ...runtime.executor import Pinned
from ...runtime.interpreter import fill_batch, open_interpreter, placeholder, to_input
from ...timing import probe_env, samples_ms
from .options import Option


def make_interpreter(path: str | os.PathLike, *, threads: int, xnnpack: bool, batch: int = 1):
    """A LiteRT interpreter with the option's threads and resolver, input resized to ``batch``."""
    return open_interpreter(path, threads=threads, xnnpack=xnnpack, batch=batch)


def sample_input(it, x: np.ndarray | None = None) -> np.ndarray:
    """An input for the interpreter: real samples (quantised if the input is int8) or a
    placeholder."""
    inp = it.get_input_details()[0]
    if x is None:
        return placeholder(inp)
    return to_input(fill_batch(x, inp["shape"][0]), inp)


def time_invocations(invoke, *, warmup: int, runs: int, clock=time.perf_counter_ns) -> np.ndarray:
    """Latency samples (ms) of ``runs`` calls after ``warmup`` untimed ones (``clock`` in ns)."""
    return np.asarray(samples_ms(invoke, runs=runs, warmup=warmup, clock=clock))


def latency_stats(samples: np.ndarray, batch: int = 1) -> dict[str, float]:
    """Mean, std (population), min, max, p50, p90, p99 in ms and throughput in samples/s."""
    s = np.asarray(samples, dtype=float)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise InputError("latency samples must be finite, non-negative and not empty")
    mean = float(s.mean())
    return {"L": mean, "L_std": float(s.std()), "L_min": float(s.min()), "L_max": float(s.max()),
            "L_p50": float(np.percentile(s, 50)), "L_p90": float(np.percentile(s, 90)),
            "L_p99": float(np.percentile(s, 99)), "TP": batch * 1000.0 / mean if mean > 0 else 0.0}


def measure(path: str | os.PathLike, option: Option, *, batch: int, x: np.ndarray | None,
            warmup: int, runs: int) -> np.ndarray:
    """Latency samples of one model file under one hardware option (pinned to its cores)."""
    with Pinned(option.cores):
        it = make_interpreter(path, threads=option.threads, xnnpack=option.xnnpack, batch=batch)
        inp = it.get_input_details()[0]
        it.set_tensor(inp["index"], sample_input(it, x))
        return time_invocations(it.invoke, warmup=warmup, runs=runs)


def measure_memory(path: str | os.PathLike, *, threads: int, xnnpack: bool, batch: int,
                   runs: int = 5, timeout: float = 120) -> dict[str, float]:
    """Peak memory (MB) of loading and running a model, in a fresh process (see _memprobe)."""
    cmd = [sys.executable, "-m", "workbench.host._memprobe", str(path), str(threads),
           "1" if xnnpack else "0", str(batch), str(runs)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=probe_env(OMP_NUM_THREADS="1"))
    if r.returncode != 0:
        raise RuntimeError(f"memory probe failed for {path}: {r.stderr.strip()[-300:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def read_rapl_uj() -> int | None:
    """Package energy counter (uJ) when RAPL is readable here, else None."""
    p = Path("/sys/class/powercap/intel-rapl:0/energy_uj")
    try:
        return int(p.read_text())
    except (OSError, ValueError):
        return None


def cannot_run(exc: BaseException, option: Option, path: str | os.PathLike = "") -> str:
    """Why the engine (LiteRT; onnxruntime for a .onnx file) could not run a model under an
    option, in one line."""
    from ..intake import litert_reason

    if str(path).endswith(".onnx"):
        why = " ".join(str(exc).split())[:300] or type(exc).__name__
        return why if "no XNNPACK" in why else f"onnxruntime cannot run it with these options: {why}"
    why = litert_reason(exc, xnnpack=option.xnnpack)
    return why if why.startswith("the graph uses") else \
        f"LiteRT cannot run it with these options: {why}"
