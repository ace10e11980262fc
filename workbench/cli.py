"""The ``workbench`` command line.

Subcommands are thin: each parses its options and calls one package function. Bad input ends with
one line on stderr naming the file, the place in it and the value, and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from .errors import WorkbenchError


def _fmt(v: float | None, digits: int = 4) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v:.3g}"
    return f"{v:.{digits}g}"


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _profiles_dir() -> Path:
    from . import workspace

    return workspace.profiles_dir()


# --- profiles ----------------------------------------------------------------------------------

def _cmd_profiles_list(args: argparse.Namespace) -> int:
    from .profiles import list_profiles, load_profile

    paths = list_profiles(args.dir)
    if not paths:
        print(f"no profiles in {args.dir or _profiles_dir()}; create them with "
              "`workbench profiles model`")
        return 0
    rows = []
    for p in paths:
        prof = load_profile(p)
        rows.append([p.stem, prof.device.display_name or prof.device.name, prof.source,
                     str(len(prof.configs)), ",".join(e.name for e in prof.engines),
                     ",".join(t.name for t in prof.tasks)])
    print(_table(rows, ["profile", "device", "source", "configs", "engines", "tasks"]))
    return 0


def _cmd_profiles_show(args: argparse.Namespace) -> int:
    from .profiles import load_profile, resolve_profile

    prof = load_profile(resolve_profile(args.profile, directory=args.dir))
    if args.json:
        print(json.dumps(prof.model_dump(mode="json", exclude_none=True), indent=1))
        return 0
    d = prof.device
    print(f"{d.display_name or d.name} ({d.name})  source: {prof.source}")
    if d.soc:
        print(f"  SoC: {d.soc}" + (f", launched {d.launch}" if d.launch else ""))
    if d.cpu_clusters:
        print("  CPU: " + " + ".join(f"{c.count}x{c.ghz} GHz {c.core}" for c in d.cpu_clusters))
    for label, acc in (("GPU", d.gpu), ("NPU", d.npu), ("DSP", d.dsp)):
        if acc:
            print(f"  {label}: {acc.name}" + (f" @{acc.clock_mhz:g} MHz" if acc.clock_mhz else ""))
    if d.ram_gb:
        print(f"  RAM: {d.ram_gb:g} GB" + (f" @{d.ram_mhz:g} MHz" if d.ram_mhz else "")
              + (f", TDP {d.tdp_w:g} W" if d.tdp_w else ""))
    print(f"  provenance: {prof.provenance.method}")
    for n in prof.provenance.notes:
        print(f"    - {n}")
    print("  engines: " + ", ".join(f"{e.name} ({'/'.join(e.precisions)})" for e in prof.engines))
    rows = [c for c in prof.configs if args.task is None or c.task == args.task]
    if args.processor:
        rows = [c for c in rows if c.processor == args.processor]
    total = len(rows)
    rows = rows[: args.limit] if args.limit else rows
    print(f"\n{total} configurations" + (f" (first {len(rows)})" if len(rows) < total else ""))
    table = [[c.id, c.label(), _fmt(c.A), _fmt(c.L), _fmt(c.L_std), _fmt(c.L_max), _fmt(c.TP),
              _fmt(c.MF), _fmt(c.E), _fmt(c.S), c.source] for c in rows]
    print(_table(table, ["id", "configuration", "A", "L ms", "std", "max", "TP/s", "MF MB",
                         "E mJ", "S MB", "source"]))
    return 0


def _cmd_profiles_validate(args: argparse.Namespace) -> int:
    from .profiles import load_profile

    failed = 0
    for f in args.files:
        try:
            prof = load_profile(f)
        except WorkbenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
        else:
            print(f"ok: {f} ({prof.device.name}, {len(prof.configs)} configurations, "
                  f"source {prof.source})")
    return 1 if failed else 0


def _cmd_profiles_import(args: argparse.Namespace) -> int:
    from .profiles import load_profile, save_profile
    from .profiles.importers import import_benchmark_log, import_csv, merge

    src = Path(args.file)
    fmt = args.format or ("csv" if src.suffix.lower() == ".csv" else "benchmark-log")
    if fmt == "csv":
        prof = import_csv(src, device=args.device, source=args.source)
    else:
        prof = import_benchmark_log(src, model=args.model, precision=args.precision,
                                    processor=args.processor, task=args.task, device=args.device,
                                    source=args.source)
    if args.into:
        prof = merge(load_profile(args.into), prof, replace=args.replace)
    out = Path(args.output or args.into or _profiles_dir() / f"{prof.device.name}.json")
    save_profile(prof, out)
    print(f"wrote {out} ({len(prof.configs)} configurations)")
    return 0


def _cmd_profiles_model(args: argparse.Namespace) -> int:
    from .profiles import phone_model

    params = phone_model.load_parameters(args.parameters) if args.parameters else None
    paths = phone_model.regenerate(args.out_dir or _profiles_dir(), devices=args.device or phone_model.DEVICES,
                                   use_cases=args.use_case or phone_model.USE_CASES,
                                   parameters=params, progress=not args.quiet)
    for p in paths:
        print(f"wrote {p}")
    return 0


# --- solve -------------------------------------------------------------------------------------

def _tables_profile(paths: list[str]):
    """A profile made of CSV tables; a table without a task column becomes a task of its own,
    named after the file."""
    from .profiles.importers import import_csv, merge

    merged = None
    for path in paths:
        prof = import_csv(path, device="imported")
        stem = Path(path).stem
        if {c.task for c in prof.configs} == {"default"}:
            data = prof.model_dump()
            for c in data["configs"]:
                c["task"] = stem
            data["tasks"] = [{"name": stem}]
            prof = type(prof).model_validate(data)
        merged = prof if merged is None else merge(merged, prof)
    return merged


def _solve_problem(args: argparse.Namespace):
    from .moo.problem import DiscreteProblem
    from .moo.usecases import use_case
    from .profiles import load_profile, resolve_profile

    sources = sum(x is not None and x != [] for x in (args.profile, args.table, args.use_case))
    if sources != 1:
        raise WorkbenchError("give exactly one of --profile, --table or --use-case")
    slo, tasks = args.slo, args.task
    if args.use_case:
        if not args.device:
            raise WorkbenchError("--use-case needs --device (e.g. --device s20fe)")
        uc = use_case(args.use_case)
        prof = load_profile(resolve_profile(args.device))
        slo, tasks = slo or uc.slo, tasks or list(uc.tasks)
    elif args.table:
        prof = _tables_profile(args.table)
        tasks = tasks or list(dict.fromkeys(c.task for c in prof.configs))
    else:
        prof = load_profile(resolve_profile(args.profile))
    if not slo:
        raise WorkbenchError("--slo is required (e.g. --slo \"max A; max TP; max L <= 41.67ms\")")
    return DiscreteProblem(prof, slo, tasks=tasks, weights=args.weights)


def _cmd_solve(args: argparse.Namespace) -> int:
    from .solvers import solve

    problem = _solve_problem(args)
    opts = {}
    if args.solver not in ("rass", "oodin"):
        opts = dict(pop_size=args.pop_size, n_gen=args.generations, seed=args.seed)
    res = solve(problem, args.solver, **opts)
    if args.json:
        print(json.dumps(res.to_dict(), indent=1))
        return 0
    prof = problem.profile
    print(f"{res.solver.upper()} on {prof.device.display_name or prof.device.name} "
          f"({prof.source} profile), tasks {', '.join(problem.task_names)}")
    print(f"SLO: {problem.slo}")
    feas = (f"{res.n_feasible} of {res.n_total} combinations feasible" if res.n_feasible >= 0
            else f"{res.n_total} combinations")
    print(f"decision space: {feas}; solved in {res.timing_ms.get('total', 0):.2f} ms\n")
    if not res.ok:
        print("INFEASIBLE: no combination meets every constraint.")
        for v in res.nearest:
            broken = ", ".join(f"{k} (over by {x:.4g})" for k, x in v.broken.items())
            print(f"  nearest: {' + '.join(v.labels)}: breaks {broken}")
        return 0
    names = problem.objective_names
    rows = [[role, " + ".join(d.labels), _fmt(d.optimality)] + [_fmt(d.objectives[n])
                                                                 for n in names]
            for role, d in res.designs.items()]
    print(_table(rows, ["role", "design", "optimality"] + names))
    if res.policy:
        print("\nswitching policy (shaped like CARIn Table 7):")
        heads = [f"c_{t}" for t in res.triggers] + ["c_m", "d_new"]
        table = []
        for r in res.policy_table():
            d = res.designs.get(r["design"])
            same = next((o for o in res.designs.values() if d and o.role != r["design"]
                         and o.index == d.index and o.role < r["design"]), None)
            text = ("absent" if d is None else
                    f"{r['design']} = " + (same.role if same else
                                            "<" + " + ".join(d.labels) + ">"))
            table.append(r["flags"] + [text])
        print(_table(table, heads))
    for k, v in res.extra.items():
        if k not in ("front",):
            print(f"{k}: {v}")
    return 0


# --- bundles and the runtime -------------------------------------------------------------------

def _cmd_bundle(args: argparse.Namespace) -> int:
    from .bundling import make_bundle
    from .solvers import solve

    problem = _solve_problem(args)
    res = solve(problem, args.solver)
    if not res.ok:
        raise WorkbenchError("the problem is infeasible: nothing to bundle (see `workbench solve`)")
    models = Path(args.models) if args.models else _zoo_root(args)
    m = make_bundle(res, problem, args.out, models=models, include="all" if args.all else "designs",
                    overwrite=args.force)
    st = m["storage"]
    print(f"bundle {args.out}: {len(m['designs'])} designs, {len(m['models'])} model files, "
          f"{st['bundle_bytes'] / 1e6:.3f} MB")
    print(f"storage (CARIn Table 10 shape): designs {st['designs_mb']:.3f} MB vs all "
          f"{st['n_all_models']} candidate variants {st['all_candidates_mb']:.3f} MB: "
          f"{st['reduction']:.2f}x smaller")
    print(f"run it: workbench run {args.out} --duration 10")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from .runtime.run import cmd_run

    return cmd_run(args)


# --- the explorer dashboard ----------------------------------------------------------------------

def explore_command(*, port: int, profile: str, use_case: str | None) -> tuple[list[str], dict]:
    """The Voila command line and environment that serve the explorer on localhost."""
    import os

    from . import workspace

    notebooks = workspace.notebooks_dir()
    env = dict(os.environ, WORKBENCH_EXPLORE_PROFILE=profile,
               WORKBENCH_EXPLORE_USE_CASE=use_case or "")
    cmd = [sys.executable, "-m", "voila", str(notebooks / "explorer.ipynb"), f"--port={port}",
           "--no-browser", "--Voila.ip=127.0.0.1", "--theme=light",
           f"--Voila.root_dir={notebooks.parent}"]
    return cmd, env


def _cmd_explore(args: argparse.Namespace) -> int:
    import importlib.util
    import os

    from .profiles import resolve_profile

    resolve_profile(args.profile)  # a clear error for an unknown profile, before Voila starts
    if importlib.util.find_spec("voila") is None:
        raise WorkbenchError("the dashboard needs Voila: pip install 'workbench[notebooks]'")
    cmd, env = explore_command(port=args.port, profile=args.profile, use_case=args.use_case)
    print(f"serving the explorer on http://127.0.0.1:{args.port}/ (Ctrl-C stops it)", flush=True)
    # Become Voila (no parent left behind to orphan it and its kernel when signalled).
    os.execve(cmd[0], cmd, env)
    return 0  # pragma: no cover - execve does not return


# --- multi-exit nets -----------------------------------------------------------------------------

def _cmd_multiexit_build(args: argparse.Namespace) -> int:
    from .host.datasets import load
    from .lab.experiments.delen import MODELS, build
    from .multiexit.profiling import multiexit_profile
    from .profiles import save_profile

    models = []
    for name in MODELS:
        if not args.quiet:
            print(f"training, exporting and measuring {name} ...", flush=True)
        b = build(name, quick=args.quick, width=args.width, epochs=args.epochs)
        models.append({"profile": b.profile, "name": name, "task": b.task,
                       "arch": name.split(" ")[0], "size_mb": b.size_mb,
                       "description": load(b.task, quick=args.quick).description})
        if not args.quiet:
            acc = ", ".join(f"{a:.3f}" for a in b.profile.accuracy)
            print(f"  exit accuracy {acc}; {b.size_mb:.2f} MB", flush=True)
    prof = multiexit_profile(models, pareto_points=args.points)
    out = Path(args.output or _profiles_dir() / "host-multiexit.json")
    save_profile(prof, out)
    print(f"{out}: {len(prof.multi_exit)} multi-exit models, {len(prof.configs)} operating points "
          f"(solve with: workbench solve --profile {out} --task h1 --slo \"max A; min L\")")
    return 0


# --- memory-aware execution ---------------------------------------------------------------------

def _memory_graph(name: str):
    from .host import zoo
    from .memory.graph import from_keras

    specs = [s for s in zoo.SPECS + zoo.MEMORY_SPECS if s.model == name]
    if not specs:
        names = sorted({s.model for s in zoo.SPECS + zoo.MEMORY_SPECS
                        if s.task in ("h1", "h3-vision")})
        raise WorkbenchError(f"unknown model {name!r}; try one of: {', '.join(names)}")
    spec = specs[0]
    if zoo.record(spec) is None:
        if spec in zoo.MEMORY_SPECS:
            zoo.train(spec)
        else:
            raise WorkbenchError(f"{name} is not trained yet: run `workbench zoo build`")
    return from_keras(zoo.load_model(spec), name=name)


def _cmd_memory_plan(args: argparse.Namespace) -> int:
    from .memory import flexnn as F

    g = _memory_graph(args.model)
    budget = int(args.budget * 1e6)
    print(f"{g.name}: {len(g.layers)} layers, weights {g.weight_bytes / 1e6:.3f} MB, bulk peak "
          f"{g.bulk_peak_bytes() / 1e6:.3f} MB, {g.flops / 1e6:.1f} MFLOPs")
    s = F.slice_graph(g, budget)  # CannotFit says the minimum feasible budget
    p = F.plan(s, budget)
    p.check()
    rows = [[r["layer"], r["op"], r["kernel"], str(r["weight_slices"]),
             str(r["band_rows"] or "-"), f"{r['max_weight_bytes'] / 1e3:.1f}",
             f"{r['scratch_bytes'] / 1e3:.1f}"] for r in s.summary()]
    print(_table(rows, ["layer", "op", "kernel", "slices", "band rows", "max slice KB",
                        "scratch KB"]))
    print(f"\nplan: buffer {p.buffer_bytes / 1e6:.3f} MB of {budget / 1e6:.3f} MB, "
          f"{len(s.steps)} steps, {p.preloaded} of {len(p.weights)} weight loads preloaded, "
          f"{p.pinned_bytes / 1e6:.3f} MB pinned, {p.streamed_bytes / 1e6:.3f} MB streamed per "
          f"inference; planned in {p.seconds * 1e3:.2f} ms")
    return 0


def _cmd_memory_modes(args: argparse.Namespace) -> int:
    import tempfile

    from .memory.modes import add_memory_modes
    from .profiles import load_profile, resolve_profile, save_profile

    budgets = None
    if args.budgets:
        try:
            budgets = [float(b) for b in args.budgets.split(",")]
        except ValueError:
            raise WorkbenchError(f"--budgets must be MB numbers separated by commas, got "
                                 f"{args.budgets!r}") from None
    prof = load_profile(resolve_profile(args.profile))
    graphs = {m: _memory_graph(m) for m in args.model}
    with tempfile.TemporaryDirectory(prefix="wb-memory-") as tmp:
        out = add_memory_modes(prof, graphs, task=args.task, root=tmp, budgets_mb=budgets,
                               reps=args.reps,
                               progress=None if args.quiet else
                               (lambda m: print(f"measuring {m} in every memory mode ...",
                                                flush=True)))
    target = Path(args.output or _profiles_dir() / "host-memory.json")
    save_profile(out, target)
    added = [c for c in out.configs if c.memory_mode]
    for c in added:
        print(f"  {c.label()}: L {c.L:.3f} ms, MF {c.MF:.3f} MB")
    print(f"{target}: {len(added)} memory-mode rows added")
    return 0


# --- zoo and host profile ----------------------------------------------------------------------

def _zoo_root(args: argparse.Namespace) -> Path:
    from . import workspace

    return Path(args.zoo) if args.zoo else workspace.zoo_dir(quick=args.quick)


def _cmd_zoo_build(args: argparse.Namespace) -> int:
    from .host import zoo

    recs = zoo.build(args.task, quick=args.quick, seed=args.seed, root=_zoo_root(args),
                     progress=not args.quiet)
    rows = []
    for r in recs:
        avail = [v["precision"] for v in r.get("variants", []) if v["available"]]
        rows.append([r["task"], r["model"], str(r["params"]), f"{r['test_metric']:.4g}",
                     f"{r['chance']:.4g}", r["metric"], "/".join(avail) or "-"])
    print(_table(rows, ["task", "model", "params", "test (FP32)", "chance", "metric",
                        "variants"]))
    print(f"models in {_zoo_root(args)}")
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    from .host import profiling

    out = Path(args.output or _profiles_dir() / ("host-quick.json" if args.quick else "host.json"))
    runs = args.runs if args.runs is not None else (20 if args.quick else 100)
    warmup = args.warmup if args.warmup is not None else (2 if args.quick else 5)
    prof = profiling.profile_host(_zoo_root(args), out, tasks=args.task, warmup=warmup, runs=runs,
                                  coexec_seconds=0.3 if args.quick else args.coexec_seconds,
                                  progress=not args.quiet, quick=args.quick)
    print(f"wrote {out}: {len(prof.configs)} configurations, {len(prof.coexecution)} measured "
          f"co-executions (source: {prof.source})")
    return 0


# --- reports -----------------------------------------------------------------------------------

def _cmd_report(args: argparse.Namespace) -> int:
    from .lab import reports

    png = True if args.png else (False if args.no_png else None)
    out = Path(args.reports_dir) if args.reports_dir else reports.default_reports_dir(
        quick=args.quick)
    runs = reports.run_all(names=args.only, quick=args.quick, progress=not args.quiet, png=png,
                           reports_dir=out)
    for run in runs:
        print(f"{run.name}: {run.html}  ({run.seconds:.0f} s"
              + (f", {len(run.figures)} PNG figures" if run.figures else "") + ")")
        if run.metrics:
            print(f"  metrics: {run.metrics}")
    print(f"index: {out / 'index.html'}  (total {sum(r.seconds for r in runs):.0f} s)")
    return 0


def _add_problem_arguments(p: argparse.ArgumentParser, *, tables: bool) -> None:
    """What to solve: a profile, CSV tables (solve only: a bundle needs model files) or a use case."""
    src = p.add_argument_group("what to solve (one of)")
    src.add_argument("--profile", default=None, help="a profile file or name in profiles/")
    src.add_argument("--table", action="append", default=None, metavar="CSV",
                     help="a configuration table; repeat for multi-DNN (one task per table)"
                     if tables else argparse.SUPPRESS)
    src.add_argument("--use-case", default=None, help="CARIn use case uc1..uc4 (with --device)")
    p.add_argument("--device", default=None, help="with --use-case: a profile name, e.g. s20fe")
    p.add_argument("--task", action="append", default=None,
                   help="task(s) to run together (default: the use case's, or the only one)")
    p.add_argument("--slo", default=None, help='e.g. "max A; max TP; max L <= 41.67ms"')
    p.add_argument("--weights", default=None, help='objective weights, e.g. "A=2,TP=1"')


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``workbench`` command."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Analysis and optimisation of DNNs on heterogeneous edge devices under SLOs.")
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    pr = sub.add_parser("profiles", help="list, show, validate, import and model device profiles")
    psub = pr.add_subparsers(dest="action", metavar="ACTION")
    psub.required = True

    p = psub.add_parser("list", help="list the profiles in a folder")
    p.add_argument("--dir", default=None, help="folder of profiles (default: profiles/)")
    p.set_defaults(func=_cmd_profiles_list)

    p = psub.add_parser("show", help="describe a profile and print its configuration table")
    p.add_argument("profile", help="a profile file or a name in profiles/ (e.g. s20fe)")
    p.add_argument("--dir", default=None, help="folder to look names up in")
    p.add_argument("--task", default=None, help="only the rows of this task")
    p.add_argument("--processor", default=None, help="only the rows of this processor")
    p.add_argument("--limit", type=int, default=40, help="rows to print (0: all; default 40)")
    p.add_argument("--json", action="store_true", help="print the whole profile as JSON")
    p.set_defaults(func=_cmd_profiles_show)

    p = psub.add_parser("validate", help="check profile files against the schema")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=_cmd_profiles_validate)

    p = psub.add_parser("import", help="import a CSV table or a LiteRT benchmark_model log")
    p.add_argument("file")
    p.add_argument("--format", choices=["csv", "benchmark-log"], default=None,
                   help="default: csv for *.csv, else benchmark-log")
    p.add_argument("--device", default=None, help="device name (default: the file's stem)")
    p.add_argument("--model", default=None, help="benchmark-log: model name (default: graph name)")
    p.add_argument("--precision", default=None, help="benchmark-log: FP32|FP16|DR8|FX8|FFX8")
    p.add_argument("--processor", default=None, help="benchmark-log: override CPU/GPU/NPU/DSP")
    p.add_argument("--task", default="default", help="benchmark-log: task name")
    p.add_argument("--source", default="imported",
                   choices=["measured", "modelled", "predicted", "imported"])
    p.add_argument("--into", default=None, help="add the rows to this existing profile")
    p.add_argument("--replace", action="store_true", help="with --into: replace rows with the "
                   "same id")
    p.add_argument("-o", "--output", default=None, help="output file (default: --into, else "
                   "<workspace>/profiles/<device>.json)")
    p.set_defaults(func=_cmd_profiles_import)

    p = psub.add_parser("model", help="regenerate the modelled phone profiles")
    p.add_argument("--device", action="append", default=None,
                   help="pixel7, s20fe, a71 or xperia-c5 (repeatable; default: all)")
    p.add_argument("--use-case", action="append", default=None,
                   help="CARIn use case uc1..uc4 (repeatable; default: all)")
    p.add_argument("--out-dir", default=None, help="default: the workspace's profiles/")
    p.add_argument("--parameters", default=None, help="an edited copy of model_parameters.json")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_profiles_model)

    p = sub.add_parser("solve", help="solve SLOs on a profile with RASS, OODIn or a pymoo "
                       "algorithm")
    _add_problem_arguments(p, tables=True)
    p.add_argument("--solver", default="rass",
                   help="rass (default), oodin, or a pymoo algorithm: nsga2, nsga3, spea2, ...")
    p.add_argument("--pop-size", type=int, default=100, help="evolutionary: population")
    p.add_argument("--generations", type=int, default=100, help="evolutionary: generations")
    p.add_argument("--seed", type=int, default=1, help="evolutionary: random seed")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_solve)

    p = sub.add_parser("bundle", help="solve and write a deployment bundle (designs, policy, "
                       "model files with checksums)")
    _add_problem_arguments(p, tables=False)
    p.add_argument("--solver", default="rass", help="rass (default) or oodin")
    p.add_argument("-o", "--out", required=True, help="the bundle folder to write")
    p.add_argument("--models", default=None, help="zoo folder with the model files "
                   "(default datasets/zoo)")
    p.add_argument("--quick", action="store_true", help="use the quick zoo (datasets/zoo-quick)")
    p.add_argument("--zoo", default=None, help=argparse.SUPPRESS)
    p.add_argument("--all", action="store_true",
                   help="store every candidate configuration (what OODIn needs)")
    p.add_argument("--force", action="store_true", help="replace an existing bundle folder")
    p.set_defaults(func=_cmd_bundle)

    from .runtime.run import add_run_arguments
    p = sub.add_parser("run", help="run a bundle: serve requests, monitor, switch designs")
    add_run_arguments(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("explore", help="serve the interactive Pareto explorer on localhost "
                       "(Voila)")
    p.add_argument("--port", type=int, default=8866, help="port (default 8866)")
    p.add_argument("--profile", default="s20fe", help="profile to open (default s20fe)")
    p.add_argument("--use-case", default=None, help="use case to open (uc1..uc4, h1..h4)")
    p.set_defaults(func=_cmd_explore)

    me = sub.add_parser("multiexit", help="multi-exit nets (Delen)")
    mesub = me.add_subparsers(dest="multiexit_command", metavar="ACTION")
    mesub.required = True
    p = mesub.add_parser("build", help="train, export and measure the multi-exit nets and write "
                         "a measured profile of their operating points")
    p.add_argument("-o", "--output", default=None,
                   help="default: <workspace>/profiles/host-multiexit.json")
    p.add_argument("--width", type=int, default=32, help="backbone width (default 32)")
    p.add_argument("--epochs", type=int, default=None, help="training epochs (default 12)")
    p.add_argument("--points", type=int, default=10,
                   help="Pareto threshold vectors kept per model (default 10)")
    p.add_argument("--quick", action="store_true", help="small datasets, fewer epochs")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_multiexit_build)

    mm = sub.add_parser("memory", help="memory-aware execution (FlexNN plans, memory-mode rows)")
    mmsub = mm.add_subparsers(dest="memory_command", metavar="ACTION")
    mmsub.required = True
    p = mmsub.add_parser("plan", help="slice and plan a zoo model under a memory budget "
                         "(FlexNN); says the minimum feasible budget when it cannot fit")
    p.add_argument("model", help="zoo model name, e.g. VGG-FC or AlexNet-FC")
    p.add_argument("--budget", type=float, required=True, help="memory budget in MB")
    p.set_defaults(func=_cmd_memory_plan)
    p = mmsub.add_parser("modes", help="measure models in bulk, MASA-streamed and "
                         "FlexNN-planned modes and add them as rows to a profile")
    p.add_argument("--profile", default="host", help="base profile (default: host)")
    p.add_argument("--task", default="h1")
    p.add_argument("--model", action="append", required=True,
                   help="model of the task (repeatable), e.g. VGG-FC")
    p.add_argument("--budgets", default=None,
                   help="FlexNN budgets in MB, comma-separated (default: 10/25/50%% of bulk)")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("-o", "--output", default=None,
                   help="default: <workspace>/profiles/host-memory.json")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_memory_modes)

    z = sub.add_parser("zoo", help="train and quantise the host model zoo")
    zsub = z.add_subparsers(dest="action", metavar="ACTION")
    zsub.required = True
    p = zsub.add_parser("build", help="train every zoo model and convert it to FP32..FFX8")
    p.add_argument("--task", action="append", default=None,
                   help="h1, h2, h3, h4 or a single task such as h3-audio (repeatable; default all)")
    p.add_argument("--quick", action="store_true", help="small data, one model per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--zoo", default=None, help="where models go (default datasets/zoo[-quick])")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_zoo_build)

    p = sub.add_parser("profile", help="measure every zoo variant on this machine's options")
    p.add_argument("--runs", type=int, default=None, help="timed runs (default 100; quick 20)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up runs (default 5; quick 2)")
    p.add_argument("--task", action="append", default=None, help="only these tasks")
    p.add_argument("--coexec-seconds", type=float, default=1.0,
                   help="seconds per measured multi-DNN co-execution (0: skip)")
    p.add_argument("--quick", action="store_true", help="the quick zoo, fewer runs")
    p.add_argument("--zoo", default=None, help="where the models are (default datasets/zoo)")
    p.add_argument("-o", "--output", default=None,
                   help="profile to write (default profiles/host.json; quick: host-quick.json)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_profile)

    p = sub.add_parser("report", help="execute the notebooks into reports/ (papermill + HTML)")
    p.add_argument("--only", action="append", default=None, metavar="NAME",
                   help="a notebook name such as quickstart (repeatable; default: all)")
    p.add_argument("--quick", action="store_true", help="small, fast configuration of each report")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--png", action="store_true",
                   help="save every figure as PNG (default: when Chromium is installed, not quick)")
    g.add_argument("--no-png", action="store_true", help="no PNG figures")
    p.add_argument("--reports-dir", default=None, help="where reports go (default reports/)")
    p.set_defaults(func=_cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbench`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (WorkbenchError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"error: {msg}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
