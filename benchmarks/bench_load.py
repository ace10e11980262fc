"""OODIn Fig. 7 on this machine, for real: the runtime under device load against the static design.

The paper emulates device load by scaling the inference latency by a load factor (2 = twice as
slow) and measures the 90th-percentile latency of OODIn's Runtime Manager, which moves from the
GPU to NNAPI when the GPU is loaded and to the CPU when NNAPI is loaded too, against the
statically selected design. Here the same manipulation is the runtime's injected ``slow`` event
(invokes on a core take FACTOR times longer and keep it busy), on this machine's engines, CPU
core sets: a continuous h1 stream is served once by OODIn's manager and once by the design it
selects at deployment, kept, under the same two-step load script, for each load factor
(``workbench.lab.experiments.runtime.load_sweep``; the two runs of a factor alternate which goes
first). Each round is one such sweep; the numbers are medians over rounds.

Writes reports/bench/oodin_load.json. Needs the host zoo (`workbench zoo build --task h1`) and
profiles/host.json; no root. `python benchmarks/bench_load.py` takes about 3.5 minutes (3 rounds
of 4 factors x 2 runs of 8 s; --budget-s bounds it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from workbench import workspace
from workbench.errors import InputError
from workbench.fileio import atomic_write_text
from workbench.lab.experiments import runtime as rx
from workbench.procfs import cpu_model
from workbench.profiles import load_profile
from workbench.runtime.options import RuntimeOptions

ROOT = Path(__file__).resolve().parents[1]
PAPER = {"ratio_max": 2.7, "ratio_geomean": 1.55, "engines": ["GPU", "NNAPI", "CPU"],
         "model": "MobileNetV2 1.4 on the Samsung A71", "source": "OODIn section IV-C, Fig. 7"}
#: At least this many rounds are measured, whatever the time budget says.
MIN_ROUNDS = 2
#: Why these load factors (fixed before any run; the paper's own axis is only in its plot).
FACTOR_CHOICE = ("factors 1, 2, 4, 8, chosen before any run: a doubling sequence mirrors the "
                 "paper's 'exponentially scaling the inference latency by a load factor'; 1 is "
                 "the idle device (the control); three doublings (top 8) keep 4 factors x 2 "
                 "runs per round within the time budget, and the paper's own range, only in "
                 "its plot, cannot be read")



def q(xs: list[float], p: float) -> float | None:
    return float(np.percentile(np.asarray(xs, float), p)) if xs else None


def _factors(text: str) -> tuple[float, ...]:
    try:
        return rx.check_factors([float(x) for x in text.split(",") if x.strip()])
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def aggregate(sweeps: list[dict]) -> dict:
    """Per factor over rounds: medians and quartiles of both runs' p90 and of the paired
    static/adaptive ratio; overall the largest median ratio and their geometric mean, over the
    loaded factors (factor 1's ratio is the control, ``ratio_idle``); whether every adaptive run
    above the runtime's flag threshold left each loaded engine."""
    threshold = RuntimeOptions().slow_factor
    factors = sweeps[0]["factors"]
    rows = []
    for i, f in enumerate(factors):
        per = [s["per_factor"][i] for s in sweeps]
        a = [p["adaptive"] for p in per]
        st = [p["static"] for p in per]

        def vals(runs, key):
            return [r[key] for r in runs if r[key] is not None]

        ratios = [p["ratio_p90"] for p in per if p["ratio_p90"] is not None]
        inv = [p["ratio_invoke_p90"] for p in per if p["ratio_invoke_p90"] is not None]
        med = [p["ratio_median"] for p in per if p["ratio_median"] is not None]
        delays = [d["delay_ms"] for r in a for d in r["steps"] if d["delay_ms"] is not None]
        rows.append({
            "factor": f,
            "adaptive_p90_ms": q(vals(a, "p90_ms"), 50),
            "adaptive_p90_ms_q1": q(vals(a, "p90_ms"), 25),
            "adaptive_p90_ms_q3": q(vals(a, "p90_ms"), 75),
            "static_p90_ms": q(vals(st, "p90_ms"), 50),
            "static_p90_ms_q1": q(vals(st, "p90_ms"), 25),
            "static_p90_ms_q3": q(vals(st, "p90_ms"), 75),
            "ratio_p90": q(ratios, 50), "ratio_p90_q1": q(ratios, 25),
            "ratio_p90_q3": q(ratios, 75),
            "ratios": [round(r, 3) for r in ratios],
            "adaptive_median_ms": q(vals(a, "median_ms"), 50),
            "static_median_ms": q(vals(st, "median_ms"), 50),
            "ratio_median": q(med, 50),
            "adaptive_invoke_p90_ms": q(vals(a, "invoke_p90_ms"), 50),
            "static_invoke_p90_ms": q(vals(st, "invoke_p90_ms"), 50),
            "ratio_invoke_p90": q(inv, 50),
            "requests_per_run": q([r["n"] for r in a + st], 50),
            "adaptive_engines": dict(Counter(" -> ".join(r["engines_visited"]) for r in a)),
            # runs that left every engine loaded under them (None: nothing loaded, factor 1)
            "adaptive_left_loaded": sum(r["left_loaded"] for r in a) if f > 1 else None,
            "detection_ms_median": q(delays, 50),
            "rounds": len(per)})
    overall = rx.load_ratios({r["factor"]: r["ratio_p90"] for r in rows})
    invoke = rx.load_ratios({r["factor"]: r["ratio_invoke_p90"] for r in rows})
    top = max((r for r in rows if r["factor"] > 1), default=None,
              key=lambda r: -math.inf if r["ratio_p90"] is None else r["ratio_p90"])
    judged = [p["adaptive"] for s in sweeps for p in s["per_factor"] if p["factor"] > threshold]
    return {"per_factor": rows, **overall,
            "ratio_max_factor": None if top is None else top["factor"],
            "ratio_idle": next((r["ratio_p90"] for r in rows if r["factor"] == 1), None),
            "invoke_ratio_max": invoke["ratio_max"],
            "invoke_ratio_geomean": invoke["ratio_geomean"],
            "left_loaded_engine": bool(judged) and all(r["left_loaded"] for r in judged),
            "left_loaded_runs": f"{sum(r['left_loaded'] for r in judged)} of {len(judged)} "
                                f"adaptive runs at factors above {threshold:g}",
            "static_switches": sum(p["static"]["switches"] for s in sweeps
                                   for p in s["per_factor"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", default=None, help="the host zoo (default: the workspace's)")
    ap.add_argument("--profile", default=str(ROOT / "profiles" / "host.json"))
    ap.add_argument("--rounds", type=int, default=3,
                    help=f"sweeps over every factor (>= {MIN_ROUNDS})")
    ap.add_argument("--duration", type=float, default=8.0, help="seconds per run")
    ap.add_argument("--rate", type=float, default=100.0, help="requests per second")
    ap.add_argument("--factors", type=_factors, default=rx.LOAD_FACTORS,
                    help="load factors, comma-separated (default 1,2,4,8)")
    ap.add_argument("--budget-s", type=float, default=230.0,
                    help=f"start no round that would end past this (after the first "
                         f"{MIN_ROUNDS})")
    ap.add_argument("-o", "--output",
                    default=str(ROOT / "reports" / "bench" / "oodin_load.json"))
    args = ap.parse_args(argv)
    zoo = args.zoo or str(workspace.zoo_dir())
    if not (Path(zoo) / "h1").is_dir():
        print(f"error: {zoo}: no h1 models (build them: workbench zoo build --task h1)",
              file=sys.stderr)
        return 1
    t_start = time.monotonic()
    prof = load_profile(args.profile)
    sweeps: list[dict] = []
    for k in range(max(args.rounds, MIN_ROUNDS)):
        took = (time.monotonic() - t_start) / max(1, k)
        if k >= MIN_ROUNDS and time.monotonic() - t_start + took > args.budget_s:
            break
        try:
            s = rx.load_sweep(prof, zoo, factors=args.factors, duration=args.duration,
                              rate=args.rate, start_with="adaptive" if k % 2 == 0 else "static")
        except InputError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        sweeps.append(s)
        print(f"round {k + 1}: " + "; ".join(
            f"x{r['factor']:g}: static p90 {r['static']['p90_ms']:.3f} ms / adaptive "
            f"{r['adaptive']['p90_ms']:.3f} ms = {r['ratio_p90']:.2f}x "
            f"({' -> '.join(r['adaptive']['engines_visited'])})"
            for r in s["per_factor"] if r["ratio_p90"] is not None), file=sys.stderr)
    agg = aggregate(sweeps)
    rep = sweeps[0]
    top = next(r for r in rep["per_factor"] if r["factor"] == max(rep["factors"]))
    n_cores = os.cpu_count()
    out = {
        "what": "OODIn Fig. 7 on this machine: the 90th-percentile request latency of OODIn's "
                "runtime manager (re-solving policy, every candidate bundled) against the "
                "statically selected design (OODIn's design with no issue, kept) serving a "
                "continuous h1 stream while the engine serving first, then also the engine the "
                "adaptive run moved to, is slowed by a load factor; ratio = static p90 / "
                "adaptive p90, paired per round",
        "source": f"measured on this machine ({cpu_model()}, {n_cores} cores, shared): the "
                  "workbench runtime serving LiteRT models under an injected per-core slowdown "
                  "(`slow:CPU[c]:FACTOR`: invokes on core c take FACTOR times longer and keep "
                  "it busy), the paper's own emulation of load (latency scaled by a load "
                  "factor); the runtime detects it from invoke times, never from the event",
        "cpu": cpu_model(),
        "factors": list(args.factors),
        "factor_choice": FACTOR_CHOICE,
        "duration_s": args.duration,
        "rate_per_s": args.rate,
        "slo": rep["slo"],
        "tasks": rep["tasks"],
        "static_design": rep["static_design"],
        "designs": rep["designs"],
        "plan": rep["plan"],
        "runtime_options": rep["options"],
        "latency": "per request, submission to answer, of the requests submitted after the "
                   "first load event (invoke time alone in the invoke_* fields)",
        "rounds": len(sweeps),
        "n": len(sweeps) * len(args.factors) * 2,
        **agg,
        "designs_visited": top["adaptive"]["designs_visited"],
        "engines_visited": top["adaptive"]["engines_visited"],
        "static_engines_visited": top["static"]["engines_visited"],
        "rejected": sum(p[k]["rejected"] for s in sweeps for p in s["per_factor"]
                        for k in ("adaptive", "static")),
        "lost": sum(p[k]["lost"] for s in sweeps for p in s["per_factor"]
                    for k in ("adaptive", "static")),
        "seconds": round(time.monotonic() - t_start, 1),
        "differs_from_paper": [
            "engines are CPU core sets of one 2-core VM: CPU[0,1], CPU[0], CPU[1] play the "
            "A71's GPU, NNAPI and CPU (OODIn's own order under load here). Slowdowns are per "
            "core and an engine's factor is its slowest core's, so no core loads CPU[0,1] "
            "alone: step 1 slows core 1, which loads CPU[1] too (no run serves on it then), "
            "and step 2 slows core 0 and restores core 1, so CPU[0,1] stays loaded at the same "
            "factor, CPU[0] is loaded and CPU[1] free, as in the paper's second step",
            "the h1 model (VGG-FC DR8 on 32x32 digits, ~0.04 ms an invoke) instead of "
            "MobileNetV2 1.4 on 224x224 images: a request's latency here is mostly the "
            "runtime's own hand-off "
            "(queue, thread wake-up, Python), which the load factor does not scale, so "
            "request-latency ratios can stay well below the factor; invoke-time ratios "
            "(invoke_ratio_*) are kept beside them",
            "the paper's load-factor axis is only in its plot, so its 'up to 2.7x' is the top "
            "of a range we cannot read: " + FACTOR_CHOICE + "; ratio_max depends on it",
            "'up to 2.7x (1.55x geometric mean across future runs)' read as the largest and "
            "the geometric mean of the per-factor median ratios over the loaded factors (2, 4, "
            "8); factor 1 (idle: both runs serve the same design) is the control, ratio_idle",
            "each factor is its own pair of runs with the load in two steps at set times (20% "
            "and 60% of the run), not one run sweeping the factor; the p90 includes the "
            "detection windows (the adaptive run serves on the loaded engine until it moves)",
            "the runtime flags an engine when its median invoke time is more than twice its "
            "calibrated reference (slow_factor 2), so at factor 2 it does not move by design; "
            "other processes' load and free memory are not read as issues (this machine is "
            "shared with other sessions), as the paper isolates its emulated load",
        ],
        "paper": PAPER,
    }
    atomic_write_text(args.output, json.dumps(out, indent=1) + "\n")

    def show(x):
        return "none" if x is None else f"{x:.2f}x"

    print(f"{out['n']} runs in {out['rounds']} rounds: static/adaptive p90 up to "
          f"{show(out['ratio_max'])} (paper 2.7x), geomean over factors > 1 "
          f"{show(out['ratio_geomean'])} (paper 1.55x); invoke time: up to "
          f"{show(out['invoke_ratio_max'])}, geomean {show(out['invoke_ratio_geomean'])}; "
          f"left the loaded engine: {out['left_loaded_runs']}; {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
