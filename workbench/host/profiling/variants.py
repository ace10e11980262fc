"""What is profiled: model variants (the zoo's, or the registry's) with A and its interval, and
each task's sample inputs and metric."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from .. import datasets as ds


@dataclass(frozen=True)
class Variant:
    task: str
    model: str
    arch: str
    precision: str
    path: Path
    sha256: str
    size_mb: float
    params: int
    flops: int
    metric: float | None
    #: A's sample count and 95% interval, where known.
    metric_n: int | None = None
    metric_lo: float | None = None
    metric_hi: float | None = None


def zoo_variants(root: Path, tasks: Iterable[str] | None = None) -> list[Variant]:
    """Every available quantised variant the zoo holds (record.json + variants.json)."""
    out = []
    for rec_path in sorted(Path(root).glob("*/*/record.json")):
        rec = json.loads(rec_path.read_text())
        if tasks and rec["task"] not in tasks:
            continue
        for v in rec.get("variants", []):
            if v.get("available"):
                out.append(Variant(rec["task"], rec["model"], rec["arch"], v["precision"],
                                   rec_path.parent / v["file"], v["sha256"], v["size_mb"],
                                   v["params"], v["flops"], v["test_metric"]))
    return out


def with_interval(v: Variant, n: int, label: str) -> Variant:
    """A zoo variant with A's sample count and, for a proportion (top-1), its Wilson interval:
    the zoo's records keep the test accuracy, and the test set's size gives n. Other metrics
    need per-sample errors the record does not keep: their A has n but no interval."""
    from dataclasses import replace

    from ... import taskmetrics

    if v.metric is None or v.metric_n is not None or n < 1:
        return v
    m = taskmetrics.BY_LABEL.get(label)
    if m is None or m.interval != "wilson":
        return replace(v, metric_n=n)
    lo, hi = taskmetrics.wilson(round(v.metric / 100 * n), n)
    return replace(v, metric_n=n, metric_lo=min(100 * lo, v.metric),
                   metric_hi=max(100 * hi, v.metric))


@dataclass(frozen=True)
class TaskInputs:
    """What profiling needs of a task: sample inputs (None: zeros) and how A is read."""

    task: str
    x: np.ndarray | None
    batch: int
    metric: str
    higher_is_better: bool
    description: str
    #: Per-model sample inputs where a task's models take different shapes (EfficientNet-Lite0/1/2
    #: at 224/240/260); a model not listed takes ``x``.
    x_of: dict[str, np.ndarray] = field(default_factory=dict)

    def sample(self, model: str) -> np.ndarray | None:
        return self.x_of.get(model, self.x)

    @classmethod
    def of(cls, d: ds.Dataset) -> "TaskInputs":
        return cls(d.task, d.x_test[:d.batch], d.batch, d.metric, d.higher_is_better,
                   d.description)
