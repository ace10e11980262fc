"""``workbench explore``: the Pareto explorer as a page (Voila) on localhost."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import WorkbenchError


def explore_command(*, port: int, profile: str, use_case: str | None) -> tuple[list[str], dict]:
    """The Voila command line and environment that serve the explorer on localhost."""
    import os

    from .. import workspace

    notebooks = workspace.notebooks_dir()
    env = dict(os.environ, WORKBENCH_EXPLORE_PROFILE=profile,
               WORKBENCH_EXPLORE_USE_CASE=use_case or "")
    cmd = [sys.executable, "-m", "voila", str(notebooks / "explorer.ipynb"), f"--port={port}",
           "--no-browser", "--Voila.ip=127.0.0.1", "--theme=light",
           f"--Voila.root_dir={notebooks.parent}"]
    return cmd, env


def explore(args: argparse.Namespace) -> int:
    import importlib.util
    import os

    from ..profiles import load_profile, resolve_profile

    # A clear error for an unknown profile before Voila starts; a path is made absolute because
    # the explorer's kernel runs in the notebooks folder, not here.
    path = resolve_profile(args.profile)
    load_profile(path)
    profile = str(Path(path).resolve()) if Path(args.profile).suffix else args.profile
    if importlib.util.find_spec("voila") is None:
        raise WorkbenchError("the dashboard needs Voila: pip install 'workbench[notebooks]'")
    cmd, env = explore_command(port=args.port, profile=profile, use_case=args.use_case)
    print(f"serving the explorer on http://127.0.0.1:{args.port}/ (Ctrl-C stops it)", flush=True)
    # Become Voila (no parent left behind to orphan it and its kernel when signalled).
    os.execve(cmd[0], cmd, env)
    return 0  # pragma: no cover - execve does not return


def add_parser(sub) -> None:
    p = sub.add_parser("explore", help="serve the interactive Pareto explorer on localhost "
                       "(Voila)")
    p.add_argument("--port", type=int, default=8866, help="port (default 8866)")
    p.add_argument("--profile", default="s20fe", help="profile to open (default s20fe)")
    p.add_argument("--use-case", default=None, help="use case to open (uc1..uc4, h1..h4)")
    p.set_defaults(func=explore)
