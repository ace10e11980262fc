"""Reading a ``.keras`` file: its custom objects, loading in safe mode, fixing its input shape and
unrolling its recurrent layers so that every scheme converts."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ...errors import InputError
from .files import first_line, regular_file, shown
from .signature import Output, _dims, _fixed, _other_inputs


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
    from ..tf import keras as _keras
    from ..tf import quiet as _quiet

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
    from ..tf import keras as _keras

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
