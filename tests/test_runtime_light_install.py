"""The runtime on a device-like install: a fresh venv with only numpy and ai-edge-litert, the
project installed without its dependencies, a bundle run from outside the source tree."""

import subprocess
import sys
import venv
from importlib.metadata import version

import pytest

pytest.importorskip("ai_edge_litert")

from conftest import ROOT  # noqa: E402

from workbench.bundling import make_bundle  # noqa: E402
from workbench.moo.problem import DiscreteProblem  # noqa: E402
from workbench.solvers import rass  # noqa: E402


@pytest.mark.slow  # builds a fresh venv
@pytest.mark.timeout(900)
def test_a_bundle_runs_with_only_numpy_and_litert_installed(quick_profile, quick_zoo, tmp_path):
    prof, _ = quick_profile
    pb = DiscreteProblem(prof, "max A; max TP", tasks=["h1"])
    make_bundle(rass(pb), pb, tmp_path / "bundle", models=quick_zoo[0])
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = str(env_dir / "bin" / "python")
    pins = [f"numpy=={version('numpy')}", f"ai-edge-litert=={version('ai-edge-litert')}"]
    pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run(pip + pins, check=True, timeout=600)
    subprocess.run(pip + ["--no-deps", str(ROOT)], check=True, timeout=600)
    installed = subprocess.run([py, "-m", "pip", "list", "--format=freeze"], check=True,
                               capture_output=True, text=True).stdout.lower()
    for heavy in ("pydantic", "pymoo", "tensorflow", "torch", "plotly", "scipy"):
        assert f"{heavy}==" not in installed
    out = subprocess.run([py, "-m", "workbench.runtime", "run", str(tmp_path / "bundle"),
                          "--duration", "1", "--rate", "100", "--inject", "0.3:flag:CPU[0]"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "0 lost" in out.stdout and "-> d0" in out.stdout
    check = subprocess.run([py, "-c", "import sys, workbench.runtime as r; "
                            "print(r.__file__); print(sorted(m for m in sys.modules "
                            "if m.split('.')[0] in ('pydantic', 'pymoo', 'tensorflow')))"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True)
    assert str(env_dir) in check.stdout and "[]" in check.stdout
    assert sys.prefix != str(env_dir)
