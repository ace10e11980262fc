"""The task data (``DATA.npz``): loaded within bounds, then checked against the model, with the
metric its labels imply."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from ...errors import InputError
from .files import _check_npz, first_line, regular_file, shown


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
    _check_samples(path, arrays, input_shape, input_dtype)
    from ... import taskmetrics

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
        _check_classes(path, y, metric, n_out, bool(integral))
    elif kind == "pixels":
        _check_pixels(path, y, metric, output_shape, bool(per_pixel))
    elif kind == "values":
        _check_values(path, y, metric, n_out)
    return metric


def _check_samples(path: Path, arrays: dict[str, np.ndarray], input_shape: tuple[int, ...],
                   input_dtype: str) -> None:
    """The inputs (``x``, ``x_calib``): samples the model takes, numeric and finite."""
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


def _check_classes(path: Path, y: np.ndarray, metric: str, n_out: int, integral: bool) -> None:
    """Labels of a class metric: one class index per sample, within the output's classes."""
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


def _check_pixels(path: Path, y: np.ndarray, metric: str, output_shape: list[int],
                  per_pixel: bool) -> None:
    """Labels of a per-pixel metric: (N, H, W) class indices for outputs (H, W) or (H, W, C)."""
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


def _check_values(path: Path, y: np.ndarray, metric: str, n_out: int) -> None:
    """Targets of a regression metric: one finite value per output."""
    if y.reshape(len(y), -1).shape[1] != n_out:
        raise InputError(f"{metric} needs {n_out} target value(s) per sample (the model's "
                         f"outputs); y has shape {tuple(y.shape)}", file=shown(path), where="y")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise InputError("contains NaN or infinity", file=shown(path), where="y")
