"""``workbench report``: execute the report notebooks and write the index."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import WorkbenchError
from ..lab.sweep import MAX_WORKERS
from ._format import whole


def report(args: argparse.Namespace) -> int:
    from ..lab import reports

    png = True if args.png else (False if args.no_png else None)
    out = Path(args.reports_dir) if args.reports_dir else reports.default_reports_dir(
        quick=args.quick)
    if args.profile is not None:
        return designs_report(args, out, png=bool(png))
    if args.task or args.slo:
        from ..errors import InputError

        raise InputError("--task and --slo go with --profile (the report on your own profile)",
                         where="--task" if args.task else "--slo")
    if args.ledger:
        from ..errors import InputError
        from ..lab.reports.index import write_index

        # The ledger reads what reports and benchmarks wrote: a folder that is not there is a
        # typo, not an empty workspace (it would list every item as not reproduced).
        if not out.is_dir():
            raise InputError("not a folder of reports (run `workbench report` first, or give "
                             "the folder that holds them)", where="--reports-dir", value=str(out))
        from ..lab.reproduction import LEDGER, build_ledger, summary_line

        print(f"index: {write_index(out)}")
        if (out / "bench").is_dir():
            from ..lab.bench.page import bench_targets, render_page

            page = render_page(bench_targets(out / "bench"), out / "bench" / "index.html")
            print(f"benchmarks: {page}")
        ledger = build_ledger(out)
        print(f"ledger: {out / LEDGER}: {summary_line(ledger)}")
        # Say what could not be read, so a broken file or renamed field is not silent.
        errors = [f"{e['paper']} {e['id']}: {c['error']}" for e in ledger
                  for c in e["comparisons"] if c.get("error")]
        for line in errors[:5]:
            print(f"warning: no number for {line}", file=sys.stderr)
        if len(errors) > 5:
            print(f"warning: and {len(errors) - 5} more comparisons without a number (their "
                  "items' reasons in the ledger say why)", file=sys.stderr)
        return 0
    if args.render_only:
        from ..lab.reports.index import write_index

        names = args.only or [reports._report_name(s) for s in reports.available()]
        done = [reports.render_html(out / n / f"{n}.ipynb", reports_dir=out,
                                    show_code=args.show_code)
                for n in names if (out / n / f"{n}.ipynb").exists()]
        for html in done:
            print(f"rendered {html}")
        print(f"index: {write_index(out)}")
        return 0
    try:
        runs = reports.run_all(names=args.only, quick=args.quick, progress=not args.quiet,
                               png=png, reports_dir=out, show_code=args.show_code,
                               workers=args.workers, scheduler=args.scheduler)
    except ImportError as exc:  # no sweep extra for --workers: one line that says what to install
        raise WorkbenchError(str(exc)) from None
    failed = [r for r in runs if r.error]
    for run in runs:
        if run.error:
            print(f"{run.name}: FAILED after {run.seconds:.0f} s: {run.error}"
                  + (f"\n  the partly run notebook: {run.failed}" if run.failed else ""))
            continue
        print(f"{run.name}: {run.html}  ({run.seconds:.0f} s"
              + (f", {len(run.figures)} PNG figures" if run.figures else "") + ")")
        if run.metrics:
            print(f"  metrics: {run.metrics}")
    print(f"index: {out / 'index.html'}  (total {sum(r.seconds for r in runs):.0f} s"
          + (f"; {len(failed)} of {len(runs)} reports failed" if failed else "") + ")")
    return 1 if failed else 0


def designs_report(args: argparse.Namespace, out: Path, *, png: bool) -> int:
    """The designs report on the user's own profile: checked before the kernel starts, so a
    wrong task or SLO is one line naming it."""
    import re

    from ..errors import InputError
    from ..lab import reports
    from ..lab.reports import designs
    from ..moo.slo import parse_slo
    from ..profiles import resolve_profile
    from ..profiles.store import load_profile

    if args.only or args.render_only or args.ledger:
        raise InputError("--profile makes the designs report alone: drop --only, --render-only "
                         "and --ledger", where="--profile")
    path = resolve_profile(args.profile)
    prof = load_profile(path)
    tasks = designs.check_tasks(prof, args.task or [], file=path)
    slo = args.slo or designs.default_slo(prof, tasks)
    parse_slo(slo)  # a bad SLO is one line here, not a traceback inside the notebook
    # One folder per profile, and per task set when the profile has several: a report of one
    # task does not replace another's.
    name = "designs-" + re.sub(r"[^A-Za-z0-9._-]+", "-", Path(path).stem + (
        "-" + "-".join(tasks) if len(prof.tasks) > 1 else ""))
    designs.check_folder(out / name, str(Path(path).resolve()))
    run = reports.run_report("designs", parameters={"profile": str(Path(path).resolve()),
                                                    "tasks": tasks, "slo": slo},
                             reports_dir=out, quick=args.quick, progress=not args.quiet,
                             png=png, show_code=args.show_code, out_name=name)
    print(f"{run.name}: {run.html}  ({run.seconds:.0f} s)")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="execute the notebooks into reports/ (papermill + HTML)")
    p.add_argument("--only", action="append", default=None, metavar="NAME",
                   help="a notebook name such as quickstart (repeatable; default: all)")
    p.add_argument("--quick", action="store_true",
                   help="small, fast configuration of each report (written to the workspace's "
                   "scratch/reports-quick unless --reports-dir is given)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--png", action="store_true",
                   help="save every figure as PNG (default: when Chromium is installed, not quick)")
    g.add_argument("--no-png", action="store_true", help="no PNG figures")
    p.add_argument("--show-code", action="store_true",
                   help="put the code cells in the HTML too (default: text, figures and tables; "
                   "the executed notebook beside it has the code)")
    p.add_argument("--render-only", action="store_true",
                   help="re-render the HTML of reports already executed (nothing runs)")
    p.add_argument("--ledger", action="store_true",
                   help="rebuild the reproduction ledger (reproduction.json), the index and the "
                   "benchmark page (bench/index.html) from the reports and benchmarks already "
                   "there (nothing runs)")
    p.add_argument("--profile", default=None, metavar="P",
                   help="the designs report on your own profile (a name or a file): device, "
                   "tasks and models from the profile, solved with RASS, intervals and ties "
                   "shown; written to <reports-dir>/designs-<profile>/")
    p.add_argument("--task", action="append", default=None, metavar="T",
                   help="with --profile: the task(s) to solve (repeatable; default: the "
                   "profile's only task)")
    p.add_argument("--slo", default=None,
                   help="with --profile: the SLO (default 'max A; min L', or 'min L; min MF' "
                   "without a task metric)")
    p.add_argument("--reports-dir", default=None,
                   help="where reports go (default: the workspace's reports/)")
    p.add_argument("--workers", type=whole(0, MAX_WORKERS), default=0,
                   help="run the notebooks as Dask tasks on a local cluster of N processes, each "
                   f"in its own kernel, at most {MAX_WORKERS} (default 0: one after the other "
                   "here)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="run them on an existing Dask cluster instead")
    p.set_defaults(func=report)
