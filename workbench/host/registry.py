"""Your own models in the workspace: ``workbench models add|list|show|remove`` and
``workbench quantise``.

Each model lives in ``<workspace>/models/<NAME>/``:

| file | what |
|---|---|
| ``model.json`` | the record (:class:`ModelRecord`): origin, input, output, task, metric, schemes |
| ``source.keras`` / ``source.savedmodel/`` / ``source.tflite`` | a copy of what was added |
| ``data.npz`` | a copy of the task data (``x``, ``y``, ``x_calib``), when given |
| ``<SCHEME>.tflite`` | the converted variants (FP32, FP16, DR8, FX8, FFX8) |
| ``fp32-outputs.npy`` | the FP32 outputs on the evaluation inputs (``agreement`` compares to them) |

Metrics (A in the profile) are :mod:`workbench.taskmetrics`'s: top-1 and top-5 accuracy, mIoU and
pixel accuracy, MAE and RMSE on labels ``y``, and agreement or cosine similarity with the FP32
variant's outputs (no labels). Each variant's A is stored with its sample count and 95% interval.
Without data the evaluation inputs are 64 generated samples (float inputs uniform in [-1, 1), integer inputs uniform
in [0, 100)) and the metric is agreement: the profile says so. int8 calibration uses ``x_calib``,
else the first 100 samples of ``x``, else the generated inputs.

Nothing here imports TensorFlow until a Keras model has to be read or converted.

Every change to a model (add, add --force, quantise, remove) holds the model's lock (flock on
``<registry>/.<NAME>.lock``; the kernel drops it when its process dies, so a SIGKILL leaves no
stale lock) and reaches the folder by rename: a new entry is built in a staging folder beside it
(``.<NAME>.<PID>.xxxx``) and renamed into place, a replaced one swapped out in one step (or moved
aside to ``.<NAME>.old`` first where the file system cannot swap, and put back by the next access
if the process died in between), a removed one renamed away before it is deleted. So a kill at any
moment leaves the old entry or the new one, and :func:`list_models` shows only complete entries,
never a staging folder. A second ``add`` of a name being written fails at once; a second
``quantise`` waits and then reads the record the first one wrote, so both keep their schemes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Annotated, Iterable, Iterator, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from .. import metrics, taskmetrics, workspace
from ..errors import InputError
from ..fileio import atomic_write_text, replace_dir, staging
from ..names import validator as name_validator
from ..procfs import alive
from .intake import (
    Kind,
    check_data,
    choose_output,
    copy_file,
    copy_tree,
    first_line,
    inspect_model,
    kind_of,
    load_npz,
    parse_feeds,
    parse_shape,
    shown,
)

PRECISIONS = ("FP32", "FP16", "DR8", "FX8", "FFX8")
MetricName = Literal[taskmetrics.NAMES]  # type: ignore[valid-type]
#: Metrics measured against the FP32 variant's outputs rather than labels.
RELATIVE = tuple(m.name for m in taskmetrics.TABLE if m.relative)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
GENERATED_SAMPLES = 64
CALIBRATION_SAMPLES = 100
RECORD = "model.json"
CUSTOM_OBJECTS = "custom_objects.py"
SOURCE = {"keras": "source.keras", "savedmodel": "source.savedmodel", "tflite": "source.tflite",
          "onnx": "source.onnx"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VariantRecord(_Strict):
    """One converted scheme of a model: its file and what was measured of it."""

    precision: str
    available: bool
    reason: str | None = None
    file: str | None = None
    sha256: str | None = None
    size_mb: float | None = None
    params: int | None = None
    flops: int | None = None
    n_ops: int | None = None
    ops: dict[str, int] = Field(default_factory=dict)
    metric: float | None = Field(default=None, description="A on the evaluation inputs (LiteRT)")
    metric_n: int | None = Field(default=None, description="samples A was measured on")
    metric_lo: float | None = Field(default=None, description="A's 95% interval, low end")
    metric_hi: float | None = Field(default=None, description="A's 95% interval, high end")
    convert_seconds: float | None = None
    note: str | None = None
    output_error: dict[str, float] | None = Field(
        default=None, description="a multi-output model's every output against FP32's on the "
        "evaluation inputs, by output name (A reads one): the mean absolute difference in % of "
        "the range of FP32's values of that output (0: the same)")


class OutputRecord(_Strict):
    """One output of a model (see :class:`workbench.host.intake.Output`)."""

    name: str
    key: str | None = None
    shape: list[int | None]


class DataRecord(_Strict):
    """The task data a model was added with (absent: generated inputs)."""

    file: str = "data.npz"
    sha256: str
    source: str
    n_eval: int
    n_calib: int
    calibration: str = Field(description="which inputs calibrated the int8 schemes")


class ModelRecord(_Strict):
    """What the registry knows of one model."""

    name: str
    task: str
    # Shown in profiles and tables: a record edited by hand (or written before names were
    # checked) is refused at read, naming model.json, not when a profile is built from it.
    arch: Annotated[str, AfterValidator(name_validator("model family"))]
    kind: Kind
    file: str
    sha256: str
    source: str
    added: str
    input_shape: list[int]
    input_dtype: str
    output_shape: list[int] = Field(description="the shape of the output A reads")
    outputs: list[OutputRecord] = Field(default_factory=list, description="every output, when "
                                        "the model has more than one")
    output: int = Field(default=0, ge=0, description="the output A reads (index into outputs)")
    notes: list[str] = Field(default_factory=list, description="what was changed to convert "
                             "it (e.g. recurrent layers unrolled)")
    custom_objects: str | None = Field(default=None, description="the copy of the Python file "
                                       "defining its custom layers, imported before loading it")
    feeds: dict[str, float] = Field(default_factory=dict, description="values fed to inputs "
                                    "other than the first at every run")
    data_input: str | None = Field(default=None, description="the input the data feeds, of a "
                                   "Keras, SavedModel or .tflite model with several inputs (its "
                                   "signature key); its variant files carry it with the feeds")
    metric: MetricName
    data: DataRecord | None = None
    cited: dict[str, float] = Field(default_factory=dict, description="A per scheme from a "
                                    "citation (e.g. ImageNet top-1), used instead of the measured")
    citation: str | None = None
    variants: list[VariantRecord] = Field(default_factory=list)

    @property
    def task_metric(self) -> taskmetrics.TaskMetric:
        return taskmetrics.get(self.metric)

    @property
    def metric_label(self) -> str:
        return self.task_metric.label

    @property
    def higher_is_better(self) -> bool:
        return self.task_metric.higher_is_better

    @property
    def n_outputs(self) -> int:
        return int(np.prod(self.output_shape)) if self.output_shape else 1

    @property
    def output_ref(self) -> tuple[int, str | None, str | None] | None:
        """How :func:`workbench.host.quantise.predict` finds the output A reads (None: the only
        one)."""
        if len(self.outputs) < 2:
            return None
        o = self.outputs[self.output]
        return self.output, o.key, o.name

    def variant(self, precision: str) -> VariantRecord | None:
        return next((v for v in self.variants if v.precision == precision), None)

    @property
    def input_plan(self) -> dict | None:
        """How a LiteRT variant with several inputs is fed (stored in each variant file:
        :data:`workbench.runtime.interpreter.INPUTS_KEY`); None: one input, or ONNX."""
        return None if self.data_input is None else {"data": self.data_input,
                                                     "feeds": dict(self.feeds)}

    @property
    def available(self) -> list[str]:
        return [v.precision for v in self.variants if v.available]

    def a_of(self, v: VariantRecord) -> float | None:
        """The A a profile gets for a variant: cited where the model has citations (None for a
        scheme nobody published), else the measured one."""
        if self.cited or self.citation:
            return self.cited.get(v.precision)
        return v.metric

    def confidence_of(self, v: VariantRecord) -> tuple[int | None, float | None, float | None]:
        """A's sample count and 95% interval as a profile gets them: none for cited A (a
        citation gives no interval, and the measured one is of another metric)."""
        if self.cited or self.citation:
            return None, None, None
        return v.metric_n, v.metric_lo, v.metric_hi

    @property
    def evaluation(self) -> str:
        """Where A comes from, in words (for the profile's task description)."""
        if self.cited or self.citation:
            return (f"A = CITED, not measured ({self.citation or 'no citation'}; schemes "
                    f"{', '.join(self.cited) or 'none'}); measured here: agreement with FP32 on "
                    + (self.data.source if self.data else "generated inputs"))
        if self.data is None:
            return (f"{GENERATED_SAMPLES} generated inputs; A = agreement with the FP32 variant "
                    "(no task data given)")
        what = self.task_metric.definition.split(":")[0]
        return (f"{self.data.source} ({self.data.n_eval} samples); A = {what}, measured with "
                + ("onnxruntime" if self.kind == "onnx" else "LiteRT"))


# --- where things are -------------------------------------------------------------------------

def root() -> Path:
    """The registry folder of the workspace."""
    return workspace.models_dir()


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InputError("a model name is 1-64 letters, digits, '.', '_' or '-', starting with a "
                         "letter or digit", where="name", value=name)
    return name


def model_dir(name: str) -> Path:
    return root() / check_name(name)


def _write(rec: ModelRecord, folder: Path | None = None) -> None:
    atomic_write_text((folder or model_dir(rec.name)) / RECORD, rec.model_dump_json(indent=1) + "\n")


# --- one writer per model ---------------------------------------------------------------------

@contextlib.contextmanager
def _locked(name: str, *, wait: bool, note: bool = False) -> Iterator[None]:
    """Hold model ``name``'s lock: flock on ``.<name>.lock`` in the registry folder.

    With ``wait`` False a lock held by another process (or another call in this one) is an
    InputError at once; else this waits for it (saying so on stderr when ``note``). The lock file
    is removed on release; whoever waited on a removed file locks the new one instead."""
    import fcntl

    base = root()
    base.mkdir(parents=True, exist_ok=True)
    path = base / f".{check_name(name)}.lock"
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as e:  # e.g. a symlink planted in its place
            raise InputError(f"cannot lock model {name!r}: {e.strerror or e}",
                             file=shown(path)) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not wait:
                    raise InputError(f"model {name!r} is being added, quantised or removed by "
                                     "another workbench process right now; try again when it "
                                     "has finished", file=shown(base)) from None
                if note:
                    print(f"waiting for another workbench process working on model {name}...",
                          file=sys.stderr, flush=True)
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                now = os.stat(path)
                held = os.fstat(fd)
                same = (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        os.close(fd)  # the holder we waited for removed that file: lock the one there now
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(fd)


def _staging(folder: Path) -> Path:
    """A new staging folder beside the entry ``folder``: ``.<NAME>.<PID>.<8 random>``, after
    removing those of dead processes (a writer killed while building, or while deleting).

    Not :func:`workbench.fileio.staging`: its pattern is a prefix, and model names may hold dots
    and digits, so the writer of ``a`` would take ``.a.5.lock`` or ``.a.5.old`` (model ``a.5``'s
    lock file and set-aside entry) for the leftovers of a process 5. Here the whole name must
    match."""
    mine = re.compile(rf"\.{re.escape(folder.name)}\.([0-9]+)\.[a-z0-9_]{{8}}")
    for entry in os.scandir(folder.parent):
        m = mine.fullmatch(entry.name)
        if m and int(m.group(1)) != os.getpid() and not alive(int(m.group(1))):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f".{folder.name}.{os.getpid()}.", dir=folder.parent))


def _aside(name: str) -> Path:
    """Where :func:`workbench.fileio.replace_dir` moves an entry it replaces, where the file
    system cannot swap two folders in one step."""
    return root() / f".{name}.old"


def _recover(name: str) -> None:
    """With the lock held: finish a replacement whose process died between moving the old entry
    aside and renaming the new one in (put the old back), or after it (drop the old)."""
    old, folder = _aside(name), root() / name
    if not old.is_dir():
        return
    if folder.exists():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.rename(folder)


def _recover_if_free(name: str) -> None:
    """:func:`_recover` for readers: only when nobody holds the lock (a live writer between its
    two renames finishes by itself)."""
    if not _aside(name).is_dir():
        return
    try:
        with _locked(name, wait=False):
            _recover(name)
    except InputError:
        pass


def get(name: str) -> ModelRecord:
    """The record of a registered model.

    Raises:
        InputError: No such model (names the registered ones), or its record is unreadable.
    """
    path = model_dir(name) / RECORD
    if not path.is_file():
        _recover_if_free(name)
    if not path.is_file():
        have = ", ".join(r.name for r in list_models()) or "none yet"
        raise InputError(f"no model named {name!r} in the registry (registered: {have}); add it "
                         "with `workbench models add FILE --name NAME --task TASK`", file=root())
    try:
        return ModelRecord.model_validate_json(path.read_text())
    except ValidationError as exc:
        from ..profiles.store import error_from_validation

        raise error_from_validation(exc, file=path, what="not a valid model record") from None
    except ValueError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"not a valid model record: {first}", file=path) from None


def list_models() -> list[ModelRecord]:
    """The complete entries of the registry: a folder named as a model, holding a valid record of
    that name and its source. Staging folders, entries set aside and foreign folders are not
    models, so they are skipped (``get`` names the problem of a broken one)."""
    out: list[ModelRecord] = []
    base = root()
    if not base.is_dir():
        return out
    for entry in os.scandir(base):
        m = re.fullmatch(r"\.(.+)\.old", entry.name)
        if m and NAME_RE.match(m.group(1)) and not (base / m.group(1)).exists():
            _recover_if_free(m.group(1))
    for entry in sorted(os.scandir(base), key=lambda e: e.name):
        if not NAME_RE.match(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            rec = ModelRecord.model_validate_json((Path(entry.path) / RECORD).read_text())
        except (OSError, ValidationError, ValueError):
            continue
        if rec.name == entry.name and (Path(entry.path) / rec.file).exists():
            out.append(rec)
    return out


def remove(name: str) -> Path:
    """Delete a model: renamed away first (to a staging name, which the next writer of that name
    clears if this process dies while deleting), so it is there whole or gone."""
    folder = model_dir(name)
    get(name)  # an unknown name is refused before anything is created
    with _locked(name, wait=True):
        _recover(name)
        get(name)
        trash = _staging(folder)
        os.replace(folder, trash)
        shutil.rmtree(trash, ignore_errors=True)
    return folder


def output_refs() -> dict[tuple[str, str], tuple[int, str | None, str | None]]:
    """The output A reads, by (task, model), of every registered model with several outputs
    (what a bundle answers with)."""
    return {(rec.task, rec.name): ref for rec in list_models()
            if (ref := rec.output_ref) is not None}


def all_output_refs() -> dict[tuple[str, str], list[tuple[int, str | None, str | None]]]:
    """Every output, in the source model's order, by (task, model), of every registered model
    with several outputs (what a bundle answers a request for every output with)."""
    return {(rec.task, rec.name): [(k, o.key, o.name) for k, o in enumerate(rec.outputs)]
            for rec in list_models() if len(rec.outputs) > 1}


def variant_files() -> dict[tuple[str, str, str], Path]:
    """Every available variant file of the registry, keyed by (task, model, precision)."""
    return {(rec.task, rec.name, v.precision): model_dir(rec.name) / v.file
            for rec in list_models() for v in rec.variants
            if v.available and v.file and (model_dir(rec.name) / v.file).is_file()}


# --- adding -----------------------------------------------------------------------------------

def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode())
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def add(path: str | os.PathLike, *, name: str, task: str, data: str | os.PathLike | None = None,
        metric: str | None = None, input_shape: str | Iterable[int] | None = None,
        arch: str | None = None, overwrite: bool = False, progress: bool = False,
        cited: dict[str, float] | None = None, citation: str | None = None,
        output: str | int | None = None,
        custom_objects: str | os.PathLike | None = None,
        feeds: dict[str, float] | Iterable[str] | None = None) -> ModelRecord:
    """Register a model (a ``.keras`` file, a SavedModel folder or a ``.tflite`` file).

    The model is read and checked, the data checked against it, both copied into the registry,
    and the FP32 variant converted and measured (a ``.tflite`` file is registered as the one
    scheme it holds). Nothing is left behind when any step fails.

    A model with several outputs is profiled whole; ``output`` (an index or a name: a Keras
    output's name, a SavedModel's signature key, a .tflite tensor's name) says which one the
    metric reads (default: the first). An ONNX model's inputs after the first are fed
    ``feeds`` (``{"sr": 16000}`` or ``["sr=16000"]``), else zeros (ones if integer).

    Raises:
        InputError: A bad name or task, an unreadable or unsupported model, data that does not
            fit it, or the name taken (unless ``overwrite``).
    """
    check_name(name)
    if not isinstance(task, str) or not NAME_RE.match(task):
        raise InputError("a task name is 1-64 letters, digits, '.', '_' or '-'", where="task",
                         value=task)
    if arch is not None:  # shown in profiles, tables and the explorer as the model's family
        from ..names import check_name as check_label

        check_label(arch, what="model family", where="--arch")
    if metric is not None and metric not in taskmetrics.BY_NAME:
        raise InputError(f"unknown metric; expected one of {', '.join(taskmetrics.NAMES)}",
                         where="metric", value=metric)
    src = Path(path).expanduser()
    if not src.exists():
        raise InputError("no such model file", file=shown(src))
    folder = model_dir(name)
    if folder.exists() and not overwrite:
        raise _taken(name, folder)
    kind = kind_of(src)
    shape = parse_shape(input_shape)
    custom = Path(custom_objects).expanduser() if custom_objects is not None else None
    feed_values = parse_feeds(feeds)
    data_path = Path(data).expanduser() if data is not None else None
    arrays = load_npz(data_path) if data_path is not None else None
    model, fixed, dtype, outs, notes, plan = inspect_model(
        src, kind, shape, custom, feed_values,
        data_shape=tuple(arrays["x"].shape[1:]) if arrays is not None else None)
    k = choose_output(outs, output, src)
    if any(d is None for d in outs[k].shape):
        raise InputError(f"the model's output {outs[k].name!r} has free dimensions "
                         f"{tuple(outs[k].shape)}" + ("; choose a fixed one with --output"
                                                      if len(outs) > 1 else ""),
                         file=shown(src))
    out_shape = [int(d) for d in outs[k].shape]
    outputs = [OutputRecord(name=o.name, key=o.key, shape=list(o.shape)) for o in outs] \
        if len(outs) > 1 else []
    if arrays is None:
        if metric is not None and not taskmetrics.get(metric).relative:
            raise InputError(f"metric {metric} needs task data: give --data DATA.npz with x and y",
                             where="metric", value=metric)
        metric = metric if metric in RELATIVE else "agreement"
    else:
        metric = check_data(data_path, arrays, input_shape=fixed, input_dtype=dtype,  # type: ignore[arg-type]
                            output_shape=out_shape, metric=metric)
    with _locked(name, wait=False):
        _recover(name)
        if folder.exists() and not overwrite:
            raise _taken(name, folder)
        return _build(folder, src, kind, model, name=name, task=task, data_path=data_path,
                      arrays=arrays, metric=metric, fixed=fixed, dtype=dtype,
                      out_shape=out_shape, arch=arch, cited=cited, citation=citation,
                      progress=progress, outputs=outputs, output=k if outputs else 0,
                      notes=notes, custom=custom, feeds=feed_values,
                      data_input=plan["data"] if plan else None)


def _taken(name: str, folder: Path) -> InputError:
    return InputError(f"a model named {name!r} is registered already (remove it first, or pass "
                      "--force to replace it)", file=shown(folder))


def _build(folder: Path, src: Path, kind: Kind, model, *, name: str, task: str,
           data_path: Path | None, arrays: dict[str, np.ndarray] | None, metric: str,
           fixed: tuple[int, ...], dtype: str, out_shape: list[int], arch: str | None,
           cited: dict[str, float] | None, citation: str | None, progress: bool,
           outputs: list[OutputRecord] | None = None, output: int = 0,
           notes: list[str] | None = None, custom: Path | None = None,
           feeds: dict[str, float] | None = None, data_input: str | None = None) -> ModelRecord:
    """With the lock held: the new entry built in a staging folder beside ``folder``, then
    renamed into place (swapped with the old one for --force)."""
    tmp = _staging(folder)
    try:
        target = tmp / SOURCE[kind]
        if model is not None:  # Keras: saved again (a fixed input shape may have been given)
            from .quantise import _quiet

            with _quiet():
                model.save(target)
        elif kind == "savedmodel":
            copy_tree(src, target)
        else:
            copy_file(src.resolve(), target)  # the path the user named may be a link
        if custom is not None:  # kept with the model: quantise and profile load it again
            copy_file(custom.resolve(), tmp / CUSTOM_OBJECTS)
        data_rec = None
        if arrays is not None and data_path is not None:
            copy_file(data_path.resolve(), tmp / "data.npz")
            n_calib = len(arrays.get("x_calib", arrays["x"][:CALIBRATION_SAMPLES]))
            data_rec = DataRecord(sha256=_sha256(tmp / "data.npz"), source=data_path.name,
                                  n_eval=len(arrays["x"]), n_calib=n_calib,
                                  calibration="x_calib" if "x_calib" in arrays else
                                  f"the first {n_calib} samples of x")
        rec = ModelRecord(name=name, task=task, arch=arch or (getattr(model, "name", None) or name),
                          kind=kind, file=SOURCE[kind], sha256=_sha256(target), source=str(src),
                          added=date.today().isoformat(), input_shape=list(fixed),
                          input_dtype=dtype, output_shape=out_shape, metric=metric,
                          outputs=outputs or [], output=output, notes=list(notes or []),
                          custom_objects=CUSTOM_OBJECTS if custom is not None else None,
                          feeds=dict(feeds or {}), data_input=data_input,
                          data=data_rec, cited=dict(cited or {}), citation=citation)
        _write(rec, tmp)
        rec = _quantise_in(tmp, rec, ("FP32",) if kind != "tflite" else (), progress=progress,
                           force=False, strict=True)
        if model is not None:
            _check_fp32(tmp, rec, model, (arrays or _arrays(tmp, rec))["x"])
        replace_dir(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return rec


def _check_fp32(folder: Path, rec: ModelRecord, model, x_eval: np.ndarray) -> None:
    """Compare the FP32 .tflite with Keras one sample at a time: a conversion that changes what
    the model computes (for example a Resizing layer makes the exported graph keep its batch
    norms in training mode) is noted on the FP32 variant, and ``models add`` prints it."""
    from . import quantise as q

    v = rec.variant("FP32")
    if v is None or not v.available or not v.file:
        return
    x = x_eval[:8].astype(rec.input_dtype)
    if len(model.inputs) > 1:  # the other inputs as the runtime feeds them
        from ..runtime.interpreter import placeholder

        rest = [np.full((len(x), *i.shape[1:]), rec.feeds[i.name], dtype=i.dtype)
                if i.name in rec.feeds else
                placeholder({"shape": (len(x), *i.shape[1:]), "dtype": np.dtype(i.dtype)})
                for i in model.inputs[1:]]
        want = model.predict([x, *rest], verbose=0)
    else:
        want = model.predict(x, verbose=0)
    if isinstance(want, (list, tuple)):
        want = want[rec.output]
    elif isinstance(want, dict):  # outputs given as a dict: by its key
        want = want[rec.outputs[rec.output].name] if rec.outputs else next(iter(want.values()))
    want = np.asarray(want, np.float64).reshape(len(x), -1)
    got = np.asarray(q.predict(folder / v.file, x, batch=1, output=rec.output_ref),
                     np.float64).reshape(len(x), -1)
    diff = float(np.abs(want - got).max())
    if diff > 1e-3 * (1.0 + float(np.abs(want).max())):
        v.note = (f"LiteRT's FP32 output differs from Keras's by up to {diff:.3g}: the conversion "
                  "changed the model (a Resizing layer, for example, exports batch norms in "
                  "training mode); its A is what LiteRT computes")
        _write(rec, folder)


# --- quantising -------------------------------------------------------------------------------

def _arrays(folder: Path, rec: ModelRecord) -> dict[str, np.ndarray]:
    if rec.data is None:
        rng = np.random.default_rng(0)
        shape = (GENERATED_SAMPLES, *rec.input_shape)
        if np.dtype(rec.input_dtype).kind in "iu":
            x = rng.integers(0, 100, shape).astype(rec.input_dtype)
        else:
            x = rng.uniform(-1, 1, shape).astype(np.float32)
        return {"x": x}
    return load_npz(folder / rec.data.file)


def score(rec: ModelRecord, y_pred: np.ndarray, arrays: dict[str, np.ndarray],
          reference: np.ndarray | None) -> taskmetrics.Score | None:
    """A of one variant's outputs, with its sample count and 95% interval (None: a relative
    metric with no FP32 reference yet)."""
    m = rec.task_metric
    target = reference if m.relative else arrays["y"]
    if target is None:
        return None
    y_pred = np.asarray(y_pred, dtype=np.float64)
    return m.score(y_pred.reshape(np.shape(target)) if m.labels == "values" else y_pred, target)


def quantise(name: str, schemes: Iterable[str] = PRECISIONS, *, force: bool = False,
             progress: bool = True) -> ModelRecord:
    """Convert a registered model to the schemes it lacks and measure each with LiteRT.

    The record is rewritten after every scheme, so a killed run keeps what was done and the next
    run converts only the rest. A ``.tflite`` model holds one scheme: asking for others records
    them as unavailable with the reason.

    Raises:
        InputError: Unknown scheme or model, or the FP32 conversion itself fails (the model uses
            something the TFLite converter cannot handle; the converter's reason is kept).
    """
    schemes = tuple(schemes)
    for s in schemes:
        if s not in PRECISIONS:
            raise InputError(f"unknown scheme; expected some of {', '.join(PRECISIONS)}",
                             where="schemes", value=s)
    with _locked(name, wait=True, note=progress):
        _recover(name)
        rec = get(name)  # read with the lock held: a run that finished meanwhile is kept
        if rec.kind == "tflite":
            return _quantise_in(model_dir(name), rec, schemes, progress=progress, force=force,
                                strict=False)
        return _quantise_isolated(model_dir(name), rec, schemes, progress=progress, force=force)


#: Names the scheme a conversion process is converting (see :func:`_quantise_isolated`).
CONVERTING = ".converting"


def _todo(folder: Path, rec: ModelRecord, schemes: tuple[str, ...], force: bool) -> list[str]:
    """The schemes a quantise call converts, FP32 first (agreement compares every scheme with
    it, so it is converted when its outputs are missing)."""
    ref_path = folder / "fp32-outputs.npy"
    todo = [s for s in PRECISIONS if s in schemes or (s == "FP32" and rec.metric in RELATIVE
                                                        and schemes and not ref_path.is_file())]
    return [s for s in todo if force or rec.variant(s) is None]


def _quantise_isolated(folder: Path, rec: ModelRecord, schemes: tuple[str, ...], *,
                       progress: bool, force: bool) -> ModelRecord:
    """Convert in a child process (``python -m workbench.host._convert``), so that a converter
    or LiteRT crash (calibrating some graphs' int8 schemes has crashed the process here) costs
    only the scheme it hit: that scheme is recorded unavailable with the signal, and the
    remaining ones are converted in a new process. The child writes the record after every
    scheme, as an in-process run does, so nothing converted is lost."""
    import signal
    import subprocess

    todo = _todo(folder, rec, schemes, force)
    marker = folder / CONVERTING
    while todo:
        cmd = [sys.executable, "-m", "workbench.host._convert", str(folder), ",".join(todo)]
        if progress:
            cmd.append("--progress")
        marker.unlink(missing_ok=True)
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=None if progress else
                           subprocess.PIPE, text=True)
        rec = ModelRecord.model_validate_json((folder / RECORD).read_text())
        crashed = marker.read_text().strip() if marker.is_file() else None
        marker.unlink(missing_ok=True)
        if r.returncode == 0:
            break
        if crashed not in todo:
            tail = (r.stderr or "").strip().splitlines()
            raise InputError("the conversion process failed: " + (tail[-1][:300] if tail else
                             f"exit status {r.returncode}"), file=rec.source)
        try:
            how = f"signal {signal.Signals(-r.returncode).name}" if r.returncode < 0 else \
                f"exit status {r.returncode}"
        except ValueError:
            how = f"signal {-r.returncode}"
        _set(rec, _unavailable(crashed, f"the converter or LiteRT crashed the process ({how}) "
                                        f"while converting and measuring {crashed}"))
        _write(rec, folder)
        todo = todo[todo.index(crashed) + 1:]
    return rec


def _quantise_in(folder: Path, rec: ModelRecord, schemes: tuple[str, ...], *, progress: bool,
                 force: bool, strict: bool, marker: bool = False) -> ModelRecord:
    from . import quantise as q

    arrays = _arrays(folder, rec)
    if rec.kind == "tflite":
        return _register_tflite(folder, rec, schemes, arrays)
    todo = _todo(folder, rec, schemes, force)
    if not todo:
        return rec
    calib = arrays.get("x_calib", arrays["x"][:CALIBRATION_SAMPLES])
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), desc=f"quantise {rec.name}", unit="scheme")
    with contextlib.ExitStack() as stack:
        if bar is not None:
            stack.callback(bar.close)
        if rec.kind == "keras":
            custom = folder / rec.custom_objects if rec.custom_objects else None
            source, _ = stack.enter_context(q.exported(folder / rec.file, custom))
        else:
            source = str(folder / rec.file)
        if rec.kind == "onnx":
            from . import onnxgraph

            def convert(prec: str) -> bytes:
                try:
                    return onnxgraph.convert(folder / rec.file, prec, rec.input_shape,
                                             calib.astype(rec.input_dtype), rec.feeds)
                except onnxgraph.OnnxError as exc:
                    raise q.ConversionError(str(exc)) from None
        else:
            def convert(prec: str) -> bytes:
                calibrated = rec.input_plan is not None and prec in ("FX8", "FFX8")
                blob = q.convert(source, prec, calib.astype(rec.input_dtype),
                                 others=(rec.data_input, _other_samples(folder, rec))
                                 if calibrated and rec.data_input is not None else None)
                return q.with_input_plan(blob, rec.input_plan) if rec.input_plan else blob
        for prec in todo:
            if bar is not None:
                bar.set_postfix_str(prec)
            t0 = time.perf_counter()
            if marker:
                atomic_write_text(folder / CONVERTING, prec)
            try:
                blob = convert(prec)
            except q.ConversionError as exc:
                if prec == "FP32" and strict:
                    tool = "onnxruntime" if rec.kind == "onnx" else "the TFLite converter"
                    raise InputError(f"{tool} cannot convert it: {exc}",
                                     file=rec.source) from None
                _set(rec, _unavailable(prec, str(exc)))
                _write(rec, folder)
                (folder / CONVERTING).unlink(missing_ok=True)
                if bar is not None:
                    bar.update()
                continue
            target = q.write_variant(folder, prec, blob,
                                     suffix=".onnx" if rec.kind == "onnx" else ".tflite")
            seconds = time.perf_counter() - t0
            _set(rec, _measure(folder, rec, prec, target, blob, arrays, seconds, strict))
            _write(rec, folder)
            (folder / CONVERTING).unlink(missing_ok=True)
            if bar is not None:
                bar.update()
    return rec


def _other_samples(folder: Path, rec: ModelRecord) -> dict[str, np.ndarray]:
    """For int8 calibration of a model with several inputs: one sample of each input the data
    does not feed (by signature key), as the runtime feeds them, read from the FP32 variant
    (converted first)."""
    from ..runtime.interpreter import input_names, open_interpreter

    fp32 = rec.variant("FP32")
    if fp32 is None or not fp32.file:
        raise InputError("int8 calibration of a model with several inputs needs its FP32 "
                         "variant: quantise FP32 first", file=shown(folder))
    it = open_interpreter(folder / fp32.file, batch=1)
    names = input_names(it)
    return {names[d["index"]]: it.get_tensor(d["index"]) for d in it.get_input_details()[1:]}


def _unavailable(precision: str, reason: str) -> VariantRecord:
    return VariantRecord(precision=precision, available=False, reason=reason[:400])


def _set(rec: ModelRecord, v: VariantRecord) -> None:
    rec.variants = sorted([x for x in rec.variants if x.precision != v.precision] + [v],
                          key=lambda x: PRECISIONS.index(x.precision))


def _measure(folder: Path, rec: ModelRecord, prec: str, target: Path, blob: bytes,
             arrays: dict[str, np.ndarray], seconds: float, strict: bool) -> VariantRecord:
    from . import quantise as q

    # Every output of a multi-output model, to check each against FP32's (A reads one).
    refs = [(k, o.key, o.name) for k, o in enumerate(rec.outputs)]
    # onnxruntime's DR8 quantises activations with one scale per tensor, so a batch of 64
    # changes each sample's answer (one outlier sets every sample's scale); A is measured one
    # sample at a time, as the runtime serves them. LiteRT's hybrid kernels scale each sample
    # on its own, so its batches give the same answers.
    batch = 1 if target.suffix == ".onnx" else 64
    try:
        info = q.analyse(target)
        out, *every = q.predict_outputs(target, arrays["x"].astype(rec.input_dtype),
                                        [rec.output_ref, *refs], batch=batch)
    except Exception as exc:  # noqa: BLE001 - a variant LiteRT cannot run is unavailable
        target.unlink(missing_ok=True)
        engine = "onnxruntime" if target.suffix == ".onnx" else "LiteRT"
        why = f"{engine} cannot run it: {first_line(exc)}"
        if strict:
            raise InputError(why, file=rec.source) from None
        return _unavailable(prec, why)
    ref_path = folder / "fp32-outputs.npy"
    if prec == "FP32":
        tmp = staging(ref_path)  # whole or not at all: a torn file would fail every later run
        try:
            with open(tmp, "wb") as fh:
                np.save(fh, out.astype(np.float32))
            os.replace(tmp, ref_path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    every_path = folder / "fp32-every-output.npz"
    if prec == "FP32" and every:
        tmp = staging(every_path)
        try:
            with open(tmp, "wb") as fh:
                np.savez(fh, *[o.astype(np.float32) for o in every])
            os.replace(tmp, every_path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    parity = None
    if prec != "FP32" and every and every_path.is_file():
        with np.load(every_path) as z:
            parity = {o.name: output_error(got, z[f"arr_{k}"])
                      for k, (o, got) in enumerate(zip(rec.outputs, every))
                      if z[f"arr_{k}"].shape == got.shape}
    reference = np.load(ref_path) if ref_path.is_file() else None
    fp32 = rec.variant("FP32")
    if prec != "FP32" and fp32 is not None and fp32.available and fp32.flops is not None:
        # One network, one workload: a scheme changes the precision, not the arithmetic. The
        # graph a converter writes adds (de)quantise steps and folds or splits a bias, which
        # would give each scheme a W of its own (a few FLOPs apart) for the tie-break to read.
        info = {**info, "params": fp32.params, "flops": fp32.flops, "uncounted": {},
                "lower": "lower bound" in (fp32.note or "")}
    actual = q.detect_precision(target)
    note = None if actual == prec else (
        f"onnxruntime's tool produced a file that is effectively {actual}"
        if target.suffix == ".onnx" else
        f"the converter produced a file that is effectively {actual} (it leaves small weight "
        "tensors, under 1024 elements, in float)")
    lower = None
    if info.get("uncounted"):
        ops = ", ".join(f"{n} {op}" for op, n in info["uncounted"].items())
        lower = (f"W (FLOPs) is a lower bound: {ops} operator(s) have shapes that shape "
                 "inference cannot give (inside an If branch, for example) and are not counted")
    elif info.get("lower"):
        lower = "W (FLOPs) is FP32's, a lower bound (see FP32's note)"
    if lower:
        note = f"{note}; {lower}" if note else lower
    a = score(rec, out, arrays, reference)
    return VariantRecord(precision=prec, available=True, file=target.name, note=note,
                         sha256=hashlib.sha256(blob).hexdigest(), size_mb=len(blob) / 1e6,
                         params=info["params"], flops=info["flops"], n_ops=info["n_ops"],
                         ops=info["ops"], metric=None if a is None else a.value,
                         metric_n=None if a is None else a.n,
                         metric_lo=None if a is None else a.lo,
                         metric_hi=None if a is None else a.hi,
                         convert_seconds=round(seconds, 2), output_error=parity)


def output_error(got: np.ndarray, ref: np.ndarray) -> float:
    """How far one output is from FP32's: the mean absolute difference over every value, in %
    of the range of FP32's values (a constant FP32 output: of its magnitude, or 1). Unlike a
    cosine it sees a single-value output change (a probability 0.9 -> 0.1)."""
    ref = np.asarray(ref, np.float64)
    span = float(ref.max() - ref.min()) if ref.size else 0.0
    scale = span or float(np.abs(ref).max(initial=0.0)) or 1.0
    return 100.0 * float(np.abs(np.asarray(got, np.float64) - ref).mean()) / scale


def _register_tflite(folder: Path, rec: ModelRecord, schemes: tuple[str, ...],
                     arrays: dict[str, np.ndarray]) -> ModelRecord:
    from . import quantise as q

    src = folder / rec.file
    prec = q.detect_precision(src)
    if rec.variant(prec) is None:
        target = folder / f"{prec}.tflite"
        if rec.input_plan:  # the copy carries how to feed it (the user's file is not touched)
            target.write_bytes(q.with_input_plan(src.read_bytes(), rec.input_plan))
        else:
            shutil.copyfile(src, target)
        v = _measure(folder, rec, prec, target, target.read_bytes(), arrays, 0.0, strict=True)
        if rec.metric in RELATIVE:
            # A lone file agrees with itself: that says nothing, so no A.
            v.metric = v.metric_n = v.metric_lo = v.metric_hi = None
        _set(rec, v)
    for s in schemes:
        if s != prec and rec.variant(s) is None:
            _set(rec, _unavailable(s, f"a .tflite file holds one scheme ({prec}); add the Keras "
                                       "model or SavedModel to get the others"))
    _write(rec, folder)
    return rec


# --- profiling inputs -------------------------------------------------------------------------

def profiling_inputs(names: Iterable[str]):
    """The registered models' variants and per-task inputs, ready for
    :func:`workbench.host.profiling.profile_variants`.

    Raises:
        InputError: An unknown name, a model with no converted variant, or two models of one task
            that measure A differently (they would not be comparable).
    """
    from .profiling import TaskInputs, Variant

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
