"""A model's inputs and outputs as a user names them: shapes (``--input-shape``), the output A
reads (``--output``), and the values fed to inputs the data does not feed (``--feed``)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ...errors import InputError
from .files import shown


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
    return tuple(int(d) for d in dims if d is not None)  # none is, as checked above


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
