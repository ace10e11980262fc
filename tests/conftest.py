import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def minimal_profile() -> dict:
    """A small valid profile as parsed JSON, for tests that corrupt one field at a time."""
    return {
        "device": {"name": "toy", "cpu_clusters": [{"core": "Cortex-A76", "count": 4, "ghz": 2.0}]},
        "source": "modelled",
        "provenance": {"method": "hand-written test fixture"},
        "engines": [{"name": "CPU", "kind": "CPU"}, {"name": "GPU", "kind": "GPU",
                                                      "precisions": ["FP32", "FP16"]}],
        "tasks": [{"name": "cls", "metric": "top1"}],
        "configs": [
            {"id": "a", "task": "cls", "model": "net", "precision": "FP32", "processor": "CPU",
             "threads": 4, "xnnpack": True, "A": 70.0, "L": 5.0, "L_min": 4.0, "L_max": 7.0,
             "MF": 20.0, "source": "modelled"},
            {"id": "b", "task": "cls", "model": "net", "precision": "FP16", "processor": "GPU",
             "A": 70.1, "L": 4.0, "MF": 40.0, "source": "modelled"},
        ],
    }


@pytest.fixture
def write_json(tmp_path):
    def _write(data, name="profile.json"):
        p = tmp_path / name
        p.write_text(json.dumps(data))
        return p
    return _write
