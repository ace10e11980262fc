"""``workbench memory plan|modes``: FlexNN plans and memory-mode rows."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import workspace
from ..errors import WorkbenchError
from ._format import positive_mb, table, whole


def plan(args: argparse.Namespace) -> int:
    from ..memory import flexnn as F
    from ..memory.modes import graph_of

    g = graph_of(args.model, train=args.train)
    budget = int(args.budget * 1e6)
    print(f"{g.name}: {len(g.layers)} layers, weights {g.weight_bytes / 1e6:.3f} MB, bulk peak "
          f"{g.bulk_peak_bytes() / 1e6:.3f} MB, {g.flops / 1e6:.1f} MFLOPs")
    p = F.slice_and_plan(g, budget)  # CannotFit says the minimum feasible budget
    s = p.slicing
    p.check()
    rows = [[r["layer"], r["op"], r["kernel"], str(r["weight_slices"]),
             str(r["band_rows"] or "-"), f"{r['max_weight_bytes'] / 1e3:.1f}",
             f"{r['scratch_bytes'] / 1e3:.1f}"] for r in s.summary()]
    print(table(rows, ["layer", "op", "kernel", "slices", "band rows", "max slice KB",
                       "scratch KB"]))
    print(f"\nplan: buffer {p.buffer_bytes / 1e6:.3f} MB of {budget / 1e6:.3f} MB, "
          f"{len(s.steps)} steps, {p.preloaded} of {len(p.weights)} weight loads preloaded, "
          f"{p.pinned_bytes / 1e6:.3f} MB pinned, {p.streamed_bytes / 1e6:.3f} MB streamed per "
          f"inference; planned in {p.seconds * 1e3:.2f} ms")
    return 0


def run(args: argparse.Namespace) -> int:
    import json

    from ..memory.flexnn import EXECUTOR_RESERVE
    from ..memory.measure import measure
    from ..memory.modes import graph_of

    g = graph_of(args.model, train=args.train)
    m = measure(g, budget_mb=args.budget, reps=args.reps, preload=not args.no_preload,
                limit_mb=args.limit, swap_mb=args.swap or 0.0, cold=args.cold)
    if args.json:
        from ..solvers.result import jsonable

        print(json.dumps(jsonable(m.to_dict()), indent=1, allow_nan=False))  # strict JSON
        return 0
    what = "bulk (every weight resident)" if m.budget_mb is None else \
        f"FlexNN-planned at {m.budget_mb:g} MB" + ("" if m.preload else ", no preloading")
    print(f"{m.model}: {what}; one inference in a fresh process, measured")
    print(f"  latency      {m.latency_ms:.3f} ms (median of {len(m.latency_samples_ms)}); "
          f"first inference {m.first_ms:.3f} ms{' (cold page cache)' if m.cold else ''}")
    print(f"  baseline RSS {m.base_mb:.2f} MB (numpy and the executor loaded, no model)")
    print(f"  peak RSS     {m.peak_mb:.2f} MB whole process; {m.model_mb:.3f} MB over the "
          f"baseline" + (f" (not counting {m.code_mb:.3f} MB of library code first run)"
                         if m.code_mb else ""))
    kind = ("plan buffer; the budget also keeps the executor's "
            f"{EXECUTOR_RESERVE / 1e6:.3f} MB reserve" if m.budget_mb is not None
            else "tensor bytes at the peak")
    print(f"  computed     {m.planned_mb:.3f} MB ({kind}, for comparison)")
    if m.within_budget is not None:
        print(f"  {'within' if m.within_budget else 'OVER'} the budget by "
              f"{abs(m.budget_mb - m.model_mb):.3f} MB")  # type: ignore[operator]
    if m.limit_mb is not None:
        print(f"  memory group limit {m.limit_mb:g} MB, swap {m.swap_mb:g} MB: group peak "
              f"{m.group_peak_mb:.2f} MB, {m.major_faults} major faults, "
              f"{m.swapped_mb:.2f} MB swapped out")
    return 0


def modes(args: argparse.Namespace) -> int:
    import tempfile

    from ..memory.modes import add_memory_modes, graph_of
    from ..profiles import load_profile, save_profile

    budgets = None
    if args.budgets:
        try:
            budgets = [float(b) for b in args.budgets.split(",")]
        except ValueError:
            raise WorkbenchError(f"--budgets must be MB numbers separated by commas, got "
                                 f"{args.budgets!r}") from None
    prof = load_profile(args.profile)
    graphs = {m: graph_of(m, train=args.train) for m in args.model}
    with tempfile.TemporaryDirectory(prefix="wb-memory-") as tmp:
        out = add_memory_modes(prof, graphs, task=args.task, root=tmp, budgets_mb=budgets,
                               reps=args.reps,
                               progress=None if args.quiet else
                               (lambda m: print(f"measuring {m} in every memory mode ...",
                                                flush=True)))
    target = Path(args.output or workspace.profiles_dir() / "host-memory.json")
    save_profile(out, target)
    added = [c for c in out.configs if c.memory_mode]
    for c in added:
        print(f"  {c.label()}: L {c.L:.3f} ms, MF {c.MF:.3f} MB")
    print(f"{target}: {len(added)} memory-mode rows added")
    return 0


def add_parser(sub) -> None:
    mm = sub.add_parser("memory", help="memory-aware execution (FlexNN plans, memory-mode rows)")
    mmsub = mm.add_subparsers(dest="memory_command", metavar="ACTION")
    mmsub.required = True
    p = mmsub.add_parser("plan", help="slice and plan a zoo model under a memory budget "
                         "(FlexNN); says the minimum feasible budget when it cannot fit")
    p.add_argument("model", help="zoo model name, e.g. VGG-FC or AlexNet-FC")
    p.add_argument("--budget", type=float, required=True, help="memory budget in MB")
    p.add_argument("--train", action="store_true",
                   help="train a memory-study model first if it is not in the zoo")
    p.set_defaults(func=plan)
    p = mmsub.add_parser("run", help="run one inference in a fresh process, bulk or planned "
                         "at a budget, and print its measured latency and peak memory")
    p.add_argument("model", help="a zoo model (e.g. VGG-Conv), a registered Keras model, or a "
                   ".keras file")
    p.add_argument("--budget", type=positive_mb, default=None,
                   help="FlexNN memory budget in MB (default: bulk, every weight resident)")
    p.add_argument("--reps", type=whole(1, 10000), default=5, help="timed inferences (default 5)")
    p.add_argument("--no-preload", action="store_true",
                   help="load each step's weights just before it runs (FlexNN w.o. preload)")
    p.add_argument("--limit", type=positive_mb, default=None, metavar="MB",
                   help="run inside a memory cgroup capped at MB (the whole process, interpreter "
                   "included; needs root): real pressure, the kernel reclaims, swaps or kills")
    p.add_argument("--swap", type=positive_mb, default=None, metavar="MB",
                   help="with --limit: turn on a swap file of MB the run may use")
    p.add_argument("--cold", action="store_true",
                   help="drop the page cache first, so weights are read from disk")
    p.add_argument("--train", action="store_true",
                   help="train a memory-study zoo model first if it is not in the zoo")
    p.add_argument("--json", action="store_true", help="print the measurement as JSON")
    p.set_defaults(func=run)
    p = mmsub.add_parser("modes", help="measure models in bulk, MASA-streamed and "
                         "FlexNN-planned modes and add them as rows to a profile")
    p.add_argument("--profile", default="host", help="base profile (default: host)")
    p.add_argument("--task", default="h1")
    p.add_argument("--model", action="append", required=True,
                   help="model of the task (repeatable), e.g. VGG-FC")
    p.add_argument("--budgets", default=None,
                   help="FlexNN budgets in MB, comma-separated (default: 10/25/50%% of bulk)")
    p.add_argument("--reps", type=whole(1, 10000), default=20,
                   help="timed inferences per mode (default 20)")
    p.add_argument("--train", action="store_true",
                   help="train memory-study models first if they are not in the zoo")
    p.add_argument("-o", "--output", default=None,
                   help="default: <workspace>/profiles/host-memory.json")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=modes)
