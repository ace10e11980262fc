"""Measure an exported multi-exit net on this machine (Delen's profiling engine) and turn its
operating points into configuration rows the optimiser can choose (one stored model, many
operating points)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..metrics import MULTI_EXIT
from ..power import HOST_CORE
from .policies import ExitProfile, ParetoPolicy
from .runner import SegmentedNet


def measure_exit_profile(net: SegmentedNet, x: np.ndarray, y: np.ndarray, *,
                         flops: Sequence[float], repeats: int = 3, name: str = ""
                         ) -> ExitProfile:
    """Run every sample through every exit (batch 1, ``repeats`` times, the median kept):
    cumulative latency per exit (median over samples), each exit's confidence and correctness
    per sample; energy MODELLED as latency x 5 W per busy core (RAPL is unreadable here)."""
    n = len(x)
    conf = np.empty((n, net.n_exits))
    right = np.empty((n, net.n_exits), bool)
    times = np.empty((n, net.n_exits))
    y = np.asarray(y)
    for i in range(n):
        runs = [net.run_all(x[i:i + 1]) for _ in range(max(1, repeats))]
        probs = runs[0][0]
        times[i] = np.median(np.array([r[1] for r in runs]), axis=0)
        conf[i] = [p.max() for p in probs]
        right[i] = [int(p.argmax()) == int(y[i]) for p in probs]
    lat = np.median(times, axis=0)
    return ExitProfile(flops=np.asarray(flops, float), latency_ms=lat,
                       energy_mj=HOST_CORE.busy_mj(lat, net.threads), confidence=conf,
                       correct=right, source="measured (energy modelled: 5 W per busy core)",
                       name=name)


def operating_points(p: ExitProfile, *, pareto: ParetoPolicy | None = None,
                     max_points: int = 20) -> list[dict[str, Any]]:
    """Every exit (``exit_number == k``) and up to ``max_points`` Pareto threshold vectors as
    operating points: name, criteria, accuracy, latency, energy, FLOPs (means over samples)."""
    rows = []
    for k in range(p.n_exits):
        rows.append({"point": f"exit{k + 1}", "criteria": f"(exit_number == {k + 1})",
                     **_columns(accuracy=p.accuracy[k], latency_ms=p.latency_ms[k],
                                energy_mj=p.energy_mj[k], flops=p.flops[k])})
    if pareto is not None:
        front = pareto.front
        pick = front if len(front) <= max_points else front[
            np.unique(np.linspace(0, len(front) - 1, max_points).round().astype(int))]
        for j, idx in enumerate(pick):
            o = pareto.outcome(p, int(idx))
            ex = o.exits
            rows.append({"point": f"pf{j + 1}", "criteria": str(o.criteria),
                         **_columns(accuracy=o.accuracy, latency_ms=p.latency_ms[ex].mean(),
                                    energy_mj=p.energy_mj[ex].mean(), flops=p.flops[ex].mean())})
    return rows


def _columns(**values: float) -> dict[str, float]:
    """Delen's names and scales -> profile columns (:data:`workbench.metrics.MULTI_EXIT`)."""
    return {MULTI_EXIT[k][0]: float(v) * MULTI_EXIT[k][1] for k, v in values.items()}


def exit_configs(p: ExitProfile, *, task: str, arch: str, processor: str, threads: int,
                 size_mb: float, pareto: ParetoPolicy | None = None, max_points: int = 20,
                 source: str = "measured") -> list[dict[str, Any]]:
    """Configuration rows (profile schema) for every operating point of one stored multi-exit
    model: ``model`` is ``ARCH@POINT`` and ``arch`` the stored model, so storage accounting
    counts the file once (:func:`workbench.bundling.storage`)."""
    out = []
    for r in operating_points(p, pareto=pareto, max_points=max_points):
        out.append({"id": f"{task}:{arch.lower()}@{r['point']}:FP32:{processor}:t{threads}",
                    "task": task, "model": f"{arch}@{r['point']}", "arch": arch,
                    "precision": "FP32", "processor": processor, "threads": threads,
                    "batch": 1, "A": r["A"], "L": r["L"], "E": r["E"], "W": r["W"],
                    "S": size_mb, "TP": 1000.0 / r["L"] if r["L"] > 0 else None,
                    "criteria": r["criteria"], "source": source,
                    "note": f"multi-exit operating point: {r['criteria']}"})
    return out


def folder_size_mb(folder: str | Path, files: Sequence[str]) -> float:
    return sum((Path(folder) / f).stat().st_size for f in files) / 1e6


def model_entry(p: ExitProfile, *, name: str, task: str, arch: str, processor: str,
                threads: int, size_mb: float, folder: str | None = None) -> dict[str, Any]:
    """The profile-schema form of an exit profile (``Profile.multi_exit`` entry); ``folder``:
    where its segments are stored."""
    d = p.to_dict()
    return {"name": name, "task": task, "arch": arch, "processor": processor, "threads": threads,
            "size_mb": round(size_mb, 6), "source": "measured",
            **({"folder": str(folder)} if folder else {}),
            "note": "latency measured with onnxruntime (batch 1, unpinned); energy modelled: "
                    "5 W per busy core",
            "exits": [{k: (min(1.0, v) if k == "confidence_mean" else v) for k, v in e.items()}
                      for e in d["exits"]]}


def multiexit_profile(models: list[dict[str, Any]], *, pareto_points: int = 10,
                      device=None) -> "Any":
    """A measured device profile holding the multi-exit models (``multi_exit``) and every
    operating point of each (exits and Pareto latency-error vectors) as configurations.

    Args:
        models: Dicts with ``profile`` (ExitProfile), ``name``, ``task``, ``arch``, ``size_mb``
            and optionally ``description`` (the task's dataset) and ``folder`` (where its
            segments are stored).
        pareto_points: Pareto threshold vectors kept per model as configurations.
        device: The Device (default: this machine).
    """
    from ..host.profiling import host_device
    from ..profiles import profile_from_dict

    dev = device or host_device()
    cores = list(range(os.cpu_count() or 1))
    processor, threads = f"CPU[{','.join(map(str, cores))}]", 1  # onnxruntime, unpinned
    configs, entries, tasks = [], [], {}
    for m in models:
        p = m["profile"]
        pp = ParetoPolicy.fit(p, metric="latency")
        configs += exit_configs(p, task=m["task"], arch=m["arch"], processor=processor,
                                threads=threads, size_mb=m["size_mb"], pareto=pp,
                                max_points=pareto_points)
        entries.append(model_entry(p, name=m["name"], task=m["task"], arch=m["arch"],
                                   processor=processor, threads=threads, size_mb=m["size_mb"],
                                   folder=m.get("folder")))
        tasks[m["task"]] = {"name": m["task"], "metric": "top1", "higher_is_better": True,
                            "dataset": m.get("description", m["task"]), "batch": 1}
    data = {
        "device": dev.model_dump(mode="json", exclude_none=True), "source": "measured",
        "provenance": {"method": "multi-exit nets trained here (PyTorch), exported per exit to "
                                 "ONNX and measured with onnxruntime (workbench multiexit)",
                       "notes": ["MEASURED here: latency per exit (median over the test set, "
                                 "batch 1)", "E: MODELLED, 5 W per busy core (RAPL unreadable)",
                                 "each configuration is an operating point ARCH@POINT of one "
                                 "stored model: an exit, or a Pareto confidence-threshold "
                                 "vector (its criteria in the note)"]},
        "engines": [{"name": processor, "kind": "CPU", "precisions": ["FP32"],
                     "core_ids": cores}],
        "tasks": list(tasks.values()), "configs": configs, "multi_exit": entries}
    return profile_from_dict(data)


#: The description of a stored multi-exit model, beside its segments.
STORED = "exits.json"


def store_multiexit(folder: str | Path, *, arch: str, task: str, segments: Sequence[str],
                    accuracy: Sequence[float], flops: Sequence[float],
                    input_shape: Sequence[int]) -> Path:
    """Describe the exported segments in ``folder`` (:data:`STORED`): what a bundle needs to
    carry the stored model and run its operating points."""
    from ..fileio import atomic_write_json

    path = Path(folder) / STORED
    atomic_write_json(path, {"arch": arch, "task": task, "segments": list(segments),
                             "accuracy": [float(a) for a in accuracy],
                             "flops": [float(f) for f in flops],
                             "input_shape": [int(d) for d in input_shape]})
    return path


def stored_multiexit(root: str | Path) -> dict[tuple[str, str], Path]:
    """The stored multi-exit models under ``root`` (``<root>/multiexit/<arch>/``), keyed by
    (task, arch)."""
    import json

    out = {}
    for f in sorted(Path(root).glob(f"multiexit/*/{STORED}")):
        try:
            d = json.loads(f.read_text(encoding="utf-8"))
            out[(str(d["task"]), str(d["arch"]))] = f.parent
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a half-written or foreign folder is not a stored model
    return out
