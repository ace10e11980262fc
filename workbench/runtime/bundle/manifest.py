"""Checking a bundle manifest: single fields (``_need``, ``_list_of``, a configuration's
``expected``, ``memory``, ``multi_exit`` and output references) and whole sections (tasks, model
entries, configurations, designs, the switching policy). Every check raises a
:class:`~.specs.BundleError` naming the field that is wrong. Standard library only."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ... import processors
from ...errors import InputError
from ...fileio import parse_json, read_text
from ...memorymodes import PROGRAM_MODES
from ...metrics import COLUMNS
from .files import inside
from .specs import (
    FORMAT,
    MAX_BATCH,
    MAX_MANIFEST_BYTES,
    MAX_MODEL_BYTES,
    MAX_THREADS,
    VERSION,
    BundleError,
    ConfigSpec,
    DesignSpec,
)


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


def _need(obj: dict, key: str, kind: type | tuple[type, ...], file: Path, where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise BundleError(f"missing field '{key}'", file=file, where=where or None)
    v = obj[key]
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        name = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise BundleError(f"field must be {name}", file=file,
                          where=f"{where}.{key}" if where else key, value=v)
    return v


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
    from ..criteria import parse_criteria

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


def read_manifest(root: Path, mpath: Path) -> dict[str, Any]:
    """The manifest's JSON, checked to be this format and version."""
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
    return m


def check_tasks(m: dict, mpath: Path) -> list:
    """``tasks``: each with a name and a batch of 1..MAX_BATCH."""
    tasks = _need(m, "tasks", list, mpath, "")
    for i, t in enumerate(tasks):
        _need(t, "name", str, mpath, f"tasks[{i}]")
        if not 1 <= _need(t, "batch", int, mpath, f"tasks[{i}]") <= MAX_BATCH:
            raise BundleError(f"batch must be 1..{MAX_BATCH}", file=mpath,
                              where=f"tasks[{i}].batch", value=t["batch"])
    return tasks


def check_models(m: dict, root: Path, mpath: Path) -> dict:
    """``models``: each entry's sha256 and size, and its path inside the bundle."""
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
    return models


def check_config(cid: str, c: Any, names: list, models: dict, mpath: Path) -> ConfigSpec:
    """One entry of ``configs``: its fields, task, model file, threads, batch and processor."""
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
    return spec


def check_design(role: str, d: Any, names: list, configs: dict[str, ConfigSpec],
                 mpath: Path) -> DesignSpec:
    """One entry of ``designs``: a configuration per task (in task order), labels, optimality
    and trigger."""
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
    return DesignSpec(role, tuple(ids), tuple(labels), opt, trig)


def check_policy(m: dict, designs: dict[str, DesignSpec], mpath: Path
                 ) -> tuple[list[str], list[str | None], list[str]]:
    """``triggers``, ``policy_vector`` (one entry per state: 2^(triggers+1)) and ``fallback``
    (completed with every design it leaves out, in manifest order)."""
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
    return [str(t) for t in triggers], vector, fallback
