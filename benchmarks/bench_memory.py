"""Memory-aware execution targets (issue 6) -> reports/bench/memory.json.

FlexNN-planned against bulk on an FC-heavy and a conv-heavy model at several budgets (target: a
point with >= 90% peak-memory reduction and <= 10% latency increase); MASA against Bulk and
DeepEye at the tightest budget and intensity 1.2 (target: >= 50% lower mean response than Bulk);
simulator speed per what-if (target <= 50 ms) and its error against real runs.

Run: ``python benchmarks/bench_memory.py [--quick]`` (about 3 minutes; the models train on first
use).
"""

from __future__ import annotations

import argparse
import platform
from pathlib import Path

from workbench.fileio import atomic_write_json
from workbench.lab.experiments import memory as mx

OUT = Path(__file__).resolve().parents[1] / "reports" / "bench" / "memory.json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    graphs, trained = mx.load_graphs(quick=a.quick)
    flex = []
    for m in ("AlexNet-FC", "VGG-Conv"):
        flex += mx.flexnn_tradeoff(graphs[m], reps=5 if a.quick else 10,
                                   rounds=2 if a.quick else 7)
    best = {}
    for m in ("AlexNet-FC", "VGG-Conv"):
        pts = [r for r in flex if r["model"] == m and r["mode"] == "flexnn"]
        ok = [r for r in pts if r["memory reduction %"] >= 90]
        best[m] = min(ok, key=lambda r: r["latency increase %"]) if ok else None
    hit = any(b and b["latency increase %"] <= 10 for b in best.values())
    nets = mx.prepare(quick=a.quick, repeats=3 if a.quick else 5)
    masa = {}
    for sc in (1, 2):
        rows = mx.stochastic(nets, scenario=sc, n=60 if a.quick else 150, intensities=(1.2,))
        tight = [r for r in rows if r["paper budget MB"] == 512]
        by = {r["policy"]: r["mean response ms"] for r in tight}
        masa[f"scenario_{'I' * sc}"] = {**by, "gain_vs_bulk_pct": 100 * (1 - by["masa"] / by["bulk"]),
                                        "gain_vs_deepeye_pct": 100 * (1 - by["masa"] / by["deepeye"])}
    real = mx.real_vs_sim(nets, n=15 if a.quick else 30)
    speed = mx.simulator_speed(nets, graphs["VGG-Conv"])
    out = {
        "machine": platform.platform(), "trained_models": trained, "quick": a.quick,
        "flexnn": {"rows": flex, "best_at_90pct_reduction": best,
                   "target": ">= 90% memory reduction with <= 10% latency increase at the best point",
                   "target_met": hit},
        "masa": {"tightest_budget_intensity_1_2": masa,
                 "target": ">= 50% lower mean response than Bulk (tightest budget, intensity 1.2)",
                 "target_met": {k: v["gain_vs_bulk_pct"] >= 50 for k, v in masa.items()},
                 "paging": "modelled penalty (workbench.memory.masa.SWAP_BPS)"},
        "simulator": {**speed, "target_ms": 50, "real_vs_sim": real},
    }
    atomic_write_json(Path(a.out), out)
    print({"flexnn_best": {k: v and (round(v["memory reduction %"], 1),
                                     round(v["latency increase %"], 1)) for k, v in best.items()},
           "masa_gain_vs_bulk": {k: round(v["gain_vs_bulk_pct"], 1) for k, v in masa.items()},
           "whatif_ms": {k: round(v, 2) for k, v in speed.items()}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
