"""FlexNN Figure 10 on the paper's own terms, then under real memory pressure ->
reports/bench/flexnn_fig10.json.

``fig10``: the paper's six models at full size (VGG-19, ResNet-152, MobileNetV2 at 224x224 from
keras.applications, SqueezeNet v1.1 built in Keras here, ViT-B/16 at 384x384 and GPT-2 small on
64 tokens built as layer graphs; random weights: latency and memory only), each run in a fresh
process and measured the way FlexNN's artifact measures (``scripts/device/
measure-mem.sh`` and ``scripts/plot/end2end.py`` of xxxxyu/FlexNN):

- memory: the process's resident set sampled from outside every 10 ms (the total of ``pmap -x``,
  read from ``/proc/PID/smaps_rollup``; each run checks the two once) less its idle resident set
  (the largest sample of a 1 s idle phase after start-up, before loading; the artifact takes the
  largest sample of the run's first 3 s);
- latency: 4 warm-up inferences, then 8 timed; the artifact's statistic (the mean without the
  smallest and largest) and the median with quartiles.

Modes: the three baselines of the paper, with this workbench's NumPy executor standing in for
NCNN: ``default`` (every weight resident, im2col+GEMM convolutions: NCNN-Default),
``direct`` (every weight resident, direct convolutions, no im2col matrix: NCNN-Direct; there is
no Winograd kernel here to disable), ``on-demand`` (each layer's weights read from its file just
before it runs and freed after: On-Demand); and FlexNN at several budgets. The artifact plots
FlexNN at its budget; here its measured memory is recorded beside the budget. Every mode runs
once per round, the order rotated each round; latencies are compared per round (this machine
drifts).

``pagecache``: FlexNN at its tightest budget on ResNet-152 and VGG-19 inside a memory cgroup,
which counts the page cache the run brings in (weights read from files) against its limit, as a
device under memory pressure does; the like-for-like reading above does not (``pmap`` shows a
process's own pages). Conditions per round: no limit (warm); limit = the run's warm group peak
x 1.15 + 8 MB, warm cache (the weight files' pages were brought in, and charged, by the writer);
the same limit after dropping the weight files' pages from the cache (cold: the run's reads
are charged to it; the interpreter's and libraries' pages stay cached, as an app's code does);
and cold with room for every weight file in the cache. Each run records the MB it read from storage
per timed inference (``/proc/self/io``); the disk's cold sequential read speed is measured on
the same files, so the latency added under the limit is compared with what re-reading costs.

Before each model the script waits until the 1-minute load average is below 1.3 (at most 10
minutes) and records the load. About 40 minutes on 2 cores at 3 rounds (ViT alone 12).

Usage: python benchmarks/bench_flexnn_fig10.py [--rounds 3] [--only fig10,pagecache]
       [--models VGG-19,...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_flexnn_ledger import load1, stats, wait_quiet  # noqa: E402

OUT = ROOT / "reports" / "bench" / "flexnn_fig10.json"
SECTIONS = ("fig10", "pagecache")
MODELS = ("VGG-19", "ResNet-152", "MobileNetV2", "SqueezeNet", "ViT", "GPT-2")
#: What of the paper's Figure 10 is not measured here, and why.
NOT_MEASURED = {
    "devices": "the Pixel 6 Pro, Mi MIX 2S and Raspberry Pi 4B are not here: every point is this "
               "machine's",
    "NCNN": "NCNN itself is not run: its configurations are stood in for by the workbench's "
            "executor (default: bulk im2col; direct: bulk direct convolution; on-demand)"}
#: How the two transformers differ from the paper's (built here as layer graphs).
SUBSTITUTED = {
    "ViT": "ViT-B/16 at 384x384 (577 tokens, 86.9M parameters), GELU as its tanh approximation",
    "GPT-2": "GPT-2 small reading 64 tokens in one forward pass; the language-model head is a "
             "copy of the token embedding (the executor shares no weight between layers), so "
             "163M parameters are stored against GPT-2's 124M"}
#: The budgets (MB) FlexNN's artifact runs each model at (scripts/device/eval-end-to-end.sh).
PAPER_BUDGETS = {"VGG-19": (60, 70, 80, 90, 100, 200, 300, 400, 600, 850, 1000),
                 "ResNet-152": (35, 50, 100, 200, 300, 400, 500, 600),
                 "MobileNetV2": (12, 15, 20), "SqueezeNet": (10, 15, 20),
                 "ViT": (200, 300, 500), "GPT-2": (370, 400, 500)}
BASELINES = ("default", "direct", "on-demand")
WARMUP, LOOPS, IDLE_S, SAMPLE_MS = 4, 8, 1.0, 10.0
MB = 1e6
ROW_LISTS = ("runs", "points", "comparisons", "best90", "pagecache_runs", "pagecache_points")


def trimmed_mean(xs: list[float]) -> float:
    """The artifact's latency: the mean without the smallest and the largest."""
    s = sorted(xs)
    return statistics.fmean(s[1:-1] if len(s) > 2 else s)


def budgets_for(g) -> list[float]:
    """FlexNN's budgets (process MB): the smallest that fits, the on-demand baseline's computed
    peak (its measured memory is higher: 20.0 MB against 13.1 computed on ResNet-152), and the
    artifact's budgets up to 0.9x the bulk peak; at most five. None sits at Default's or
    Direct's memory, so the latency at *their* memory is not measured."""
    from workbench.memory import flexnn as F

    low = round((F.min_budget(g) + F.EXECUTOR_RESERVE) / MB * 1.001, 3)
    bulk = g.bulk_peak_bytes() / MB
    od = round(F.on_demand_peak_bytes(g) / MB, 3)
    paper = [b for b in PAPER_BUDGETS.get(g.name, ()) if low < b < 0.9 * bulk]
    picks = [low] + ([od] if low < od < bulk else [])
    for b in paper:  # ascending, skipping any within 15% of one already picked
        if len(picks) >= 5:
            break
        if all(abs(b - p) / p > 0.15 for p in picks):
            picks.append(float(b))
    return sorted(picks)


def fig10(names: list[str], rounds: int, log: dict) -> list[dict]:
    from workbench.lab.experiments.flexnn import full_size_graph
    from workbench.memory.measure import measure

    runs: list[dict] = []
    for name in names:
        g = full_size_graph(name)
        budgets = budgets_for(g)
        modes: list[tuple[str, dict]] = [("default", {}), ("direct", {"kernel": "direct"}),
                                         ("on-demand", {"on_demand": True})]
        modes += [("flexnn", {"budget_mb": b}) for b in budgets]
        wait_quiet(f"fig10 {name}", log)
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="wb-fig10-") as tmp:
            for r in range(rounds):
                k = r % len(modes)
                for mode, kw in modes[k:] + modes[:k]:
                    m = measure(g, reps=LOOPS, warmup=WARMUP, idle_s=IDLE_S, sample_ms=SAMPLE_MS,
                                root=Path(tmp), **kw)
                    d = m.to_dict()
                    d.update(mode=mode, round=r, trimmed_mean_ms=trimmed_mean(m.latency_samples_ms))
                    runs.append(d)
                    print(f"  {name} r{r} {mode:9} {kw.get('budget_mb') or '':>8} "
                          f"pmap {m.pmap_mb:8.2f} MB  {d['trimmed_mean_ms']:8.1f} ms", flush=True)
        log[f"fig10 {name}"].update(seconds=round(time.monotonic() - t0, 1),
                                    load1_at_end=load1())
        del g
    return runs


def _key(d: dict) -> tuple:
    return (d["model"], d["mode"], d["budget_mb"])


def points(runs: list[dict]) -> list[dict]:
    """Per model and mode: memory the largest reading over rounds (a budget must hold in every
    run), latency the median of the rounds' trimmed means, and the median over rounds of the
    latency over Default's in the same round."""
    default = {(d["model"], d["round"]): d for d in runs if d["mode"] == "default"}
    out = []
    for key in dict.fromkeys(_key(d) for d in runs):
        rs = [d for d in runs if _key(d) == key]
        lat = [d["trimmed_mean_ms"] for d in rs]
        ratio = [d["trimmed_mean_ms"] / default[(d["model"], d["round"])]["trimmed_mean_ms"]
                 for d in rs]
        out.append({"model": key[0], "mode": key[1], "budget_mb": key[2], "rounds": len(rs),
                    "pmap_mb": max(d["pmap_mb"] for d in rs),
                    "pmap_mb_rounds": [d["pmap_mb"] for d in rs],
                    "vmhwm_model_mb": max(d["model_mb"] for d in rs),
                    "latency_ms": statistics.median(lat), "latency": stats(lat),
                    "latency_vs_default_pct": 100 * (statistics.median(ratio) - 1),
                    "latency_vs_default_rounds_pct": [100 * (x - 1) for x in ratio],
                    "within_budget": None if key[2] is None
                    else max(d["pmap_mb"] for d in rs) <= key[2]})
    return out


def comparisons(runs: list[dict]) -> list[dict]:
    """The paper's Figure 10 readings, per model and baseline: FlexNN's memory cut at its
    smallest budget, and its latency cut at no more memory than the baseline's (FlexNN's point
    of the largest budget whose measured memory is at most the baseline's: chosen by memory
    alone, never the fastest of noisy medians), each latency paired per round, with the rounds."""
    pts = points(runs)
    out = []
    for model in dict.fromkeys(p["model"] for p in pts):
        flex = [p for p in pts if p["model"] == model and p["mode"] == "flexnn"]
        low = min(flex, key=lambda p: p["budget_mb"])
        for base in BASELINES:
            b = next(p for p in pts if p["model"] == model and p["mode"] == base)
            under = [p for p in flex if p["pmap_mb"] <= b["pmap_mb"]]
            fast = max(under, key=lambda p: p["budget_mb"]) if under else None
            row = {"model": model, "baseline": base, "baseline_mb": b["pmap_mb"],
                   "baseline_ms": b["latency_ms"], "flexnn_min_budget_mb": low["budget_mb"],
                   "flexnn_min_mb": low["pmap_mb"],
                   "memory_cut_pct": 100 * (1 - low["pmap_mb"] / b["pmap_mb"]),
                   "flexnn_at_min_vs_baseline_pct": None, "same_memory_budget_mb": None,
                   "same_memory_mb": None, "latency_cut_pct": None}
            paired = _paired(runs, model, base, low["budget_mb"])
            row["flexnn_at_min_vs_baseline_pct"] = 100 * (paired - 1)
            if fast is not None:
                row.update(same_memory_budget_mb=fast["budget_mb"], same_memory_mb=fast["pmap_mb"],
                           latency_cut_pct=100 * (1 - _paired(runs, model, base,
                                                              fast["budget_mb"])),
                           latency_cut_rounds_pct=[100 * (1 - r) for r in _paired(
                               runs, model, base, fast["budget_mb"], rounds=True)])
            out.append(row)
    return out


def best90(runs: list[dict]) -> list[dict]:
    """Per model, the issue's target (at least 90% less memory than Default at no more than +10%
    latency) at a point chosen by memory alone, before any latency is looked at: FlexNN's largest
    budget whose measured memory is at least 90% below Default's. (Picking the fastest of the
    qualifying points would pick by the same noisy medians that are then checked.) Its latency is
    paired per round with Default's; the rounds are kept for the ledger's noise rule."""
    pts = points(runs)
    out = []
    for model in dict.fromkeys(p["model"] for p in pts):
        d = next(p for p in pts if p["model"] == model and p["mode"] == "default")
        ok = [p for p in pts if p["model"] == model and p["mode"] == "flexnn"
              and p["pmap_mb"] <= 0.1 * d["pmap_mb"]]
        if not ok:
            out.append({"model": model, "budget_mb": None, "memory_cut_pct": None,
                        "latency_vs_default_pct": None})
            continue
        b = max(ok, key=lambda p: p["budget_mb"])
        out.append({"model": model, "budget_mb": b["budget_mb"], "pmap_mb": b["pmap_mb"],
                    "chosen": "largest budget with at least 90% less memory than Default",
                    "memory_cut_pct": 100 * (1 - b["pmap_mb"] / d["pmap_mb"]),
                    "latency_vs_default_pct": b["latency_vs_default_pct"],
                    "latency_vs_default_rounds_pct": b["latency_vs_default_rounds_pct"]})
    return out


def _paired(runs: list[dict], model: str, base: str, budget: float, *, rounds: bool = False):
    """Median over rounds of FlexNN's latency at ``budget`` over ``base``'s in the same round
    (``rounds``: the per-round ratios instead, in round order)."""
    b = {d["round"]: d for d in runs if d["model"] == model and d["mode"] == base}
    f = sorted((d for d in runs if d["model"] == model and d["mode"] == "flexnn"
                and d["budget_mb"] == budget), key=lambda d: d["round"])
    ratios = [d["trimmed_mean_ms"] / b[d["round"]]["trimmed_mean_ms"] for d in f]
    return ratios if rounds else statistics.median(ratios)


# --- the page cache counted ------------------------------------------------------------------------

def cold_read_mb_s(files: list[Path]) -> float:
    """Sequential read speed of ``files`` with the page cache dropped first (MB/s)."""
    from workbench.memory.pressure import drop_page_cache

    drop_page_cache(files, only=True)
    n, t0 = 0, time.perf_counter()
    for f in files:
        with open(f, "rb", buffering=0) as fh:
            while chunk := fh.read(1 << 20):
                n += len(chunk)
    return n / MB / (time.perf_counter() - t0)


def pagecache(names: list[str], rounds: int, log: dict) -> tuple[list[dict], dict]:
    from workbench.lab.experiments.flexnn import full_size_graph
    from workbench.memory import flexnn as F
    from workbench.memory.measure import KilledByLimit, measure, prepare

    runs: list[dict] = []
    disk: dict[str, dict] = {}
    for name in names:
        g = full_size_graph(name)
        budget = round((F.min_budget(g) + F.EXECUTOR_RESERVE) / MB * 1.001, 3)
        wait_quiet(f"pagecache {name}", log)
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="wb-pagecache-") as tmp:
            root = Path(tmp)
            prepare(g, root, budget_mb=budget)
            files = sorted(root.glob("*.bin"))
            weights_mb = sum(f.stat().st_size for f in files) / MB
            speeds = [cold_read_mb_s(files) for _ in range(3)]
            disk[name] = {"weight_files_mb": weights_mb, "cold_read_mb_s": stats(speeds)}
            free = measure(g, budget_mb=budget, reps=2, root=root, limit_mb=1e6 - 1)
            limit = round(free.group_peak_mb * 1.15 + 8, 1)
            roomy = round(limit + weights_mb * 1.1 + 16, 1)
            conds = [("no limit, warm", {}), ("limit, warm", {"limit_mb": limit}),
                     ("limit, cold", {"limit_mb": limit, "cold": "weights"}),
                     ("room for the files, cold", {"limit_mb": roomy, "cold": "weights"})]
            for r in range(rounds):
                k = r % len(conds)
                for cond, kw in conds[k:] + conds[:k]:
                    try:
                        m = measure(g, budget_mb=budget, reps=LOOPS, warmup=WARMUP, root=root,
                                    **kw)
                    except KilledByLimit as e:
                        runs.append({"model": name, "condition": cond, "round": r,
                                     "budget_mb": budget, "outcome": "killed", "error": str(e)})
                        continue
                    d = m.to_dict()
                    d.update(condition=cond, round=r, outcome="ran",
                             trimmed_mean_ms=trimmed_mean(m.latency_samples_ms))
                    runs.append(d)
                    print(f"  {name} r{r} {cond:26} {d['trimmed_mean_ms']:8.1f} ms  read "
                          f"{m.read_mb_per_inference or 0:7.1f} MB/inf  group "
                          f"{m.group_peak_mb or 0:7.1f} MB", flush=True)
        log[f"pagecache {name}"].update(seconds=round(time.monotonic() - t0, 1),
                                        load1_at_end=load1())
        del g
    return runs, disk


def pagecache_points(runs: list[dict], disk: dict) -> list[dict]:
    """Per model and condition: latency over the same round's unlimited warm run, the MB read
    per inference, and what re-reading that many MB costs at the disk's cold speed."""
    out = []
    for model in dict.fromkeys(d["model"] for d in runs):
        ref = {d["round"]: d for d in runs if d["model"] == model
               and d["condition"] == "no limit, warm" and d["outcome"] == "ran"}
        for cond in dict.fromkeys(d["condition"] for d in runs if d["model"] == model):
            rs = [d for d in runs if d["model"] == model and d["condition"] == cond]
            ran = [d for d in rs if d["outcome"] == "ran" and d["round"] in ref]
            if not ran:
                out.append({"model": model, "condition": cond, "runs": len(rs), "ran": 0})
                continue
            read = statistics.median(d["read_mb_per_inference"] or 0.0 for d in ran)
            speed = disk[model]["cold_read_mb_s"]["median"]
            lat = [d["trimmed_mean_ms"] for d in ran]
            out.append({
                "model": model, "condition": cond, "runs": len(rs), "ran": len(ran),
                "budget_mb": ran[0]["budget_mb"], "limit_mb": ran[0]["limit_mb"],
                "latency_ms": statistics.median(lat), "latency": stats(lat),
                "latency_vs_unlimited_pct": 100 * (statistics.median(
                    d["trimmed_mean_ms"] / ref[d["round"]]["trimmed_mean_ms"] for d in ran) - 1),
                "added_ms": statistics.median(
                    d["trimmed_mean_ms"] - ref[d["round"]]["trimmed_mean_ms"] for d in ran),
                "read_mb_per_inference": read,
                "reread_ms_at_disk_speed": 1e3 * read / speed,
                "first_ms": statistics.median(d["first_ms"] for d in ran),
                "group_peak_mb": max((d["group_peak_mb"] or 0.0) for d in ran) or None,
                "major_faults": statistics.median(d["major_faults"] or 0 for d in ran)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--pagecache-models", default="ResNet-152,VGG-19")
    ap.add_argument("--output", default=str(OUT))
    ap.add_argument("--recompute", action="store_true",
                    help="measure nothing: recompute the summaries from the stored runs")
    a = ap.parse_args(argv)
    from workbench.fileio import atomic_write_text, dumps_json, parse_json, read_text

    only = [s for s in a.only.split(",") if s]
    bad = [s for s in only if s not in SECTIONS]
    if bad:
        ap.error(f"unknown section {bad[0]!r}: one of {', '.join(SECTIONS)}")
    out_path = Path(a.output)
    result = parse_json(read_text(out_path), file=out_path) if out_path.exists() else {}
    log: dict = result.get("load", {})
    secs: dict = result.get("seconds", {})
    t_all = time.monotonic()
    if a.recompute:
        if "runs" not in result:
            ap.error(f"{out_path} has no stored runs to recompute from")
        only = []

    def save() -> None:
        if "runs" in result:
            result["points"], result["comparisons"] = (points(result["runs"]),
                                                      comparisons(result["runs"]))
            result["best90"] = best90(result["runs"])
        if "pagecache_runs" in result:
            result["pagecache_points"] = pagecache_points(result["pagecache_runs"],
                                                          result["disk"])
        cpu = result.get("cpu")
        result.update(meta(result, log, secs))
        if a.recompute and cpu:  # recomputed here, measured there: keep the measuring CPU
            result["cpu"] = cpu
        atomic_write_text(out_path, dumps_json(result, row_lists=ROW_LISTS) + "\n")

    # One model at a time, written as it finishes (a crash keeps the models done); a model run
    # again replaces its old runs, the others' stay.
    if "fig10" in only:
        for name in a.models.split(","):
            t0 = time.monotonic()
            runs = fig10([name], a.rounds, log)
            result["runs"] = [r for r in result.get("runs", []) if r["model"] != name] + runs
            secs[f"fig10 {name}"] = round(time.monotonic() - t0, 1)
            save()
    if "pagecache" in only:
        for name in a.pagecache_models.split(","):
            t0 = time.monotonic()
            runs, disk = pagecache([name], a.rounds, log)
            result["pagecache_runs"] = [r for r in result.get("pagecache_runs", [])
                                        if r["model"] != name] + runs
            result["disk"] = {**result.get("disk", {}), **disk}
            secs[f"pagecache {name}"] = round(time.monotonic() - t0, 1)
            save()
    if not a.recompute:
        secs["this_run_total"] = round(time.monotonic() - t_all, 1)
    save()
    print(f"wrote {out_path}")
    return 0


def meta(result: dict, log: dict, secs: dict) -> dict:
    rounds = {sec: {m: len({r["round"] for r in result[k] if r["model"] == m})
                    for m in dict.fromkeys(r["model"] for r in result[k])}
              for sec, k in (("fig10", "runs"), ("pagecache", "pagecache_runs")) if k in result}
    from workbench.procfs import cpu_model

    return {
        "what": "FlexNN (MobiCom '24) Figure 10 measured as its artifact measures (pmap-style "
                "RSS sampled every 10 ms less the idle RSS; 4 warm-up and 8 timed inferences) "
                "on VGG-19, ResNet-152, MobileNetV2, SqueezeNet, ViT and GPT-2 against NCNN-Default, "
                "NCNN-Direct and On-Demand stand-ins, and FlexNN under a memory cgroup that "
                "counts the page cache, cold and warm",
        "source": "measured on this machine: fresh processes of the workbench's NumPy layer "
                  "executor (one compute thread, one loader thread), full-size networks with "
                  "random weights (latency and memory only); NCNN is not run: "
                  "its three configurations are stood in for by the same executor's bulk "
                  "im2col, bulk direct and on-demand modes",
        "not_measured": NOT_MEASURED, "substituted": SUBSTITUTED,
        "paper_budgets_mb": PAPER_BUDGETS,
        "method": {"warmup": WARMUP, "loops": LOOPS, "idle_s": IDLE_S, "sample_ms": SAMPLE_MS,
                   "rounds": rounds},  # per section and model
        "cpu": cpu_model(), "load": log, "seconds": secs}


if __name__ == "__main__":
    sys.exit(main())
