"""``workbench explore``: the Pareto explorer as a page (Voila) on localhost."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import WorkbenchError
from ._format import whole

#: A page's kernel (150-220 MB) is shut down this long after its page is closed (idle and no
#: longer connected); open pages keep theirs.
CULL_IDLE_SECONDS = 120


def explore_command(*, port: int, profile: str, use_case: str | None, token: str,
                    cull_seconds: int = CULL_IDLE_SECONDS) -> tuple[list[str], dict]:
    """The Voila command line and environment that serve the explorer on localhost, behind a
    token (as Jupyter does: anyone else on the machine can reach 127.0.0.1).

    The token travels in the environment (``JUPYTER_TOKEN``), never on the command line: any
    local user reads /proc/PID/cmdline, while /proc/PID/environ is the owner's alone."""
    import os

    from .. import workspace
    from ..fileio import atomic_write_json

    notebooks = workspace.notebooks_dir()
    env = dict(os.environ, WORKBENCH_EXPLORE_PROFILE=profile,
               WORKBENCH_EXPLORE_USE_CASE=use_case or "", JUPYTER_TOKEN=token)
    env.pop("JUPYTER_TOKEN_FILE", None)  # JUPYTER_TOKEN wins anyway; one source is clearer
    # Voila turns jupyter_server's Host-header check off; a config file is the only way to give
    # it a real False (command-line dict values arrive as strings). With it, a page reached
    # through another host name (DNS rebinding) gets 403. Voila reads only this folder's
    # config (not the user's Jupyter config), so nothing else can set a token or turn it off.
    config = workspace.scratch_dir() / "explore"
    atomic_write_json(config / "voila.json", {
        # Without a token of its own Voila serves with none; auto_token makes its identity
        # provider take JUPYTER_TOKEN from the environment.
        "Voila": {"auto_token": True, "tornado_settings": {
            "allow_remote_access": False, "local_hostnames": ["localhost"]}},
        # /voila/files/ hands out the served folder's images (the checkout's, .venv's) without
        # asking for the token; the explorer needs none of them.
        "VoilaConfiguration": {"file_allowlist": []}})
    cmd = [sys.executable, "-m", "voila", str(notebooks / "explorer.ipynb"), f"--port={port}",
           "--no-browser", "--Voila.ip=127.0.0.1", "--theme=light",
           f"--Voila.root_dir={notebooks.parent}",
           f"--Voila.config_file_paths={config}",
           # No pre-started spare kernel: each one is another 150-220 MB held for nobody.
           "--VoilaConfiguration.default_pool_size=0",
           f"--MappingKernelManager.cull_idle_timeout={cull_seconds}",
           f"--MappingKernelManager.cull_interval={max(1, min(30, cull_seconds // 2))}",
           "--MappingKernelManager.cull_connected=False"]
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
    import secrets

    token = secrets.token_urlsafe(24)
    cmd, env = explore_command(port=args.port, profile=profile, use_case=args.use_case,
                               token=token, cull_seconds=args.cull_after)
    print(f"serving the explorer on http://127.0.0.1:{args.port}/?token={token} "
          "(Ctrl-C stops it)", flush=True)
    # Become Voila (no parent left behind to orphan it and its kernel when signalled).
    os.execve(cmd[0], cmd, env)
    return 0  # pragma: no cover - execve does not return


def add_parser(sub) -> None:
    p = sub.add_parser("explore", help="serve the interactive Pareto explorer on localhost "
                       "(Voila)")
    p.add_argument("--port", type=int, default=8866, help="port (default 8866)")
    p.add_argument("--profile", default="s20fe", help="profile to open (default s20fe)")
    p.add_argument("--use-case", default=None, help="use case to open (uc1..uc4, h1..h4)")
    p.add_argument("--cull-after", type=whole(1, 86400), default=CULL_IDLE_SECONDS,
                   metavar="SECONDS", help="shut a closed page's kernel down after this long "
                   f"idle (default {CULL_IDLE_SECONDS})")
    p.set_defaults(func=explore)
