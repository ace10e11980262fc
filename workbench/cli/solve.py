"""``workbench solve`` and ``workbench bundle``: the SLO problem from a profile, tables or a use
case, solved; and, for ``bundle``, written as a deployment bundle."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError, WorkbenchError
from ..moo.optimality import optimality_text
from ..names import printable as _p
from ._format import MAX_EFFORT, fmt, table, whole

if TYPE_CHECKING:
    from ..moo.problem import DiscreteProblem
    from ..solvers.result import Design, SolveResult


def add_problem_arguments(p: argparse.ArgumentParser, *, tables: bool) -> None:
    """What to solve: a profile, CSV tables (solve only: a bundle needs model files) or a use case."""
    src = p.add_argument_group("what to solve (one of)")
    src.add_argument("--profile", default=None, help="a profile file or name (e.g. host, s20fe)")
    src.add_argument("--table", action="append", default=None, metavar="CSV",
                     help="a configuration table; repeat for multi-DNN (one task per table)"
                     if tables else argparse.SUPPRESS)
    p.add_argument("--use-case", default=None,
                   help="a named use case (its tasks and SLO): CARIn's uc1..uc4, the host's "
                   "h1..h4, the real-scale host's r1, r2; with --profile (or --device)")
    p.add_argument("--device", default=None,
                   help="with --use-case: the profile, by name or path (same as --profile)")
    p.add_argument("--task", action="append", default=None,
                   help="task(s) to run together (default: the use case's, or the only one)")
    p.add_argument("--slo", default=None, help='e.g. "max A; max TP; max L <= 41.67ms"')
    p.add_argument("--weights", default=None, help='objective weights, e.g. "A=2,TP=1"')
    p.add_argument("--point-estimates", action="store_true",
                   help="rank on the values alone: designs inside each other's 95%% intervals are "
                   "not treated as ties (docs/metrics.md)")


def problem_from_args(args: argparse.Namespace):
    """The :class:`~workbench.moo.problem.DiscreteProblem` the problem arguments describe."""
    from ..moo.problem import DiscreteProblem
    from ..moo.usecases import scenario
    from ..profiles import load_profile
    from ..profiles.importers import import_tables

    if args.profile and args.device and args.profile != args.device:
        raise WorkbenchError("give the profile once: --profile or --device")
    profile = args.profile or args.device
    sources = sum(x is not None and x != [] for x in (profile, args.table))
    if sources != 1:
        raise WorkbenchError("--use-case needs a device: --device (or --profile), e.g. --device s20fe"
                             if args.use_case and not sources else
                             "give exactly one of --device (or --profile) or --table")
    slo, tasks = args.slo, args.task
    if slo is not None and not slo.strip():  # an empty --slo is a mistake, not "the default"
        raise InputError("--slo is empty (leave it out for the use case's own SLO)",
                         where="--slo")
    if args.use_case:
        if args.table:
            raise WorkbenchError("--use-case takes a profile, not tables")
        uc_tasks, uc_slo = scenario(args.use_case)
        # --task narrows a use case to some of its tasks; a task from elsewhere would silently
        # solve another problem under this use case's name and SLO.
        stray = [t for t in tasks or () if t not in uc_tasks]
        if stray:
            raise InputError(f"not a task of use case {args.use_case} (its tasks: "
                             f"{', '.join(uc_tasks)}); leave out --use-case to solve it",
                             where="--task", value=stray[0])
        prof = load_profile(profile)
        slo, tasks = slo or uc_slo, tasks or list(uc_tasks)
    elif args.table:
        prof = import_tables(args.table)
        tasks = tasks or list(dict.fromkeys(c.task for c in prof.configs))
    else:
        prof = load_profile(profile)
    if not slo:
        raise WorkbenchError("--slo is required (e.g. --slo \"max A; max TP; max L <= 41.67ms\")")
    return DiscreteProblem(prof, slo, tasks=tasks, weights=args.weights,
                           point_estimates=getattr(args, "point_estimates", False))


def solve(args: argparse.Namespace) -> int:
    from ..solvers import solve as solve_problem

    problem = problem_from_args(args)
    opts = {}
    if args.solver not in ("rass", "oodin"):
        # Unset effort takes each solver's own default (Optuna's TPE costs more per trial).
        opts = {k: v for k, v in (("pop_size", args.pop_size), ("n_gen", args.generations),
                                  ("seed", args.seed)) if v is not None}
    res = solve_problem(problem, args.solver, **opts)
    front = front_designs(problem, res)
    if args.csv:
        write_csv(args.csv, res, front)
    if args.json:
        _print_json(problem, res, front)
        return 0
    _print_header(problem, res)
    if not res.ok:
        _print_unsolved(res)
        return 0
    names = problem.objective_names
    _print_designs(problem, res, names)
    if res.policy:
        _print_policy(res)
    if front:
        print(f"\nthe front {res.solver.upper()} found ({len(front)} designs, best optimality "
              "first):")
        print(table([[d.role, " + ".join(d.labels),
                      optimality_text(d.optimality, ".4g", infinity="inf",
                                      tied=d.tie is not None, unweighted=problem.unweighted)]
                     + [fmt(d.objectives[n]) for n in names] for d in front],
                    ["", "design", "optimality"] + names))
    for line in extra_lines(res.extra):
        print(line)
    if args.csv:
        print(f"\nwrote {args.csv}")
    return 0


def _print_json(problem: DiscreteProblem, res: SolveResult, front: list[Design]) -> None:
    """The result as strict JSON: the SLO as solved, with every digit of its bounds (what a
    script checks it against), and the front's designs in full."""
    from ..solvers.result import jsonable

    out = {"slo": str(problem.slo), **res.to_dict()}
    if front:
        out["front"] = [{"role": d.role, **d.to_dict()} for d in front]
        out.get("extra", {}).pop("front", None)  # flat indices: the designs above say more
    # Strict JSON: no Infinity/NaN tokens (jsonable spells them "inf"/"-inf"/null).
    print(json.dumps(jsonable(out), indent=1, allow_nan=False))


def _print_header(problem: DiscreteProblem, res: SolveResult) -> None:
    """What was solved: the solver, profile, tasks, SLO, rows left out and the space's size."""
    prof = problem.profile
    print(f"{res.solver.upper()} on {prof.device.display_name or prof.device.name} "
          f"({prof.source} profile), tasks {', '.join(problem.task_names)}")
    print(f"SLO: {problem.slo}")
    for task, n in problem.dropped.items():
        print(f"note: {n} configuration{'s' * (n != 1)} of task {task!r} "
              f"{'lack' if n != 1 else 'lacks'} a value the SLO needs and "
              f"{'are' if n != 1 else 'is'} left out")
    feas = (f"{res.n_feasible} of {res.n_total} combinations feasible" if res.n_feasible >= 0
            else f"{res.n_total} combinations")
    print(f"decision space: {feas}; solved in {res.timing_ms.get('total', 0):.2f} ms\n")


def _print_unsolved(res: SolveResult) -> None:
    """No design: a sampling solver's miss (not proof of infeasibility), or the nearest
    combinations of an infeasible problem with what each breaks."""
    if "evaluations" in res.extra:
        # A sampling solver saw only part of the space: that is not proof of infeasibility.
        print(f"no feasible design found in {res.extra['evaluations']} evaluations: "
              f"{res.solver} samples the space (RASS searches all of it: --solver rass, or more "
              "--pop-size/--generations).")
        return
    print("INFEASIBLE: no combination meets every constraint.")
    for v in res.nearest:
        broken = ", ".join(f"{k} ({'short' if ' >= ' in k else 'over'} by {x:.4g})"
                           for k, x in v.broken.items())
        print(f"  nearest: {' + '.join(v.labels)}: breaks {broken}")


def _print_designs(problem: DiscreteProblem, res: SolveResult, names: list[str]) -> None:
    """The designs with their optimality and objectives, and how sure those are."""
    rows = [[role, " + ".join(d.labels),
             optimality_text(d.optimality, ".4g", infinity="inf", tied=d.tie is not None,
                             unweighted=problem.unweighted)]
            + [d.value_text(n, fmt) for n in names] for role, d in res.designs.items()]
    print(table(rows, ["role", "design", "optimality"] + names))
    if problem.noisy:
        print("±: half-width of the value's 95% interval (docs/metrics.md); designs inside "
              "each other's intervals on every objective are ties (--point-estimates ranks on "
              "the values alone)")
    for role, d in res.designs.items():
        if d.tie:
            print(f"{role}: {_p(d.tie)}")
    for line in noisy_lines(problem):
        print(line)


def _print_policy(res: SolveResult) -> None:
    """The switching policy, one row per combination of flags, shaped like CARIn Table 7."""
    print("\nswitching policy (shaped like CARIn Table 7):")
    heads = [f"c_{t}" for t in res.triggers] + ["c_m", "d_new"]
    cells = []
    for r in res.policy_table():
        chosen = res.designs.get(r["design"])
        same = next((o for o in res.designs.values() if chosen and o.role != r["design"]
                     and o.index == chosen.index and o.role < r["design"]), None)
        text = ("absent" if chosen is None else
                f"{r['design']} = " + (same.role if same else
                                        "<" + " + ".join(chosen.labels) + ">"))
        cells.append(r["flags"] + [text])
    print(table(cells, heads))


def _num(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def extra_lines(extra: dict[str, Any]) -> list[str]:
    """A solver's extras as sentences (``--json`` keeps them as data): a note per design role,
    an evolutionary run's settings and how its front compares with the exact one."""
    out = [f"{role}: {text}" for role, text in (extra.get("notes") or {}).items()]
    if "algorithm" in extra:
        head = f"{str(extra['algorithm']).upper()} ({extra.get('library', 'pymoo')}): "
        if str(extra["algorithm"]) in ("optuna-tpe", "optuna-random"):
            # No population: pop-size x generations is only the trial count.
            run = head + f"{extra.get('evaluations')} trials, seed {extra.get('seed')}"
        else:
            run = head + (f"population {extra.get('pop_size')}, {extra.get('n_gen')} "
                          f"generations, seed {extra.get('seed')}, "
                          f"{extra.get('evaluations')} evaluations")
        if extra.get("cancelled"):
            run += f" (stopped after {extra.get('generations_done')} generations)"
        out.append(run)
        if extra.get("hv") is None and "hv" in extra:
            out.append("no hypervolume: more than 4 objectives (IGD and the optimality ratio "
                       "still compare it)")
        if extra.get("hv") is not None:
            cmp = f"its front's hypervolume {_num(extra['hv'])}"
            if extra.get("hv_exact") is not None:
                cmp += (f" against the exact front's {_num(extra['hv_exact'])} (ratio "
                        f"{_num(extra.get('hv_ratio'))})")
            if extra.get("igd") is not None:
                cmp += f", IGD {_num(extra['igd'])}"
            if extra.get("exact_front_size") is not None:
                cmp += f"; the exact front has {extra['exact_front_size']} designs"
            if extra.get("optimality_ratio") is not None:
                cmp += (f"; best optimality found over the best there is "
                        f"{_num(extra['optimality_ratio'])}")
            out.append(cmp)
    known = {"notes", "front", "dropped_rows", "algorithm", "library", "pop_size", "n_gen", "seed",
             "evaluations", "cancelled", "generations_done", "hv", "hv_exact", "hv_ratio", "igd",
             "exact_front_size", "optimality_ratio"}
    for k, v in extra.items():
        if k in known:
            continue
        if isinstance(v, dict):
            out.append(f"{k}: " + "; ".join(f"{a} {_num(b)}" for a, b in v.items()))
        elif isinstance(v, (list, tuple)):
            out.append(f"{k}: " + ", ".join(_num(x) for x in v))
        else:
            out.append(f"{k}: {_num(v)}")
    return out


def noisy_lines(problem: "DiscreteProblem") -> list[str]:
    """A warning for the problem's rows whose latency varied too much to trust its mean."""
    from ..profiles.noise import noisy_warning

    line = noisy_warning(c for ts in problem.tasks for c in ts.configs)
    return [line] if line else []


def front_designs(problem: "DiscreteProblem", res) -> list:
    """An evolutionary solver's front as designs (best optimality first); [] for RASS and
    OODIn, whose answer is their designs."""
    from ..solvers.result import Design

    flats = res.extra.get("front") or []
    if not flats:
        return []
    opt = problem.optimality_of(np.asarray(flats, dtype=np.int64))
    order = np.argsort(-np.nan_to_num(opt, nan=-np.inf), kind="stable")
    return [Design.of(problem, f"p{i + 1}", int(flats[k]), optimality=float(opt[k]))
            for i, k in enumerate(order)]


def write_csv(path: str, res, front: list) -> None:
    """The designs (and an evolutionary solver's front) as CSV: one row per design, its
    configuration(s) and every objective."""
    from ..fileio import atomic_write_text, csv_text

    atomic_write_text(path, csv_text([d.row() for d in [*res.designs.values(), *front]]))


def bundle(args: argparse.Namespace) -> int:
    from .. import workspace
    from ..bundling import check_output, make_bundle
    from ..solvers import solve as solve_problem

    check_output(args.out, overwrite=args.force)  # a folder not ours is refused before solving
    problem = problem_from_args(args)
    res = solve_problem(problem, args.solver)
    if not res.ok:
        raise WorkbenchError("the problem is infeasible: nothing to bundle (see `workbench solve`)")
    models = Path(args.models) if args.models else workspace.zoo_dir(quick=args.quick)
    # Registered models (workbench models add) are found by name, wherever the zoo is.
    m = make_bundle(res, problem, args.out, models=models, include="all" if args.all else "designs",
                    overwrite=args.force)
    st = m["storage"]
    print(f"bundle {args.out}: {len(m['designs'])} designs, {len(m['models'])} model files, "
          f"{st['bundle_bytes'] / 1e6:.3f} MB")
    if st["reduction"] is not None:  # None: the profile gives no sizes (S) to compare
        print(f"storage (CARIn Table 10 shape): designs {st['designs_mb']:.3f} MB vs all "
              f"{st['n_all_models']} candidate variants {st['all_candidates_mb']:.3f} MB: "
              f"{st['reduction']:.2f}x smaller")
    print(f"run it: workbench run {args.out} --duration 10")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("solve", help="solve SLOs on a profile with RASS, OODIn, a pymoo "
                       "algorithm or an Optuna sampler")
    add_problem_arguments(p, tables=True)
    p.add_argument("--solver", default="rass",
                   help="rass (default), oodin, a pymoo algorithm (nsga2, nsga3, spea2, ...) or "
                        "an Optuna sampler (optuna-nsga2, optuna-tpe, optuna-random; needs the "
                        "tune extra)")
    p.add_argument("--pop-size", type=whole(2, MAX_EFFORT), default=None,
                   help=f"evolutionary: population, 2..{MAX_EFFORT} (default 100; Optuna 50)")
    p.add_argument("--generations", type=whole(1, MAX_EFFORT), default=None,
                   help=f"evolutionary: generations, 1..{MAX_EFFORT} (default 100; Optuna 20: "
                        "an Optuna run takes population x generations trials)")
    p.add_argument("--seed", type=whole(0, 2**32 - 1), default=1,
                   help="evolutionary: random seed, 0..4294967295")
    p.add_argument("--json", action="store_true", help="print the result as JSON (with "
                   "an evolutionary solver: the front it found, as designs)")
    p.add_argument("--csv", default=None, metavar="PATH",
                   help="also write the designs (and an evolutionary solver's front) as CSV")
    p.set_defaults(func=solve)

    p = sub.add_parser("bundle", help="solve and write a deployment bundle (designs, policy, "
                       "model files with checksums)")
    add_problem_arguments(p, tables=False)
    p.add_argument("--solver", default="rass", help="rass (default) or oodin")
    p.add_argument("-o", "--out", required=True, help="the bundle folder to write")
    p.add_argument("--models", default=None, help="zoo folder with the model files "
                   "(default: the workspace's datasets/zoo; registered models are always found)")
    p.add_argument("--quick", action="store_true", help="use the quick zoo (datasets/zoo-quick)")
    p.add_argument("--all", action="store_true",
                   help="store every candidate configuration (what OODIn needs)")
    p.add_argument("--force", action="store_true", help="replace an existing bundle folder "
                   "(only a bundle: a folder workbench did not write is never deleted)")
    p.set_defaults(func=bundle)
