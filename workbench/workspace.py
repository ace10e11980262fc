"""The workspace: the one root that profiles, the model zoo, dataset caches and reports resolve
from. Standard library only.

``WORKBENCH_HOME`` names it. Without it, a source checkout is its own workspace (so the committed
``profiles/`` and ``reports/`` are what you see), and an installed package uses a per-user folder
(``$XDG_DATA_HOME/workbench``, by default ``~/.local/share/workbench``). Paths are resolved when
asked for, not at import, so setting ``WORKBENCH_HOME`` in a running process takes effect.

Layout under the root::

    profiles/            device profiles; names such as ``host`` or ``s20fe`` are looked up here
                         (then in the checkout's committed profiles, if there is a checkout)
    datasets/cache/      generated datasets (npz + checksummed manifest)
    datasets/zoo/        trained models and their TFLite variants (zoo-quick/ for --quick)
    models/              your own models (``workbench models add``) and their variants
    reports/             executed reports (the checkout's are committed)
    scratch/             quick reports and other throw-away output
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import WorkbenchError

ENV = "WORKBENCH_HOME"


def checkout() -> Path | None:
    """The source checkout this package runs from, or None for an installed package."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir():
        return root
    return None


def home() -> Path:
    """The workspace root (see the module docstring for how it is chosen)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser().resolve()
    src = checkout()
    if src is not None:
        return src
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data).expanduser() / "workbench"


def profiles_dir() -> Path:
    """Where profiles are written and first looked up by name."""
    return home() / "profiles"


def profile_dirs() -> list[Path]:
    """Folders a profile name is looked up in, first match wins: the workspace's, then the
    checkout's committed profiles (the papers' modelled phones and this machine's measurements)."""
    dirs = [profiles_dir()]
    src = checkout()
    if src is not None and (src / "profiles") not in dirs:
        dirs.append(src / "profiles")
    return dirs


def datasets_dir() -> Path:
    """Generated dataset caches (``cache/``) and the model zoo (``zoo/``, ``zoo-quick/``)."""
    return home() / "datasets"


def zoo_dir(*, quick: bool = False) -> Path:
    """The trained zoo models and their TFLite variants."""
    return datasets_dir() / ("zoo-quick" if quick else "zoo")


def models_dir() -> Path:
    """The model registry: models a user added (``workbench models add``) and their variants."""
    return home() / "models"


def reports_dir() -> Path:
    """Executed reports and their index."""
    return home() / "reports"


def scratch_dir() -> Path:
    """Throw-away output, such as quick reports (never the committed ones)."""
    return home() / "scratch"


def notebooks_dir() -> Path:
    """The report notebooks (shipped in the checkout)."""
    src = checkout()
    if src is None:
        raise WorkbenchError("the report notebooks ship with the source checkout: run reports "
                             "from a clone of the repository")
    return src / "notebooks"
