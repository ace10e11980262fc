"""Deployment bundles as the device reads them: a manifest plus the model files it names.

Standard library only (plus numpy nowhere here): a device reads the manifest, checks each model
file's sha256 and keeps only the designs whose files are intact. A bad manifest is rejected with
the field that is wrong; a bad model file only removes the designs that need it.

Manifest (``manifest.json``)::

    {"format": "workbench-bundle", "version": 1, "solver": "rass", "slo": "...",
     "device": {...}, "tasks": [{"name", "batch", "metric", "higher_is_better"}],
     "models": {"h1/MobileNetV2-1.0/FFX8.tflite": {"sha256": "...", "bytes": 123}},
     "configs": {"<config id>": {"task", "model", "precision", "processor", "cores", "threads",
                                 "xnnpack", "batch", "file", "expected": {"L": ..., "A": ...},
                                 "memory": {"mode": "planned", "budget_mb": 1.5,
                                            "weights": ["models/.../conv1.0-32.bin", ...]}}},
     "designs": {"d0": {"configs": [...], "labels": [...], "optimality": ..., "trigger": ...}},
     "triggers": ["CPU[0]", ...], "policy": [{"when": {...}, "design": "d1"}],
     "policy_vector": ["d0", "d1", ...], "fallback": ["d0", "d1", "dw", ...],
     "storage": {...}}
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import processors
from ..errors import InputError, WorkbenchError
from ..fileio import parse_json, read_text
from ..memorymodes import PROGRAM_MODES
from ..metrics import COLUMNS

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


#: The largest model file a bundle may hold (LiteRT's flatbuffers stop at 2 GiB).
MAX_MODEL_BYTES = 2 << 30


class ModelFault(WorkbenchError, RuntimeError):
    """A model file that cannot be served: missing, not a regular file, or not the bytes the
    manifest's sha256 names. ``reason`` is that without the file name."""

    def __init__(self, path: Path, reason: str) -> None:
        self.reason = reason
        super().__init__(f"{path.name}: {reason}")


def inside(root: Path, rel: str, *, file: Path, where: str) -> None:
    """Check that ``root / rel`` stays inside the bundle, else a BundleError naming the field.

    Refused: absolute paths, ``..`` parts, and any path whose real location (symlinks of the
    file or of a folder on the way resolved) is outside ``root``. Nothing is opened or hashed."""
    rp = Path(rel)
    if not rel or rp.is_absolute() or ".." in rp.parts or "\0" in rel:
        raise BundleError("model paths must stay inside the bundle", file=file, where=where,
                          value=rel)
    base = root.resolve()
    target = (root / rp).resolve()
    if target != base and base not in target.parents:
        raise BundleError("model path resolves outside the bundle (a symlink?)", file=file,
                          where=where, value=rel)


def read_verified(path: Path, sha256: str, *, limit: int = MAX_MODEL_BYTES) -> bytes:
    """A model file's bytes, read once and checked against ``sha256``: the runtime runs from this
    buffer, so a file truncated, rewritten or swapped later cannot change what is served (LiteRT
    maps a file it opens by path: a truncated mapped file is a SIGBUS)."""
    if not path.exists():
        raise ModelFault(path, "missing")
    if not path.is_file():
        raise ModelFault(path, "not a regular file")
    try:
        # O_NONBLOCK: a FIFO swapped in after the check must not hang the runtime.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ModelFault(path, "not a regular file")
            if st.st_size > limit:
                raise ModelFault(path, f"larger than {limit} bytes")
            blob = fh.read(limit + 1)
    except OSError as e:
        raise ModelFault(path, f"unreadable ({e.strerror or e})") from None
    if len(blob) > limit:
        raise ModelFault(path, f"larger than {limit} bytes")
    if hashlib.sha256(blob).hexdigest() != sha256:
        raise ModelFault(path, "checksum mismatch")
    return blob


def cores_of(processor: str, n_cores: int | None = None) -> tuple[int, ...] | None:
    """The CPU cores a (validated) processor id runs on (``CPU[0,1]`` -> (0, 1); ``CPU`` -> every
    core); None for GPU/NPU/DSP, which this runtime cannot drive."""
    return processors.cores(processor, n_cores)


def _ref(o: Any, mpath: Path, where: str) -> tuple[int, str | None, str | None]:
    """An output reference: ``{"index": 1, "key": "output_1", "name": ...}``."""
    if not isinstance(o, dict) or set(o) - {"index", "key", "name"}:
        raise BundleError("must be an object with index, key and name", file=mpath,
                          where=where, value=o)
    k = o.get("index")
    if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k < 4096):
        raise BundleError("must be a whole number 0..4095", file=mpath, where=f"{where}.index",
                          value=k)
    for part in ("key", "name"):
        if not (o.get(part) is None or isinstance(o.get(part), str)):
            raise BundleError("must be a string or null", file=mpath, where=f"{where}.{part}",
                              value=o.get(part))
    return k, o.get("key"), o.get("name")


def _output(c: dict, mpath: Path, w: str) -> tuple[int, str | None, str | None] | None:
    """A configuration's ``output``: the one its answers are (None: the model's first)."""
    return None if c.get("output") is None else _ref(c["output"], mpath, f"{w}.output")


def _outputs(c: dict, mpath: Path, w: str) -> tuple[tuple[int, str | None, str | None], ...]:
    """A configuration's ``outputs``: every output of a multi-output model, each as ``output``
    is, in the source model's order (what a request for every output is answered with)."""
    refs = c.get("outputs")
    if refs is None:
        return ()
    if not isinstance(refs, list) or not 0 < len(refs) <= 4096:
        raise BundleError("must be a list of 1..4096 outputs", file=mpath, where=f"{w}.outputs",
                          value=refs if not isinstance(refs, list) else len(refs))
    return tuple(_ref(o, mpath, f"{w}.outputs[{i}]") for i, o in enumerate(refs))


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
    #: ``planned`` or ``streamed``: ``file`` is a layer program run within ``memory_budget_mb``
    #: (:mod:`.programs`), reading ``weight_files`` as it runs; None: a LiteRT model.
    memory_mode: str | None = None
    memory_budget_mb: float | None = None
    weight_files: tuple[str, ...] = ()
    #: A multi-exit operating point: its criteria (text) and the stored model's exit segments
    #: (``file`` is the first), run with early exit (:mod:`.multiexit`); None: one model file.
    criteria: str | None = None
    segments: tuple[str, ...] = ()
    exit_accuracy: tuple[float, ...] = ()
    exit_flops: tuple[float, ...] = ()
    input_shape: tuple[int, ...] = ()
    #: For a model with several outputs, the one its answers are (index in the source model,
    #: serving-signature key, tensor name: see :func:`.interpreter.output_detail`); None: the
    #: model's first output.
    output: tuple[int, str | None, str | None] | None = None
    #: Every output of a model with several, in the source model's order, as ``output`` is:
    #: what a request for every output (``RuntimeManager.submit(every_output=True)``) gets, by
    #: name; empty: the outputs as the file names them.
    outputs: tuple[tuple[int, str | None, str | None], ...] = ()

    @property
    def cores(self) -> tuple[int, ...] | None:
        return cores_of(self.processor)

    @property
    def files(self) -> tuple[str, ...]:
        """Every bundle file the configuration needs."""
        return tuple(dict.fromkeys((self.file, *self.weight_files, *self.segments)))


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
    _blobs: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def task_names(self) -> list[str]:
        return [t["name"] for t in self.tasks]

    @property
    def usable(self) -> list[str]:
        return [r for r in self.designs if r not in self.problems]

    def path_of(self, config_id: str) -> Path:
        return self.root / self.configs[config_id].file

    def model_bytes(self, config_id: str) -> bytes:
        """The configuration's model, read once and verified (cached: every later load runs the
        same bytes). Raises ModelFault if the file is missing or not what the manifest names."""
        return self.file_bytes(self.configs[config_id].file)

    def file_bytes(self, rel: str) -> bytes:
        """Any file the manifest lists, read once and verified (a multi-exit segment)."""
        blob = self._blobs.get(rel)
        if blob is None:
            blob = self._blobs[rel] = read_verified(self.root / rel,
                                                    self.manifest["models"][rel]["sha256"])
        return blob

    def weights_dir(self, config_id: str) -> Path:
        """Where a memory-mode configuration's program reads its weight files from."""
        return (self.root / self.configs[config_id].file).parent

    def release(self, keep: set[str]) -> None:
        """Forget the bytes of models no configuration in ``keep`` uses (memory pressure); a
        later load reads and verifies them again."""
        files = {f for c in keep if c in self.configs for f in self.configs[c].files}
        for rel in list(self._blobs):  # list(): another thread may be adding a model
            if rel not in files:
                self._blobs.pop(rel, None)

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


#: What this runtime will run: more threads or a larger batch than this is a manifest error.
MAX_THREADS = processors.MAX_THREADS
MAX_BATCH = processors.MAX_BATCH
MAX_MANIFEST_BYTES = 64 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _list_of(obj: dict, key: str, ok, what: str, file: Path, where: str,
             default: Any = ...) -> list:
    """``obj[key]`` as a list whose every item passes ``ok``; the first bad item is named."""
    if default is not ... and key not in obj:
        return default
    v = _need(obj, key, list, file, where)
    path = f"{where}.{key}" if where else key
    for k, item in enumerate(v):
        if not ok(item):
            raise BundleError(f"must be {what}", file=file, where=f"{path}[{k}]", value=item)
    return v


def _expected(c: dict, file: Path, where: str) -> dict[str, float]:
    exp = c.get("expected", {})
    if not isinstance(exp, dict):
        raise BundleError("must be an object of metric values", file=file,
                          where=f"{where}.expected", value=exp)
    out = {}
    for k, v in exp.items():
        if k not in COLUMNS:  # a typo ("Lat") would otherwise be a reference never used
            raise BundleError(f"not a metric; known: {', '.join(COLUMNS)}", file=file,
                              where=f"{where}.expected", value=k)
        if not _number(v):
            raise BundleError("must be a finite number", file=file,
                              where=f"{where}.expected.{k}", value=v)
        out[k] = float(v)
    return out


def _memory(c: dict, models: dict, file: Path, where: str) -> dict[str, Any]:
    """The optional ``memory`` field of a configuration: {"mode", "budget_mb", "weights"}."""
    mem = c.get("memory")
    if mem is None:
        return {}
    w = f"{where}.memory"
    mode = _need(mem, "mode", str, file, w)
    if mode not in PROGRAM_MODES:
        raise BundleError("must be planned or streamed", file=file, where=f"{w}.mode", value=mode)
    budget = mem.get("budget_mb")
    if not (_number(budget) and budget > 0):
        raise BundleError("must be a positive number of MB", file=file, where=f"{w}.budget_mb",
                          value=budget)
    weights = _list_of(mem, "weights", lambda f: isinstance(f, str) and f in models,
                       "a file listed under 'models'", file, w)
    return {"memory_mode": mode, "memory_budget_mb": float(budget),
            "weight_files": tuple(weights)}


def _multi_exit(c: dict, models: dict, file: Path, where: str) -> dict[str, Any]:
    """The optional ``multi_exit`` field of a configuration: {"segments", "criteria",
    "accuracy", "flops", "input_shape"}."""
    from .criteria import parse_criteria

    me = c.get("multi_exit")
    if me is None:
        return {}
    w = f"{where}.multi_exit"
    segs = _list_of(me, "segments", lambda f: isinstance(f, str) and f in models,
                    "a file listed under 'models'", file, w)
    if not segs:
        raise BundleError("needs at least one segment", file=file, where=f"{w}.segments")
    text = _need(me, "criteria", str, file, w)
    try:
        parse_criteria(text)
    except InputError as e:
        raise BundleError(f"not usable criteria: {e.message}", file=file,
                          where=f"{w}.criteria", value=text) from None
    out: dict[str, Any] = {"criteria": text, "segments": tuple(segs)}
    for key, name in (("accuracy", "exit_accuracy"), ("flops", "exit_flops")):
        v = _list_of(me, key, _number, "a finite number", file, w)
        if len(v) != len(segs):
            raise BundleError(f"needs one value per segment ({len(segs)})", file=file,
                              where=f"{w}.{key}", value=len(v))
        out[name] = tuple(float(x) for x in v)
    shape = _list_of(me, "input_shape", lambda d: isinstance(d, int) and not isinstance(d, bool)
                     and 0 < d <= 1 << 16, "a positive whole number", file, w)
    out["input_shape"] = tuple(shape)
    if c.get("file") != segs[0]:
        raise BundleError("a multi-exit configuration's file is its first segment", file=file,
                          where=f"{where}.file", value=c.get("file"))
    return out


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
    if not mpath.exists():
        raise BundleError("not a bundle: no manifest.json", file=root)
    try:
        m = parse_json(read_text(mpath, what="bundle manifest", limit=MAX_MANIFEST_BYTES),
                       file=mpath)
    except InputError as e:
        raise BundleError(e.message, file=e.file, where=e.where) from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise BundleError(f"not a {FORMAT} manifest", file=mpath, where="format",
                          value=m.get("format") if isinstance(m, dict) else type(m).__name__)
    if m.get("version") != VERSION:
        raise BundleError(f"unsupported bundle version (this runtime reads {VERSION})", file=mpath,
                          where="version", value=m.get("version"))
    tasks = _need(m, "tasks", list, mpath, "")
    for i, t in enumerate(tasks):
        _need(t, "name", str, mpath, f"tasks[{i}]")
        if not 1 <= _need(t, "batch", int, mpath, f"tasks[{i}]") <= MAX_BATCH:
            raise BundleError(f"batch must be 1..{MAX_BATCH}", file=mpath,
                              where=f"tasks[{i}].batch", value=t["batch"])
    names = [t["name"] for t in tasks]
    models = _need(m, "models", dict, mpath, "")
    for f, info in models.items():
        digest = _need(info, "sha256", str, mpath, f"models[{f!r}]")
        if not _SHA256.fullmatch(digest):
            raise BundleError("must be 64 hex digits", file=mpath,
                              where=f"models[{f!r}].sha256", value=digest)
        size = info.get("bytes", 0)
        if not (isinstance(size, int) and not isinstance(size, bool)
                and 0 <= size <= MAX_MODEL_BYTES):
            raise BundleError(f"must be a whole number 0..{MAX_MODEL_BYTES}", file=mpath,
                              where=f"models[{f!r}].bytes", value=size)
        # Every entry, used or not: nothing outside the bundle is ever opened or hashed.
        inside(root, f, file=mpath, where=f"models[{f!r}]")
    configs: dict[str, ConfigSpec] = {}
    for cid, c in _need(m, "configs", dict, mpath, "").items():
        w = f"configs[{cid!r}]"
        spec = ConfigSpec(
            id=cid, task=_need(c, "task", str, mpath, w), model=_need(c, "model", str, mpath, w),
            precision=_need(c, "precision", str, mpath, w),
            processor=_need(c, "processor", str, mpath, w),
            threads=_need(c, "threads", int, mpath, w), xnnpack=_need(c, "xnnpack", bool, mpath, w),
            batch=_need(c, "batch", int, mpath, w), file=_need(c, "file", str, mpath, w),
            expected=_expected(c, mpath, w), **_memory(c, models, mpath, w),
            **_multi_exit(c, models, mpath, w), output=_output(c, mpath, w),
            outputs=_outputs(c, mpath, w))
        if spec.task not in names:
            raise BundleError("unknown task", file=mpath, where=f"{w}.task", value=spec.task)
        if spec.file not in models:
            raise BundleError("model file not listed under 'models'", file=mpath,
                              where=f"{w}.file", value=spec.file)
        if not 1 <= spec.threads <= MAX_THREADS:
            raise BundleError(f"threads must be 1..{MAX_THREADS}", file=mpath,
                              where=f"{w}.threads", value=spec.threads)
        if not 1 <= spec.batch <= MAX_BATCH:
            raise BundleError(f"batch must be 1..{MAX_BATCH}", file=mpath, where=f"{w}.batch",
                              value=spec.batch)
        if not processors.is_processor(spec.processor):
            raise BundleError("not a processor id such as CPU, CPU[0,1] or GPU", file=mpath,
                              where=f"{w}.processor", value=spec.processor)
        configs[cid] = spec
    designs: dict[str, DesignSpec] = {}
    for role, d in _need(m, "designs", dict, mpath, "").items():
        w = f"designs[{role!r}]"
        ids = _need(d, "configs", list, mpath, w)
        if len(ids) != len(names):
            raise BundleError(f"needs one configuration per task ({len(names)})", file=mpath,
                              where=f"{w}.configs", value=ids)
        for k, cid in enumerate(ids):
            if not isinstance(cid, str) or cid not in configs:
                raise BundleError("unknown configuration", file=mpath,
                                  where=f"{w}.configs[{k}]", value=cid)
            if configs[cid].task != names[k]:
                raise BundleError(f"configuration is not for task {names[k]}", file=mpath,
                                  where=f"{w}.configs[{k}]", value=cid)
        labels = _list_of(d, "labels", lambda x: isinstance(x, str), "a string", mpath, w,
                          default=ids)
        if len(labels) != len(ids):
            raise BundleError(f"needs one label per task ({len(names)})", file=mpath,
                              where=f"{w}.labels", value=labels)
        opt = d.get("optimality")
        if opt is not None and not _number(opt):
            raise BundleError("must be a finite number or null", file=mpath,
                              where=f"{w}.optimality", value=opt)
        trig = d.get("trigger")
        if trig is not None and not isinstance(trig, str):
            raise BundleError("must be a processor id or null", file=mpath,
                              where=f"{w}.trigger", value=trig)
        designs[role] = DesignSpec(role, tuple(ids), tuple(labels), opt, trig)
    if not designs:
        raise BundleError("the bundle has no designs", file=mpath, where="designs")
    triggers = _list_of(m, "triggers", processors.is_processor,
                        "a processor id such as CPU[0]", mpath, "")
    vector = _list_of(m, "policy_vector", lambda r: r is None or (isinstance(r, str) and r in designs),
                      "a design of 'designs' or null", mpath, "")
    if len(vector) != 1 << (len(triggers) + 1):
        raise BundleError(f"needs 2^(triggers+1) = {1 << (len(triggers) + 1)} entries",
                          file=mpath, where="policy_vector", value=len(vector))
    fallback = _list_of(m, "fallback", lambda r: isinstance(r, str) and r in designs,
                        "a design of 'designs'", mpath, "", default=list(designs))
    fallback += [r for r in designs if r not in fallback]
    b = Bundle(root, m, tasks, configs, designs, [str(t) for t in triggers], vector, fallback)
    if verify:
        # The same check the runtime makes of the bytes it serves (read, not kept: loading a
        # design reads and checks them again, so a file changed after this is caught then).
        for f, info in models.items():
            try:
                read_verified(root / f, info["sha256"])
            except ModelFault as e:
                b.bad_files[f] = e.reason
        for cid, c in configs.items():
            bad = [f for f in c.files if f in b.bad_files]
            if bad:
                b.remove_config(cid, f"{bad[0]}: {b.bad_files[bad[0]]}")
    have = processors.machine_cores()
    for role, d in designs.items():
        for cid in d.configs:
            cores = cores_of(configs[cid].processor)
            if cores is None:
                b.remove(role, f"{configs[cid].processor} cannot be driven by this runtime")
            elif not set(cores) <= have:
                b.remove(role, f"{configs[cid].processor} needs cores this machine lacks (it "
                         f"has {','.join(map(str, sorted(have)))})")
    if not b.usable:
        why = "; ".join(f"{r}: {p}" for r, p in b.problems.items())
        raise BundleError(f"no usable design ({why})", file=root)
    return b
