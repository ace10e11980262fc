"""``workbench run``: the device runtime's own command (``python -m workbench.runtime run``)."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from ..runtime.run import cmd_run

    return cmd_run(args)


def add_parser(sub) -> None:
    from ..runtime.run import add_run_arguments

    p = sub.add_parser("run", help="run a bundle: serve requests, monitor, switch designs")
    add_run_arguments(p)
    p.set_defaults(func=run)
