"""The "bring your own model" notebook: a Keras model written in the notebook goes through
add -> quantise -> profile -> solve -> explore -> bundle -> run, in its own workspace."""

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.notebook]

ROOT = Path(__file__).resolve().parents[1]


def test_byo_notebook_runs_a_users_model_end_to_end(tmp_path):
    pm = pytest.importorskip("papermill")
    pytest.importorskip("keras")
    ws = tmp_path / "ws"
    pm.execute_notebook(str(ROOT / "notebooks" / "byo_model.ipynb"), str(tmp_path / "out.ipynb"),
                        parameters={"workspace": str(ws), "epochs": 3, "duration_s": 1.5},
                        cwd=str(tmp_path), progress_bar=False, kernel_name="python3")
    rec = json.loads((ws / "models" / "my-digits" / "model.json").read_text())
    assert {v["precision"] for v in rec["variants"] if v["available"]} == {
        "FP32", "FP16", "DR8", "FX8", "FFX8"}
    prof = json.loads((ws / "profiles" / "mine.json").read_text())
    assert {c["precision"] for c in prof["configs"]} == {"FP32", "FP16", "DR8", "FX8", "FFX8"}
    assert prof["source"] == "measured"
    assert (ws / "bundle").is_dir() and json.loads((ws / "timeline.json").read_text())["lost"] == 0
    assert not any(tmp_path.glob("*.keras"))  # the notebook wrote into its workspace only
