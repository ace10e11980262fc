"""Rewrite requirements/constraints.txt from the environment: the exact installed version of every
direct dependency pyproject.toml declares (any extra), nothing transitive. `make constraints`."""

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAD = """# The exact versions CI runs (direct dependencies of every extra), installed by `make setup`
# with `pip install -c requirements/constraints.txt`. pyproject.toml holds the compatible
# ranges a packager uses. Refresh after an upgrade: `make constraints`.
"""


def names() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    out = {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0] for r in reqs}
    return sorted(out | {"distributed", "keras"}, key=str.lower)


def main() -> int:
    lines = []
    for n in names():
        try:
            v = metadata.version(n)
        except metadata.PackageNotFoundError:
            continue  # an extra not installed here (another platform's wheel)
        lines.append(f"{n}=={v.split('+')[0]}")
    (ROOT / "requirements" / "constraints.txt").write_text(HEAD + "\n".join(lines) + "\n")
    print(f"wrote {len(lines)} pins to requirements/constraints.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
