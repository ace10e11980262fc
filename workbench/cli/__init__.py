"""The ``workbench`` command line.

One module per command group, each with ``add_parser(subparsers)`` and the functions its
subcommands run; each subcommand parses its options and calls one package function. Bad input
(a :class:`~workbench.errors.WorkbenchError`) ends with one line on stderr naming the file, the
place in it and the value, and exit status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ..errors import WorkbenchError
from ..names import EscapingWriter, printable
from . import explore, host, memory, models, multiexit, profiles, report, run, solve, sweep

#: Command groups in the order ``workbench --help`` lists them.
GROUPS = (models, profiles, solve, sweep, run, explore, multiexit, memory, host, report)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``workbench`` command."""
    from ..version import __version__

    parser = argparse.ArgumentParser(
        prog="workbench",
        description="Analysis and optimisation of DNNs on heterogeneous edge devices under SLOs.")
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for group in GROUPS:
        group.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbench`` command; returns the exit status."""
    args = build_parser().parse_args(argv)
    # Tables and JSON quote names and values from users' files: none reaches the terminal raw.
    stdout = sys.stdout
    sys.stdout = EscapingWriter(stdout)
    try:
        return int(args.func(args) or 0)
    except WorkbenchError as exc:
        # Quoted user text is escaped: a name or value may hold terminal escape sequences.
        print(f"error: {printable(exc, multiline=True)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.filename is None:  # not about a file the user named: a bug, shown as one
            raise
        # An output path that cannot be written (a folder, a read-only or missing place).
        print(f"error: {printable(str(exc.filename))}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        # Ctrl-C is the user's choice, not a bug: one line, the shell's status for SIGINT. What
        # a long command finished is already on disk (journals, atomic writes).
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout = stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
