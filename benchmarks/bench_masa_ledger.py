"""MASA's ledger items that had no measured number -> reports/bench/masa_ledger.json.

Every part is measured on this machine with the Table 1 networks as built by
``workbench.lab.experiments.masa.pressure`` (the paper's architectures, random fp32 weights) and
the same cgroup + swap machinery as the Fig. 7 pressure runs (``bench_memory.py --only masa``):

- ``fig8`` (about 12 minutes): stochastic scenario II (periodic images, a random set of the eight
  networks per image) under a real memory limit: the paper's 512 MB scaled "by total" (the
  pool's bulk memory here over Table 1's, as Fig. 7's runs), intensity 1.2, Bulk, DeepEye, MASA
  and the workbench's MASA-idle, each a fresh process in a memory cgroup (budget + 64 MB) with
  a swap file, rounds back to back; then intensity 1.0 at 2 GB (the three paper policies) and at
  512 MB (MASA) for the paper's 512 MB / 2 GB ratio.
- ``fig2`` (about 1 minute): each layer of the five distinct architectures: kind, weight bytes
  and the peak resident-set growth while it loads and runs (MASA's profiler), in a fresh
  process per architecture whose allocator maps every array.
- ``fig3b`` (about 2 minutes): one Bulk SceneNet (AlexNet) image alone in a cgroup at the
  paper's 2 GB / 1 GB / 512 MB / 256 MB scaled by total on that network (its bulk memory here
  over the paper's 892 MB), 10 fresh processes per limit, limits interleaved.
- ``fig3c`` (about 4 minutes): two Bulk MemNet (AlexNet) instances in one cgroup at the paper's
  2 GB / 1 GB / 512 MB scaled the same way (one instance's bulk memory over 880 MB; + 64 MB per
  interpreter running at a time), started at once and pinned to one core each (no coordination) or one after the
  other; each instance runs 3 images back to back, execution time per image.
- ``fig13b`` (about 3 minutes): MASA's sensitivity to its memory estimates (section 5.7): every
  AgeNet layer's estimate x0.5 / 0.75 / 1 / 1.25 / 1.5, six AgeNets per image, 20 periodic
  images (intensity 1: one image per six AgeNets' bulk time), at the paper's 512 MB scaled by
  six AgeNets' total, factors interleaved, 3 rounds, each a fresh process in a memory cgroup
  with swap (the weights read are the real ones: only the scheduler's estimates change).
- ``fig12`` (about 3 minutes): MASA on AgeNet + GenderNet (the paper's two-network task) at the
  paper's 1 GB scaled by those networks' total, batches of 1-32 images (each layer loaded once,
  executed on the batch) against as many individual images arriving at once, 3 rounds, each
  run a fresh process in a memory cgroup with swap.

Before each part (and each round of fig8) the harness waits until the 1-minute load is below 1.3
(polling every 10 s, giving up after 10 minutes) and records the load it ran under.

Run: ``python benchmarks/bench_masa_ledger.py [--only fig8,fig2,fig3b,fig3c,fig12,fig13b]
[--quick]``; each part is merged into the JSON as it finishes, so a partial run loses nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.fileio import atomic_write_text  # noqa: E402
from workbench.lab.experiments import masa as mp  # noqa: E402
from workbench.lab.experiments.memory import PAPER_MEMORY_MB, Nets  # noqa: E402
from workbench.lab.reports.notebook_format import round_floats  # noqa: E402

OUT = ROOT / "reports" / "bench" / "masa_ledger.json"
PARTS = ("fig8", "fig2", "fig3b", "fig3c", "fig12", "fig13b")
# Table 1's five distinct architectures, each with the role whose name the paper gives it.
ARCHS = {"Levi-Hassner-8": "AgeNet", "AlexNet": "FaceNet", "VGG-S": "EmotionNet",
         "TinyYOLOv2": "TinyYOLO", "GoogLeNet": "GoogleNet"}
PAGE_MB = 4096 / 1e6  # a resident-set reading's grain: a layer that grows it less reads as one
PAPER_POLICIES = ("bulk", "deepeye", "masa")
WAIT = {"give_up": 600.0}  # --no-wait (smoke tests) sets 0


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def wait_quiet(limit: float = 1.3, poll: float = 10.0, give_up: float | None = None) -> dict:
    """Wait until the 1-minute load average is below ``limit``; say what it was."""
    give_up = WAIT["give_up"] if give_up is None else give_up
    t0 = time.monotonic()
    while True:
        load = _load()
        waited = time.monotonic() - t0
        if load < limit or waited >= give_up:
            return {"load_1min": load, "waited_s": round(waited, 1), "quiet": load < limit}
        print(f"  load {load:.2f}: waiting", flush=True)
        time.sleep(poll)


def spread(values: list[float]) -> dict:
    """n, median and quartiles (inclusive method; one value is its own quartiles)."""
    v = sorted(values)
    if not v:
        return {"n": 0, "median": None, "q1": None, "q3": None}
    if len(v) == 1:
        return {"n": 1, "median": v[0], "q1": v[0], "q3": v[0]}
    q1, med, q3 = statistics.quantiles(v, n=4, method="inclusive")
    return {"n": len(v), "median": med, "q1": q1, "q3": q3}


def _prepare(root: str, roles: tuple[str, ...], quick: bool) -> Nets:
    return mp.prepare(root, roles=roles, repeats=2 if quick else 3,
                      progress=lambda s: print(f"  {s}", flush=True))


def _only(nets: Nets, role: str) -> Nets:
    return Nets({}, {role: nets.roots[role]}, {role: nets.profiles[role]}, trained=False)


# --- Fig. 8: stochastic scenario II under a real limit ------------------------------------------
FIG8_SWAP_MB = 6144  # literal MASA admits every network on arrival: 2 GB was not enough (OOM)


def fig8(quick: bool) -> dict:
    n, rounds = (3, 1) if quick else (8, 3)
    loads: list[dict] = []
    rows: list[dict] = []

    def before(r: int) -> None:
        loads.append({"before_round": r, **wait_quiet()})

    def keep(intensity: float):
        def progress(r: mp.PressureRun) -> None:
            rows.append({**asdict(r), "intensity": intensity, "load_1min_after": _load()})
            print(f"  {r.paper_budget_mb} MB, intensity {intensity}, {r.policy}: "
                  f"{r.mean_response_ms or float('nan'):.0f} ms, "
                  f"{r.swapped_mb or 0:.0f} MB swapped", flush=True)
        return progress

    with tempfile.TemporaryDirectory(prefix="wb-masa-ledger-") as root:
        loads.append({"before_round": "prepare", **wait_quiet()})
        nets = _prepare(root, tuple(mp.TABLE1), quick)
        jobs = mp.jobs_for(nets, n=n, intensity=1.2, scenario=2)
        budgets = mp.budgets(nets, list(nets.profiles), (512, 2048))["by total"]
        common = dict(n=n, swap_mb=FIG8_SWAP_MB, scalings=("by total",), timeout=300.0,
                      scenario=2, before_round=before)
        mp.under_pressure(nets, intensity=1.2, paper_budget_mb=512, rounds=rounds,
                          policies=mp.POLICIES, progress=keep(1.2), **common)
        for mb, pols in ((2048, PAPER_POLICIES), (512, ("masa",))):
            mp.under_pressure(nets, intensity=1.0, paper_budget_mb=mb,
                              rounds=1 if quick else 2, policies=pols, progress=keep(1.0),
                              **common)
    summary = []
    for key in dict.fromkeys((r["paper_budget_mb"], r["intensity"], r["policy"]) for r in rows):
        rs = [r for r in rows if (r["paper_budget_mb"], r["intensity"], r["policy"]) == key]
        ms = [r["mean_response_ms"] for r in rs if r["finished"]]
        s = spread(ms)
        summary.append({"paper_budget_mb": key[0], "intensity": key[1], "policy": key[2],
                        "runs": len(rs), "finished": s["n"], "median_ms": s["median"],
                        "q1_ms": s["q1"], "q3_ms": s["q3"]})
    return {
        "source": "measured on this machine: mean response times of real runs of scenario II "
                  "(worker threads reading each layer's weights from its file and executing "
                  "it), each policy a fresh process in a memory cgroup with a swap file; paging "
                  "is the kernel's",
        "jobs": n, "images_networks": [len(j.nets) for j in jobs],
        "networks": list(nets.profiles), "swap_mb": FIG8_SWAP_MB,
        "budgets_mb": {str(k): v / 1e6 for k, v in budgets.items()},
        "loads": loads, "rows": rows, "summary": summary,
        "derived": {**fig8_derived(summary), **fig8_rounds(rows)},
    }


def _median(summary: list[dict], mb: int, intensity: float, policy: str) -> float | None:
    for s in summary:
        if (s["paper_budget_mb"], s["intensity"], s["policy"]) == (mb, intensity, policy):
            return s["median_ms"]
    return None


def saving(a: float | None, b: float | None) -> float | None:
    """How much less ``a`` is than ``b``, in % of ``b`` (None where either is missing)."""
    return None if a is None or not b else 100 * (1 - a / b)


def fig8_derived(summary: list[dict]) -> dict:
    """Savings and ratios from the medians of ``summary`` (None where a median is missing)."""
    m = {p: _median(summary, 512, 1.2, p) for p in mp.POLICIES}
    others = [v for p, v in m.items() if p in ("bulk", "deepeye") and v is not None]
    best_other = min(others) if len(others) == 2 else None
    order = sorted((p for p in PAPER_POLICIES if m[p] is not None), key=lambda p: m[p])
    lo = {p: _median(summary, 2048, 1.0, p) for p in PAPER_POLICIES}
    masa512 = _median(summary, 512, 1.0, "masa")
    return {
        "i12_512_masa_saving_vs_bulk_pct": saving(m["masa"], m["bulk"]),
        "i12_512_masa_saving_vs_deepeye_pct": saving(m["masa"], m["deepeye"]),
        "i12_512_masa_saving_vs_best_other_pct": saving(m["masa"], best_other),
        "i12_512_masa_idle_saving_vs_bulk_pct": saving(m["masa-idle"], m["bulk"]),
        "i12_512_order_fastest_first": order,
        "i10_2048_masa_saving_vs_bulk_pct": saving(lo["masa"], lo["bulk"]),
        "i10_2048_masa_saving_vs_deepeye_pct": saving(lo["masa"], lo["deepeye"]),
        "i10_2048_order_fastest_first": sorted((p for p in PAPER_POLICIES if lo[p] is not None),
                                               key=lambda p: lo[p]),
        "i10_masa_512_over_2048": None if masa512 is None or not lo["masa"]
        else masa512 / lo["masa"],
    }


# --- Figs. 2 and 3(a): per-layer memory ---------------------------------------------------------
CHILD = ("import json, sys; from workbench.lab.experiments import masa as mp; "
         "print(json.dumps(mp.layer_sizes(sys.argv[1], sys.argv[2], repeats=int(sys.argv[3]))))")


def fig2(quick: bool) -> dict:
    from workbench.timing import blas_threads_env

    start = wait_quiet()
    env = {**blas_threads_env(1), "MALLOC_MMAP_THRESHOLD_": "65536"}
    nets = []
    for arch, role in ARCHS.items():
        with tempfile.TemporaryDirectory(prefix="wb-masa-layers-") as root:
            r = subprocess.run([sys.executable, "-c", CHILD, arch, root, "1" if quick else "3"],
                               capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"{arch}: {r.stderr[-2000:]}")
        layers = json.loads(r.stdout.strip().splitlines()[-1])
        nets.append({"architecture": arch, "role": role, "layers": layers,
                     **layer_summary(layers)})
        print(f"  {arch}: fc/conv {nets[-1]['fc_over_conv_median_rss']}", flush=True)
    ratios = [x["largest_over_smallest_rss"] for x in nets]
    return {
        "source": "measured on this machine: each layer's peak resident-set growth while its "
                  "weights load and it runs (MASA's profiler, workbench.memory.masa."
                  "profile_network, the max over repeats), in a fresh process per architecture "
                  "with MALLOC_MMAP_THRESHOLD_=65536 so that every array is mapped and counted; "
                  "weight bytes are the exact sizes of the weight files stored for the layer",
        "load": start, "repeats": 1 if quick else 3, "networks": nets,
        "min_largest_over_smallest_rss": min(ratios),
    }


def layer_summary(layers: list[dict]) -> dict:
    """Per network: the median measured memory of its conv and FC layers (pooling, flatten
    left out as in the paper's Fig. 3(a)), their ratio, and the spread of layer sizes."""
    mb = 1e6
    conv = [x["rss_peak_bytes"] / mb for x in layers if x["kind"] == "conv"]
    fc = [x["rss_peak_bytes"] / mb for x in layers if x["kind"] == "fc"]
    convw = [x["weight_bytes"] / mb for x in layers if x["kind"] == "conv"]
    fcw = [x["weight_bytes"] / mb for x in layers if x["kind"] == "fc"]
    both = conv + fc
    med = statistics.median
    return {
        "conv_layers": len(conv), "fc_layers": len(fc),
        "conv_median_rss_mb": med(conv) if conv else None,
        "fc_median_rss_mb": med(fc) if fc else None,
        "fc_over_conv_median_rss": med(fc) / med(conv) if fc and conv else None,
        "fc_over_conv_median_weights": med(fcw) / med(convw) if fcw and convw else None,
        "largest_rss_mb": max(both), "smallest_rss_mb": min(both),
        "largest_over_smallest_rss": max(both) / max(min(both), PAGE_MB),
    }


# --- Fig. 3(b): one bulk network under shrinking memory -----------------------------------------
FIG3_SWAP_MB = 2048


def fig3b(quick: bool) -> dict:
    from workbench.memory import masa as M
    from workbench.memory import pressure

    role, reps, mbs = "SceneNet", 3 if quick else 10, (2048, 1024, 512, 256)
    rows = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="wb-masa-ledger-") as root:
        nets = _only(_prepare(root, (role,), quick), role)
        budgets = mp.budgets(nets, [role], mbs)["by total"]
        with pressure.swap_file(int(FIG3_SWAP_MB * 1e6)), \
                tempfile.TemporaryDirectory(prefix="wb-masa-w-") as work:
            start = wait_quiet()
            for rep in range(reps):
                for mb in mbs:
                    r = mp.run_limited(nets, [M.Job(0, 0.0, [role])], "bulk", budget=budgets[mb],
                                       swap_mb=FIG3_SWAP_MB, workers=1, timeout=120.0,
                                       scaling="by total", paper_budget_mb=mb, round=rep,
                                       workdir=Path(work))
                    rows.append(asdict(r))
                    print(f"  {mb} MB ({r.limit_mb:.0f} MB limit): "
                          f"{r.mean_response_ms or float('nan'):.0f} ms", flush=True)
    summary = []
    for mb in mbs:
        rs = [r for r in rows if r["paper_budget_mb"] == mb]
        s = spread([r["mean_response_ms"] for r in rs if r["finished"]])
        summary.append({"paper_budget_mb": mb, "limit_mb": rs[0]["limit_mb"], "runs": len(rs),
                        "finished": s["n"], "median_ms": s["median"], "q1_ms": s["q1"],
                        "q3_ms": s["q3"],
                        "median_swapped_mb": statistics.median(r["swapped_mb"] or 0
                                                               for r in rs)})
    return {
        "source": "measured on this machine: execution time (load all weights from their "
                  "files, then execute) of one Bulk SceneNet (AlexNet) image, each run a fresh "
                  "process in a memory cgroup (budget + 64 MB) with a swap file",
        "role": role, "architecture": mp.TABLE1[role],
        "bulk_mb": nets.profiles[role].bulk_bytes / 1e6, "paper_memory_mb": PAPER_MEMORY_MB[role],
        "mapping": "by total: the paper's memory x this network's bulk memory here / its "
                   "Table 1 memory (892 MB)",
        "budgets_mb": {str(k): v / 1e6 for k, v in budgets.items()},
        "load": start, "seconds_runs": time.monotonic() - t0, "rows": rows, "summary": summary,
        "derived": fig3b_derived(summary),
    }


def fig3b_derived(summary: list[dict]) -> dict:
    med = {s["paper_budget_mb"]: s["median_ms"] for s in summary}
    base = med.get(1024)
    return {f"slowdown_{mb}_over_1024": None if v is None or not base else v / base
            for mb, v in med.items() if mb != 1024}


# --- Fig. 3(c): two instances with and without coordination -------------------------------------
def fig3c(quick: bool) -> dict:
    from workbench.memory import pressure

    role, reps, images, mbs = "MemNet", 2 if quick else 6, 3, (2048, 1024, 512)
    rows = []
    with tempfile.TemporaryDirectory(prefix="wb-masa-ledger-") as root:
        nets = _only(_prepare(root, (role,), quick), role)
        budgets = mp.budgets(nets, [role], mbs)["by total"]
        with pressure.swap_file(int(FIG3_SWAP_MB * 1e6)), \
                tempfile.TemporaryDirectory(prefix="wb-masa-w-") as work:
            start = wait_quiet()
            for rep in range(reps):
                for mb in mbs:
                    for parallel in (True, False):
                        # 64 MB per interpreter running at a time: the networks get the
                        # same budget either way (the paper's RAM less the OS)
                        r = mp.run_instances(nets, role,
                                             limit_mb=budgets[mb] / 1e6
                                             + (2 if parallel else 1) * mp.ALLOWANCE_MB,
                                             swap_mb=FIG3_SWAP_MB, instances=2, images=images,
                                             parallel=parallel, timeout=300.0,
                                             workdir=Path(work))
                        rows.append({**asdict(r), "paper_budget_mb": mb, "round": rep})
                        print(f"  {mb} MB {'parallel' if parallel else 'sequence'}: "
                              f"{[round(x) for x in r.exec_ms]} ms", flush=True)
    summary = []
    for mb in mbs:
        for parallel in (True, False):
            rs = [r for r in rows if r["paper_budget_mb"] == mb and r["parallel"] == parallel]
            s = spread([x for r in rs if r["finished"] for x in r["exec_ms"]])
            summary.append({"paper_budget_mb": mb, "parallel": parallel,
                            "limit_mb": rs[0]["limit_mb"], "runs": len(rs),
                            "finished": sum(r["finished"] for r in rs), "instances": s["n"],
                            "median_ms": s["median"], "q1_ms": s["q1"], "q3_ms": s["q3"],
                            "median_swapped_mb": statistics.median(r["swapped_mb"] or 0
                                                                   for r in rs)})
    return {
        "source": "measured on this machine: execution time per image of each of two Bulk "
                  "MemNet (AlexNet) instances (fresh processes, one worker and one BLAS thread "
                  "each, 3 images back to back) sharing one memory cgroup (budget + 64 MB per "
                  "interpreter running at a time) with a swap file: started at once, pinned to "
                  "cores 0 and 1, or one after the other",
        "role": role, "architecture": mp.TABLE1[role], "images_per_instance": images,
        "bulk_mb": nets.profiles[role].bulk_bytes / 1e6, "paper_memory_mb": PAPER_MEMORY_MB[role],
        "mapping": "by total: the paper's memory x one instance's bulk memory here / its Table "
                   "1 memory (880 MB); the limit adds 64 MB per interpreter running at a time "
                   "(two in parallel, one in sequence), so the networks get the same budget "
                   "and the paper's overcommit (one instance 1.7x, two 3.4x at 512 MB)",
        "budgets_mb": {str(k): v / 1e6 for k, v in budgets.items()},
        "load": start, "rows": rows, "summary": summary,
        "derived": fig3c_derived(summary, rows),
    }


def fig3c_derived(summary: list[dict], rows: list[dict] | None = None) -> dict:
    """Parallel over sequential execution time per memory size, from the medians; with the
    runs, per round too (``*_rounds``: each round's median image time, parallel over sequence)."""
    med = {(s["paper_budget_mb"], s["parallel"]): s["median_ms"] for s in summary}
    out: dict = {}
    for mb in sorted({k[0] for k in med}):
        p, q = med.get((mb, True)), med.get((mb, False))
        out[f"parallel_over_sequence_{mb}"] = None if p is None or not q else p / q
        if rows is not None:
            by = {(r["round"], r["parallel"]): statistics.median(r["exec_ms"]) for r in rows
                  if r["paper_budget_mb"] == mb and r["finished"] and r["exec_ms"]}
            out[f"parallel_over_sequence_{mb}_rounds"] = [
                by[(k, True)] / by[(k, False)] for k in sorted({k for k, _ in by})
                if (k, True) in by and (k, False) in by and by[(k, False)]]
    return out


def fig8_rounds(rows: list[dict]) -> dict:
    """Fig. 8's readings per round (a round: every policy on one draw): at 512 MB, intensity
    1.2, the paper's policies fastest first and MASA's saving against the better other."""
    orders, savings = [], []
    for k in sorted({r["round"] for r in rows}):
        got = {r["policy"]: r["mean_response_ms"] for r in rows if r["round"] == k
               and r["finished"] and (r["paper_budget_mb"], r["intensity"]) == (512, 1.2)}
        if all(p in got for p in PAPER_POLICIES):
            orders.append(sorted(PAPER_POLICIES, key=lambda p: got[p]))
            savings.append(saving(got["masa"], min(got["bulk"], got["deepeye"])))
    return {"i12_512_order_fastest_first_rounds": orders,
            "i12_512_masa_saving_vs_best_other_rounds_pct": savings}


# --- Fig. 12: batching against individual arrivals ----------------------------------------------
FIG12_SIZES = (1, 2, 4, 8, 16, 32)


def fig12(quick: bool) -> dict:
    from workbench.memory import pressure

    sizes, rounds = ((1, 4), 1) if quick else (FIG12_SIZES, 3)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="wb-masa-ledger-") as root:
        nets = _prepare(root, ("AgeNet", "GenderNet"), quick)
        with pressure.swap_file(int(FIG3_SWAP_MB * 1e6)), \
                tempfile.TemporaryDirectory(prefix="wb-masa-w-") as work:
            start = wait_quiet()

            def keep(r: mp.BatchRun) -> None:
                rows.append(asdict(r))
                print(f"  batch {r.batch} {r.mode}: {r.ms_per_input or float('nan'):.1f} ms "
                      f"per input, {r.swapped_mb or 0:.0f} MB swapped", flush=True)

            mp.batching_real(nets, sizes=sizes, rounds=rounds, swap_mb=FIG3_SWAP_MB,
                             workdir=Path(work), progress=keep)
    summary = []
    for size in sizes:
        for mode in ("batched", "individual"):
            rs = [r for r in rows if (r["batch"], r["mode"]) == (size, mode)]
            s = spread([r["ms_per_input"] for r in rs if r["finished"]])
            summary.append({"batch": size, "mode": mode, "runs": len(rs), "finished": s["n"],
                            "median_ms_per_input": s["median"], "q1": s["q1"], "q3": s["q3"],
                            "group_peak_mb": max((r["group_peak_mb"] or 0) for r in rs)})
    return {
        "source": "measured on this machine: MASA (two workers) on AgeNet and GenderNet "
                  "(Levi-Hassner, random weights), each run a fresh process in a memory cgroup "
                  "at the paper's 1 GB scaled by those networks' total memory, with a swap "
                  "file; batched: each layer loaded once and executed on the whole batch; "
                  "individual: that many images arriving at once; per-input time = makespan "
                  "over the images",
        "load": start, "budget_mb": rows[0]["budget_mb"], "limit_mb": rows[0]["limit_mb"],
        "rounds": rounds, "rows": rows, "summary": summary,
        "derived": fig12_derived(summary, rows),
    }


def fig12_derived(summary: list[dict], rows: list[dict] | None = None) -> dict:
    """The batch size with the least batched per-input time, batch 8's saving against 32, and
    at each size batched's saving against individual arrivals (None where missing); with the
    runs, each of them per round too (``*_rounds``, ``*_rounds_pct``), for the ledger's noise
    rule: one round's runs are interleaved, so they pair."""
    med = {(s["batch"], s["mode"]): s["median_ms_per_input"] for s in summary}

    batched = {b: v for (b, m), v in med.items() if m == "batched" and v is not None}
    out = {
        "best_batch": min(batched, key=batched.get) if batched else None,
        "b8_saving_vs_b32_pct": saving(med.get((8, "batched")), med.get((32, "batched"))),
        "batched_saving_vs_individual_pct": {
            str(b): saving(med.get((b, "batched")), med.get((b, "individual")))
            for b in sorted({b for b, _ in med})},
    }
    if rows is None:
        return out
    by_round: dict[int, dict] = {}
    for r in rows:
        if r["finished"]:
            by_round.setdefault(r["round"], {})[(r["batch"], r["mode"])] = r["ms_per_input"]
    best, b8, ind = [], [], {}
    for rnd in sorted(by_round):
        m = by_round[rnd]
        bt = {b: v for (b, mode), v in m.items() if mode == "batched"}
        if bt:
            best.append(min(bt, key=bt.get))
        if (8, "batched") in m and (32, "batched") in m:
            b8.append(saving(m[(8, "batched")], m[(32, "batched")]))
        for (b, mode), v in m.items():
            if mode == "batched" and (b, "individual") in m:
                ind.setdefault(str(b), []).append(saving(v, m[(b, "individual")]))
    out.update(best_batch_rounds=best, b8_saving_vs_b32_rounds_pct=b8,
               batched_saving_vs_individual_rounds_pct=dict(sorted(ind.items(),
                                                                   key=lambda kv: int(kv[0]))))
    return out


# --- Fig. 13(b): sensitivity to the memory estimates --------------------------------------------
FIG13B_FACTORS = (0.5, 0.75, 1.0, 1.25, 1.5)


def fig13b(quick: bool) -> dict:
    from workbench.memory import masa as M
    from workbench.memory import pressure

    factors, rounds, images = ((0.5, 1.0), 1, 4) if quick else (FIG13B_FACTORS, 3, 20)
    role, copies = "AgeNet", 6
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="wb-masa-ledger-") as root:
        nets = _only(_prepare(root, (role,), quick), role)
        prof = nets.profiles[role]
        budget = mp.budgets(nets, [role], (512,))["by total"][512]
        jobs = M.periodic_jobs([role] * copies, n=images, interval=copies * prof.bulk_seconds)
        with pressure.swap_file(int(FIG3_SWAP_MB * 1e6)), \
                tempfile.TemporaryDirectory(prefix="wb-masa-w-") as work:
            start = wait_quiet()
            for rnd in range(rounds):
                order = factors if rnd % 2 == 0 else factors[::-1]
                for f in order:
                    wrong = Nets({}, nets.roots, {role: prof.misestimated(f)}, trained=False)
                    r = mp.run_limited(wrong, jobs, "masa", budget=budget, swap_mb=FIG3_SWAP_MB,
                                       timeout=120.0, scaling="by total", paper_budget_mb=512,
                                       round=rnd, workdir=Path(work), intensity=1.0)
                    rows.append({**asdict(r), "estimate_factor": f})
                    print(f"  x{f}: {r.mean_response_ms or float('nan'):.0f} ms, "
                          f"{r.swapped_mb or 0:.0f} MB swapped", flush=True)
    summary = []
    for f in factors:
        rs = [r for r in rows if r["estimate_factor"] == f]
        s = spread([r["mean_response_ms"] for r in rs if r["finished"]])
        summary.append({"estimate_factor": f, "runs": len(rs), "finished": s["n"],
                        "median_ms": s["median"], "q1_ms": s["q1"], "q3_ms": s["q3"],
                        "swapped_mb": statistics.median([r["swapped_mb"] or 0 for r in rs])})
    med = {s["estimate_factor"]: s["median_ms"] for s in summary}
    return {
        "source": "measured on this machine: MASA (two workers) on six AgeNets (Levi-Hassner, "
                  "random weights) per image, 20 periodic images, each run a fresh process in a "
                  "memory cgroup with a swap file; the scheduler plans with every layer's "
                  "memory estimate multiplied by the factor, the weights read are the real ones",
        "load": start, "budget_mb": budget / 1e6, "copies": copies, "images": images,
        "interval_ms": copies * prof.bulk_seconds * 1e3, "rounds": rounds, "rows": rows,
        "summary": summary,
        "derived": {f"x{f}_over_x1": None if med.get(f) is None or not med.get(1.0)
                    else med[f] / med[1.0] for f in factors},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(PARTS),
                    help=f"comma-separated parts ({', '.join(PARTS)})")
    ap.add_argument("--quick", action="store_true", help="fewer runs (a smoke test)")
    ap.add_argument("--no-wait", action="store_true",
                    help="do not wait for a quiet machine (smoke tests only)")
    ap.add_argument("-o", "--output", default=str(OUT))
    ap.add_argument("--rederive", action="store_true",
                    help="measure nothing: recompute Fig. 12's readings from its stored runs")
    a = ap.parse_args(argv)
    if a.rederive:
        out = json.loads(Path(a.output).read_text())
        f = out["fig12"]
        # Only the per-round readings are added: the medians' readings stay as measured (the
        # summary kept in the file is rounded, so recomputing them would move their last digit).
        new = round_floats(fig12_derived(f["summary"], f["rows"]))
        f["derived"].update({k: v for k, v in new.items() if "rounds" in k})
        for part, more in (("fig8", lambda d: fig8_rounds(d["rows"])),
                           ("fig3c", lambda d: fig3c_derived(d["summary"], d["rows"]))):
            new = round_floats(more(out[part]))
            out[part]["derived"].update({k: v for k, v in new.items() if "rounds" in k})
        atomic_write_text(Path(a.output), json.dumps(out, indent=1) + "\n")
        print(f"rederived Figs. 3(c), 8 and 12's rounds in {a.output}")
        return 0
    if a.no_wait:
        WAIT["give_up"] = 0.0
    parts = [p.strip() for p in a.only.split(",") if p.strip()]
    bad = [p for p in parts if p not in PARTS]
    if bad:
        ap.error(f"unknown part(s) {bad}; known: {', '.join(PARTS)}")
    out_path = Path(a.output)
    out = json.loads(out_path.read_text()) if out_path.exists() else {}
    for part in parts:
        print(f"{part}:", flush=True)
        t0 = time.monotonic()
        res = globals()[part](a.quick)
        res["seconds"] = time.monotonic() - t0
        res["quick"] = a.quick
        out.update({
            "what": "MASA (Cox et al. 2022) Figs. 2, 3(a)-(c), 8, 12 and 13(b) on the Table 1 "
                    "networks as built here (random weights): per-layer memory, one network "
                    "under shrinking memory, two instances with and without coordination, "
                    "scenario II under a real memory limit, batching, and wrong memory "
                    "estimates",
            "source": "measured on this machine: every number is a reading of real runs (memory "
                      "cgroups with swap, resident-set growth, wall-clock times); each part's "
                      "own 'source' says what and how",
            "cpu": _cpu(),
        })
        out[part] = round_floats(res)
        atomic_write_text(out_path, json.dumps(out, indent=1) + "\n")
        print(f"{part}: {res['seconds']:.0f} s, written to {out_path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
