"""``workbench zoo build`` and ``workbench profile``: the host pipeline (train, quantise, measure
this machine)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import workspace
from ._format import table


def _zoo_root(args: argparse.Namespace) -> Path:
    return Path(args.zoo) if args.zoo else workspace.zoo_dir(quick=args.quick)


def zoo_build(args: argparse.Namespace) -> int:
    from ..host import zoo

    recs = zoo.build(args.task, quick=args.quick, seed=args.seed, root=_zoo_root(args),
                     progress=not args.quiet)
    rows = []
    for r in recs:
        avail = [v["precision"] for v in r.get("variants", []) if v["available"]]
        rows.append([r["task"], r["model"], str(r["params"]), f"{r['test_metric']:.4g}",
                     f"{r['chance']:.4g}", r["metric"], "/".join(avail) or "-"])
    print(table(rows, ["task", "model", "params", "test (FP32)", "chance", "metric",
                       "variants"]))
    print(f"models in {_zoo_root(args)}")
    return 0


def profile(args: argparse.Namespace) -> int:
    from ..host import profiling

    out = Path(args.output or workspace.profiles_dir() / ("host-quick.json" if args.quick else "host.json"))
    runs = args.runs if args.runs is not None else (20 if args.quick else 100)
    warmup = args.warmup if args.warmup is not None else (2 if args.quick else 5)
    prof = profiling.profile_host(_zoo_root(args), out, tasks=args.task, warmup=warmup, runs=runs,
                                  coexec_seconds=0.3 if args.quick else args.coexec_seconds,
                                  progress=not args.quiet, quick=args.quick)
    print(f"wrote {out}: {len(prof.configs)} configurations, {len(prof.coexecution)} measured "
          f"co-executions (source: {prof.source})")
    return 0


def add_parser(sub) -> None:
    z = sub.add_parser("zoo", help="train and quantise the host model zoo")
    zsub = z.add_subparsers(dest="action", metavar="ACTION")
    zsub.required = True
    p = zsub.add_parser("build", help="train every zoo model and convert it to FP32..FFX8")
    p.add_argument("--task", action="append", default=None,
                   help="h1, h2, h3, h4 or a single task such as h3-audio (repeatable; default all)")
    p.add_argument("--quick", action="store_true", help="small data, one model per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--zoo", default=None,
                   help="where models go (default: the workspace's datasets/zoo[-quick])")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=zoo_build)

    p = sub.add_parser("profile", help="measure every zoo variant on this machine's options")
    p.add_argument("--runs", type=int, default=None, help="timed runs (default 100; quick 20)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up runs (default 5; quick 2)")
    p.add_argument("--task", action="append", default=None, help="only these tasks")
    p.add_argument("--coexec-seconds", type=float, default=1.0,
                   help="seconds per measured multi-DNN co-execution (0: skip)")
    p.add_argument("--quick", action="store_true", help="the quick zoo, fewer runs")
    p.add_argument("--zoo", default=None,
                   help="where the models are (default: the workspace's datasets/zoo)")
    p.add_argument("-o", "--output", default=None,
                   help="profile to write (default <workspace>/profiles/host.json; quick: "
                   "host-quick.json)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=profile)
