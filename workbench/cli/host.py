"""``workbench zoo build`` and ``workbench profile``: the host pipeline (train, quantise, measure
this machine)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import workspace
from ..host.profiling.options import PROTOCOLS
from ._format import MAX_THREADS, table, thread_counts, whole


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


def _options(args: argparse.Namespace):
    from ..errors import InputError
    from ..host import profiling

    threads = args.threads or [1, 2]  # parsed and bounded by thread_counts
    xnn = {"both": (True, False), "on": (True,), "off": (False,)}.get(args.xnnpack or "both")
    if xnn is None:
        raise InputError("--xnnpack is on, off or both", where="xnnpack", value=args.xnnpack)
    # Core sets hold commas ('CPU[0,1]'), so several are separated by spaces or ';'.
    procs = args.processors.replace(";", " ").split() if args.processors else None
    return profiling.host_options(threads, xnnpack=xnn, processor_ids=procs)


def _protocol(args: argparse.Namespace, quick: bool):
    from ..host import profiling

    proto = profiling.protocol(args.protocol or ("quick" if quick else "full"))
    return (args.warmup if args.warmup is not None else proto.warmup,
            args.runs if args.runs is not None else proto.runs)


def _warn_noisy(prof) -> None:
    """What a user should know of a profile just written: the configurations that could not
    run (one line per reason), and the rows too noisy to trust."""
    from ..names import printable
    from ..profiles.noise import noisy_warning

    reasons: dict[str, list[str]] = {}
    for f in prof.failed:
        reasons.setdefault(f.reason, []).append(f.id)
    for why, ids in reasons.items():
        shown = ", ".join(printable(i) for i in ids[:3]) + (f" and {len(ids) - 3} more"
                                                           if len(ids) > 3 else "")
        print(f"warning: {len(ids)} configuration{'s' * (len(ids) != 1)} could not run and "
              f"{'are' if len(ids) != 1 else 'is'} listed under 'failed': {printable(why)} "
              f"({shown})", file=sys.stderr)
    line = noisy_warning(prof.configs)
    if line:
        print(line, file=sys.stderr)


def profile_models(args: argparse.Namespace) -> int:
    from ..host import profiling, registry

    names = list(dict.fromkeys(args.models))
    for name in names:  # what is missing is converted first (quantise skips what exists)
        registry.quantise(name, progress=not args.quiet)
    variants, inputs = registry.profiling_inputs(names)
    if args.xnnpack is None and all(str(v.path).endswith(".onnx") for v in variants):
        from ..runtime.ort import has_xnnpack

        if not has_xnnpack():  # every XNNPACK row would fail for the same reason
            args.xnnpack = "off"
            print("note: onnxruntime here has no XNNPACK execution provider: profiling with "
                  "XNNPACK off (--xnnpack both records the XNNPACK options as failed rows)",
                  file=sys.stderr)
    out = Path(args.output or workspace.profiles_dir() / (
        f"{names[0]}.json" if len(names) == 1 else "models.json"))
    warmup, runs = _protocol(args, quick=False)
    prof = profiling.profile_variants(
        variants, inputs, out, warmup=warmup, runs=runs, options=_options(args),
        progress=not args.quiet,
        notes=[f"models from the registry: {', '.join(names)}; A per model and scheme measured "
               "with the model's engine (LiteRT; onnxruntime for ONNX models) on each model's "
               "evaluation inputs (see the tasks' dataset)"])
    print(f"wrote {out}: {len(prof.configs)} configurations of {len(names)} model(s) "
          f"(source: {prof.source}, protocol {warmup} warm-up + {runs} runs)")
    _warn_noisy(prof)
    slo = "max A; min L" if any(c.A is not None for c in prof.configs) else "min L; min MF"
    print(f"next: workbench solve --profile {out} --slo \"{slo}\"")
    return 0


def profile_real(args: argparse.Namespace) -> int:
    from ..host import real_scale

    out = Path(args.output or workspace.profiles_dir() / "host-real.json")
    custom = any(x is not None for x in (args.threads, args.processors)) or args.xnnpack not in (None, "both")
    prof = real_scale.build(out, protocol=args.protocol or "quick",
                            options=_options(args) if custom else None,
                            train_samples=args.train_samples, progress=not args.quiet)
    print(f"wrote {out}: {len(prof.configs)} configurations of {len({c.model for c in prof.configs})}"
          f" models (source: {prof.source})")
    _warn_noisy(prof)
    return 0


def profile(args: argparse.Namespace) -> int:
    from ..host import profiling

    if args.real:
        return profile_real(args)
    if args.models:
        return profile_models(args)
    out = Path(args.output or workspace.profiles_dir() / ("host-quick.json" if args.quick else "host.json"))
    warmup, runs = _protocol(args, quick=args.quick)
    prof = profiling.profile_host(_zoo_root(args), out, tasks=args.task, warmup=warmup, runs=runs,
                                  options=_options(args), progress=not args.quiet,
                                  coexec_seconds=0.3 if args.quick else args.coexec_seconds,
                                  quick=args.quick)
    print(f"wrote {out}: {len(prof.configs)} configurations, {len(prof.coexecution)} measured "
          f"co-executions (source: {prof.source})")
    _warn_noisy(prof)
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

    p = sub.add_parser("profile", help="measure your models (--models) or the zoo on this "
                       "machine's options")
    p.add_argument("--models", nargs="+", default=None, metavar="NAME",
                   help="registered models to profile (converting the schemes they lack); "
                   "without it, the zoo")
    p.add_argument("--real", action="store_true",
                   help="the real-scale profile: full-size pretrained models on Fashion-MNIST "
                   "and ImageNet (cited) plus weightless full-size architectures, registered and "
                   "quantised as needed (default output <workspace>/profiles/host-real.json)")
    p.add_argument("--train-samples", type=whole(1, 60000), default=10000,
                   help="--real: Fashion-MNIST training images for the heads (default 10000)")
    p.add_argument("--protocol", default=None, choices=list(PROTOCOLS),
                   help="quick: 2 warm-up + 20 timed runs; full: CARIn's 5 + 100 (default full; "
                   "--quick: quick)")
    p.add_argument("--runs", type=whole(1, 100_000), default=None,
                   help="timed runs (overrides the protocol)")
    p.add_argument("--warmup", type=whole(0, 100_000), default=None,
                   help="warm-up runs (overrides the protocol)")
    p.add_argument("--threads", type=thread_counts, default=None,
                   help=f"thread counts, e.g. 1,2 (each 1..{MAX_THREADS}; default 1,2)")
    p.add_argument("--xnnpack", default=None,
                   help="on, off or both (default both; off for ONNX models when onnxruntime "
                   "has no XNNPACK provider)")
    p.add_argument("--processors", default=None,
                   help="core sets to measure, e.g. 'CPU[0,1]' or 'CPU[0] CPU[1]' (default: each "
                   "core alone and all together)")
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
