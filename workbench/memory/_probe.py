"""One measured inference of a stored layer graph, in this fresh process (see ``measure``).

Usage: ``python -m workbench.memory._probe ROOT bulk|on-demand|BUDGET_MB REPS PRELOAD(0|1)
SLICED(0|1) [KERNEL WARMUP IDLE_S]``.
Prints one JSON line with the fields of :class:`workbench.memory.measure.Measurement`. Imports
numpy and the layer executor only.

Phases, each stamped with ``time.time()`` so that a parent sampling this process's resident set
can tell them apart: start-up and warm-up; ``IDLE_S`` seconds asleep (the idle reading FlexNN's
scripts subtract); loading; ``WARMUP`` untimed inferences (the first is ``first_ms``); ``REPS``
timed ones.
"""

import json
import pickle
import statistics
import sys
import time
from pathlib import Path

from workbench.procfs import read_bytes, status_kb


def main(argv: list[str]) -> int:
    root, mode, reps, preload = Path(argv[0]), argv[1], int(argv[2]), argv[3] == "1"
    sliced = len(argv) < 5 or argv[4] == "1"
    kernel = argv[5] if len(argv) > 5 else "im2col"
    warmup = int(argv[6]) if len(argv) > 6 else 1
    idle_s = float(argv[7]) if len(argv) > 7 else 0.0

    from workbench.memory.measure import SKELETON, from_skeleton

    with open(root / SKELETON, "rb") as fh:
        g = from_skeleton(pickle.load(fh))
    from workbench.memory import flexnn as F

    x = g.sample_input()
    _warm_up()
    # The plan is made before the baseline, as FlexNN plans offline. Known limit (docs/memory.md):
    # the planner's heap then sits in the idle reading, so a planned run reads up to ~1-5 MB low.
    budget = None if mode in ("bulk", "on-demand") else float(mode)
    p = None if budget is None else F.plan_within(g, int(budget * 1e6), sliced=sliced)
    t_idle = time.time()
    if idle_s:
        time.sleep(idle_s)
    t_load = time.time()
    # Reset the kernel's peak counter so that it covers the model alone (Linux: "5").
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    base, code0 = status_kb("VmRSS"), status_kb("RssFile")
    t_load_pc = time.perf_counter()
    run, planned, runner_name = _load(g, root, mode, p, preload=preload, kernel=kernel)
    t1 = time.perf_counter()
    run(x)  # the first inference reads every streamed weight (cold if the cache was dropped)
    t2 = time.perf_counter()
    t_timed, ts, io0, io1 = _timed(run, x, warmup=warmup, reps=reps)
    peak = max(status_kb("VmHWM"), status_kb("VmRSS"))
    # Library code run for the first time is mapped in then (file pages, 64 KB fault-around
    # chunks: 0 or 64 KB a run here whatever the model, more on another machine's page cache):
    # not the model's memory, so left out of model_mb. It only grows, so the growth at the end
    # is at least what it added to the peak (model_mb errs low by at most code_mb).
    code = max(status_kb("RssFile") - code0, 0)
    mb = 1024 / 1e6  # kB (KiB) of /proc to MB of 10^6 bytes, the unit of budgets
    model_mb = max(peak - base - code, 0) * mb
    print(json.dumps({
        "model": g.name, "mode": mode if budget is None else "planned", "budget_mb": budget,
        "latency_ms": statistics.median(ts), "latency_samples_ms": ts,
        "base_mb": base * mb, "peak_mb": peak * mb, "model_mb": model_mb,
        "code_mb": code * mb,
        "planned_mb": planned / 1e6,
        "within_budget": None if budget is None else model_mb <= budget, "preload": preload,
        "sliced": sliced,
        "load_ms": (t1 - t_load_pc) * 1e3, "first_ms": (t2 - t1) * 1e3,
        "kernel": kernel, "warmup": warmup, "idle_s": idle_s, "runner": runner_name,
        "phases": {"idle": t_idle, "load": t_load, "timed": t_timed, "end": time.time()},
        "read_mb_per_inference": None if io0 is None or io1 is None
        else (io1 - io0) / reps / 1e6}))
    return 0



def _warm_up() -> None:
    """BLAS allocates its work buffers on first use, and each kernel's first call costs a few
    hundred KB whatever the model: pay both before the baseline so the reading is the model's."""
    import numpy as np

    from workbench.memory import flexnn as F

    a = np.ones((1024, 1024), np.float32)
    (a @ a).sum()
    del a
    F.warm_up()


def _load(g, root: Path, mode: str, p, *, preload: bool, kernel: str):
    """Load the model as ``mode`` runs it: (the inference function, the bytes its plan says it
    needs, the FlexNN runner's class name or None)."""
    from workbench.memory import flexnn as F
    from workbench.memory.graph import read_weights

    runner_name = None
    if mode == "bulk":
        for ly in g.layers:
            if ly.weights:
                ly.weights = read_weights(root, ly)
        run, planned = (lambda x: g.run(x, kernel=kernel)), g.bulk_peak_bytes()
    elif mode == "on-demand":  # each layer's weights read just before it runs, freed after
        run, planned = (lambda x: F.run_on_demand(g, root, x)), F.on_demand_peak_bytes(g)
    else:
        assert p is not None
        runner = F.FlexRunner(p, root, preload=preload)
        run, planned = runner.run, p.buffer_bytes
        runner_name = type(runner).__name__
    return run, planned, runner_name


def _timed(run, x, *, warmup: int, reps: int) -> tuple[float, list[float], int | None, int | None]:
    """The untimed warm-up inferences after the first, then ``reps`` timed ones: when the timed
    ones started, their latencies (ms), and the bytes read from storage before and after."""
    for _ in range(warmup - 1):
        run(x)
    t_timed = time.time()
    io0 = read_bytes()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run(x)
        ts.append((time.perf_counter() - t0) * 1e3)
    io1 = read_bytes()
    return t_timed, ts, io0, io1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
