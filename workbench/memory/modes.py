"""Memory modes as profile rows: a model's configuration run in bulk, MASA-streamed, or
FlexNN-planned at a budget, each with its measured latency and memory footprint (MF).

The rows copy the base configuration's accuracy (the layer executor's output equals the model's:
tested) and say how they were made in ``memory_mode``, ``memory_budget_mb`` and ``note``. Adding
them to a profile lets RASS's memory design d_m (argmin MF) keep an accurate model under a
memory issue instead of falling back to a smaller one.

They run on the NumPy layer executor of :mod:`workbench.memory` (one compute thread; FlexNN adds
a loader thread), not on LiteRT: ``workbench.runtime`` cannot deploy them yet.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..timing import samples_ms
from . import flexnn as F
from . import masa as M
from .graph import LayerGraph


def _median_ms(fn, x, reps: int) -> tuple[float, list[float]]:
    ts = samples_ms(fn, x, runs=reps, warmup=1)
    return statistics.median(ts), ts


def memory_mode_rows(graph: LayerGraph, base: dict, *, root: str | Path,
                     budgets_mb: list[float] | None = None, reps: int = 20) -> list[dict]:
    """Measured rows of ``base`` (a profile configuration as a dict) in every memory mode.

    Args:
        graph: the layer graph of ``base``'s model.
        budgets_mb: FlexNN budgets (default: 10%, 25% and 50% of bulk peak memory, each at least
            the minimum feasible budget). A budget below the minimum raises CannotFit.
    """
    from threadpoolctl import threadpool_limits

    root = Path(root)
    x = np.random.default_rng(0).normal(size=(1,) + tuple(graph.input_shape)).astype(np.float32)
    ref = graph.run(x)
    bulk_b = graph.bulk_peak_bytes()
    if budgets_mb is None:
        mb = F.min_budget(graph)
        budgets_mb = sorted({round(max(mb, bulk_b * f) / 1e6, 3) for f in (0.1, 0.25, 0.5)})
    keep = {k: base[k] for k in ("task", "model", "arch", "precision", "A", "S", "params", "W")
            if base.get(k) is not None}
    rows = []

    def row(mode, proc, L, samples, mf, note, budget=None):
        r = dict(keep, id=f"{base['id']}:mem-{mode}" + (f"@{budget:g}MB" if budget else ""),
                 processor=proc, threads=1, memory_mode=mode, L=L,
                 L_std=statistics.pstdev(samples), L_min=min(samples), L_max=max(samples),
                 TP=1e3 / L, MF=mf, source="measured", note=note)
        if budget:
            r["memory_budget_mb"] = budget
        rows.append(r)

    with threadpool_limits(1):
        L, s = _median_ms(graph.run, x, reps)
        row("bulk", "CPU[0]", L, s, bulk_b / 1e6,
            "NumPy layer executor, every weight resident; MF = weights + peak activations and "
            "intermediates")
        # MASA streaming of one network: per-layer load/execute tasks on 2 workers.
        prof = M.profile_network(graph, root / "masa", repeats=3, sample_rss=False)
        budget = int(prof.layer_peak_bytes * 1.1)  # tight: stream rather than hold everything
        job = [M.Job(0, 0.0, [graph.name])]
        ts, peak = [], 0
        for _ in range(max(3, reps // 4)):
            r = M.run_real({graph.name: graph}, {graph.name: root / "masa"}, job, policy="masa",
                           budget=budget, workers=2, nets={graph.name: prof}, x=x)
            np.testing.assert_allclose(r.jobs[0].outputs[0], ref, atol=1e-4, rtol=1e-3)
            ts.append(r.makespan * 1e3)
            peak = max(peak, r.peak_bytes)
        row("streamed", "CPU[0,1]", statistics.median(ts), ts, peak / 1e6,
            f"MASA: per-layer load/execute tasks on 2 workers at a {budget / 1e6:.2f} MB budget; "
            "MF = peak bytes held", round(budget / 1e6, 3))
        for b_mb in budgets_mb:
            b = int(b_mb * 1e6)
            p = F.plan(F.slice_graph(graph, b), b)
            runner = F.FlexRunner(p, root / "flexnn")
            try:
                np.testing.assert_allclose(runner.run(x), ref, atol=1e-4, rtol=1e-3)
                L, s = _median_ms(runner.run, x, reps)
            finally:
                runner.close()
            row("planned", "CPU[0,1]", L, s, p.buffer_bytes / 1e6,
                f"FlexNN: {len(p.slicing.steps)} steps, {p.streamed_bytes / 1e6:.2f} MB streamed "
                "per inference by a loader thread; MF = the planned buffer", b_mb)
    return rows


def add_memory_modes(profile, graphs: dict[str, LayerGraph], *, task: str, root: str | Path,
                     budgets_mb: list[float] | None = None, reps: int = 20, progress=None):
    """A copy of ``profile`` with memory-mode rows for each model in ``graphs`` (keyed by the
    profile's model name), based on the model's fastest single-thread FP32 CPU row of ``task``.
    """
    from ..profiles import profile_from_dict

    data = profile.model_dump(mode="json", exclude_none=True)
    configs = data["configs"]
    for model, graph in graphs.items():
        base = [c for c in configs if c["task"] == task and c["model"] == model
                and c["precision"] == "FP32" and c.get("memory_mode") is None
                and c["processor"].startswith("CPU")]
        if not base:
            raise InputError(f"no FP32 CPU configuration of {model} for task {task}",
                             where="configs", value=model)
        b = min(base, key=lambda c: c.get("L") or float("inf"))
        if progress:
            progress(model)
        configs.extend(memory_mode_rows(graph, b, root=Path(root) / model,
                                        budgets_mb=budgets_mb, reps=reps))
    engines = {e["name"] for e in data["engines"]}
    for e in data["engines"]:
        if e["name"] in ("CPU[0]", "CPU[0,1]"):
            modes = e.setdefault("options", {}).setdefault("memory_modes", [])
            for m in ("bulk", "streamed", "planned"):
                if m not in modes:
                    modes.append(m)
    if not {"CPU[0]", "CPU[0,1]"} <= engines:
        raise InputError("the profile needs CPU[0] and CPU[0,1] engines for memory-mode rows",
                         where="engines")
    data["provenance"].setdefault("notes", []).append(
        f"memory-mode rows (memory_mode bulk/streamed/planned) added for task {task} by "
        "workbench.memory.modes: NumPy layer executor, measured")
    return profile_from_dict(data)


def zoo_graph(name: str, *, train: bool = False) -> LayerGraph:
    """The layer graph of a trained zoo model by name (e.g. ``VGG-FC`` or ``AlexNet-FC``).

    Args:
        train: Train a memory-study model (``zoo.MEMORY_SPECS``) that is not in the zoo yet
            (a few seconds to a minute) instead of refusing.

    Raises:
        InputError: Unknown model, or not trained (says how to train it).
    """
    from ..host import zoo
    from .graph import from_keras

    known = zoo.SPECS + zoo.MEMORY_SPECS
    specs = [s for s in known if s.model == name]
    if not specs:
        names = sorted({s.model for s in known if s.task in ("h1", "h3-vision")})
        raise InputError(f"unknown model; try one of: {', '.join(names)}", value=name)
    spec = specs[0]
    if zoo.record(spec) is None:
        if train and spec in zoo.MEMORY_SPECS:
            zoo.train(spec)
        elif spec in zoo.MEMORY_SPECS:
            raise InputError("not trained yet: add --train to train it now",
                             file=zoo.model_dir(spec), value=name)
        else:
            raise InputError("not trained yet: run `workbench zoo build`",
                             file=zoo.model_dir(spec), value=name)
    return from_keras(zoo.load_model(spec), name=name)
