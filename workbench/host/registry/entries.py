"""The registry's folders: where an entry lives, one writer per model (the lock, staging folders,
recovery of a replacement cut short), and reading, listing and removing entries."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from pydantic import ValidationError

from ... import workspace
from ...errors import InputError
from ...fileio import atomic_write_text
from ...procfs import alive
from ..intake import shown
from .records import NAME_RE, RECORD, ModelRecord


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


def keras_source(name: str) -> tuple[Path, Path | None] | None:
    """A registered Keras model's source file and its custom-objects file (None without one),
    for readers outside the registry (the layer executor) that must not know its folder layout;
    None when no model of that name is registered.

    Raises:
        InputError: The model is registered but is not a Keras model.
    """
    folder = model_dir(name)
    if not (folder / RECORD).is_file():
        return None
    rec = get(name)
    if rec.kind != "keras":
        raise InputError(f"the layer executor needs a Keras model; this one is {rec.kind}",
                         value=name)
    return folder / rec.file, (folder / rec.custom_objects if rec.custom_objects else None)


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
        from ...profiles.store import error_from_validation

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
