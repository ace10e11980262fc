"""Which format a model file is, and reading each (``.keras``, SavedModel, ``.tflite``, ONNX) into
what the registry records: the fixed input, its dtype, the outputs, notes and the input plan."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import numpy as np

from ...errors import InputError
from .files import check_archive, check_tree, first_line, regular_file, shown
from .keras_models import _inspect_keras
from .signature import Output, _dims, _fixed, _other_inputs, _show, check_feeds, feed_note

Kind = Literal["keras", "savedmodel", "tflite", "onnx"]


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


def _inspect_savedmodel(path: Path, shape: tuple[int, ...] | None,
                        feeds: dict[str, float] | None = None):
    from ..tf import keras as _keras
    from ..tf import quiet as _quiet

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
    from ...runtime.interpreter import input_names, open_interpreter

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
    from ...runtime.interpreter import open_interpreter
    from ..onnxgraph import ELEMENT_TYPES, dims_of, external_data, graph_inputs, load

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
