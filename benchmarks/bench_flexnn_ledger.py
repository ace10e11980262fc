"""FlexNN's figures and tables that had no number on this machine -> reports/bench/flexnn_ledger.json.

Every network is a keras.applications model built without pretrained weights (random weights:
latency and memory only) and converted to the workbench's layer graph (BatchNorm and activations
folded into the layer before them); the executor is NumPy on one compute thread and one loader
thread (workbench.memory.flexnn).

- ``fig1``, FlexNN Figure 1 (layer-wise memory): per layer of ResNet-152 and VGG-19 at 224x224,
  the bytes of its inputs, output, weights and intermediates (the full im2col matrix, the
  executor's fastest kernel) from the graph: exact byte counts of the structure, no timing.
- ``table2``, FlexNN Table 2 (offline overheads) on ResNet-152 and VGG-19 at the paper's 100 MB
  budget and ViT-B/16 at 384x384 at its 300 MB: layer slicing (``slice_graph``, then writing
  the sliced weight files, as FlexNN's model writer does), profiling (FlexNN's profile is every
  tensor's size and lifecycle: here read from the graph, ``table``, ``last_use``,
  ``live_activation_bytes``), memory planning (``plan``: Alg. 1
  with weight pinning) and the bytes of the sliced weight files on disk against the Keras model's
  parameters.
- ``fig13``, FlexNN Figure 13 (ablation) on ResNet-50 and VGG-16 at 10% and 20% of the bulk peak
  (the full-size budgets of reports/flexnn/metrics.json): FlexNN, w.o. preload, w.o. mem (the plan
  run by ``NativeAllocRunner``: every tensor from the allocator instead of the static buffer) and
  w.o. both, each a fresh process (peak resident set over its baseline, median of 3 inferences),
  interleaved over rounds with the modes' order rotated each round.
- ``fig14``, FlexNN Figure 14 (changing budgets) on VGG-19, in one fresh process from the weight
  files: four budgets in turn, ``FlexNN.adapt`` between them (re-slice when needed, re-plan,
  re-allocate), 32 inferences each; per inference the latency and the resident set over the
  baseline, per budget the peak (VmHWM, reset after each adaptation) and the adaptation's times.
- ``fig11``, FlexNN Figure 11 (one layer): VGG's 4096x4096 FC planned alone at budgets from its
  smallest to whole (weights slicing), with and without preloading; and VGG-19's block2_conv2
  (3x3, 112x112x128) at im2col bands of 1 row to the whole matrix (input slicing).
- ``fig2``, FlexNN Figure 2 (kernels of one 3x3 Conv): the same conv with the im2col+GEMM and the
  direct kernels (no Winograd here): latency, and the intermediates each allocates (tracemalloc
  peak of the call, and the executor's own byte count).

Before each timed section the script waits until the 1-minute load average is below 1.3 (polled
every 10 s, at most 10 minutes) and records the load it ran under. About 4 minutes of
measurement on 2 cores (fig1 12 s, table2 22 s, fig14 98 s, fig13 101 s, fig11 9 s, fig2 1 s),
plus the waits.

Usage: python benchmarks/bench_flexnn_ledger.py [--loops 32] [--rounds 3] [--only fig1,...]
"""

from __future__ import annotations

import argparse
import json
import pickle
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "reports" / "bench" / "flexnn_ledger.json"
SECTIONS = ("fig1", "table2", "fig13", "fig14", "fig11", "fig2")
MB = 1e6
#: Figure 14's budgets (process MB), in the order they are set: down, down, up, up.
FIG14_BUDGETS = (300.0, 80.0, 150.0, 600.0)
#: Figure 11's FC budgets as fractions of its weights, and their names.
FRACS = {1 / 32: "1/32", 1 / 16: "1/16", 1 / 8: "1/8", 1 / 4: "1/4", 1 / 2: "1/2", 1.0: "1",
         2.0: "2"}
ROW_LISTS = ("fig1_summary", "fig1_layers", "table2", "fig13_rows", "fig13_points",
             "fig14_segments", "fig14_inferences", "fig11_fc", "fig11_conv", "fig2_kernels")
ABLATION = ("flexnn", "flexnn w.o. preload", "flexnn w.o. mem", "flexnn w.o. both")


# --- helpers ------------------------------------------------------------------------------------

def stats(samples: list[float]) -> dict:
    """Median and quartiles of timings (ms), with the sample count."""
    s = sorted(float(x) for x in samples)
    if len(s) >= 2:
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
    else:
        q1 = q3 = s[0]
    return {"median": statistics.median(s), "q1": q1, "q3": q3, "n": len(s)}


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def wait_quiet(label: str, log: dict, *, below: float = 1.3, poll: float = 10.0,
               give_up: float = 600.0) -> None:
    t0 = time.monotonic()
    while load1() >= below and time.monotonic() - t0 < give_up:
        time.sleep(poll)
    now = load1()
    log[label] = {"waited_s": round(time.monotonic() - t0, 1), "load1_at_start": now,
                  "gave_up": now >= below}
    print(f"[{label}] load {now:.2f} after {log[label]['waited_s']} s of waiting", flush=True)


def build(name: str):
    """A full-size network at 224x224 (random weights) as a layer graph, and its Keras parameter
    count (the original model's size)."""
    from workbench.host import zoo
    from workbench.memory.graph import from_keras

    if name == "ViT":  # built as a layer graph: its parameters are its weights
        from workbench.lab.experiments.flexnn import vit_graph

        g = vit_graph()
        return g, g.weight_bytes // 4
    apps = zoo._keras().applications
    ctor = {"ResNet-152": apps.ResNet152, "VGG-19": apps.VGG19, "ResNet-50": apps.ResNet50,
            "VGG-16": apps.VGG16}[name]
    model = ctor(weights=None, input_shape=(224, 224, 3))
    params = int(model.count_params())
    g = from_keras(model, name=name)
    del model
    return g, params


# --- Figure 1: layer-wise memory from the graph --------------------------------------------------

def layer_rows(g) -> list[dict]:
    rows = []
    for i, ly in enumerate(g.layers):
        ins = sum(int(np.prod(s)) * 4 for s in ly.in_shapes)
        rec = {"model": g.name, "layer": i, "name": ly.name, "op": ly.op, "input_bytes": ins,
               "output_bytes": ly.out_bytes(), "weight_bytes": ly.weight_bytes,
               "intermediate_bytes": ly.scratch_bytes()}
        rec["total_bytes"] = (rec["input_bytes"] + rec["output_bytes"] + rec["weight_bytes"]
                              + rec["intermediate_bytes"])
        rows.append(rec)
    return rows


def layer_summary(rows: list[dict]) -> dict:
    mb = [r["total_bytes"] / MB for r in rows]
    n = len(mb)
    top = sorted(rows, key=lambda r: -r["total_bytes"])[:5]
    return {"model": rows[0]["model"], "layers": n,
            "le_5mb": sum(v <= 5 for v in mb), "le_20mb": sum(v <= 20 for v in mb),
            "gt_70mb": sum(v > 70 for v in mb),
            "share_le_5mb_pct": 100 * sum(v <= 5 for v in mb) / n,
            "share_le_20mb_pct": 100 * sum(v <= 20 for v in mb) / n,
            "share_gt_70mb_pct": 100 * sum(v > 70 for v in mb) / n,
            "max_layer_mb": max(mb), "median_layer_mb": statistics.median(mb),
            "largest": [r["name"] for r in top]}


# --- Table 2: offline overheads ------------------------------------------------------------------

def overheads(g, params: int, budget_mb: float, reps: int) -> dict:
    from workbench.memory import flexnn as F
    from workbench.memory.programs import planned_program, write_weight_files

    tb = int(budget_mb * MB) - F.EXECUTOR_RESERVE
    slice_ms, plan_ms, write_ms, static_ms = [], [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        s = F.slice_graph(g, tb)
        slice_ms.append((time.perf_counter() - t0) * 1e3)
        p = F.plan(s, tb)
        plan_ms.append(p.seconds * 1e3)
        t0 = time.perf_counter()  # FlexNN's profile: every tensor's size and lifecycle
        g.table()
        g.last_use()
        g.live_activation_bytes()
        static_ms.append((time.perf_counter() - t0) * 1e3)
    prog = planned_program(p)
    files: list[Path] = []
    for _ in range(reps):
        d = Path(tempfile.mkdtemp(prefix="wb-t2-"))
        try:
            t0 = time.perf_counter()
            files = write_weight_files(g, prog, d)
            write_ms.append((time.perf_counter() - t0) * 1e3)
            storage = sum(f.stat().st_size for f in set(files))
        finally:
            shutil.rmtree(d)
    sl, wr = stats(slice_ms), stats(write_ms)
    return {
        "model": g.name, "budget_mb": budget_mb, "layers": len(g.layers),
        "steps": len(p.slicing.steps), "weight_slices": len(set(files)),
        "buffer_mb": p.buffer_bytes / MB, "pinned_mb": p.pinned_bytes / MB,
        "storage_mb": storage / MB, "original_mb": params * 4 / MB,
        "graph_weight_mb": g.weight_bytes / MB, "storage_ratio": storage / (params * 4),
        "slicing_ms": sl["median"] + wr["median"],
        "slice_decision_ms": sl, "slice_write_ms": wr,
        "profiling_ms": stats(static_ms)["median"], "profiling": stats(static_ms),
        "planning_ms": stats(plan_ms)["median"], "planning": stats(plan_ms),
        "samples_ms": {"slice_decision": slice_ms, "slice_write": write_ms,
                       "profiling": static_ms,
                       "planning": plan_ms},
    }


# --- Figure 13: the ablation in fresh processes --------------------------------------------------

def ablation(g, rounds: int, reps: int) -> tuple[list[dict], list[dict]]:
    from workbench.lab.experiments.flexnn import measure_without_static_memory
    from workbench.memory import flexnn as F
    from workbench.memory.measure import measure

    bulk_mb = g.bulk_peak_bytes() / MB
    low = (F.min_budget(g) + F.EXECUTOR_RESERVE) / MB * 1.001
    budgets = sorted({round(max(f * bulk_mb, low), 3) for f in (0.1, 0.2)})
    rows = []
    with tempfile.TemporaryDirectory(prefix="wb-f13-") as tmp:
        for r in range(rounds):
            for b in budgets:
                order = ABLATION[r % 4:] + ABLATION[:r % 4]
                for mode in order:
                    kw = {"budget_mb": b, "reps": reps, "root": tmp,
                          "preload": mode in ("flexnn", "flexnn w.o. mem")}
                    m = (measure_without_static_memory(g, **kw) if "mem" in mode or "both" in mode
                         else measure(g, **kw))
                    rows.append({"model": g.name, "mode": mode, "budget_mb": b, "round": r,
                                 "latency_ms": m.latency_ms,
                                 "latency_samples_ms": m.latency_samples_ms,
                                 "first_ms": m.first_ms, "model_mb": m.model_mb,
                                 "peak_mb": m.peak_mb, "base_mb": m.base_mb,
                                 "planned_mb": m.planned_mb})
                    print(f"  {g.name} {mode:22s} @ {b:g} MB r{r}: {m.latency_ms:.1f} ms, "
                          f"{m.model_mb:.2f} MB", flush=True)
    return rows, ablation_points(rows)


def ablation_points(rows: list[dict]) -> list[dict]:
    """Per model, budget and mode: latency over rounds (median, quartiles) and the mode's latency
    over FlexNN's paired per round, as a median and as the per-round values the ledger's noise
    rule reads (this machine drifts between rounds more than some ablations cost)."""
    points = []
    for model, b in dict.fromkeys((x["model"], x["budget_mb"]) for x in rows):
        mine = [x for x in rows if (x["model"], x["budget_mb"]) == (model, b)]
        ref = {x["round"]: x["latency_ms"] for x in mine if x["mode"] == "flexnn"}
        for mode in ABLATION:
            rs = [x for x in mine if x["mode"] == mode]
            lat = stats([x["latency_ms"] for x in rs])
            paired = [100 * (x["latency_ms"] / ref[x["round"]] - 1) for x in rs]
            points.append({
                "model": model, "mode": mode, "budget_mb": b, "rounds": len(rs),
                "latency_ms": lat["median"], "latency_q1_ms": lat["q1"],
                "latency_q3_ms": lat["q3"],
                "latency_vs_flexnn_pct": statistics.median(
                    100 * (x["latency_ms"] / ref[x["round"]] - 1) for x in rs),
                "latency_vs_flexnn_rounds_pct": paired,
                "model_mb": max(x["model_mb"] for x in rs),
                "planned_mb": rs[0]["planned_mb"],
                "within_budget": all(x["model_mb"] <= b for x in rs)})
    return points


# --- Figure 14: adapting to changing budgets, one fresh process ----------------------------------

def child_adapt(root: Path, budgets: list[float], loops: int) -> dict:
    """Runs in a fresh process (``--child-adapt``): the skeleton graph, weights from files."""
    from workbench.memory import flexnn as F
    from workbench.memory.measure import SKELETON, from_skeleton
    from workbench.procfs import status_kb

    with open(root / SKELETON, "rb") as fh:
        g = from_skeleton(pickle.load(fh))
    x = np.random.default_rng(0).normal(size=(1,) + tuple(g.input_shape)).astype(np.float32)
    a = np.ones((1024, 1024), np.float32)
    (a @ a).sum()
    del a
    F.warm_up()
    kb = 1024 / MB

    def reset_peak():
        try:
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            pass

    nb = len(budgets)
    # The records are allocated before the baseline: the harness's own memory stays out of it.
    lat, rss, t_inf = (np.zeros((nb, loops)) for _ in range(3))
    peak, code, t_ad = np.zeros(nb, np.int64), np.zeros(nb, np.int64), np.zeros(nb)
    reset_peak()
    base, code0 = status_kb("VmRSS"), status_kb("RssFile")
    t_start = time.perf_counter()
    f = None
    buf = [0.0] * nb
    for k, b in enumerate(budgets):
        tb = int(b * MB) - F.EXECUTOR_RESERVE
        t_ad[k] = time.perf_counter() - t_start
        if f is None:
            f = F.FlexNN(g, root, budget=tb)
        else:
            f.adapt(tb)
        reset_peak()  # the budget's own window: after the old buffer is released
        for j in range(loops):
            t0 = time.perf_counter()
            f.run(x)
            lat[k, j] = (time.perf_counter() - t0) * 1e3
            t_inf[k, j] = t0 - t_start
            rss[k, j] = status_kb("VmRSS")
        code[k] = max(status_kb("RssFile") - code0, 0)
        peak[k] = max(status_kb("VmHWM"), status_kb("VmRSS"))
        buf[k] = f.plan.buffer_bytes / MB
    assert f is not None
    segs, infs = [], []
    for k, (b, ad) in enumerate(zip(budgets, f.history)):
        ls = [float(v) for v in lat[k]]
        warm = stats(ls[1:] if len(ls) > 1 else ls)
        model = max(int(peak[k]) - base - int(code[k]), 0) * kb
        segs.append({"budget": f"{b:g} MB", "budget_mb": b, "order": k, "initial": k == 0,
                     "t_s": float(t_ad[k]), "resliced": ad.resliced, "slice_ms": ad.slice_ms,
                     "plan_ms": ad.plan_ms, "setup_ms": ad.setup_ms, "adapt_ms": ad.total_ms,
                     "buffer_mb": buf[k], "model_mb": model, "code_mb": int(code[k]) * kb,
                     "over_budget_pct": 100 * (model / b - 1),
                     "first_ms": ls[0], "latency_ms": warm["median"],
                     "latency_q1_ms": warm["q1"], "latency_q3_ms": warm["q3"],
                     "latency_n": warm["n"]})
        for j in range(loops):
            infs.append({"budget_mb": b, "loop": j, "t_s": float(t_inf[k, j]),
                         "latency_ms": ls[j], "rss_mb": (float(rss[k, j]) - base) * kb,
                         "buffer_mb": buf[k]})
    f.close()
    return {"base_mb": base * kb, "segments": segs, "inferences": infs}


def adapt_run(g, budgets: tuple[float, ...], loops: int) -> dict:
    import subprocess

    from workbench.memory.measure import prepare
    from workbench.timing import blas_threads_env

    with tempfile.TemporaryDirectory(prefix="wb-f14-") as tmp:
        for b in budgets:  # every slicing's weight files, written before the run
            prepare(g, tmp, budget_mb=b)
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child-adapt", tmp,
               ",".join(repr(b) for b in budgets), str(loops)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900,
                           env=blas_threads_env(1), cwd=ROOT)
    if r.returncode != 0:
        raise RuntimeError(f"adaptation child failed: {r.stderr.strip().splitlines()[-1:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# --- Figure 11 and Figure 2: one layer -----------------------------------------------------------

def fc_sweep(runs: int) -> list[dict]:
    """VGG's 4096x4096 FC alone, planned at budgets from its smallest to whole weights."""
    from threadpoolctl import threadpool_limits

    from workbench.memory import flexnn as F
    from workbench.memory.graph import Layer, LayerGraph

    rng = np.random.default_rng(0)
    n = 4096
    ly = Layer("fc2", "dense", ["input"], (n,), {"act": "relu"},
               {"w": (rng.normal(size=(n, n)) * 0.01).astype(np.float32),
                "b": np.zeros(n, np.float32)}, [(n,)])
    g = LayerGraph("FC-4096", (n,), [ly])
    x = rng.normal(size=(1, n)).astype(np.float32)
    ref = g.run(x)
    wmb = ly.weight_bytes / MB
    out = []
    with tempfile.TemporaryDirectory(prefix="wb-f11-") as tmp, threadpool_limits(1):
        for frac in FRACS:
            b = max(F.min_budget(g), int(frac * ly.weight_bytes) + 4 * n * 2 + 4096)
            p = F.plan(F.slice_graph(g, b), b)
            rs = {pre: F.FlexRunner(p, tmp, preload=pre) for pre in (True, False)}
            for r in rs.values():
                np.testing.assert_allclose(r.run(x), ref, rtol=1e-3, atol=1e-4)
            lat: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(runs):
                for pre, r in rs.items():
                    t0 = time.perf_counter()
                    r.run(x)
                    lat[pre].append((time.perf_counter() - t0) * 1e3)
            for pre, r in rs.items():
                r.close()
                s = stats(lat[pre])
                out.append({"layer": "FC 4096x4096", "budget_frac_of_weights": frac,
                            "budget": FRACS[frac],
                            "preload": pre, "mode": "preload" if pre else "w.o. preload",
                            "weight_slices": len(p.slicing.steps),
                            "buffer_mb": p.buffer_bytes / MB, "weights_mb": wmb,
                            "pinned_mb": p.pinned_bytes / MB,
                            "latency_ms": s["median"], "latency_q1_ms": s["q1"],
                            "latency_q3_ms": s["q3"], "n": s["n"]})
    return out


def conv_layer():
    """VGG-19's block2_conv2: 3x3, 128 -> 128 channels, 112x112, same padding."""
    from workbench.memory.graph import Layer

    rng = np.random.default_rng(0)
    c = 128
    return Layer("block2_conv2", "conv", ["input"], (112, 112, c),
                 {"k": (3, 3), "s": 1, "padding": "same", "act": "relu"},
                 {"w": (rng.normal(size=(9 * c, c)) * 0.05).astype(np.float32),
                  "b": np.zeros(c, np.float32)}, [(112, 112, c)])


def conv_sweep(runs: int) -> list[dict]:
    from threadpoolctl import threadpool_limits

    ly = conv_layer()
    x = np.random.default_rng(1).normal(size=(1, 112, 112, 128)).astype(np.float32)
    out_a = np.empty((1, 112, 112, 128), np.float32)
    ref = np.empty_like(out_a)
    ly.compute([x], ref)
    bands = (1, 2, 4, 8, 16, 32, 112)
    lat: dict[int, list[float]] = {r: [] for r in bands}
    scr = {r: np.empty(ly.scratch_bytes(rows=r) // 4 + 1, np.float32) for r in bands}
    with threadpool_limits(1):
        for r in bands:
            ly.compute([x], out_a, rows=r, scratch=scr[r])
            np.testing.assert_allclose(out_a, ref, rtol=1e-3, atol=1e-3)
        for _ in range(runs):
            for r in bands:
                t0 = time.perf_counter()
                ly.compute([x], out_a, rows=r, scratch=scr[r])
                lat[r].append((time.perf_counter() - t0) * 1e3)
    rows = []
    for r in bands:
        s = stats(lat[r])
        rows.append({"layer": "3x3 Conv 112x112x128", "band_rows": r,
                     "band": "whole" if r == 112 else f"{r} row" + "s" * (r > 1),
                     "intermediate_mb": ly.band_bytes(r) / MB,
                     "scratch_mb": ly.scratch_bytes(rows=r) / MB, "latency_ms": s["median"],
                     "latency_q1_ms": s["q1"], "latency_q3_ms": s["q3"], "n": s["n"]})
    return rows


def kernels(runs: int) -> list[dict]:
    import tracemalloc

    from threadpoolctl import threadpool_limits

    ly = conv_layer()
    x = np.random.default_rng(1).normal(size=(1, 112, 112, 128)).astype(np.float32)
    outs = {k: np.empty((1, 112, 112, 128), np.float32) for k in ("im2col", "direct")}
    alloc = {}
    with threadpool_limits(1):
        for k, o in outs.items():
            ly.compute([x], o, kernel=k)  # warm
            tracemalloc.start()
            ly.compute([x], o, kernel=k)  # the kernel allocates its own intermediates
            alloc[k] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        np.testing.assert_allclose(outs["im2col"], outs["direct"], rtol=1e-3, atol=1e-3)
        lat: dict[str, list[float]] = {k: [] for k in outs}
        for _ in range(runs):
            for k, o in outs.items():
                t0 = time.perf_counter()
                ly.compute([x], o, kernel=k)
                lat[k].append((time.perf_counter() - t0) * 1e3)
    act = (ly.out_bytes() + int(np.prod(ly.in_shapes[0])) * 4)
    rows = []
    for k in outs:
        s = stats(lat[k])
        rows.append({"kernel": k, "latency_ms": s["median"], "latency_q1_ms": s["q1"],
                     "latency_q3_ms": s["q3"], "n": s["n"],
                     "intermediate_mb": ly.scratch_bytes(kernel=k) / MB,
                     "allocated_peak_mb": alloc[k] / MB,
                     "memory_mb": (act + ly.weight_bytes + ly.scratch_bytes(kernel=k)) / MB})
    return rows


# --- main ----------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loops", type=int, default=32, help="Figure 14: inferences per budget")
    ap.add_argument("--rounds", type=int, default=3, help="Figure 13: interleaved rounds")
    ap.add_argument("--reps", type=int, default=5, help="Table 2: repetitions of each timing")
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--output", default=str(OUT))
    ap.add_argument("--max-wait", type=float, default=600.0,
                    help="seconds to wait for a quiet machine before each section")
    ap.add_argument("--child-adapt", nargs=3, metavar=("ROOT", "BUDGETS", "LOOPS"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--recompute", action="store_true",
                    help="measure nothing: recompute Figure 13's points from its stored rows")
    args = ap.parse_args(argv)
    if args.recompute:
        from workbench.fileio import atomic_write_text, dumps_json
        out_path = Path(args.output)
        result = json.loads(out_path.read_text())
        result["fig13_points"] = ablation_points(result["fig13_rows"])
        atomic_write_text(out_path, dumps_json(result, row_lists=ROW_LISTS) + "\n")
        print(f"recomputed {out_path}")
        return 0
    if args.child_adapt:
        root, budgets, loops = args.child_adapt
        print(json.dumps(child_adapt(Path(root), [float(b) for b in budgets.split(",")],
                                     int(loops))))
        return 0

    from workbench.fileio import atomic_write_text, dumps_json
    from workbench.procfs import cpu_model as _cpu_model

    only = [s for s in args.only.split(",") if s]
    out_path = Path(args.output)
    result: dict = json.loads(out_path.read_text()) if out_path.exists() else {}
    load: dict = result.get("load", {})
    secs: dict = result.get("seconds", {})
    t_all = time.perf_counter()

    # The machine changes from day to day and a run may measure only some sections: each
    # section records the CPU it ran on (sections from before this was kept ran on the CPU the
    # file named then).
    cpus: dict = result.get("cpu_by_section") or {
        s: result["cpu"] for s in SECTIONS if s in secs and "cpu" in result}

    def timed(name, fn):
        cpus[name] = _cpu_model()
        wait_quiet(name, load, give_up=args.max_wait)
        t0 = time.perf_counter()
        fn()
        secs[name] = round(time.perf_counter() - t0, 1)
        load[name]["load1_at_end"] = load1()  # others may have started meanwhile: say so
        print(f"[{name}] {secs[name]} s", flush=True)

    graphs: dict = {}

    def graph(name):
        if name not in graphs:
            graphs[name] = build(name)
        return graphs[name]

    if "fig1" in only:
        def fig1():
            rows, summ = [], []
            for name in ("ResNet-152", "VGG-19"):
                rs = layer_rows(graph(name)[0])
                rows += rs
                summ.append(layer_summary(rs))
            fc = max((r for r in rows if r["model"] == "VGG-19" and r["op"] == "dense"),
                     key=lambda r: r["total_bytes"])
            c2 = next(r for r in rows if r["model"] == "VGG-19" and r["name"] == "block1_conv2")
            result.update({
                "fig1_summary": summ, "fig1_layers": rows,
                "fig1_vgg19_largest_fc_weight_share_pct":
                    100 * fc["weight_bytes"] / fc["total_bytes"],
                "fig1_vgg19_conv2_intermediate_share_pct":
                    100 * c2["intermediate_bytes"] / c2["total_bytes"]})
        timed("fig1", fig1)
    if "table2" in only:
        def table2():
            result["table2"] = [overheads(*graph(name), budget, args.reps)
                                for name, budget in (("VGG-19", 100.0), ("ResNet-152", 100.0),
                                                     ("ViT", 300.0))]
        timed("table2", table2)
    graphs.pop("ResNet-152", None)
    if "fig14" in only:
        def fig14():
            r = adapt_run(graph("VGG-19")[0], FIG14_BUDGETS, args.loops)
            result.update(fig14_model="VGG-19", fig14_loops=args.loops,
                          fig14_base_mb=r["base_mb"], fig14_segments=r["segments"],
                          fig14_inferences=r["inferences"])
        timed("fig14", fig14)
    graphs.clear()
    if "fig13" in only:
        def fig13():
            rows, points = [], []
            for name in ("ResNet-50", "VGG-16"):
                g = graph(name)[0]
                rs, ps = ablation(g, args.rounds, 3)
                rows += rs
                points += ps
                graphs.clear()
            result.update(fig13_rows=rows, fig13_points=points)
        timed("fig13", fig13)
    if "fig11" in only:
        def fig11():
            result.update(fig11_fc=fc_sweep(15), fig11_conv=conv_sweep(11))
        timed("fig11", fig11)
    if "fig2" in only:
        def fig2():
            result["fig2_kernels"] = kernels(7)
        timed("fig2", fig2)

    secs["this_run_total"] = round(time.perf_counter() - t_all, 1)
    result.update({
        "source": ("measured on this machine: full-size networks (keras.applications at "
                   "224x224; ViT-B/16 at 384x384 built as a layer graph) with random weights "
                   "(latency and memory only) run by the workbench's NumPy "
                   "layer executor (one compute thread, one loader thread); memory of fresh "
                   "processes is their peak resident set (VmHWM) over the baseline before the "
                   "model; timings are medians with quartiles over the stated repetitions"),
        "fig1_source": ("measured on this machine from the layer graph's structure: exact byte "
                        "counts of each layer's inputs, output, weights and im2col "
                        "intermediates (float32), not a timing or a process reading"),
        "what": ("FlexNN (MobiCom '24) items that had no number: Figure 1 (layer-wise memory of "
                 "ResNet-152 and VGG-19), Table 2 (slicing, profiling and planning time, storage "
                 "of the sliced weights, at 100 MB and ViT's 300 MB), Figure 13 (w.o. mem, w.o. preload, w.o. "
                 "both), Figure 14 (VGG-19 under four budgets in turn), Figure 11 (one FC and "
                 "one 3x3 Conv sliced) and Figure 2 (im2col vs direct kernel)"),
        "cpu": _cpu_model(), "cpu_by_section": cpus, "load": load, "seconds": secs,
        "fig14_budgets_mb": list(FIG14_BUDGETS), "ablation_modes": list(ABLATION),
    })
    atomic_write_text(out_path, dumps_json(result, row_lists=ROW_LISTS) + "\n")
    print(f"wrote {out_path} in {secs['this_run_total']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
