"""Reading what a user brings to ``workbench models add``: the model file (a ``.keras`` file, a
SavedModel folder or a ``.tflite`` file) and the task data (``DATA.npz``), each checked so that a
mistake ends in one line naming the file and what is wrong.

What is read is checked before anything is spent on it: a file must be a regular file (a FIFO
would block the read, a device never end); a SavedModel folder holds only regular files and
folders, none a symlink or outside it (its files are copied into the registry, and a link would
copy whatever it points at); and archives are bounded by what they expand to (a ``.keras`` zip by
its members' uncompressed sizes and its compression ratio, a ``.npz`` by its arrays' headers,
shape x itemsize) before Keras or NumPy unpacks them. The path the user named is followed if it is
a symlink: that is their choice; links inside a SavedModel are not. Paths in messages go through
:func:`workbench.names.printable`, so a file name never puts escape codes on a terminal."""

from __future__ import annotations

import math
import os
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal, Sequence

import numpy as np

from ..errors import InputError
from ..names import printable

Kind = Literal["keras", "savedmodel", "tflite", "onnx"]

#: The most a model or data file may expand to once read: an archive's members uncompressed, a
#: ``.npz``'s arrays loaded, a SavedModel's files together. Far above any model profiled for a
#: phone, and it bounds what a crafted file can make us allocate.
MAX_EXPANDED_BYTES = 4 * 10**9
#: The most files an archive or a SavedModel folder may hold.
MAX_MEMBERS = 10_000
#: The most an archive may expand by (uncompressed / compressed), checked once it expands past
#: RATIO_FLOOR: deflate reaches ~1000-fold only on degenerate data such as a zip bomb's zeros.
MAX_RATIO = 200
RATIO_FLOOR = 64 * 10**6
_COPY_BLOCK = 1 << 20


def shown(path: object) -> str:
    """A user's path for a message: control characters escaped."""
    return printable(path)


def _size(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.1f} MB"


def _too_big(total: int, limit: int) -> str:
    return f"{_size(total)}, more than the {_size(limit)} limit"


def regular_file(path: Path, what: str) -> os.stat_result:
    """The stat of ``path`` (a symlink the user named is followed), or an InputError: missing,
    unreadable, not a regular file (a folder, FIFO, device or socket: nothing is opened, so
    nothing blocks), or larger than :data:`MAX_EXPANDED_BYTES`."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"no such {what}", file=shown(path)) from None
    except OSError as e:
        raise InputError(f"cannot read the {what}: {e.strerror or e}", file=shown(path)) from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO, device or socket"
        raise InputError(f"is {kind}, not a regular file: refusing to read it as a {what}",
                         file=shown(path))
    if st.st_size > MAX_EXPANDED_BYTES:
        raise InputError(f"the {what} is {_too_big(st.st_size, MAX_EXPANDED_BYTES)}",
                         file=shown(path))
    return st


def _open_regular(path: str | os.PathLike, *, file: object) -> int:
    """A read-only descriptor of a regular file: never through a symlink (O_NOFOLLOW) and never
    blocking on a FIFO (O_NONBLOCK; for a regular file it changes nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        if os.path.islink(path):
            raise InputError("is a symlink: refusing to copy what it points at",
                             file=shown(file)) from None
        raise InputError(f"cannot read it: {e.strerror or e}", file=shown(file)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError("is a FIFO, device or socket, not a regular file: refusing to copy it",
                         file=shown(file))
    return fd


def copy_file(src: str | os.PathLike, dst: str | os.PathLike, *,
              budget: int = MAX_EXPANDED_BYTES) -> int:
    """Copy one regular file (see :func:`_open_regular`), at most ``budget`` bytes; returns the
    bytes copied."""
    fd = _open_regular(src, file=src)
    n = 0
    with os.fdopen(fd, "rb") as fh, open(dst, "xb") as out:
        for block in iter(lambda: fh.read(_COPY_BLOCK), b""):
            n += len(block)
            if n > budget:
                raise InputError(f"grew while it was copied: more than the {_size(budget)} "
                                 "limit", file=shown(src))
            out.write(block)
    return n


def _entries(top: Path):
    """(path, lstat) of everything under ``top``, checked: regular files and folders only, none a
    symlink, none resolving outside ``top``, at most :data:`MAX_MEMBERS` of them."""
    base = os.path.realpath(top)
    stack, count = [base], 0
    while stack:
        folder = stack.pop()
        try:
            names = sorted(os.listdir(folder))
        except OSError as e:
            raise InputError(f"cannot read the folder: {e.strerror or e}",
                             file=shown(folder)) from None
        for name in names:
            p = os.path.join(folder, name)
            st = os.lstat(p)
            count += 1
            if count > MAX_MEMBERS:
                raise InputError(f"the SavedModel holds more than {MAX_MEMBERS} files",
                                 file=shown(top))
            if stat.S_ISLNK(st.st_mode):
                raise InputError("is a symlink: a SavedModel's files are copied into the "
                                 "registry, and a link would copy what it points at; replace "
                                 "it with the file itself", file=shown(p))
            if os.path.commonpath([base, os.path.realpath(p)]) != base:
                raise InputError("resolves outside the SavedModel folder", file=shown(p))
            if stat.S_ISDIR(st.st_mode):
                stack.append(p)
            elif not stat.S_ISREG(st.st_mode):
                raise InputError("is a FIFO, device or socket, not a regular file: a SavedModel "
                                 "holds files and folders only", file=shown(p))
            yield p, st


def check_tree(top: Path) -> int:
    """Check a SavedModel folder (see :func:`_entries`) and bound its files' total size (the
    ``variables/`` shards' sizes on disk are what loading them reads); returns the total."""
    total = sum(st.st_size for _, st in _entries(top) if stat.S_ISREG(st.st_mode))
    if total > MAX_EXPANDED_BYTES:
        raise InputError(f"its files add up to {_too_big(total, MAX_EXPANDED_BYTES)}",
                         file=shown(top))
    return total


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a SavedModel folder checked as :func:`check_tree` does, each file opened without
    following links, the total bounded."""
    base = os.path.realpath(src)
    os.mkdir(dst)
    budget = MAX_EXPANDED_BYTES
    for p, st in _entries(src):
        target = os.path.join(dst, os.path.relpath(p, base))
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(target)
        else:
            budget -= copy_file(p, target, budget=budget)


def check_archive(path: Path, what: str) -> list[zipfile.ZipInfo] | None:
    """Bound a zip archive (a ``.keras`` file, a ``.npz``) by its members' uncompressed sizes,
    their count and the compression ratio, before anything is extracted; None when it is not a
    zip (the reader then says what is wrong with it)."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return None
    if len(infos) > MAX_MEMBERS:
        raise InputError(f"the {what} holds {len(infos)} files, more than the {MAX_MEMBERS} "
                         "limit", file=shown(path))
    total = sum(i.file_size for i in infos)
    packed = sum(i.compress_size for i in infos)
    if total > MAX_EXPANDED_BYTES:
        raise InputError(f"the {what} expands to {_too_big(total, MAX_EXPANDED_BYTES)}",
                         file=shown(path))
    if total > RATIO_FLOOR and total > MAX_RATIO * max(packed, 1):
        raise InputError(f"the {what} expands {total / max(packed, 1):.0f}-fold "
                         f"({_size(packed)} to {_size(total)}), more than the {MAX_RATIO}-fold "
                         "limit for an archive", file=shown(path))
    return infos


def _check_npz(path: Path) -> None:
    """Bound a ``.npz`` by its arrays' loaded sizes, read from each ``.npy`` header (shape x
    itemsize) before any array is loaded; an array of Python objects (pickled) is refused."""
    infos = check_archive(path, "data file")
    if infos is None:
        with open(path, "rb") as fh:
            if fh.read(6) == b"\x93NUMPY":  # np.load would read one unbounded array
                raise InputError("is a single .npy array, not a .npz archive: save the data with "
                                 "np.savez(path, x=..., y=...)", file=shown(path))
        return  # np.load says what else is wrong with it
    total = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in infos:
                with zf.open(info) as fh:
                    if fh.read(6) != b"\x93NUMPY":
                        total += info.file_size  # np.load returns such a member's bytes
                        continue
                    read = (np.lib.format.read_array_header_1_0 if fh.read(2) == b"\x01\x00"
                            else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read(fh)
                if dtype.hasobject:
                    raise InputError("holds an array of Python objects (pickled): such data is "
                                     "never loaded; save plain numeric arrays",
                                     file=shown(path), where=shown(info.filename.removesuffix(".npy")))
                total += math.prod(shape) * dtype.itemsize
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise InputError(f"not a readable .npz archive: {first_line(exc)}",
                         file=shown(path)) from None
    if total > MAX_EXPANDED_BYTES:
        raise InputError(f"its arrays take {_too_big(total, MAX_EXPANDED_BYTES)} once loaded",
                         file=shown(path))


def check_model_file(path: Path, kind: Kind) -> None:
    """Everything about a model file or folder that can be checked before reading it."""
    if kind == "savedmodel":
        check_tree(path)
        return
    regular_file(path, "model file")
    if kind == "keras" and check_archive(path, "Keras file") is None:
        # Keras says "File not found" for a file that is there but is no zip.
        raise InputError("is not a .keras file (a .keras file is a zip archive holding "
                         "config.json; save the model with model.save('NAME.keras'))",
                         file=shown(path))


def parse_shape(text: str | Iterable[int] | None) -> tuple[int, ...] | None:
    """``"224,224,3"`` or ``"224x224x3"`` (without the batch) -> (224, 224, 3)."""
    if text is None:
        return None
    if isinstance(text, str):
        parts = [p for p in re.split(r"[,x\s]+", text.strip()) if p]
    else:
        parts = list(text)
    try:
        shape = tuple(int(p) for p in parts)
    except (TypeError, ValueError):
        raise InputError("an input shape is positive integers without the batch, e.g. 224,224,3",
                         where="input-shape", value=text) from None
    if not shape or any(d < 1 for d in shape):
        raise InputError("an input shape is positive integers without the batch, e.g. 224,224,3",
                         where="input-shape", value=text)
    return shape


def kind_of(path: Path) -> Kind:
    if path.is_dir():
        if (path / "saved_model.pb").is_file():
            return "savedmodel"
        raise InputError("a folder must be a TensorFlow SavedModel (it has no saved_model.pb)",
                         file=shown(path))
    suffix = path.suffix.lower()
    if suffix == ".keras":
        return "keras"
    if suffix == ".tflite":
        return "tflite"
    if suffix == ".onnx":
        return "onnx"
    if suffix in (".h5", ".hdf5"):
        raise InputError("legacy HDF5 Keras files are not read: load it with Keras and "
                         "`model.save('model.keras')`", file=shown(path))
    raise InputError("unknown model file: expected a .keras file, a SavedModel folder, a "
                     ".tflite file or a .onnx file", file=shown(path))


def litert_reason(exc: BaseException, *, xnnpack: bool = True) -> str:
    """Why LiteRT could not run a model, in one line: a custom op by name (LiteRT's own text
    points at a web page and a node number), else LiteRT's first 300 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    op = re.search(r"custom op:? ?'?([A-Za-z0-9_]+)", text, re.I)
    if op:
        how = "without XNNPACK" if not xnnpack else "(no kernel for it is registered)"
        return f"the graph uses the custom op {op.group(1)}, which LiteRT here cannot run {how}"
    return text[:300]


def first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def _dims(shape) -> list[int | None]:
    return [None if d is None else int(d) for d in list(shape)[1:]]


def _fixed(dims: Sequence[int | None], given: tuple[int, ...] | None, path: Path) -> tuple[int, ...]:
    if given is not None:
        if len(given) != len(dims) or any(d is not None and d != g for d, g in zip(dims, given)):
            raise InputError(f"--input-shape {','.join(map(str, given))} does not fit the model's "
                             f"input {_show(dims)}", file=shown(path))
        return given
    if any(d is None for d in dims):
        raise InputError(f"the model's input {_show(dims)} has free dimensions: give them with "
                         "--input-shape (without the batch)", file=shown(path))
    return tuple(int(d) for d in dims)  # type: ignore[arg-type]


def _show(dims) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"


@dataclass(frozen=True)
class Output:
    """One output of a model: the name a user knows it by (a Keras output's name, a
    SavedModel's signature key, a .tflite tensor's name), the serving-signature key that finds
    it again in a converted .tflite (None for a .tflite file: its tensor name does), and its
    shape without the batch (None: a free dimension)."""

    name: str
    key: str | None
    shape: tuple[int | None, ...]


def check_feeds(feeds: dict[str, float], others: dict[str, str], path: Path,
                data: str | None = None) -> None:
    """``--feed`` values against the inputs the data does not feed (name -> numpy dtype): each
    must name one, and fit its type. ``data``: the input the data feeds."""
    for name, value in feeds.items():
        if name == data:
            raise InputError(f"{name!r} is the input the data feeds; --feed sets the other "
                             "inputs: " + (", ".join(sorted(others)) or "none"),
                             file=shown(path), where="--feed", value=name)
        if name not in others:
            raise InputError("no input of that name; the inputs --feed can set: "
                             + (", ".join(sorted(others)) or "none (the model has one input)"),
                             file=shown(path), where="--feed", value=name)
        dtype = np.dtype(others[name])
        info = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype) \
            if dtype.kind == "f" else None
        if info is not None and (dtype.kind in "iu" and value != int(value)
                                 or not info.min <= value <= info.max):
            span = (f"{int(info.min)}..{int(info.max)}" if dtype.kind in "iu"
                    else f"{info.min:g}..{info.max:g}")
            raise InputError(f"input {name!r} is {dtype}: the value must be "
                             + ("a whole number " if dtype.kind in "iu" else "")
                             + f"in {span}", file=shown(path),
                             where="--feed", value=f"{name}={value:g}")


def _default_of(dtype: str) -> str:
    # workbench.runtime.interpreter.placeholder's rule, in words.
    return "ones (integer: 0 is usually padding)" if np.dtype(dtype).kind in "iu" else "zeros"


def feed_note(data: str, others: Sequence[tuple[str, tuple, str]], feeds: dict[str, float], *,
              which: str = "the first input") -> str:
    """What ``models add`` says of a model with several inputs: which takes the data, and what
    every other one (name, dims, dtype) gets at every run."""
    fed = [f"{n!r} {feeds[n]:g}" for n, _, _ in others if n in feeds]
    rest = [f"{n!r} {tuple(d)} gets {_default_of(t)}" for n, d, t in others if n not in feeds]
    return (f"the data feeds {which} {data!r}; at every run " + "; ".join(
        ([f"{', '.join(fed)} (--feed)"] if fed else [])
        + ([f"{', '.join(rest)} (a recurrent state starts from zeros; --feed NAME=NUMBER sets "
            "a value)"] if rest else [])))


def _other_inputs(specs: Sequence[tuple[str, Sequence[int | None], str]], feeds: dict[str, float],
                  path: Path, which: str = "the first input") -> tuple[dict, list[str]]:
    """The input plan of a LiteRT-format model with several inputs, and the note saying it.
    ``specs``: (name, dims without the batch, dtype) per input, the data's first. The other
    inputs need fixed dimensions: only the data's are given (--input-shape)."""
    check_feeds(feeds, {n: d for n, _, d in specs[1:]}, path, specs[0][0])
    for name, dims, _ in specs[1:]:
        if any(d is None for d in dims):
            raise InputError(f"input {name!r} {_show(dims)} has free dimensions: --input-shape "
                             "fixes only the first input's (the one the data feeds); save the "
                             "model with the others fixed", file=shown(path))
    plan = {"data": specs[0][0], "feeds": dict(feeds)}
    return plan, [feed_note(specs[0][0], [(n, tuple(d), t) for n, d, t in specs[1:]], feeds,
                            which=which)]


def choose_output(outputs: Sequence[Output], chosen: str | int | None, path: Path) -> int:
    """The index of the output the metric reads: ``chosen`` is an index or a name (default:
    the first). An unknown one is an InputError listing every output."""
    listing = "; ".join(f"{k} {o.name!r} {_show(o.shape)}" for k, o in enumerate(outputs))
    if chosen is None:
        return 0
    text = str(chosen).strip()
    if text.isdigit() and int(text) < len(outputs):
        return int(text)
    hits = [k for k, o in enumerate(outputs) if text in (o.name, o.key)]
    if len(hits) == 1:
        return hits[0]
    raise InputError(f"--output {text!r} is none of the model's outputs ({listing})",
                     file=shown(path), where="output", value=chosen)


def custom_objects(path: Path) -> dict[str, object]:
    """Import a user's Python file of custom layers (``--custom-objects FILE.py``) and return
    the classes and functions it defines. Running it is the user's choice, as running their
    model code would be; classes it registers with ``keras.saving.register_keras_serializable``
    are found by Keras either way."""
    import hashlib
    import importlib.util
    import sys

    regular_file(path, "custom objects file")
    if path.suffix != ".py":
        raise InputError("a custom objects file is a Python file (.py) defining the model's "
                         "custom layers", file=shown(path))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    name = f"workbench_custom_{digest}"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise InputError("cannot import it as a Python file", file=shown(path))
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except Exception as exc:  # noqa: BLE001 - the user's code may raise anything
            raise InputError(f"importing it failed: {type(exc).__name__}: {first_line(exc)}",
                             file=shown(path)) from None
        sys.modules[name] = mod
    return {k: v for k, v in vars(mod).items()
            if callable(v) and getattr(v, "__module__", None) == name}


def load_keras(path: Path, custom: Path | None = None):
    """A .keras file loaded in Keras's safe mode (no arbitrary code from the file itself), with
    the user's custom objects file imported first; a class Keras cannot find is named in one
    line (Keras's own message carries the whole model config)."""
    from .tf import keras as _keras
    from .tf import quiet as _quiet

    keras = _keras()
    objects = custom_objects(custom) if custom is not None else None
    try:
        with _quiet():
            return keras.models.load_model(path, compile=False, safe_mode=True,
                                           custom_objects=objects)
    except Exception as exc:  # noqa: BLE001 - Keras raises many kinds for a bad file
        text = " ".join(str(exc).split())
        missing = re.search(r"Could not locate (class|function) '([^']+)'", text)
        if missing:
            hint = ("the file given with --custom-objects does not define it" if custom else
                    "give the Python file that defines it with --custom-objects FILE.py")
            raise InputError(f"cannot read it as a Keras model: Could not locate "
                             f"{missing.group(1)} '{missing.group(2)}': {hint}",
                             file=shown(path)) from None
        raise InputError(f"cannot read it as a Keras model: {first_line(exc)}",
                         file=shown(path)) from None


def _inspect_keras(path: Path, shape: tuple[int, ...] | None, custom: Path | None = None,
                   feeds: dict[str, float] | None = None):
    """Load a .keras file: (a model with fixed inputs, the first input's shape and dtype, the
    outputs, notes, the input plan of a model with several inputs or None)."""
    from .tf import keras as _keras

    keras = _keras()
    model = load_keras(path, custom)
    try:
        inputs = model.inputs
    except (AttributeError, ValueError):
        inputs = None
    if not inputs:
        if shape is None:
            raise InputError("the model has never been built, so its input shape is unknown: "
                             "give it with --input-shape", file=shown(path))
        inp = keras.Input(shape)
        try:
            model = keras.Model(inp, model(inp))
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"the model does not take inputs of shape {shape}: "
                             f"{first_line(exc)}", file=shown(path)) from None
        inputs = model.inputs
    dims = _dims(inputs[0].shape)
    fixed = _fixed(dims, shape, path)
    dtype = str(np.dtype(inputs[0].dtype))
    plan: dict | None = None
    notes: list[str] = []
    if len(inputs) > 1:
        # The data feeds the first input; model.export() keys the signature by input name.
        plan, notes = _other_inputs([(str(i.name), _dims(i.shape), str(np.dtype(i.dtype)))
                                     for i in inputs], feeds or {}, path)
        plan["data"] = str(inputs[0].name)
    if tuple(dims) != fixed:
        new_in = [keras.Input(fixed, dtype=dtype, name=inputs[0].name)] + [
            keras.Input(tuple(_dims(i.shape)), dtype=i.dtype, name=i.name) for i in inputs[1:]]
        model = keras.Model(new_in if len(new_in) > 1 else new_in[0],
                            model(new_in if len(new_in) > 1 else new_in[0]), name=model.name)
    model, more = _unrolled(model, keras, path)
    notes += more
    if isinstance(getattr(model, "output", None), dict):
        # Outputs given as a dict: model.export() keys the signature by the dict's keys (and
        # output_names sorts them, unlike model.outputs, so the two do not pair up).
        outs = [Output(str(k), str(k), tuple(_dims(t.shape))) for k, t in model.output.items()]
        return model, fixed, dtype, outs, notes, plan
    names = list(getattr(model, "output_names", None) or [])
    if len(names) != len(model.outputs):
        names = [getattr(o, "name", f"output_{k}") for k, o in enumerate(model.outputs)]
    # model.export() names the serving signature's outputs output_0, output_1, ... in order.
    outs = [Output(str(n), f"output_{k}", tuple(_dims(o.shape)))
            for k, (n, o) in enumerate(zip(names, model.outputs))]
    return model, fixed, dtype, outs, notes, plan


def _unrolled(model, keras, path: Path):
    """The model with its recurrent layers (LSTM, GRU, SimpleRNN, also inside Bidirectional)
    rebuilt with ``unroll=True``: at the fixed sequence length the loop becomes plain ops, which
    the TFLite converter turns into builtin ops for all five schemes. A recurrent layer kept as
    a loop converts to TensorList ops whose shapes are dynamic, which it refuses (or, for the
    int8 schemes, whose calibration crashed the process here). The weights are copied; the
    rebuilt model computes the same function (models add checks LiteRT's FP32 against Keras)."""
    RNN, Bi = keras.layers.RNN, keras.layers.Bidirectional
    rolled = [layer.name for layer in model._flatten_layers(include_self=False)
              if (isinstance(layer, RNN) and not layer.unroll)
              or (isinstance(layer, Bi) and not layer.forward_layer.unroll)]
    if not rolled:
        return model, []

    def clone(layer):
        cfg = layer.get_config()
        if isinstance(layer, RNN):
            cfg["unroll"] = True
        elif isinstance(layer, Bi):
            for key in ("layer", "backward_layer"):
                if cfg.get(key):
                    cfg[key]["config"]["unroll"] = True
        return layer.__class__.from_config(cfg)

    try:
        new = keras.models.clone_model(model, clone_function=clone)
        new.set_weights(model.get_weights())
    except Exception as exc:  # noqa: BLE001 - a model clone_model cannot rebuild stays rolled
        return model, [f"recurrent layers ({', '.join(rolled)}) could not be unrolled "
                       f"({first_line(exc)[:120]}); the converter may refuse them"]
    left = [layer.name for layer in new._flatten_layers(include_self=False)
            if isinstance(layer, RNN) and not layer.unroll]
    note = (f"recurrent layers {', '.join(rolled)} unrolled over the fixed sequence length "
            f"(unroll=True) so that they convert with builtin ops")
    if left:  # inside a nested model clone_model does not reach
        note += f"; {', '.join(left)} inside a nested model stayed a loop"
    return new, [note]


def _inspect_savedmodel(path: Path, shape: tuple[int, ...] | None,
                        feeds: dict[str, float] | None = None):
    from .tf import keras as _keras
    from .tf import quiet as _quiet

    _keras()
    import tensorflow as tf

    try:
        with _quiet():
            loaded = tf.saved_model.load(str(path))
        sig = loaded.signatures["serving_default"]
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"cannot read it as a SavedModel with a serving_default signature: "
                         f"{first_line(exc)}", file=shown(path)) from None
    by_key = sig.structured_input_signature[1]
    ins = list(by_key.values())
    plan: dict | None = None
    notes: list[str] = []
    if len(ins) > 1:  # the data feeds the signature's first input
        plan, notes = _other_inputs([(str(k), _dims(t.shape), t.dtype.name)
                                     for k, t in by_key.items()], feeds or {}, path)
    dims = _dims(ins[0].shape)
    if any(d is None for d in dims):
        raise InputError(f"the SavedModel's input {_show(dims)} has free dimensions: save it with "
                         "a fixed input shape (or add the Keras model with --input-shape)",
                         file=shown(path))
    fixed = _fixed(dims, shape, path)
    outs = [Output(str(k), str(k), tuple(_dims(t.shape)))
            for k, t in sorted(sig.structured_outputs.items())]
    return None, fixed, ins[0].dtype.name, outs, notes, plan


def _inspect_tflite(path: Path, shape: tuple[int, ...] | None,
                   feeds: dict[str, float] | None = None,
                   data_shape: tuple[int, ...] | None = None):
    from ..runtime.interpreter import input_names, open_interpreter

    try:
        it = open_interpreter(path)
        it.allocate_tensors()
    except Exception as exc:  # noqa: BLE001 - LiteRT raises ValueError/RuntimeError
        raise InputError(f"LiteRT cannot run it: {litert_reason(exc)}",
                         file=shown(path)) from None
    ins, outs = it.get_input_details(), it.get_output_details()
    plan: dict | None = None
    notes: list[str] = []
    if len(ins) > 1:
        # The converter lists inputs in its own order (not the source's): the data feeds the
        # input its x fits (the first such), else the first listed (or the one the file's own
        # plan names). Inputs go by signature key where the file has one signature.
        names = input_names(it)
        fit_all = [d for d in ins if data_shape is not None
                   and tuple(int(v) for v in d["shape"][1:]) == tuple(data_shape)]
        # Of several that x fits, one a --feed sets is not the data's.
        fits = [d for d in fit_all if names[d["index"]] not in (feeds or {})] or fit_all
        which = "the first input"
        if fits and fits[0] is not ins[0]:
            ins = [fits[0], *(d for d in ins if d is not fits[0])]
            which = "the input its x fits,"
        plan, notes = _other_inputs([(names[d["index"]], [int(x) for x in d["shape"][1:]],
                                      np.dtype(d["dtype"]).name) for d in ins], feeds or {}, path,
                                    which)
        if len(fit_all) > 1:
            notes.append(f"x fits {len(fit_all)} inputs ("
                         + ", ".join(repr(names[d["index"]]) for d in fit_all)
                         + "); a .tflite file does not keep the source's input order: to send "
                         "the data to another, --feed the one it should not go to")
    dims = [int(d) for d in ins[0]["shape"][1:]]
    _fixed(dims, shape, path)
    dtype = np.dtype(ins[0]["dtype"])
    if dtype.kind in "iu" and ins[0]["quantization"][0]:
        dtype = np.dtype(np.float32)  # a quantised input takes float samples (scaled for it)
    sigs = it.get_signature_list() or {}
    if len(sigs) == 1:
        # A converted model keeps its signature: its output keys are the names its author
        # knows, in the source's order (the tensors themselves may be reordered).
        runner = it.get_signature_runner(next(iter(sigs)))
        det = runner.get_output_details()
        if len(det) == len(outs):
            return None, tuple(dims), str(dtype), [
                Output(str(k), str(k), tuple(int(d) for d in o["shape"][1:]))
                for k, o in det.items()], notes, plan
    return None, tuple(dims), str(dtype), [
        Output(str(o["name"]), None, tuple(int(d) for d in o["shape"][1:])) for o in outs], \
        notes, plan


def _inspect_onnx(path: Path, shape: tuple[int, ...] | None, feeds: dict[str, float]):
    """(None, the first input's fixed shape without the batch, its dtype, the outputs, notes)
    of an ONNX file, as :func:`workbench.host.intake.inspect_model` returns them; ``shape`` fixes
    the first input's free dimensions. onnxruntime must be able to open it."""
    from ..runtime.interpreter import open_interpreter
    from .onnxgraph import ELEMENT_TYPES, dims_of, external_data, graph_inputs, load

    external = external_data(path)
    if external:
        raise InputError(f"stores its weights in separate files ({external}), which the registry "
                         "does not copy: save it as one file (torch.onnx.export(..., "
                         "external_data=False), or onnx.save(model, path, "
                         "save_as_external_data=False))", file=shown(path))
    model = load(path)
    ins = graph_inputs(model)
    if not ins:
        raise InputError("the ONNX model has no inputs", file=shown(path))
    dims0 = dims_of(ins[0])
    if not dims0:
        raise InputError(f"the first input {ins[0].name!r} is a scalar: the workbench feeds "
                         "samples along a batch dimension", file=shown(path))
    elem = ins[0].type.tensor_type.elem_type
    if elem not in ELEMENT_TYPES:
        raise InputError(f"the first input {ins[0].name!r} has ONNX element type {elem}, which "
                         "the workbench does not feed", file=shown(path))
    fixed = _fixed([d if isinstance(d, int) else None for d in dims0[1:]], shape, path)
    def dtype_of(i) -> str:
        return np.dtype(ELEMENT_TYPES.get(i.type.tensor_type.elem_type, "float32")).name

    check_feeds(feeds, {i.name: dtype_of(i) for i in ins[1:]}, path, ins[0].name)
    try:
        open_interpreter(path)
    except ImportError as exc:
        raise InputError(str(exc), file=shown(path)) from None
    except Exception as exc:  # noqa: BLE001 - onnxruntime's own error types
        raise InputError(f"onnxruntime cannot open it: {first_line(exc)}",
                         file=shown(path)) from None
    outs = [Output(o.name, None, tuple(d if isinstance(d, int) else None for d in dims_of(o)[1:]))
            for o in model.graph.output]
    notes = [feed_note(ins[0].name, [(i.name, tuple(dims_of(i)), dtype_of(i)) for i in ins[1:]],
                       feeds)] if len(ins) > 1 else []
    # The plan of an ONNX model travels in its variants' ONNX metadata (workbench.runtime.ort).
    return None, fixed, ELEMENT_TYPES[elem], outs, notes, None


def load_npz(path: Path) -> dict[str, np.ndarray]:
    regular_file(path, "data file")
    _check_npz(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k]) for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"not a readable .npz archive: {first_line(exc)}", file=shown(path)) from None
    unknown = sorted(set(arrays) - {"x", "y", "x_calib"})
    if unknown:
        raise InputError("unknown array; a data file holds x, y and optionally x_calib", file=shown(path),
                         where=shown(unknown[0]))
    if "x" not in arrays:
        raise InputError("the data file has no 'x' array (the evaluation inputs)", file=shown(path))
    return arrays


def check_data(path: Path, arrays: dict[str, np.ndarray], *, input_shape: tuple[int, ...],
               input_dtype: str, output_shape: list[int], metric: str | None) -> str:
    """Check task data against the model; returns the metric (the given one, or the one the
    labels imply). Every mismatch is an InputError naming the file and the array."""
    int_input = np.dtype(input_dtype).kind in "iu"
    for key in ("x", "x_calib"):
        if key not in arrays:
            continue
        a = arrays[key]
        if a.ndim < 1 or len(a) == 0:
            raise InputError("holds no samples", file=shown(path), where=key)
        if tuple(a.shape[1:]) != tuple(input_shape):
            raise InputError(f"samples of shape {tuple(a.shape[1:])}; the model takes "
                             f"{tuple(input_shape)} (without the batch)", file=shown(path), where=key)
        if a.dtype.kind not in "iufb":
            raise InputError(f"dtype {a.dtype} is not numeric", file=shown(path), where=key)
        if int_input and a.dtype.kind == "f" and not np.all(np.isfinite(a) & (a == np.round(a))):
            raise InputError("the model takes integer inputs (e.g. token ids) but these are not "
                             "integers", file=shown(path), where=key)
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise InputError("contains NaN or infinity", file=shown(path), where=key)
    from .. import taskmetrics

    x, y = arrays["x"], arrays.get("y")
    if metric is not None and not taskmetrics.get(metric).relative and y is None:
        raise InputError(f"metric {metric} needs labels: the data file has no 'y' array",
                         file=shown(path))
    if y is None:
        return metric or "agreement"
    if len(y) != len(x):
        raise InputError(f"{len(y)} labels for {len(x)} samples of x", file=shown(path), where="y")
    if y.dtype.kind not in "iufb":
        raise InputError(f"dtype {y.dtype} is not numeric", file=shown(path), where="y")
    n_out = int(np.prod(output_shape)) if output_shape else 1
    integral = y.dtype.kind in "iub" or (y.dtype.kind == "f" and np.all(np.isfinite(y))
                                         and np.all(y == np.round(y)))
    per_pixel = (y.ndim == 3 and integral and len(output_shape) >= 2
                 and tuple(output_shape[:2]) == tuple(y.shape[1:])
                 and (len(output_shape) == 2 or len(output_shape) == 3))
    # Integer labels shaped (N, H, W) for an image-shaped output are meant per pixel even when
    # H, W do not fit (the miou check then says so), not regression targets.
    looks_per_pixel = y.ndim == 3 and integral and len(output_shape) in (2, 3)
    if metric is None:
        metric = ("miou" if per_pixel or looks_per_pixel else
                  "accuracy" if integral and y.reshape(len(y), -1).shape[1] == 1
                  and (n_out > 1 or set(np.unique(y)) <= {0, 1}) else "mae")
    kind = taskmetrics.get(metric).labels
    if kind == "class":
        flat = y.reshape(len(y), -1)
        if flat.shape[1] != 1 or not integral:
            raise InputError(f"{metric} needs one integer class index per sample; y has shape "
                             f"{tuple(y.shape)}", file=shown(path), where="y")
        if metric == "top5" and n_out <= 5:
            raise InputError(f"top5 needs more than 5 class outputs; the model has {n_out} "
                             "(every label would be in the top five)", file=shown(path),
                             where="metric")
        labels = flat[:, 0].astype(np.int64)
        top = 1 if n_out == 1 else n_out - 1
        bad = labels[(labels < 0) | (labels > top)]
        if bad.size:
            raise InputError(f"labels must be class indices 0..{top} for the output's {n_out} "
                             f"value{'s' if n_out > 1 else ''}; {bad.size} of {len(labels)} are "
                             f"not (first {int(bad[0])}, range {int(labels.min())}.."
                             f"{int(labels.max())})", file=shown(path), where="y")
    elif kind == "pixels":
        if not per_pixel:
            raise InputError(f"{metric} needs one integer class index per output pixel, y shaped "
                             f"(N, H, W) for outputs (H, W) or (H, W, C); y has shape "
                             f"{tuple(y.shape)} and the model outputs {tuple(output_shape)}",
                             file=shown(path), where="y")
        classes = 2 if len(output_shape) == 2 or output_shape[2] == 1 else output_shape[2]
        labels = y.astype(np.int64)
        bad = labels[(labels < 0) | (labels >= classes)]
        if bad.size:
            raise InputError(f"pixel labels must be class indices 0..{classes - 1} for the "
                             f"output's {classes} classes; {bad.size} pixels are not (first "
                             f"{int(bad[0])}, range {int(labels.min())}..{int(labels.max())})",
                             file=shown(path), where="y")
    elif kind == "values":
        if y.reshape(len(y), -1).shape[1] != n_out:
            raise InputError(f"{metric} needs {n_out} target value(s) per sample (the model's "
                             f"outputs); y has shape {tuple(y.shape)}", file=shown(path), where="y")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise InputError("contains NaN or infinity", file=shown(path), where="y")
    return metric


def parse_feeds(feeds) -> dict[str, float]:
    """``["sr=16000"]`` or ``{"sr": 16000}`` -> ``{"sr": 16000.0}``; a malformed entry or a
    value that is no finite number is an InputError naming it."""
    if not feeds:
        return {}
    items = [(k, v, f"{k}={v}") for k, v in feeds.items()] if isinstance(feeds, dict) else [
        (*str(f).partition("=")[::2], str(f)) for f in feeds]
    out: dict[str, float] = {}
    for name, value, typed in items:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = None
        if not name or number is None or name in out:
            raise InputError("a feed is INPUT=NUMBER, each input once, e.g. --feed sr=16000",
                             where="--feed", value=typed)
        if not math.isfinite(number):
            raise InputError("a feed's value must be a finite number", where="--feed",
                             value=typed)
        out[str(name)] = number
    return out


def inspect_model(path: Path, kind: Kind, shape: tuple[int, ...] | None,
                  custom: Path | None = None, feeds: dict[str, float] | None = None,
                  data_shape: tuple[int, ...] | None = None):
    """(the Keras model or None, the fixed input shape, input dtype, its outputs, notes on what
    was changed to convert it, the input plan of a LiteRT-format model with several inputs or
    None) of a model file; ``shape`` fixes the first input's free dimensions. A model with
    several inputs is fed its data through the first (a .tflite file's inputs, which the
    converter reorders: the one ``data_shape``, the data's x without the batch, fits);
    ``feeds`` sets the others (by name), which otherwise get zeros (ones if integer)."""
    check_model_file(path, kind)
    if custom is not None and kind != "keras":
        raise InputError("--custom-objects is for .keras models (a SavedModel, .tflite or .onnx "
                         "file carries its own code)", file=shown(custom))
    if kind == "keras":
        found = _inspect_keras(path, shape, custom, feeds)
    elif kind == "onnx":
        found = _inspect_onnx(path, shape, feeds or {})
    else:
        found = (_inspect_savedmodel(path, shape, feeds) if kind == "savedmodel" else
                 _inspect_tflite(path, shape, feeds, data_shape))
    if feeds and found[5] is None and kind != "onnx":
        raise InputError("--feed is for models with several inputs (it sets an input the data "
                         "does not feed); this one has one", where="--feed",
                         value=next(iter(feeds)))
    return found
