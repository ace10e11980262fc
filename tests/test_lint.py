"""`make lint` in CI: ruff over the code and tests, mypy over the whole package (no module is
exempt, so a type error anywhere fails here rather than waiting for someone to run make lint)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    found = str(exe) if exe.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (the dev extra brings it)")
    return found


def test_ruff_finds_nothing():
    p = subprocess.run([_tool("ruff"), "check", "--no-cache", "workbench", "tests", "benchmarks"],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:]


@pytest.mark.timeout(600)
def test_mypy_finds_nothing(tmp_path):
    """About 40 s on one core; its cache goes to a temporary folder, not the checkout."""
    p = subprocess.run([_tool("mypy"), "--cache-dir", str(tmp_path / "cache"), "workbench"],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:]
