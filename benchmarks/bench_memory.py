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
from dataclasses import asdict
from pathlib import Path

from workbench.fileio import atomic_write_json
from workbench.lab.experiments import flexnn as fx
from workbench.lab.experiments import masa as ma
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
        flex += fx.tradeoff(graphs[m], reps=5 if a.quick else 10, rounds=2 if a.quick else 7)
    # The same analysis as the FlexNN report: the fastest point with >= 90% less memory.
    best = {b.model: b for b in fx.best_points(flex) if b.memory_reduction_pct >= 90}
    hit = any(b.latency_increase_pct <= 10 for b in best.values())
    nets = mx.prepare(quick=a.quick, repeats=3 if a.quick else 5)
    gains = []
    for sc in (1, 2):
        gains += ma.gains(ma.stochastic(nets, scenario=sc, n=60 if a.quick else 150,
                                        intensities=(1.2,)))
    tight = [g for g in gains if g.paper_budget_mb == min(mx.PAPER_BUDGETS_MB)]
    real = ma.real_vs_sim(nets, n=15 if a.quick else 30)
    speed = mx.simulator_speed(nets, graphs["VGG-Conv"])
    out = {
        "machine": platform.platform(), "trained_models": trained, "quick": a.quick,
        "flexnn": {"rows": [asdict(r) for r in flex],
                   "best_at_90pct_reduction": {m: asdict(b) for m, b in best.items()},
                   "target": ">= 90% memory reduction with <= 10% latency increase at the best point",
                   "target_met": hit},
        "masa": {"tightest_budget_intensity_1_2": [asdict(g) for g in tight],
                 "target": ">= 50% lower mean response than Bulk (tightest budget, intensity 1.2)",
                 "target_met": {g.scenario: g.gain_vs_bulk_pct >= 50 for g in tight},
                 "paging": "modelled penalty (workbench.memory.masa.SWAP_BPS)"},
        "simulator": {**asdict(speed), "target_ms": 50, "real_vs_sim": [asdict(r) for r in real]},
    }
    atomic_write_json(Path(a.out), out)
    print({"flexnn_best": {m: (round(b.memory_reduction_pct, 1), round(b.latency_increase_pct, 1))
                           for m, b in best.items()},
           "masa_gain_vs_bulk": {g.scenario: round(g.gain_vs_bulk_pct, 1) for g in tight},
           "whatif_ms": {k: round(v, 2) for k, v in asdict(speed).items()}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
