"""``workbench multiexit build``: Delen's multi-exit nets as a measured profile."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import workspace
from ._format import whole


def build(args: argparse.Namespace) -> int:
    from ..lab.experiments.delen import build_profile
    from ..profiles import save_profile

    prof = build_profile(quick=args.quick, width=args.width, epochs=args.epochs,
                         points=args.points,
                         progress=None if args.quiet else (lambda m: print(m, flush=True)))
    out = Path(args.output or workspace.profiles_dir() / "host-multiexit.json")
    save_profile(prof, out)
    print(f"{out}: {len(prof.multi_exit)} multi-exit models, {len(prof.configs)} operating points "
          f"(solve with: workbench solve --profile {out} --task h1 --slo \"max A; min L\"; "
          f"deploy with: workbench bundle --profile {out} --task h1 --slo \"max A; min L\" "
          "-o BUNDLE; the profile records where the segments are)")
    return 0


def add_parser(sub) -> None:
    me = sub.add_parser("multiexit", help="multi-exit nets (Delen)")
    mesub = me.add_subparsers(dest="multiexit_command", metavar="ACTION")
    mesub.required = True
    p = mesub.add_parser("build", help="train, export and measure the multi-exit nets and write "
                         "a measured profile of their operating points")
    p.add_argument("-o", "--output", default=None,
                   help="default: <workspace>/profiles/host-multiexit.json")
    p.add_argument("--width", type=whole(1, 1024), default=32,
                   help="backbone width, 1..1024 (default 32)")
    p.add_argument("--epochs", type=whole(1, 1000), default=None,
                   help="training epochs, 1..1000 (default 12)")
    p.add_argument("--points", type=whole(1, 1000), default=10,
                   help="Pareto threshold vectors kept per model, 1..1000 (default 10)")
    p.add_argument("--quick", action="store_true", help="small datasets, fewer epochs")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=build)
