"""Task metrics: what a model's A measures, how it is computed from outputs, and how sure it is.

One home: a metric's name, the label profiles print, its direction, what labels it needs, its
definition (the docs quote it) and its computation live in :data:`TABLE`. Adding a metric is a
row here; the registry, ``models add --metric``, the profile's task description and the docs
read this table. NumPy and the standard library only.

Every score carries its sample count and a 95% interval:

* proportions of samples (``accuracy``, ``top5``, ``agreement``): the Wilson score interval,
  which stays inside [0, 100] and is honest at 0% and 100% (98/100 correct: [93.0, 99.4]);
* everything else (``mae``, ``rmse``, ``cosine``, ``miou``, ``pixel_accuracy``): a percentile
  bootstrap over samples (whole images for the per-pixel metrics: the pixels of one image are
  not independent, so counting them as samples would claim far more certainty than there is),
  2000 resamples with a fixed seed, so the same outputs give the same interval. Below
  :data:`MIN_BOOTSTRAP` samples a bootstrap says little, and no interval is given.

A score is computed from per-sample parts and a combine step (``value = combine(sum of parts)``):
the point estimate sums every sample once, a bootstrap resample sums them with resampled
counts. So an interval costs one matrix product per block of resamples, whatever the metric.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from .errors import InputError

#: The interval's coverage, and its normal quantile (Wilson).
LEVEL = 0.95
Z = 1.959963984540054
#: Bootstrap resamples: the 2.5th and 97.5th percentiles of 2000 resamples move by about 0.1 of
#: the interval's width from one seed to another (checked in tests/test_taskmetrics.py).
BOOTSTRAP_RESAMPLES = 2000
#: Fewer samples than this get no bootstrap interval: a percentile bootstrap of a handful of
#: samples under-covers badly (with 5 samples a "95%" interval covers about 80%).
MIN_BOOTSTRAP = 10
_BLOCK_CELLS = 4_000_000  # resamples x samples per block: bounds the count matrix (32 MB)

Labels = Literal["class", "pixels", "values", "none"]


@dataclass(frozen=True)
class Score:
    """A metric's value on n samples, with its 95% interval (None: too few samples)."""

    value: float
    n: int
    lo: float | None = None
    hi: float | None = None
    interval: str = ""

    @property
    def half_width(self) -> float:
        """Half the interval's width (0 when there is none)."""
        return 0.0 if self.lo is None or self.hi is None else (self.hi - self.lo) / 2


@dataclass(frozen=True)
class TaskMetric:
    """One way of scoring a model on its task.

    Attributes:
        name: What ``models add --metric`` takes.
        label: What a profile's task says A holds (``Task.metric``), as tables print it.
        higher_is_better: Its direction.
        labels: What ``y`` must hold: ``class`` (one class index per sample), ``pixels`` (one
            class index per output pixel, shaped (N, H, W)), ``values`` (the output's shape) or
            ``none`` (compared with the FP32 variant's outputs; no labels needed).
        interval: ``wilson`` or ``bootstrap``.
        definition: What it is, in words (the docs print it).
        parts: Per-sample parts from (predictions, labels or reference).
        combine: The value from the parts' sums (and the sample count).
        percent: The value is a percentage.
    """

    name: str
    label: str
    higher_is_better: bool
    labels: Labels
    interval: Literal["wilson", "bootstrap"]
    definition: str
    parts: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, ...]]
    combine: Callable[[tuple[np.ndarray, ...], float], float]
    percent: bool = True
    #: Its name in an SLO (``max mIoU``, ``min MAE``): A, checked against the task's metric.
    slo: str = ""

    @property
    def relative(self) -> bool:
        """Measured against the FP32 variant's outputs, not labels."""
        return self.labels == "none"

    def score(self, pred: np.ndarray, target: np.ndarray) -> Score:
        """The value on every sample, its sample count and its 95% interval."""
        pred = np.asarray(pred, dtype=np.float64)
        target = np.asarray(target)
        if pred.ndim == 0 or target.ndim == 0 or len(pred) != len(target):
            raise InputError(f"{self.name}: {len(pred) if pred.ndim else 'no'} predictions for "
                             f"{len(target) if target.ndim else 'no'} targets (one per sample)",
                             where="pred")
        parts = self.parts(pred, target)
        n = len(pred)
        value = self.combine(tuple(p.sum(axis=0) for p in parts), n)
        if self.interval == "wilson":
            lo, hi = wilson(value / 100 * n, n)
            return Score(value, n, 100 * lo, 100 * hi, "Wilson 95%")
        if n < MIN_BOOTSTRAP:
            return Score(value, n, None, None, f"none: under {MIN_BOOTSTRAP} samples")
        lo, hi = bootstrap(parts, self.combine, n)
        # Rounding in the resampled sums can put a bound a few ulps past the point estimate.
        lo, hi = min(lo, value), max(hi, value)
        return Score(value, n, lo, hi, f"bootstrap 95% ({BOOTSTRAP_RESAMPLES} resamples)")


def wilson(successes: float, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of a proportion (successes of n), as fractions."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / den
    # At 0 or n successes the bound is exactly 0 or 1 (rounding would leave 3e-16, outside a
    # score of exactly 0 and so outside the interval's own point).
    lo = 0.0 if successes <= 0 else max(0.0, centre - half)
    hi = 1.0 if successes >= n else min(1.0, centre + half)
    return min(lo, p), max(hi, p)


def bootstrap(parts: tuple[np.ndarray, ...], combine, n: int, *,
              resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> tuple[float, float]:
    """The percentile bootstrap interval of ``combine`` over resampled samples."""
    rng = np.random.default_rng(seed)
    flat = [p.reshape(n, -1) for p in parts]
    values = np.empty(resamples)
    block = max(1, _BLOCK_CELLS // max(n, 1))
    for start in range(0, resamples, block):
        b = min(block, resamples - start)
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=b).astype(np.float64)
        sums = [counts @ p for p in flat]
        for k in range(b):
            values[start + k] = combine(tuple(s[k].reshape(p.shape[1:])
                                              for s, p in zip(sums, parts)), n)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(finite, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return float(lo), float(hi)


# --- the metrics' parts ------------------------------------------------------------------------

def _rows(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).reshape(len(a), -1)


def _classes(pred: np.ndarray) -> np.ndarray:
    """Predicted class per sample: argmax of the scores, or a single probability over 0.5."""
    p = _rows(pred)
    return (p[:, 0] > 0.5).astype(np.int64) if p.shape[1] == 1 else np.argmax(p, axis=1)


def _top1(pred, y):
    return ((_classes(pred) == np.asarray(y).reshape(-1).astype(np.int64)).astype(float),)


def _topk(k: int):
    def parts(pred, y):
        p = _rows(pred)
        labels = np.asarray(y).reshape(-1).astype(np.int64)
        kk = min(k, p.shape[1])
        top = np.argpartition(-p, kk - 1, axis=1)[:, :kk]
        return ((top == labels[:, None]).any(axis=1).astype(float),)
    return parts


def _agreement(pred, ref):
    p, r = _rows(pred), _rows(ref)
    if r.shape[1] == 1:  # one value: within 1% of the FP32 outputs' range
        span = float(r.max() - r.min()) or 1.0
        return ((np.abs(p - r)[:, 0] <= 0.01 * span).astype(float),)
    return ((np.argmax(p, axis=1) == np.argmax(r, axis=1)).astype(float),)


def _abs_error(pred, y):
    return (np.abs(_rows(pred) - _rows(y)).mean(axis=1),)


def _sq_error(pred, y):
    return (((_rows(pred) - _rows(y)) ** 2).mean(axis=1),)


def _cosine(pred, ref):
    a, b = _rows(pred), _rows(ref)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return (np.sum(a * b, axis=1) / np.maximum(norms, 1e-12),)


def pixel_classes(pred: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Per-pixel predicted classes shaped like the labels (N, H, W): the argmax over a trailing
    class axis, or a single probability over 0.5."""
    p = np.asarray(pred, dtype=np.float64)
    if p.shape == shape:
        return (p > 0.5).astype(np.int64)
    if p.ndim == len(shape) + 1 and p.shape[:-1] == shape:
        return (p[..., 0] > 0.5).astype(np.int64) if p.shape[-1] == 1 else np.argmax(p, axis=-1)
    raise InputError(f"outputs of shape {p.shape[1:]} do not fit labels of shape {shape[1:]}",
                     where="pred")


def n_pixel_classes(pred_shape: tuple[int, ...], label_shape: tuple[int, ...]) -> int:
    """How many classes a per-pixel output scores (2 for a single probability)."""
    return 2 if tuple(pred_shape) == tuple(label_shape) or pred_shape[-1] == 1 else pred_shape[-1]


def _pixel_accuracy(pred, y):
    y = np.asarray(y).astype(np.int64)
    c = pixel_classes(pred, y.shape)
    per = (c == y).reshape(len(y), -1)
    return per.sum(axis=1).astype(float), np.full(len(y), float(per.shape[1]))


def _ratio(sums, n):
    return 100.0 * float(sums[0] / sums[1]) if sums[1] else float("nan")


def _iou_parts(pred, y):
    y = np.asarray(y).astype(np.int64)
    c = pixel_classes(pred, y.shape)
    k = max(n_pixel_classes(np.shape(pred), y.shape), int(y.max()) + 1 if y.size else 0)
    inter = np.zeros((len(y), k))
    union = np.zeros((len(y), k))
    for cls in range(k):
        p, t = (c == cls).reshape(len(y), -1), (y == cls).reshape(len(y), -1)
        inter[:, cls] = (p & t).sum(axis=1)
        union[:, cls] = (p | t).sum(axis=1)
    return inter, union


def _miou(sums, n):
    inter, union = sums
    present = union > 0  # a class neither predicted nor labelled anywhere does not count
    return 100.0 * float(np.mean(inter[present] / union[present])) if present.any() \
        else float("nan")


def _mean(sums, n):
    return float(sums[0]) / n


def _mean_pct(sums, n):
    return 100.0 * float(sums[0]) / n


def _root_mean(sums, n):
    return math.sqrt(max(float(sums[0]) / n, 0.0))


#: Every task metric, in the order the docs list them.
TABLE: tuple[TaskMetric, ...] = (
    TaskMetric("accuracy", "top1", True, "class", "wilson",
               "top-1 accuracy in %: the share of samples whose highest-scoring output is the "
               "label (a single output is a probability, thresholded at 0.5)", _top1, _mean_pct,
               slo="top1"),
    TaskMetric("top5", "top5", True, "class", "wilson",
               "top-5 accuracy in %: the share of samples whose label is among the five "
               "highest-scoring outputs", _topk(5), _mean_pct, slo="top5"),
    TaskMetric("miou", "mIoU", True, "pixels", "bootstrap",
               "mean intersection over union in %: per class, the pixels predicted and labelled "
               "that class over the pixels either predicted or labelled it, summed over the data "
               "set; averaged over the classes present in the labels or the predictions (labels "
               "(N, H, W) of class indices; "
               "outputs (H, W, C) class scores or (H, W[, 1]) a probability of class 1)",
               _iou_parts, _miou, slo="mIoU"),
    TaskMetric("pixel_accuracy", "pixel accuracy", True, "pixels", "bootstrap",
               "pixel accuracy in %: the share of all labelled pixels predicted as their class "
               "(labels and outputs as for miou; resampled by image)", _pixel_accuracy, _ratio,
               slo="pixelacc"),
    TaskMetric("mae", "MAE", False, "values", "bootstrap",
               "mean absolute error: |output - y| averaged over every value of every sample, in "
               "y's unit (y has the output's shape)", _abs_error, _mean, percent=False,
               slo="MAE"),
    TaskMetric("rmse", "RMSE", False, "values", "bootstrap",
               "root mean squared error: the square root of (output - y)^2 averaged over every "
               "value of every sample, in y's unit", _sq_error, _root_mean, percent=False,
               slo="RMSE"),
    TaskMetric("agreement", "agreement with FP32 (%)", True, "none", "wilson",
               "agreement with the FP32 variant in %: the share of samples whose top-1 equals "
               "the FP32 variant's (for a single output: within 1% of the FP32 outputs' range); "
               "no labels needed", _agreement, _mean_pct, slo="agreement"),
    TaskMetric("cosine", "cosine with FP32", True, "none", "bootstrap",
               "cosine similarity with the FP32 variant's output vectors, averaged over samples "
               "(for embedding models; no labels needed)", _cosine, _mean, percent=False,
               slo="cosine"),
)
BY_NAME: dict[str, TaskMetric] = {m.name: m for m in TABLE}
NAMES: tuple[str, ...] = tuple(BY_NAME)
BY_LABEL: dict[str, TaskMetric] = {m.label: m for m in TABLE}
#: SLO names (lower case) -> metric: ``max mIoU`` is ``max A`` on a task that measures mIoU.
BY_SLO: dict[str, TaskMetric] = {m.slo.lower(): m for m in TABLE} | {
    m.name.lower(): m for m in TABLE}  # `max accuracy` reads as `max top1`, as --metric names it


def of_label(label: str) -> TaskMetric | None:
    """The metric a profile task's label names (cited top-1 is top-1; None: not in the table,
    e.g. a paper's mAP)."""
    if label.startswith("top1 ("):
        return BY_NAME["accuracy"]
    return BY_LABEL.get(label)


class UnknownMetric(InputError, KeyError):
    """A task metric name not in the table (a KeyError too, as a lookup that failed)."""

    __str__ = InputError.__str__  # KeyError would quote the whole message


def get(name: str) -> TaskMetric:
    """The metric called ``name`` (``UnknownMetric`` naming the known ones)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownMetric(f"unknown task metric; known: {', '.join(NAMES)}", where="metric",
                            value=name) from None


def higher_is_better(label: str) -> bool:
    """The direction of a task's metric label (a label not in the table: higher is better)."""
    m = BY_LABEL.get(label)
    return True if m is None else m.higher_is_better


# --- printing ---------------------------------------------------------------------------------

def distinct_digits(values, *, least: int = 3, most: int = 12) -> int:
    """The fewest significant digits (at least ``least``) at which the distinct ``values`` print
    distinctly: cosines of 0.99999871 and 0.99999962 both print "1" at 3 digits."""
    vals = sorted({float(v) for v in values if v is not None and math.isfinite(float(v))})
    for d in range(least, most + 1):
        if len({f"{v:.{d}g}" for v in vals}) == len(vals):
            return d
    return most


def format_values(values, *, least: int = 3) -> list[str]:
    """``values`` printed with the digits that tell them apart (``-`` for None)."""
    d = distinct_digits(values, least=least)
    return ["-" if v is None else f"{float(v):.{d}g}" for v in values]
