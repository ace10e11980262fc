"""Delen's overheads on this machine (Table 3 and Fig. 16 shape): exit-criteria evaluation per
exit, Pareto-policy update, and the worst-case cost of running a multi-exit net through all its
exits against the same backbone without exits.

Writes reports/bench/multiexit.json. Targets (issue 5): criteria <= 5 us per exit (Delen:
100 us), Pareto update <= 0.5 ms (Delen: 2.6 ms), all-exit overhead <= 3% (Delen: 6.9% mean).
Issue 17: the limiter's largest window usage <= limit + burst (+ one segment's overrun) for
every policy and trace; in the runtime, a criteria update takes effect on the next request and
a switch between operating points of one stored model takes < 0.1 ms; the all-exit overhead at
the real-scale backbone (EfficientNet-Lite0 at 224, built by the Delen report or on first use).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from workbench.fileio import atomic_write_json
from workbench.host import datasets as ds
from workbench.multiexit.policies import ParetoPolicy
from workbench.multiexit.profiling import measure_exit_profile
from workbench.multiexit.runner import SegmentedNet, open_session
from workbench.multiexit.training import MultiExitNet, count_flops, export_onnx, to_torch, train
from workbench.procfs import cpu_model as _cpu_model
from workbench.runtime.criteria import ExitState, parse_criteria

ROOT = Path(__file__).resolve().parents[1]


def pct(xs, q):
    return float(np.percentile(np.asarray(xs, float), q))


def criteria_cost(n: int) -> dict:
    out = {}
    texts = {"per-request": "(response_time > 20ms) || (confidence > 0.7)",
             "pareto (4 exits)": "(exit_number == 1 && confidence > 0.9) || (exit_number == 2 && "
                                 "confidence > 0.8) || (exit_number == 3 && confidence > 0.7)"}
    rng = np.random.default_rng(0)
    states = [ExitState(float(rng.uniform(0, 40)), float(rng.uniform()), 0.8, 10.0, 1e6,
                        int(rng.integers(1, 5))) for _ in range(256)]
    for name, text in texts.items():
        fn = parse_criteria(text).compile()
        ns = np.empty(n)
        clock = time.perf_counter_ns
        for i in range(n):
            s = states[i & 255]
            t0 = clock()
            fn(s)
            ns[i] = clock() - t0
        out[name] = {"p50_us": pct(ns / 1e3, 50), "p99_us": pct(ns / 1e3, 99), "n": n}
    return out


def overhead(widths, runs: int, quick: bool, extra: dict) -> tuple[list[dict], dict]:
    data = ds.load("h1", quick=quick)
    rows, pareto = [], {}
    for w in widths:
        net = MultiExitNet("resnet", 1, data.n_classes, width=w)
        train(net, data, epochs=1 if w != widths[0] else (3 if quick else 8))
        with tempfile.TemporaryDirectory() as tmp:
            info = export_onnx(net, (1, 32, 32), tmp)
            sn = SegmentedNet(tmp, info["segments"])
            x = to_torch(data.x_test[:1], 2).numpy()
            # Interleaved (plain, all exits, all exits + criteria) so that this VM's drifts
            # hit all three alike; medians over many rounds.
            plain_s = open_session(Path(tmp) / info["plain"], 1)
            feed = {"x": np.ascontiguousarray(x)}
            never = parse_criteria("null").compile()
            for _ in range(30):
                plain_s.run(None, feed)
                sn.run_all(x)
            plain, multi, cond = [], [], []
            for _ in range(runs):
                t0 = time.perf_counter()
                plain_s.run(None, feed)
                t1 = time.perf_counter()
                sn.run_all(x)
                t2 = time.perf_counter()
                sn.run(x, never)
                t3 = time.perf_counter()
                plain.append((t1 - t0) * 1e3)
                multi.append((t2 - t1) * 1e3)
                cond.append((t3 - t2) * 1e3)
            row = {"width": w, "flops": count_flops(net, (1, 32, 32))[-1],
                   "plain_ms": float(np.median(plain)), "all_exits_ms": float(np.median(multi)),
                   "all_exits_with_criteria_ms": float(np.median(cond))}
            row["overhead_pct"] = 100 * (row["all_exits_with_criteria_ms"] / row["plain_ms"] - 1)
            rows.append(row)
            if w == widths[0]:
                xt = to_torch(data.x_test, 2).numpy()
                prof = measure_exit_profile(sn, xt, data.y_test,
                                            flops=count_flops(net, (1, 32, 32)), repeats=1)
                t0 = time.perf_counter()
                pp = ParetoPolicy.fit(prof, metric="energy")
                fit_ms = (time.perf_counter() - t0) * 1e3
                upd = []
                targets = np.linspace(0.02, 0.5, 200)
                for tgt in targets:
                    t0 = time.perf_counter()
                    k = pp.lookup(float(tgt))
                    if k is not None:
                        pp.criteria(k).compile()
                    upd.append((time.perf_counter() - t0) * 1e3)
                extra["limiter"] = limiter(sn, xt, data.y_test, quick=quick)
                extra["runtime"] = runtime_switch(tmp, info, prof.accuracy,
                                                  count_flops(net, (1, 32, 32)),
                                                  100 if quick else 1000)
                pareto = {"vectors": len(pp.thresholds), "front": len(pp.front),
                          "fit_ms": fit_ms, "update_ms": {"p50": pct(upd, 50),
                                                          "p99": pct(upd, 99),
                                                          "n": len(upd)},
                          "exit_accuracy": prof.accuracy.tolist()}
    return rows, pareto


def limiter(sn, x, y, *, quick: bool) -> dict:
    """Every policy under every trace through a 40% limit: the largest usage over any 0.1 s
    window against the limiter's bound."""
    from workbench.multiexit.serve import App, poisson, segment_times, serve, stepped

    seg = segment_times(sn, x)
    cap = 1000.0 / sum(seg)
    policies = {"full": "null", "exit 2": "exit_number == 2", "confidence": "confidence > 0.9",
                "time": f"response_time > {seg[0] + seg[1]:.4f}ms"}
    dur = 0.2 if quick else 0.5
    traces = {"under": poisson(0.3 * cap, dur, seed=2), "over": poisson(2.0 * cap, dur, seed=3),
              "burst": stepped([0.2 * cap, 3.0 * cap, 0.2 * cap], dur / 3, seed=4)}
    rows = []
    for mode in ("delay", "drop"):
        for pname, text in policies.items():
            crit = parse_criteria(text)
            for tname, tr in traces.items():
                app = App("a", sn, x, y, lambda r, b, c=crit: c, segment_ms=seg)
                res = serve([app], {"a": tr}, limit={"a": 0.4}, limiter_interval=0.05,
                            limiter_mode=mode)
                s = res.summary()
                rows.append({"mode": mode, "policy": pname, "trace": tname,
                             "max_window_usage": res.max_usage("a", window=0.1),
                             "bound": res.usage_bound("a", window=0.1),
                             "requests": s["requests"], "served": s["served"],
                             "delayed": s["delayed"], "dropped": s["dropped"],
                             "capped": s["capped"],
                             "lost": s["requests"] - s["served"] - s["dropped"]})
    return {"limit": 0.4, "window_s": 0.1, "burst_s": 0.02, "rows": rows,
            "max_usage": max(r["max_window_usage"] for r in rows),
            "within_bound": all(r["max_window_usage"] <= r["bound"] + 1e-9 for r in rows),
            "lost": sum(r["lost"] for r in rows)}


def runtime_switch(folder: str, info: dict, accuracy, flops, runs: int) -> dict:
    """The runtime's multi-exit executor: moving to another operating point of the same stored
    model (a new executor over the loaded segments) and a criteria update, timed; and which
    exit the next request takes after an update."""
    from workbench.runtime.bundle import ConfigSpec
    from workbench.runtime.multiexit import MultiExitExecutor, SegmentCache

    segs = tuple(info["segments"])
    blobs = [(Path(folder) / f).read_bytes() for f in segs]

    def spec(cid: str, text: str) -> ConfigSpec:
        return ConfigSpec(cid, "h1", f"ResNet-ME@{cid}", "FP32", "CPU", 1, False, 1, segs[0], {},
                          criteria=text, segments=segs, exit_accuracy=tuple(accuracy),
                          exit_flops=tuple(flops), input_shape=(1, 32, 32))

    cache = SegmentCache()
    first = MultiExitExecutor(spec("exit4", "exit_number == 4"), blobs, cache).load()
    switch, update, took = [], [], []
    x = np.zeros((1, 1, 32, 32), np.float32)
    for i in range(runs):
        t0 = time.perf_counter()
        other = MultiExitExecutor(spec(f"exit{1 + i % 3}", f"exit_number == {1 + i % 3}"),
                                  blobs, cache).load()
        switch.append((time.perf_counter() - t0) * 1e3)
        text = f"exit_number == {1 + (i + 1) % 4}"
        t0 = time.perf_counter()
        first.set_criteria(text)
        update.append((time.perf_counter() - t0) * 1e3)
        first.run(x)
        took.append(first.last_exits == [(i + 1) % 4])
        other.close()
    return {"switch_ms": {"p50": pct(switch, 50), "p99": pct(switch, 99), "n": len(switch)},
            "criteria_update_ms": {"p50": pct(update, 50), "p99": pct(update, 99),
                                   "n": len(update)},
            "update_took_effect_on_next_request": float(np.mean(took)),
            "segment_loads": len(cache)}


def real_overhead(rounds: int, *, block: int = 20) -> dict:
    """Table 3's all-exit overhead at real scale: EfficientNet-Lite0 with four exits at 224
    (``delen.build_real``; its segments and cached features in the zoo) against the same
    backbone exported without exits.

    Blocks of ``block`` back-to-back requests per variant (as a server runs one model), the
    variants' order alternating every round, the ratio taken per round: alternating single
    requests of two models mixed their caches and moved the ratio between -9% and +10% with
    what else ran in the process; blocks narrow that (quartiles about two points apart in the
    last runs). The raw segment calls
    (no softmax, no criteria) split the overhead into the segment boundaries and the per-exit
    work in Python."""
    from workbench.lab.experiments import delen as dx

    b = dx.build_real(folder=dx.real_folder())
    plain_s = open_session(Path(b.folder) / "plain.onnx", 1)
    x = np.ascontiguousarray(b.x[:1], dtype=np.float32)
    never = parse_criteria("null").compile()
    sessions = b.net.sessions

    def raw() -> None:
        f = x
        for s in sessions:
            f, _ = s.run(None, {"x": f})

    variants = {"plain": lambda: plain_s.run(None, {"x": x}), "segments": raw,
                "exits": lambda: b.net.run(x, never)}
    per: dict[str, list[float]] = {k: [] for k in variants}
    for i in range(rounds):
        for k in (list(variants) if i % 2 == 0 else list(variants)[::-1]):
            for _ in range(3):  # settle into this model
                variants[k]()
            t0 = time.perf_counter()
            for _ in range(block):
                variants[k]()
            per[k].append((time.perf_counter() - t0) / block * 1e3)
    plain = np.array(per["plain"])

    def pct(k: str, q: float = 50) -> float:
        return 100 * (float(np.percentile(np.array(per[k]) / plain, q)) - 1)

    return {"model": b.name, "gflops": float(b.profile.flops[-1]) / 1e9,
            "plain_ms": float(np.median(plain)),
            "all_exits_with_criteria_ms": float(np.median(per["exits"])),
            "raw_segments_ms": float(np.median(per["segments"])),
            "overhead_pct": pct("exits"),
            "overhead_pct_p25_p75": [pct("exits", 25), pct("exits", 75)],
            "segment_boundaries_pct": pct("segments"),
            "rounds": rounds, "block": block, "exit_accuracy": b.profile.accuracy.tolist(),
            "test_images": len(b.y)}


def overhead_verdict(median: float, q1: float, q3: float, target: float) -> bool | None:
    """Whether an overhead measured over rounds meets ``target``: True when the upper quartile
    is at or below it, False when the lower quartile is above it, None (not shown either way)
    when the middle half straddles it."""
    if q3 <= target:
        return True
    if q1 > target:
        return False
    return None


def targets(crit: dict, pareto: dict, rows: list, real: dict, lim: dict, rt: dict) -> dict:
    """The targets, each judged on its own evidence. The all-exit overhead is judged at the real
    scale (EfficientNet-Lite0, Delen's backbone class) with its quartiles over rounds; the 32x32
    widths are shown, not judged: the small ones are dominated by onnxruntime's fixed cost per
    segment call (~15 us x exits) and the widest reads below zero (-3.9% once), which is noise,
    not a cheaper network with more outputs."""
    worst_crit = max(v["p99_us"] for v in crit.values())
    q1, q3 = real["overhead_pct_p25_p75"]
    return {
        "criteria_eval_us_p99": {"target": 5, "measured": worst_crit, "met": worst_crit <= 5},
        "pareto_update_ms_p99": {"target": 0.5, "measured": pareto["update_ms"]["p99"],
                                 "met": pareto["update_ms"]["p99"] <= 0.5},
        "all_exit_overhead_pct": {
            "target": 3, "measured": real["overhead_pct"], "q1": q1, "q3": q3,
            "rounds": real["rounds"], "model": real["model"],
            "met": overhead_verdict(real["overhead_pct"], q1, q3, 3),
            "judged": "at real scale: the median over rounds of paired blocks, met only if the "
                      "upper quartile is at or below the target",
            "toy_widths_not_judged": {str(r["width"]): r["overhead_pct"] for r in rows}},
        "limiter_window_usage": {"target": "<= limit + burst (+ one segment's overrun) "
                                           "for every policy and trace",
                                 "measured_max": lim["max_usage"],
                                 "met": lim["within_bound"] and lim["lost"] == 0},
        "criteria_update_next_request": {
            "target": 1.0, "measured": rt["update_took_effect_on_next_request"],
            "met": rt["update_took_effect_on_next_request"] == 1.0},
        "switch_between_points_ms_p99": {"target": 0.1, "measured": rt["switch_ms"]["p99"],
                                         "met": rt["switch_ms"]["p99"] < 0.1}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("-o", "--output", default=str(ROOT / "reports" / "bench" / "multiexit.json"))
    ap.add_argument("--retarget", action="store_true",
                    help="measure nothing: judge the targets again from the stored results")
    ap.add_argument("--real-only", action="store_true",
                    help="measure the real-scale all-exit overhead alone (60 rounds); keep the "
                    "other stored results")
    args = ap.parse_args(argv)
    if args.retarget or args.real_only:
        out = json.loads(Path(args.output).read_text())
        if args.real_only:
            out["real_scale"] = real_overhead(60)
            out["cpu"] = _cpu_model()
        out["targets"] = targets(out["criteria_eval"], out["pareto"], out["overhead"],
                                 out["real_scale"], out["limiter"], out["runtime"])
        atomic_write_json(args.output, out)
        print(out["targets"])
        return 0
    crit = criteria_cost(20_000 if args.quick else 200_000)
    widths = (8, 32) if args.quick else (8, 16, 32, 64, 96)
    extra: dict = {}
    rows, pareto = overhead(widths, 100 if args.quick else 1000, args.quick, extra)
    lim, rt = extra["limiter"], extra["runtime"]
    real = real_overhead(6 if args.quick else 60)
    out = {"what": "Delen's overheads measured on this machine (onnxruntime, 1 thread, batch 1); "
                   "ResNet-style 4-exit nets on h1 (32x32) at several widths",
           "criteria_eval": crit, "pareto": pareto, "overhead": rows, "limiter": lim,
           "runtime": rt, "real_scale": real,
           "cpu": _cpu_model(),
           "paper": {"criteria_eval_us": 100, "pareto_update_ms": 2.6, "overhead_mean_pct": 6.9,
                     "source": "Delen section 6.5, Table 3, Fig. 16 (Jetson Nano, TensorRT)"},
           "targets": targets(crit, pareto, rows, real, lim, rt)}
    atomic_write_json(args.output, out)
    for r in rows:
        print(r)
    print(out["targets"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
