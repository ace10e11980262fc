"""The host pipeline's cost and how close its measured latencies come to this CPU's limit.

Runs the full zoo build (train + quantise) and the full host profile, timing each, then reports
per configuration the latency coefficient of variation and the ratio of the measured latency to
the physical limit: the configuration's FLOPs over the peak FLOP/s that a numpy float32 matmul
reaches here on the same number of cores (int8 kernels are compared with the float32 peak too:
numpy has no int8 GEMM to measure a faster one). Writes reports/bench/host.json and, as its
product, the zoo under datasets/zoo and profiles/host.json.

Usage: python benchmarks/bench_host.py [--quick] [--skip-build]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from workbench.timing import blas_threads_env

ROOT = Path(__file__).resolve().parents[1]

PEAK_PROBE = """
import time, numpy as np
n = 1024
a = np.random.default_rng(0).random((n, n), dtype=np.float32)
b = a.copy()
a @ b
best = 0.0
for _ in range(10):
    t0 = time.perf_counter(); a @ b; dt = time.perf_counter() - t0
    best = max(best, 2 * n ** 3 / dt)
print(best)
"""


def numpy_peak_flops(threads: int) -> float:
    """Peak float32 FLOP/s of a numpy matmul on ``threads`` cores (fresh process, BLAS pinned)."""
    env = blas_threads_env(threads)
    cores = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:threads])
    r = subprocess.run(["taskset", "-c", cores, sys.executable, "-c", PEAK_PROBE], env=env,
                       capture_output=True, text=True, check=True)
    return float(r.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--skip-build", action="store_true", help="reuse the built zoo")
    args = ap.parse_args(argv)

    from workbench.fileio import atomic_write_json
    from workbench.host import profiling, zoo
    from workbench.host.datasets import DATASETS

    zroot = DATASETS / ("zoo-quick" if args.quick else "zoo")
    out = ROOT / "profiles" / ("host-quick.json" if args.quick else "host.json")
    result: dict = {"quick": args.quick}
    if not args.skip_build:
        t0 = time.perf_counter()
        recs = zoo.build(quick=args.quick, root=zroot)
        result["zoo_build_s"] = round(time.perf_counter() - t0, 1)
        result["zoo"] = [{k: r[k] for k in ("task", "model", "params", "test_metric", "chance",
                                            "train_seconds")} |
                         {"variants": {v["precision"]: (round(v["test_metric"], 3) if v["available"]
                                                        else "unavailable: " + v["reason"][:80])
                                       for v in r["variants"]}} for r in recs]
        print(f"zoo built in {result['zoo_build_s']} s", flush=True)
    t0 = time.perf_counter()
    runs, warmup = (20, 2) if args.quick else (100, 5)
    prof = profiling.profile_host(zroot, out, warmup=warmup, runs=runs,
                                  coexec_seconds=0.3 if args.quick else 1.0, quick=args.quick)
    result["profile_s"] = round(time.perf_counter() - t0, 1)
    print(f"profile in {result['profile_s']} s", flush=True)

    peaks = {t: numpy_peak_flops(t) for t in (1, 2)}
    result["numpy_fp32_peak_gflops"] = {str(t): round(p / 1e9, 1) for t, p in peaks.items()}
    rows = []
    for c in prof.configs:
        busy = min(c.threads or 1, len(c.processor.split(",")))
        limit_ms = c.W / peaks[busy] * 1e3
        rows.append({"id": c.id, "cv": c.L_std / c.L, "ratio_to_limit": c.L / limit_ms})
    cvs = [r["cv"] for r in rows]
    ratios = [r["ratio_to_limit"] for r in rows]
    result["latency_cv"] = {"median": statistics.median(cvs), "p90": float(np.percentile(cvs, 90)),
                            "max": max(cvs)}
    result["ratio_to_physical_limit"] = {"median": statistics.median(ratios),
                                         "min": min(ratios), "max": max(ratios)}
    result["per_config"] = rows
    result["targets"] = {"zoo_build_s": 900, "profile_s": 900, "quick_each_s": 120}
    target = atomic_write_json(ROOT / "reports" / "bench" / ("host-quick.json" if args.quick
                                                             else "host.json"), result)
    print(f"wrote {target}: CV median {result['latency_cv']['median']:.3f}, ratio to limit "
          f"median {result['ratio_to_physical_limit']['median']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
