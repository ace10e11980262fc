"""Task metrics (workbench.taskmetrics): each metric's value on hand-computed cases, its interval
(Wilson's published values, bootstrap coverage and seed stability), the data checks that pick a
metric from the labels, and printing that tells close values apart."""

import numpy as np
import pytest

from workbench import taskmetrics as tm
from workbench.errors import InputError
from workbench.host.intake import check_data


def test_wilson_matches_published_values():
    # Newcombe (1998), Table I: 81/263 -> 0.2553..0.3662; and 98/100 -> 0.9300..0.9945.
    assert tm.wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=1e-4)
    assert tm.wilson(98, 100) == pytest.approx((0.9300, 0.9945), abs=1e-4)
    lo, hi = tm.wilson(0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.1611, abs=1e-4)  # never a zero-width interval


def test_accuracy_carries_n_and_its_wilson_interval():
    y = np.arange(100) % 10
    pred = np.eye(10)[y]
    pred[:2] = np.eye(10)[(y[:2] + 1) % 10]
    s = tm.get("accuracy").score(pred, y)
    assert (s.value, s.n) == (98.0, 100)
    assert (s.lo, s.hi) == pytest.approx((93.00, 99.45), abs=0.01)
    assert s.lo < s.value < s.hi


def test_top5_counts_a_label_among_the_five_best():
    scores = np.tile(np.arange(10.0), (3, 1))  # class 9 best, then 8, 7, 6, 5
    s = tm.get("top5").score(scores, np.array([5, 9, 4]))
    assert s.value == pytest.approx(200 / 3)


def test_miou_and_pixel_accuracy_on_a_hand_computed_case():
    y = np.zeros((1, 2, 2), int)
    y[0, 0, 0] = 1  # one pixel of class 1
    pred = np.zeros((1, 2, 2, 2))
    pred[0, :, :, 0] = 1
    pred[0, 0, :, 1] = 2  # the top row predicted class 1
    # class 0: intersection 2 (bottom row), union 3; class 1: intersection 1, union 2
    assert tm.get("miou").score(pred, y).value == pytest.approx(100 * (2 / 3 + 1 / 2) / 2)
    assert tm.get("pixel_accuracy").score(pred, y).value == pytest.approx(75.0)
    # A single probability per pixel is class 1 over 0.5.
    prob = np.array([[[0.9, 0.2], [0.1, 0.4]]])
    assert tm.get("pixel_accuracy").score(prob, y).value == pytest.approx(100.0)


def test_per_pixel_metrics_count_images_not_pixels():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, (30, 32, 32))
    pred = np.eye(3)[np.where(rng.random(y.shape) < 0.8, y, (y + 1) % 3)]
    s = tm.get("pixel_accuracy").score(pred, y)
    assert s.n == 30  # 30 images, not 30720 pixels
    assert s.lo < s.value < s.hi


def test_regression_metrics():
    y = np.array([[1.0], [2.0], [3.0], [4.0]] * 5)
    pred = y + np.array([[1.0], [-1.0], [2.0], [0.0]] * 5)
    assert tm.get("mae").score(pred, y).value == pytest.approx(1.0)
    assert tm.get("rmse").score(pred, y).value == pytest.approx(np.sqrt(6 / 4))
    assert not tm.get("mae").higher_is_better and not tm.get("rmse").higher_is_better


def test_bootstrap_interval_covers_the_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(1)
    hits = 0
    trials = 100
    for _ in range(trials):
        err = rng.exponential(1.0, size=(60, 1))  # skewed: the true mean is 1
        s = tm.get("mae").score(err, np.zeros_like(err))
        hits += s.lo <= 1.0 <= s.hi
    assert 85 <= hits <= 100


def test_bootstrap_bounds_are_stable_across_seeds():
    rng = np.random.default_rng(2)
    err = rng.normal(size=200)
    parts = (np.abs(err),)
    combine = lambda sums, n: float(sums[0]) / n  # noqa: E731
    bounds = np.array([tm.bootstrap(parts, combine, 200, seed=s) for s in range(5)])
    width = np.mean(bounds[:, 1] - bounds[:, 0])
    assert np.ptp(bounds, axis=0).max() < 0.15 * width


def test_too_few_samples_give_no_bootstrap_interval():
    s = tm.get("mae").score(np.ones((4, 1)), np.zeros((4, 1)))
    assert s.lo is None and s.hi is None and s.n == 4 and "under 10" in s.interval


def test_close_values_print_with_the_digits_that_differ():
    assert tm.format_values([0.99999871, 0.99999962, 1.0]) == ["0.9999987", "0.9999996", "1"]
    assert tm.format_values([97.5, 98.25]) == ["97.5", "98.2"]
    assert tm.distinct_digits([1.0, 1.0]) == 3  # equal values need no extra digits


def test_every_metric_is_documented():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "metrics.md").read_text()
    for m in tm.TABLE:
        assert f"`{m.name}`" in doc and m.definition in " ".join(doc.split()), m.name


def _check(tmp_path, y, out_shape, metric=None, x_shape=(4,)):
    x = np.zeros((len(y), *x_shape), np.float32)
    return check_data(tmp_path / "d.npz", {"x": x, "y": y}, input_shape=x_shape,
                      input_dtype="float32", output_shape=list(out_shape), metric=metric)


def test_the_labels_pick_the_metric(tmp_path):
    assert _check(tmp_path, np.arange(6) % 3, (3,)) == "accuracy"
    assert _check(tmp_path, np.zeros((6, 8, 8), int), (8, 8, 2)) == "miou"
    assert _check(tmp_path, np.zeros((6, 8, 8), int), (8, 8, 1)) == "miou"
    assert _check(tmp_path, np.linspace(0, 1, 6)[:, None], (1,)) == "mae"
    assert _check(tmp_path, np.linspace(0, 1, 6)[:, None], (1,), "rmse") == "rmse"


@pytest.mark.parametrize("y, out_shape, metric, words", [
    (np.arange(6) % 3, (3,), "top5", "top5 needs more than 5 class outputs"),
    (np.full((6, 8, 8), 2), (8, 8, 2), "miou", "class indices 0..1"),
    (np.zeros((6, 4, 4), int), (8, 8, 2), "miou", "y shaped (N, H, W)"),
    (np.zeros((6, 2)), (3,), "mae", "needs 3 target value(s)"),
    (np.zeros((6, 2)), (3,), "accuracy", "one integer class index per sample"),
    # Integer (N, H, W) labels of the wrong size: a segmentation mistake, not regression.
    (np.zeros((6, 4, 4), int), (8, 8, 4), None, "miou needs one integer class index per output"),
    (np.array([0, 1, 7, 9, 1, 8]), (2,), None, "3 of 6 are not (first 7, range 0..9)"),
])
def test_labels_that_do_not_fit_the_metric_are_one_line(tmp_path, y, out_shape, metric, words):
    with pytest.raises(InputError) as e:
        _check(tmp_path, y, out_shape, metric)
    assert words in str(e.value) and "d.npz" in str(e.value)
    assert "\n" not in str(e.value)


def test_the_docs_example_runs_and_prints_what_it_says(capsys):
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "metrics.md").read_text()
    code = re.search(r"```python\n(.*?)```", doc, re.S).group(1)
    exec(compile(code, "docs/metrics.md", "exec"), {})
    said = re.search(r"print\(.*\)\s+# (.*)", code).group(1)
    assert capsys.readouterr().out.strip() == said


def test_wilson_bounds_are_exact_at_none_and_all():
    # Rounding once left 3.5e-16 as the low bound of 0/100, outside a score of exactly 0: the
    # profile refused the row it was written into.
    assert tm.wilson(0, 100)[0] == 0.0 and tm.wilson(100, 100)[1] == 1.0
    s = tm.get("accuracy").score(np.eye(3)[np.zeros(50, int)], np.ones(50, int))
    assert s.value == 0 and s.lo == 0 and s.hi > 0


@pytest.mark.parametrize("name, pred, y", [
    ("accuracy", np.zeros((3, 4)), np.zeros(2, int)),       # 3 predictions, 2 labels
    ("mae", np.zeros(3), np.zeros(2)),
    ("miou", np.zeros((2, 4, 4, 3)), np.zeros((2, 5, 5), int)),  # outputs do not fit the labels
])
def test_scoring_outputs_that_do_not_fit_the_targets_is_one_input_error(name, pred, y):
    from workbench.errors import InputError

    with pytest.raises(InputError):
        tm.get(name).score(pred, y)
