"""The measured accuracy per scheme on kaomoji emotions (reports/bench/text_accuracy.json, written
by benchmarks/bench_text_accuracy.py) is self-consistent, and its split is deterministic and
stratified."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from workbench import papers
from workbench.errors import InputError

REPORT = Path(__file__).resolve().parents[1] / "reports" / "bench" / "text_accuracy.json"
SCHEMES = ["FP32", "FP16", "DR8", "FX8", "FFX8"]


@pytest.mark.skipif(not REPORT.exists(), reason="benchmark not run")
def test_committed_report_is_self_consistent():
    r = json.loads(REPORT.read_text("utf-8"))
    assert r["source"].startswith("measured on this machine with LiteRT")
    assert r["cpu"] and r["seconds"] > 0
    acc, drop, n = r["accuracy_pct"], r["drop_pp"], r["test_n"]
    assert list(acc) == SCHEMES and list(drop) == SCHEMES
    assert n == r["task"]["test_n"] == sum(r["task"]["test_per_class"].values()) >= 1000
    assert r["task"]["classes"] == list(r["task"]["test_per_class"])
    for s in SCHEMES:
        assert drop[s] == pytest.approx(acc[s] - acc["FP32"], abs=0.011)
        # A count of correct test texts, and far above always guessing the majority class.
        assert acc[s] * n / 100 == pytest.approx(round(acc[s] * n / 100), abs=0.51)
        se = r["std_err_pp"]["accuracy"][s]
        assert se == pytest.approx(math.sqrt(acc[s] * (100 - acc[s]) / n), abs=0.006)
        assert acc[s] - r["chance_pct"] > 5 * se
    for s in SCHEMES[1:]:
        p = r["paired_vs_fp32"][s]
        # The paired difference is the discordant texts' balance.
        assert (p["fp32_wrong_now_right"] - p["fp32_right_now_wrong"]) * 100 / n == \
            pytest.approx(drop[s], abs=0.011)
        assert r["std_err_pp"]["paired_drop"][s] == p["se_pp"] >= 0
        assert r["variants"][s]["detected_precision"] == s
    assert acc["FP32"] - r["chance_pct"] > 30
    # The paper's rows are CARIn Table 3 as transcribed in workbench/data/papers/carin.json.
    table = papers.model_table("uc2")
    for row in table["models"]:
        assert r["paper"][row["model"]] == row["accuracy"]


def test_kaomoji_split_is_deterministic_stratified_and_disjoint():
    pytest.importorskip("kaomoji_dataset")
    from workbench.host.datasets import EMOTIONS, kaomoji_emotions

    a = kaomoji_emotions(120, 60, seed=3)
    b = kaomoji_emotions(120, 60, seed=3)
    assert a["x_train"] == b["x_train"] and a["x_test"] == b["x_test"]
    assert np.array_equal(a["y_train"], b["y_train"]) and np.array_equal(a["y_test"], b["y_test"])
    assert a["classes"] == list(EMOTIONS)
    assert len(a["x_train"]) == len(a["y_train"]) == 120 and len(a["x_test"]) == 60
    assert not set(a["x_train"]) & set(a["x_test"])
    assert len(set(a["x_train"])) == 120
    share = np.array(list(a["pool"].values())) / sum(a["pool"].values())
    for y, size in ((a["y_train"], 120), (a["y_test"], 60)):
        counts = np.bincount(y, minlength=len(EMOTIONS))
        assert counts.sum() == size and np.all(np.abs(counts - size * share) < 1)
    # Interleaved, not sorted by class; another seed draws other texts.
    assert len(set(a["y_train"][:20].tolist())) > 1
    assert kaomoji_emotions(120, 60, seed=4)["x_train"] != a["x_train"]
    with pytest.raises(InputError):
        kaomoji_emotions(10_000, 10_000)
    with pytest.raises(InputError):
        kaomoji_emotions(-1, 10)
