"""Deployment bundles as the device reads them: a manifest plus the model files it names.

Standard library only (plus numpy nowhere here): a device reads the manifest, checks each model
file's sha256 and keeps only the designs whose files are intact. A bad manifest is rejected with
the field that is wrong; a bad model file only removes the designs that need it.

Manifest (``manifest.json``)::

    {"format": "workbench-bundle", "version": 1, "solver": "rass", "slo": "...",
     "device": {...}, "tasks": [{"name", "batch", "metric", "higher_is_better"}],
     "models": {"h1/MobileNetV2-1.0/FFX8.tflite": {"sha256": "...", "bytes": 123}},
     "configs": {"<config id>": {"task", "model", "precision", "processor", "cores", "threads",
                                 "xnnpack", "batch", "file", "expected": {"L": ..., "A": ...}}},
     "designs": {"d0": {"configs": [...], "labels": [...], "optimality": ..., "trigger": ...}},
     "triggers": ["CPU[0]", ...], "policy": [{"when": {...}, "design": "d1"}],
     "policy_vector": ["d0", "d1", ...], "fallback": ["d0", "d1", "dw", ...],
     "storage": {...}}
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import processors
from ..errors import InputError

FORMAT = "workbench-bundle"
VERSION = 1
MANIFEST = "manifest.json"


class BundleError(InputError):
    """A bundle that cannot be used at all (bad manifest, no usable design)."""


def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cores_of(processor: str, n_cores: int | None = None) -> tuple[int, ...] | None:
    """The CPU cores a (validated) processor id runs on (``CPU[0,1]`` -> (0, 1); ``CPU`` -> every
    core); None for GPU/NPU/DSP, which this runtime cannot drive."""
    return processors.cores(processor, n_cores)


@dataclass(frozen=True)
class ConfigSpec:
    """One runnable configuration: a model file and how to run it."""

    id: str
    task: str
    model: str
    precision: str
    processor: str
    threads: int
    xnnpack: bool
    batch: int
    file: str
    expected: dict[str, float]

    @property
    def cores(self) -> tuple[int, ...] | None:
        return cores_of(self.processor)


@dataclass(frozen=True)
class DesignSpec:
    role: str
    configs: tuple[str, ...]
    labels: tuple[str, ...]
    optimality: float | None
    trigger: str | None = None


@dataclass
class Bundle:
    """A loaded bundle. ``usable`` holds the roles whose every model file passed its checksum;
    ``problems`` says why each other design was removed."""

    root: Path
    manifest: dict[str, Any]
    tasks: list[dict[str, Any]]
    configs: dict[str, ConfigSpec]
    designs: dict[str, DesignSpec]
    triggers: list[str]
    policy_vector: list[str | None]
    fallback: list[str]
    bad_files: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)

    @property
    def task_names(self) -> list[str]:
        return [t["name"] for t in self.tasks]

    @property
    def usable(self) -> list[str]:
        return [r for r in self.designs if r not in self.problems]

    def path_of(self, config_id: str) -> Path:
        return self.root / self.configs[config_id].file

    def remove(self, role: str, reason: str) -> None:
        """Take a design out of service (e.g. its model failed to load)."""
        self.problems.setdefault(role, reason)

    def remove_config(self, config_id: str, reason: str) -> list[str]:
        """Take every design using a configuration out of service; returns their roles."""
        hit = [r for r, d in self.designs.items() if config_id in d.configs]
        for r in hit:
            self.remove(r, reason)
        return hit


def _need(obj: dict, key: str, kind: type | tuple[type, ...], file: Path, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise BundleError(f"missing field '{key}'", file=file, where=where or None)
    v = obj[key]
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        name = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise BundleError(f"field must be {name}", file=file,
                          where=f"{where}.{key}" if where else key, value=v)
    return v


def load_bundle(root: str | os.PathLike, *, verify: bool = True) -> Bundle:
    """Read and check a bundle folder.

    Args:
        root: The bundle folder (holding ``manifest.json``).
        verify: Check every model file's sha256 (a missing, truncated or altered file removes the
            designs that need it, with the reason in ``Bundle.problems``).

    Raises:
        BundleError: The manifest is missing, not JSON, of another format, or inconsistent
            (names the field); or no design is usable.
    """
    root = Path(root)
    mpath = root / MANIFEST
    if not mpath.is_file():
        raise BundleError("not a bundle: no manifest.json", file=root)
    try:
        m = json.loads(mpath.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BundleError(f"not valid JSON: {e.msg}", file=mpath, where=f"line {e.lineno}") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise BundleError(f"not a {FORMAT} manifest", file=mpath, where="format",
                          value=m.get("format") if isinstance(m, dict) else type(m).__name__)
    if m.get("version") != VERSION:
        raise BundleError(f"unsupported bundle version (this runtime reads {VERSION})", file=mpath,
                          where="version", value=m.get("version"))
    tasks = _need(m, "tasks", list, mpath, "")
    for i, t in enumerate(tasks):
        _need(t, "name", str, mpath, f"tasks[{i}]")
        _need(t, "batch", int, mpath, f"tasks[{i}]")
    names = [t["name"] for t in tasks]
    models = _need(m, "models", dict, mpath, "")
    for f, info in models.items():
        _need(info, "sha256", str, mpath, f"models[{f!r}]")
    configs: dict[str, ConfigSpec] = {}
    for cid, c in _need(m, "configs", dict, mpath, "").items():
        w = f"configs[{cid!r}]"
        spec = ConfigSpec(
            id=cid, task=_need(c, "task", str, mpath, w), model=_need(c, "model", str, mpath, w),
            precision=_need(c, "precision", str, mpath, w),
            processor=_need(c, "processor", str, mpath, w),
            threads=_need(c, "threads", int, mpath, w), xnnpack=_need(c, "xnnpack", bool, mpath, w),
            batch=_need(c, "batch", int, mpath, w), file=_need(c, "file", str, mpath, w),
            expected={k: float(v) for k, v in c.get("expected", {}).items() if v is not None})
        if spec.task not in names:
            raise BundleError("unknown task", file=mpath, where=f"{w}.task", value=spec.task)
        if spec.file not in models:
            raise BundleError("model file not listed under 'models'", file=mpath,
                              where=f"{w}.file", value=spec.file)
        if spec.threads < 1 or spec.batch < 1:
            raise BundleError("threads and batch must be >= 1", file=mpath, where=w,
                              value=(spec.threads, spec.batch))
        if not processors.is_processor(spec.processor):
            raise BundleError("not a processor id such as CPU, CPU[0,1] or GPU", file=mpath,
                              where=f"{w}.processor", value=spec.processor)
        if Path(spec.file).is_absolute() or ".." in Path(spec.file).parts:
            raise BundleError("model paths must stay inside the bundle", file=mpath,
                              where=f"{w}.file", value=spec.file)
        configs[cid] = spec
    designs: dict[str, DesignSpec] = {}
    for role, d in _need(m, "designs", dict, mpath, "").items():
        w = f"designs[{role!r}]"
        ids = _need(d, "configs", list, mpath, w)
        if len(ids) != len(names):
            raise BundleError(f"needs one configuration per task ({len(names)})", file=mpath,
                              where=f"{w}.configs", value=ids)
        for k, cid in enumerate(ids):
            if cid not in configs:
                raise BundleError("unknown configuration", file=mpath,
                                  where=f"{w}.configs[{k}]", value=cid)
            if configs[cid].task != names[k]:
                raise BundleError(f"configuration is not for task {names[k]}", file=mpath,
                                  where=f"{w}.configs[{k}]", value=cid)
        designs[role] = DesignSpec(role, tuple(ids), tuple(d.get("labels", ids)),
                                   d.get("optimality"), d.get("trigger"))
    if not designs:
        raise BundleError("the bundle has no designs", file=mpath, where="designs")
    triggers = _need(m, "triggers", list, mpath, "")
    vector = _need(m, "policy_vector", list, mpath, "")
    if len(vector) != 1 << (len(triggers) + 1):
        raise BundleError(f"needs 2^(triggers+1) = {1 << (len(triggers) + 1)} entries",
                          file=mpath, where="policy_vector", value=len(vector))
    for k, role in enumerate(vector):
        if role is not None and role not in designs:
            raise BundleError("unknown design", file=mpath, where=f"policy_vector[{k}]", value=role)
    fallback = [r for r in m.get("fallback", list(designs)) if r in designs]
    fallback += [r for r in designs if r not in fallback]
    b = Bundle(root, m, tasks, configs, designs, [str(t) for t in triggers], vector, fallback)
    if verify:
        for f, info in models.items():
            p = root / f
            if not p.is_file():
                b.bad_files[f] = "missing"
            elif sha256_of(p) != info["sha256"]:
                b.bad_files[f] = "checksum mismatch"
        for cid, c in configs.items():
            if c.file in b.bad_files:
                b.remove_config(cid, f"{c.file}: {b.bad_files[c.file]}")
    for role, d in designs.items():
        for cid in d.configs:
            if cores_of(configs[cid].processor) is None:
                b.remove(role, f"{configs[cid].processor} cannot be driven by this runtime")
    if not b.usable:
        why = "; ".join(f"{r}: {p}" for r, p in b.problems.items())
        raise BundleError(f"no usable design ({why})", file=root)
    return b
