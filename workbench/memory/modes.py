"""Memory modes as profile rows: a model's configuration run in bulk, MASA-streamed, or
FlexNN-planned at a budget, each with its measured latency and memory footprint (MF).

The rows copy the base configuration's accuracy (the layer executor's output equals the model's:
tested) and say how they were made in ``memory_mode``, ``memory_budget_mb`` and ``note``. Adding
them to a profile lets RASS's memory design d_m (argmin MF) keep an accurate model under a
memory issue instead of falling back to a smaller one.

The streamed and planned rows are measured running the layer programs a bundle carries
(:mod:`workbench.memory.programs`) with the device runtime's own runners (one compute thread and
a loader thread, :mod:`workbench.runtime.programs`): what ``workbench run`` deploys is what was
measured. Bulk rows run the layer graph with every weight resident.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..memorymodes import MEMORY_MODES
from ..runtime.programs import open_program
from ..timing import samples_ms
from . import flexnn as F
from .graph import LayerGraph
from .programs import program_for, stream_min_budget, write_weight_files


def _median_ms(fn, x, reps: int) -> tuple[float, list[float]]:
    ts = samples_ms(fn, x, runs=reps, warmup=1)
    return statistics.median(ts), ts


def _run_program(graph: LayerGraph, prog, folder: Path, x, ref, reps: int):
    """Median latency and samples of ``prog`` run by the runtime's runner (its output checked
    against the bulk reference first), and the closed runner."""
    write_weight_files(graph, prog, folder)
    runner = open_program(prog, folder)
    try:
        np.testing.assert_allclose(runner.run(x), ref, atol=1e-4, rtol=1e-3)
        L, s = _median_ms(runner.run, x, reps)
    finally:
        runner.close()
    return L, s, runner


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
        # MASA's schedule of one network, tight: stream rather than hold everything.
        need = stream_min_budget(graph)
        b_mb = math.ceil(need * 1.1 / 1e3) / 1e3
        L, s, runner = _run_program(graph, program_for(graph, "streamed", b_mb),
                                    root / "streamed", x, ref, reps)
        row("streamed", "CPU[0,1]", L, s, runner.peak_bytes / 1e6,
            f"MASA's schedule of one network at a {b_mb:g} MB budget: a loader thread reads "
            "layer weights ahead of the computation as far as the budget allows, each freed "
            "after its layer; MF = peak bytes held", b_mb)
        for b_mb in budgets_mb:
            prog = program_for(graph, "planned", b_mb)
            L, s, _ = _run_program(graph, prog, root / "flexnn", x, ref, reps)
            streamed = sum(t.size for t in prog.tensors if t.kind == "weight" and not t.pinned)
            row("planned", "CPU[0,1]", L, s, prog.buffer_bytes / 1e6,
                f"FlexNN: {len(prog.steps)} steps, {streamed / 1e6:.2f} MB streamed per "
                "inference by a loader thread; MF = the planned buffer", b_mb)
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
            for m in MEMORY_MODES:
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


def graph_of(name: str, *, train: bool = False) -> LayerGraph:
    """A zoo model name, a model registered with ``workbench models add`` (Keras), or a Keras
    file, as a layer graph.

    Raises:
        InputError: no such file or model, not a Keras model, or not trained yet.
    """
    path = Path(name).expanduser()
    if path.suffix in (".keras", ".h5") or path.is_file():
        if not path.is_file():
            raise InputError("no such Keras file", file=path)
        return _keras_graph(path)
    from ..host import registry

    source = registry.keras_source(name)
    if source is not None:  # read as the registry reads it: safe mode, its custom objects
        return _keras_graph(*source)
    return zoo_graph(name, train=train)


def _keras_graph(path: Path, custom: Path | None = None) -> LayerGraph:
    from ..host.intake import load_keras
    from .graph import from_keras

    return from_keras(load_keras(path, custom), name=path.stem)
