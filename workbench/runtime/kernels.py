"""NumPy layer kernels (NHWC, float32) that write into caller-given output views.

Every kernel takes its output array (``out``) and any scratch (``scratch``) from the caller, so a
planner can place them in one static buffer (FlexNN) and a scheduler can account for every byte
(MASA). Convolutions use im2col + GEMM with the weights pre-transformed to a ``(kh*kw*C, Cout)``
matrix; *input slicing* builds the im2col matrix a band of output rows at a time.
"""

from __future__ import annotations

import math

import numpy as np

F32 = np.dtype(np.float32)


def same_pads(size: int, k: int, s: int) -> tuple[int, int, int]:
    """Keras ``same`` padding: (output size, pad before, pad after)."""
    out = -(-size // s)
    total = max((out - 1) * s + k - size, 0)
    return out, total // 2, total - total // 2


def conv_geometry(h: int, w: int, k: tuple[int, int], s: int, padding: str):
    """(Ho, Wo, (top, bottom, left, right)) for a convolution or pooling window."""
    if padding == "same":
        ho, pt, pb = same_pads(h, k[0], s)
        wo, pl, pr = same_pads(w, k[1], s)
        return ho, wo, (pt, pb, pl, pr)
    return (h - k[0]) // s + 1, (w - k[1]) // s + 1, (0, 0, 0, 0)


#: The activations the kernels apply (None and "linear": none).
ACTIVATIONS: tuple[str | None, ...] = (None, "linear", "relu", "relu6", "sigmoid", "softmax", "gelu")


def activate(o: np.ndarray, act: str | None) -> None:
    """Apply an activation in place."""
    if act in (None, "linear"):
        return
    if act == "relu":
        np.maximum(o, 0, out=o)
    elif act == "relu6":
        np.clip(o, 0, 6, out=o)
    elif act == "sigmoid":
        np.negative(o, out=o)
        np.exp(o, out=o)
        o += 1
        np.reciprocal(o, out=o)
    elif act == "softmax":
        o -= o.max(axis=-1, keepdims=True)
        np.exp(o, out=o)
        o /= o.sum(axis=-1, keepdims=True)
    elif act == "gelu":
        _gelu(o)
    else:  # pragma: no cover - graphs and the program reader refuse other names (ACTIVATIONS)
        raise ValueError(f"unknown activation {act!r}")


#: GELU works through a row block at a time so that its temporary stays small (its bytes are
#: at most this many rows of the output).
GELU_ROWS = 16


def _gelu(o: np.ndarray) -> None:
    """GELU in place, the tanh approximation (GPT-2's; ViT's exact erf form differs by < 1e-3):
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    flat = o.reshape(-1, o.shape[-1]) if o.ndim > 1 else o.reshape(1, -1)
    c = np.float32(math.sqrt(2 / math.pi))
    for r in range(0, flat.shape[0], GELU_ROWS):
        x = flat[r:r + GELU_ROWS]
        t = x * x
        t *= np.float32(0.044715)
        t += 1
        t *= x
        t *= c
        np.tanh(t, out=t)
        t += 1
        t *= 0.5
        x *= t


def layernorm(x, gamma, beta, *, eps, out) -> None:
    """Layer normalisation over the last axis into ``out`` (no temporary of ``x``'s size)."""
    d = x.shape[-1]
    np.subtract(x, x.mean(axis=-1, keepdims=True), out=out)
    var = np.einsum("...d,...d->...", out, out) / d
    out *= (1 / np.sqrt(var + eps))[..., None].astype(np.float32)
    out *= gamma
    out += beta


def attention(x, *, heads: int, causal: bool, out, tmp) -> None:
    """Multi-head self-attention of packed ``x`` = [q | k | v] (batch, tokens, 3 d) into ``out``
    (batch, tokens, d): per sample and head, softmax(q k^T / sqrt(d_h)) v, the scores in ``tmp``
    (tokens x tokens floats: one head at a time)."""
    n, t, d3 = x.shape
    d = d3 // 3
    dh = d // heads
    s = tmp[: t * t].reshape(t, t)
    scale = np.float32(1 / math.sqrt(dh))
    upper = np.triu_indices(t, 1) if causal else None
    for b in range(n):
        for h in range(heads):
            q = x[b, :, h * dh:(h + 1) * dh]
            k = x[b, :, d + h * dh:d + (h + 1) * dh]
            v = x[b, :, 2 * d + h * dh:2 * d + (h + 1) * dh]
            np.matmul(q, k.T, out=s)
            s *= scale
            if upper is not None:
                s[upper] = -np.inf
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            np.matmul(s, v, out=out[b, :, h * dh:(h + 1) * dh])


def embed(ids, wte, wpe, *, out) -> None:
    """Token and position embeddings: ``wte[ids] + wpe[:tokens]`` (ids given as floats)."""
    np.take(wte, ids.astype(np.int64), axis=0, out=out)
    out += wpe[: ids.shape[-1]]


def padded(x: np.ndarray, pads, scratch: np.ndarray | None) -> np.ndarray:
    """``x`` zero-padded into ``scratch`` (or ``x`` itself when no padding is needed)."""
    pt, pb, pl, pr = pads
    if not any(pads):
        return x
    n, h, w, c = x.shape
    if scratch is None:  # callers without a planned buffer: allocate one
        scratch = np.empty((n, h + pt + pb, w + pl + pr, c), x.dtype)
    xp = scratch.reshape(n, h + pt + pb, w + pl + pr, c)
    xp[:, :pt] = 0
    xp[:, h + pt:] = 0
    xp[:, :, :pl] = 0
    xp[:, :, w + pl:] = 0
    xp[:, pt:pt + h, pl:pl + w] = x
    return xp


def conv_im2col(x, w2d, b, *, k, s, padding, act, out, col, pad=None, rows=None,
                cols: tuple[int, int] | None = None, build: bool = True) -> None:
    """Convolution by im2col + GEMM, ``rows`` output rows per im2col band (input slicing).

    Args:
        w2d: weights as a ``(C*kh*kw, Cout')`` matrix (columns ``cols`` of the layer's outputs
            when the weights are sliced).
        out: the layer's whole output ``(N, Ho, Wo, Cout)``; only ``cols`` channels are written.
        col: scratch of at least ``N*rows*Wo*C*kh*kw`` floats for one band.
        pad: scratch for the padded input when ``padding='same'`` needs one.
        build: False when ``col`` already holds the whole im2col matrix (a weight slice after
            the first reuses it).
    """
    n, h, wd, c = x.shape
    ho, wo, pads = conv_geometry(h, wd, k, s, padding)
    rows = rows or ho
    if build:
        xp = padded(x, pads, pad)
        # (N, H', W', C, kh, kw) windows strided to the outputs: the C*kh*kw weight-row order.
        win = np.lib.stride_tricks.sliding_window_view(xp, k, axis=(1, 2))[:, ::s, ::s]
    elif rows < ho:
        raise ValueError("a prepared im2col matrix must hold every output row")
    c0, c1 = cols or (0, out.shape[-1])
    kk = c * k[0] * k[1]
    for r0 in range(0, ho, rows):
        r1 = min(ho, r0 + rows)
        band = col[: n * (r1 - r0) * wo * kk].reshape(n, r1 - r0, wo, c, k[0], k[1])
        if build:
            np.copyto(band, win[:, r0:r1])
        o = out[:, r0:r1, :, c0:c1]
        o2 = o.reshape(-1, c1 - c0) if n == 1 else None
        if o2 is not None and np.shares_memory(o2, o):
            np.matmul(band.reshape(-1, kk), w2d, out=o2)
        else:
            o[...] = (band.reshape(-1, kk) @ w2d).reshape(o.shape)
        if b is not None:
            o += b
        activate(o, act)


def _tap_sum(x, w, b, *, k, s, padding, act, o, t, pad, op) -> None:
    """``o = act(sum over kernel taps of op(shifted input, w[tap]) + b)``, ``t`` the scratch."""
    n, h, wd, c = x.shape
    ho, wo, pads = conv_geometry(h, wd, k, s, padding)
    xp = padded(x, pads, pad)
    o[...] = 0
    for i in range(k[0]):
        for j in range(k[1]):
            xs = xp[:, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s, :]
            op(xs, w[i, j], out=t)
            o += t
    if b is not None:
        o += b
    activate(o, act)


def conv_direct(x, w4, b, *, k, s, padding, act, out, tmp, pad=None,
                cols: tuple[int, int] | None = None) -> None:
    """Convolution by shift-and-accumulate over the kernel taps: no im2col matrix, only an
    output-sized scratch (``tmp``); slower. ``w4`` is ``(kh, kw, C, Cout')``."""
    c0, c1 = cols or (0, out.shape[-1])
    o = out[..., c0:c1]
    t = tmp[: o.size].reshape(o.shape)
    _tap_sum(x, w4, b, k=k, s=s, padding=padding, act=act, o=o, t=t, pad=pad, op=np.matmul)


def dwconv(x, w3, b, *, k, s, padding, act, out, tmp, pad=None) -> None:
    """Depthwise convolution (``w3`` is ``(kh, kw, C)``), accumulated tap by tap."""
    t = tmp[: out.size].reshape(out.shape)
    _tap_sum(x, w3, b, k=k, s=s, padding=padding, act=act, o=out, t=t, pad=pad, op=np.multiply)


def dense(x, w, b, *, act, out, cols: tuple[int, int] | None = None) -> None:
    """``x @ w + b`` into ``out[:, cols]`` (weights slicing: one column block at a time)."""
    c0, c1 = cols or (0, out.shape[-1])
    o = out[:, c0:c1]
    np.matmul(x, w, out=o)
    if b is not None:
        o += b
    if act != "softmax":  # softmax needs the whole row: applied once the last slice is done
        activate(o, act)


def pool(x, *, kind, k, s, padding, out) -> None:
    """Max or average pooling (``valid`` windows, or ``same`` for max pooling)."""
    n, h, wd, c = x.shape
    ho, wo, pads = conv_geometry(h, wd, k, s, padding)
    if any(pads):
        fill = -np.inf if kind == "max" else 0.0
        xp = np.full((n, h + pads[0] + pads[1], wd + pads[2] + pads[3], c), fill, F32)
        xp[:, pads[0]:pads[0] + h, pads[2]:pads[2] + wd] = x
        x = xp
    win = np.lib.stride_tricks.sliding_window_view(x, k, axis=(1, 2))[:, ::s, ::s][:, :ho, :wo]
    (np.max if kind == "max" else np.mean)(win, axis=(-2, -1), out=out)


def gap(x, *, out) -> None:
    """Global average pooling over every axis between batch and channels."""
    np.mean(x, axis=tuple(range(1, x.ndim - 1)), out=out)


def add(a, b, *, act, out) -> None:
    np.add(a, b, out=out)
    activate(out, act)


def affine(x, scale, shift, *, act, out) -> None:
    """A BatchNormalization that could not be folded into the layer before it."""
    np.multiply(x, scale, out=out)
    out += shift
    activate(out, act)


def warm_up() -> None:
    """Run every kernel once on tiny arrays.

    A kernel's first call costs a few hundred KB that later calls reuse (numpy's ufunc and
    stride-trick set-up, interpreter state; measured: 190 KB for the first ``sliding_window_view``,
    130 KB for the first ``np.maximum``), independent of the tensor sizes. A memory measurement
    warms up first so that its baseline holds these and the reading over it is the model's.
    """
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 6, 6, 2)).astype(np.float32)
    big = np.empty(4096, np.float32)
    pad = np.empty(8 * 8 * 2, np.float32)  # the 6x6x2 input padded for a 3x3 window
    for padding in ("same", "valid"):
        for act in ("relu", "relu6", "sigmoid", None):
            ho, wo, _ = conv_geometry(6, 6, (3, 3), 1, padding)
            out = np.empty((1, ho, wo, 3), np.float32)
            conv_im2col(x, np.ones((18, 3), np.float32), np.ones(3, np.float32), k=(3, 3), s=1,
                        padding=padding, act=act, out=out, col=big, pad=pad, rows=2)
            conv_direct(x, np.ones((3, 3, 2, 3), np.float32), None,
                        k=(3, 3), s=1, padding=padding, act=act, out=out, tmp=big,
                        pad=pad)
            dwconv(x, np.ones((3, 3, 2), np.float32), np.ones(2, np.float32), k=(3, 3), s=1,
                   padding=padding, act=act, out=np.empty((1, ho, wo, 2), np.float32),
                   tmp=big, pad=pad)
        for kind in ("max", "avg"):
            ho, wo, _ = conv_geometry(6, 6, (2, 2), 2, padding)
            pool(x, kind=kind, k=(2, 2), s=2, padding=padding,
                 out=np.empty((1, ho, wo, 2), np.float32))
    y = np.empty((1, 4), np.float32)
    for act in ("relu", "softmax", None):
        dense(x.reshape(1, -1), np.ones((72, 2), np.float32), np.ones(2, np.float32), act=act,
              out=y, cols=(0, 2))
        activate(y, act)
    gap(x, out=np.empty((1, 2), np.float32))
    padded(x, (1, 1, 1, 1), pad)
    add(x, x, act="relu", out=np.empty_like(x))
    affine(x, np.ones(2, np.float32), np.ones(2, np.float32), act="relu", out=np.empty_like(x))
