"""``workbench profiles list|show|validate|import|model``."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from .. import workspace
from ..errors import InputError, WorkbenchError
from ..profiles.schema.base import SOURCES
from ._format import fmt, table, whole


def list_(args: argparse.Namespace) -> int:
    from ..profiles import list_profiles, load_profile

    paths = list_profiles(args.dir)
    if not paths:
        print(f"no profiles in {args.dir or workspace.profiles_dir()}; create them with "
              "`workbench profiles model`")
        return 0
    rows, bad = [], []
    for p in paths:
        try:
            prof = load_profile(p)
        except WorkbenchError as exc:  # one bad file must not hide the others: listed after them
            bad.append(exc)
            continue
        rows.append([p.stem, prof.device.display_name or prof.device.name, prof.source,
                     str(len(prof.configs)), ",".join(e.name for e in prof.engines),
                     ",".join(t.name for t in prof.tasks)])
    if rows:
        print(table(rows, ["profile", "device", "source", "configs", "engines", "tasks"]))
    for problem in bad:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if bad else 0


def show(args: argparse.Namespace) -> int:
    from ..profiles import load_profile, resolve_profile

    prof = load_profile(resolve_profile(args.profile, directory=args.dir))
    # A filter naming nothing in the profile is a typo, refused as solve refuses it (not "0
    # configurations", which reads as an empty profile).
    for flag, value, known in (("--task", args.task, sorted({t.name for t in prof.tasks})),
                               ("--processor", args.processor,
                                sorted({c.processor for c in prof.configs}))):
        if value is not None and value not in known:
            raise InputError(f"not in the profile; it has {', '.join(known)}", where=flag,
                             value=value)
    if args.json:
        # The schema holds finite numbers only: strict JSON (allow_nan=False) keeps it so.
        print(json.dumps(prof.model_dump(mode="json", exclude_none=True), indent=1,
                         allow_nan=False))
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
    def a_text(c) -> str:
        if c.A is None or c.A_lo is None or c.A_hi is None:
            return fmt(c.A)
        return f"{fmt(c.A)} [{fmt(c.A_lo)}, {fmt(c.A_hi)}]"

    cells = [[c.id, c.label(), a_text(c), fmt(c.L), fmt(c.L_std), fmt(c.L_max), fmt(c.TP),
              fmt(c.MF), fmt(c.E), fmt(c.S), c.source] for c in rows]
    print(table(cells, ["id", "configuration", "A [95%]", "L ms", "std", "max", "TP/s", "MF MB",
                        "E mJ", "S MB", "source"]))
    if prof.failed:
        print(f"\n{len(prof.failed)} configurations could not run:")
        for f in prof.failed[: args.limit or len(prof.failed)]:
            print(f"  {f.id}: {f.reason}")
    from ..profiles.noise import noisy_warning

    line = noisy_warning(rows)
    if line:
        print(line)
    return 0


def validate(args: argparse.Namespace) -> int:
    from ..profiles import load_profile

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


def import_(args: argparse.Namespace) -> int:
    from ..fileio import locked
    from ..profiles import load_profile, save_profile
    from ..profiles.importers import (
        accuracy_table,
        attach_accuracy,
        import_benchmark_log,
        import_csv,
        merge,
    )

    src = Path(args.file)
    form = args.format or ("csv" if src.suffix.lower() == ".csv" else "benchmark-log")
    if form == "csv":
        prof = import_csv(src, device=args.device, source=args.source)
    else:
        prof = import_benchmark_log(src, model=args.model, precision=args.precision,
                                    processor=args.processor, task=args.task, device=args.device,
                                    source=args.source)
    if args.accuracy:
        prof = attach_accuracy(prof, accuracy_table(args.accuracy), metric=args.metric)
    out = Path(args.output or args.into or workspace.profiles_dir() / f"{prof.device.name}.json")
    with locked(out):  # two imports into one profile at once: each sees the other's rows
        if args.into:
            prof = merge(load_profile(args.into), prof, replace=args.replace)
        save_profile(prof, out)
    print(f"wrote {out} ({len(prof.configs)} configurations)")
    return 0


_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _keep_wider(target: Path, use_cases) -> None:
    """Refuse to replace a profile in its default place by one of fewer tasks (``--use-case``
    without ``-o`` would otherwise quietly drop the others, and a later solve of them fails)."""
    from .. import papers
    from ..profiles import load_profile

    if not target.is_file():
        return
    try:
        have = {t.name for t in load_profile(target).tasks}
    except WorkbenchError:
        return  # a file that is no profile is replaced, as before
    lost = sorted(have - {t for uc in use_cases for t in papers.use_case_tasks(uc)})
    if lost:
        raise InputError(f"would be replaced by a profile without {', '.join(lost)}: write "
                         "the narrower one elsewhere with -o FILE (or delete this one first)",
                         file=target)


def model(args: argparse.Namespace) -> int:
    from ..profiles import phone_model
    from ..profiles.store import save_profile

    params = phone_model.load_parameters(args.parameters) if args.parameters else None
    use_cases = args.use_case or phone_model.USE_CASES
    out_dir = Path(args.out_dir) if args.out_dir else workspace.profiles_dir()
    if args.use_case and not args.output:
        names = [phone_model.load_spec(f).name for f in args.spec] if args.spec else \
            list(args.device or phone_model.DEVICES)
        for name in names:
            _keep_wider(out_dir / f"{name}.json", use_cases)
    if args.spec:
        specs = [phone_model.load_spec(f) for f in args.spec]
        if args.output and len(specs) > 1:
            raise InputError("-o names one file: give one --spec with it", where="-o")
        for f, spec in zip(args.spec, specs):
            if not args.output and not _FILE_NAME.match(spec.name):
                # The name becomes the file name: no folders, no hidden files.
                raise InputError("the name becomes the profile's file name: letters, digits, '.', "
                                 "'_' and '-' only", file=f, where="name", value=spec.name)
            if not args.output and spec.name in phone_model.DEVICES:
                # Its profile would replace the papers' phone's, which is calibrated by name.
                raise InputError("is one of the papers' phones (modelled with its own calibration): "
                                 "rename the spec or give -o", file=f, where="name", value=spec.name)
        for f, spec in zip(args.spec, specs):
            try:
                prof = phone_model.build_profile(spec, use_cases=use_cases, parameters=params)
            except InputError as e:  # the spec's fields, named with the file they came from
                if e.file is not None:
                    raise
                raise InputError(e.message, file=f, where=e.where, value=e.value) from None
            out = Path(args.output) if args.output else out_dir / f"{spec.name}.json"
            save_profile(prof, out)
            print(f"wrote {out} ({len(prof.configs)} configurations, MODELLED from the spec and "
                  "the public calibration; not calibrated on this device)")
        return 0
    if args.output and len(args.device or phone_model.DEVICES) > 1:
        raise InputError("-o names one file: give one --device with it", where="-o")
    if args.output:
        prof = phone_model.build_profile(args.device[0], use_cases=use_cases, parameters=params)
        print(f"wrote {save_profile(prof, args.output)}")
        return 0
    paths = phone_model.regenerate(out_dir, devices=args.device or phone_model.DEVICES,
                                   use_cases=use_cases, parameters=params,
                                   progress=not args.quiet)
    for p in paths:
        print(f"wrote {p}")
    return 0


def add_parser(sub) -> None:
    pr = sub.add_parser("profiles", help="list, show, validate, import and model device profiles")
    psub = pr.add_subparsers(dest="action", metavar="ACTION")
    psub.required = True

    p = psub.add_parser("list", help="list the profiles (the workspace's and the committed ones)")
    p.add_argument("--dir", default=None, help="only this folder of profiles")
    p.set_defaults(func=list_)

    p = psub.add_parser("show", help="describe a profile and print its configuration table")
    p.add_argument("profile", help="a profile file or a name (e.g. s20fe)")
    p.add_argument("--dir", default=None, help="folder to look names up in")
    p.add_argument("--task", default=None, help="only the rows of this task")
    p.add_argument("--processor", default=None, help="only the rows of this processor")
    p.add_argument("--limit", type=whole(0, 10**9), default=40,
                   help="rows to print (0: all; default 40)")
    p.add_argument("--json", action="store_true", help="print the whole profile as JSON")
    p.set_defaults(func=show)

    p = psub.add_parser("validate", help="check profile files against the schema")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=validate)

    p = psub.add_parser("import", help="import a CSV table or LiteRT benchmark output "
                        "(benchmark_model's log; litert-benchmark's printed results or its "
                        "--result_json file)")
    p.add_argument("file")
    p.add_argument("--format", choices=["csv", "benchmark-log"], default=None,
                   help="default: csv for *.csv, else benchmark-log (any of the three LiteRT "
                        "outputs, told apart by their content)")
    p.add_argument("--device", default=None, help="device name (default: the file's stem)")
    p.add_argument("--model", default=None, help="benchmark-log: model name (default: graph name)")
    p.add_argument("--precision", default=None, help="benchmark-log: FP32|FP16|DR8|FX8|FFX8")
    p.add_argument("--processor", default=None, help="benchmark-log: override CPU/GPU/NPU/DSP")
    p.add_argument("--task", default="default", help="benchmark-log: task name")
    p.add_argument("--source", default="imported",
                   choices=SOURCES)
    p.add_argument("--accuracy", action="append", default=None, metavar="SPEC",
                   help="attach A: MODEL=VALUE, MODEL:PRECISION=VALUE, or a CSV with columns "
                   "model, precision, A (repeatable); cite where it comes from")
    p.add_argument("--metric", default=None, help="with --accuracy: what A is (e.g. top1)")
    p.add_argument("--into", default=None, help="add the rows to this existing profile")
    p.add_argument("--replace", action="store_true", help="with --into: replace rows with the "
                   "same id")
    p.add_argument("-o", "--output", default=None, help="output file (default: --into, else "
                   "<workspace>/profiles/<device>.json)")
    p.set_defaults(func=import_)

    p = psub.add_parser("model", help="model a phone's profile: the papers' phones, or any device "
                        "from its spec (--spec)")
    p.add_argument("--device", action="append", default=None,
                   help="pixel7, s20fe, a71 or xperia-c5 (repeatable; default: all)")
    p.add_argument("--spec", action="append", default=None, metavar="DEVICE.json",
                   help="any device: a JSON file in the form of a profile's device section (CPU "
                        "clusters with core type, count and GHz; GPU with fp32_gflops; NPU/DSP with "
                        "int8_tops; ram_mhz or dram_gbps). Repeatable. See docs/device-models.md, "
                        "'Any device from its spec'")
    p.add_argument("--use-case", action="append", default=None,
                   help="CARIn use case uc1..uc4 (repeatable; default: all)")
    p.add_argument("--out-dir", default=None, help="default: the workspace's profiles/")
    p.add_argument("-o", "--output", default=None, help="the profile file (one device or spec)")
    p.add_argument("--parameters", default=None, help="an edited copy of model_parameters.json")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=model)
