"""The registered models as profiling inputs: their variants and each task's inputs, refused when
models of one task measure A differently."""

from __future__ import annotations

from typing import Iterable

from ... import metrics
from ...errors import InputError
from .entries import get, model_dir
from .measuring import _arrays


def profiling_inputs(names: Iterable[str]):
    """The registered models' variants and per-task inputs, ready for
    :func:`workbench.host.profiling.profile_variants`.

    Raises:
        InputError: An unknown name, a model with no converted variant, or two models of one task
            that measure A differently (they would not be comparable).
    """
    from ..profiling import TaskInputs, Variant

    variants: list[Variant] = []
    inputs: dict[str, TaskInputs] = {}
    metric_of: dict[str, str] = {}
    data_of: dict[str, tuple[str, tuple[str | None, str]]] = {}
    for name in dict.fromkeys(names):
        rec = get(name)
        label = metrics.CITED_TOP1 if (rec.cited or rec.citation) else rec.metric_label
        if label != metric_of.setdefault(rec.task, label):
            raise InputError(f"task {rec.task!r} mixes metrics ({metric_of[rec.task]} and "
                             f"{label}): register comparable models under one task",
                             where="models", value=name)
        # A on other samples is another number: models of one task share their data.
        data = (rec.data.sha256, rec.data.source) if rec.data else (None, "generated inputs")
        first = data_of.setdefault(rec.task, (name, data))
        if first[1][0] != data[0] and not (rec.cited or rec.citation):
            raise InputError(f"task {rec.task!r} mixes evaluation data ({first[0]} on "
                             f"{first[1][1]}, {name} on {data[1]}): their A would not be "
                             "comparable; register them under different tasks or with the "
                             "same data file", where="models", value=name)
        avail = [v for v in rec.variants if v.available]
        if not avail:
            raise InputError(f"{name} has no converted variant: run `workbench quantise {name}`",
                             where="models", value=name)
        for v in avail:
            variants.append(Variant(rec.task, rec.name, rec.arch, v.precision,
                                    model_dir(name) / (v.file or ""), v.sha256 or "",
                                    v.size_mb or 0.0, v.params or 0, v.flops or 0, rec.a_of(v),
                                    *rec.confidence_of(v)))
        x = _arrays(model_dir(name), rec)["x"][:1].astype(rec.input_dtype)
        if rec.task not in inputs:
            inputs[rec.task] = TaskInputs(rec.task, x, 1, label, rec.higher_is_better,
                                          rec.evaluation)
        inputs[rec.task].x_of[rec.name] = x  # models of one task may take different shapes
    return variants, inputs
