"""Reading what a user brings to ``workbench models add``: the model file (a ``.keras`` file, a
SavedModel folder or a ``.tflite`` file) and the task data (``DATA.npz``), each checked so that a
mistake ends in one line naming the file and what is wrong."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Iterable, Literal, Sequence

import numpy as np

from ..errors import InputError

Kind = Literal["keras", "savedmodel", "tflite"]


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
                         file=path)
    suffix = path.suffix.lower()
    if suffix == ".keras":
        return "keras"
    if suffix == ".tflite":
        return "tflite"
    if suffix == ".onnx":
        raise InputError("ONNX models cannot be converted here (no offline ONNX->TFLite "
                         "converter is installed): export the model to Keras or a SavedModel, or "
                         "convert it to .tflite, and add that", file=path)
    if suffix in (".h5", ".hdf5"):
        raise InputError("legacy HDF5 Keras files are not read: load it with Keras and "
                         "`model.save('model.keras')`", file=path)
    raise InputError("unknown model file: expected a .keras file, a SavedModel folder or a "
                     ".tflite file", file=path)


def first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def _dims(shape) -> list[int | None]:
    return [None if d is None else int(d) for d in list(shape)[1:]]


def _fixed(dims: Sequence[int | None], given: tuple[int, ...] | None, path: Path) -> tuple[int, ...]:
    if given is not None:
        if len(given) != len(dims) or any(d is not None and d != g for d, g in zip(dims, given)):
            raise InputError(f"--input-shape {','.join(map(str, given))} does not fit the model's "
                             f"input {_show(dims)}", file=path)
        return given
    if any(d is None for d in dims):
        raise InputError(f"the model's input {_show(dims)} has free dimensions: give them with "
                         "--input-shape (without the batch)", file=path)
    return tuple(int(d) for d in dims)  # type: ignore[arg-type]


def _show(dims) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"


def _inspect_keras(path: Path, shape: tuple[int, ...] | None):
    """Load a .keras file: (a model with one fixed input, input shape, dtype, output shape)."""
    from .quantise import _quiet
    from .tf import keras as _keras

    keras = _keras()
    try:
        with _quiet():
            model = keras.models.load_model(path, compile=False)
    except Exception as exc:  # noqa: BLE001 - Keras raises many kinds for a bad file
        raise InputError(f"cannot read it as a Keras model: {first_line(exc)}", file=path) \
            from None
    try:
        inputs, outputs = model.inputs, model.outputs
    except (AttributeError, ValueError):
        inputs = outputs = None
    if not inputs:
        if shape is None:
            raise InputError("the model has never been built, so its input shape is unknown: "
                             "give it with --input-shape", file=path)
        inp = keras.Input(shape)
        try:
            model = keras.Model(inp, model(inp))
        except Exception as exc:  # noqa: BLE001
            raise InputError(f"the model does not take inputs of shape {shape}: "
                             f"{first_line(exc)}", file=path) from None
        inputs, outputs = model.inputs, model.outputs
    if len(inputs) != 1 or len(outputs) != 1:
        raise InputError(f"the model has {len(inputs)} inputs and {len(outputs)} outputs; the "
                         "workbench profiles models with one input and one output", file=path)
    dims = _dims(inputs[0].shape)
    fixed = _fixed(dims, shape, path)
    dtype = str(np.dtype(inputs[0].dtype))
    if tuple(dims) != fixed:
        inp = keras.Input(fixed, dtype=dtype)
        model = keras.Model(inp, model(inp), name=model.name)
    out_dims = _dims(model.outputs[0].shape)
    if any(d is None for d in out_dims):
        raise InputError(f"the model's output {_show(out_dims)} has free dimensions", file=path)
    return model, fixed, dtype, [int(d) for d in out_dims]  # type: ignore[arg-type]


def _inspect_savedmodel(path: Path, shape: tuple[int, ...] | None):
    from .quantise import _quiet
    from .tf import keras as _keras

    _keras()
    import tensorflow as tf

    try:
        with _quiet():
            loaded = tf.saved_model.load(str(path))
        sig = loaded.signatures["serving_default"]
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"cannot read it as a SavedModel with a serving_default signature: "
                         f"{first_line(exc)}", file=path) from None
    ins = list(sig.structured_input_signature[1].values())
    outs = list(sig.structured_outputs.values())
    if len(ins) != 1 or len(outs) != 1:
        raise InputError(f"the model has {len(ins)} inputs and {len(outs)} outputs; the "
                         "workbench profiles models with one input and one output", file=path)
    dims = _dims(ins[0].shape)
    if any(d is None for d in dims):
        raise InputError(f"the SavedModel's input {_show(dims)} has free dimensions: save it with "
                         "a fixed input shape (or add the Keras model with --input-shape)",
                         file=path)
    fixed = _fixed(dims, shape, path)
    out_dims = _dims(outs[0].shape)
    if any(d is None for d in out_dims):
        raise InputError(f"the SavedModel's output {_show(out_dims)} has free dimensions", file=path)
    return None, fixed, ins[0].dtype.name, [int(d or 0) for d in out_dims]


def _inspect_tflite(path: Path, shape: tuple[int, ...] | None):
    from ..runtime.interpreter import open_interpreter

    try:
        it = open_interpreter(path)
        it.allocate_tensors()
    except Exception as exc:  # noqa: BLE001 - LiteRT raises ValueError/RuntimeError
        raise InputError(f"LiteRT cannot read it as a .tflite model: {first_line(exc)}",
                         file=path) from None
    ins, outs = it.get_input_details(), it.get_output_details()
    if len(ins) != 1 or len(outs) != 1:
        raise InputError(f"the model has {len(ins)} inputs and {len(outs)} outputs; the "
                         "workbench profiles models with one input and one output", file=path)
    dims = [int(d) for d in ins[0]["shape"][1:]]
    _fixed(dims, shape, path)
    dtype = np.dtype(ins[0]["dtype"])
    if dtype.kind in "iu" and ins[0]["quantization"][0]:
        dtype = np.dtype(np.float32)  # a quantised input takes float samples (scaled for it)
    return None, tuple(dims), str(dtype), [int(d) for d in outs[0]["shape"][1:]]


def load_npz(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise InputError("no such data file", file=path)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k]) for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"not a readable .npz archive: {first_line(exc)}", file=path) from None
    unknown = sorted(set(arrays) - {"x", "y", "x_calib"})
    if unknown:
        raise InputError("unknown array; a data file holds x, y and optionally x_calib", file=path,
                         where=unknown[0])
    if "x" not in arrays:
        raise InputError("the data file has no 'x' array (the evaluation inputs)", file=path)
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
            raise InputError("holds no samples", file=path, where=key)
        if tuple(a.shape[1:]) != tuple(input_shape):
            raise InputError(f"samples of shape {tuple(a.shape[1:])}; the model takes "
                             f"{tuple(input_shape)} (without the batch)", file=path, where=key)
        if a.dtype.kind not in "iufb":
            raise InputError(f"dtype {a.dtype} is not numeric", file=path, where=key)
        if int_input and a.dtype.kind == "f" and not np.all(np.isfinite(a) & (a == np.round(a))):
            raise InputError("the model takes integer inputs (e.g. token ids) but these are not "
                             "integers", file=path, where=key)
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise InputError("contains NaN or infinity", file=path, where=key)
    x, y = arrays["x"], arrays.get("y")
    if metric in ("accuracy", "mae") and y is None:
        raise InputError(f"metric {metric} needs labels: the data file has no 'y' array",
                         file=path)
    if y is None:
        return metric or "agreement"
    if len(y) != len(x):
        raise InputError(f"{len(y)} labels for {len(x)} samples of x", file=path, where="y")
    n_out = int(np.prod(output_shape)) if output_shape else 1
    integral = y.dtype.kind in "iub" or (y.dtype.kind == "f" and np.all(np.isfinite(y))
                                         and np.all(y == np.round(y)))
    metric = metric or ("accuracy" if integral and (n_out > 1 or set(np.unique(y)) <= {0, 1})
                        else "mae")
    if metric == "accuracy":
        flat = y.reshape(len(y), -1)
        if flat.shape[1] != 1 or not integral:
            raise InputError("accuracy needs one integer class index per sample", file=path,
                             where="y")
        labels = flat[:, 0].astype(np.int64)
        top = 1 if n_out == 1 else n_out - 1
        bad = labels[(labels < 0) | (labels > top)]
        if bad.size:
            raise InputError(f"labels must be class indices 0..{top} for the model's {n_out} "
                             f"output{'s' if n_out > 1 else ''}; found {int(bad[0])}", file=path,
                             where="y")
    elif metric == "mae":
        if y.dtype.kind not in "iuf" or y.reshape(len(y), -1).shape[1] != n_out:
            raise InputError(f"mae needs {n_out} target value(s) per sample (the model's outputs); "
                             f"y has shape {tuple(y.shape)}", file=path, where="y")
    return metric


def inspect_model(path: Path, kind: Kind, shape: tuple[int, ...] | None):
    """(the Keras model or None, the fixed input shape, input dtype, output shape) of a model file;
    ``shape`` fixes free input dimensions."""
    return {"keras": _inspect_keras, "savedmodel": _inspect_savedmodel,
            "tflite": _inspect_tflite}[kind](path, shape)
