"""A layer as the NumPy kernels run it: op, inputs, shapes and the shapes of its weights, but not
the weights themselves (they arrive from files into views of a buffer).

One home for running a layer: :class:`LayerOps` is shared by the host's layer graphs
(``workbench.memory.graph.Layer`` adds the weight arrays, Keras conversion and storage) and by the
device's memory-mode programs (:class:`LayerSpec`, read from a bundle). numpy + standard library.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import kernels as K

F32 = 4
#: Every op the kernels run; a program naming another is refused when it is read.
OPS = ("conv", "dwconv", "dense", "pool", "gap", "flatten", "zeropad", "add", "concat", "affine",
       "act", "tokens", "cls_pos", "embed", "layernorm", "attention", "token")
#: Ops of transformers (ViT, GPT-2): an image's patches as tokens, a class token with position
#: embeddings, token and position embeddings, layer norm, multi-head self-attention (packed
#: q|k|v input, causal for GPT-2) and one token picked out; ``dense`` applies per token.
TRANSFORMER_OPS = ("tokens", "cls_pos", "embed", "layernorm", "attention", "token")


class LayerOps:
    """Sizes and execution of a layer; a subclass provides the attributes below."""

    name: str
    op: str
    inputs: list[str]
    shape: tuple[int, ...]
    attrs: dict
    in_shapes: list[tuple[int, ...]]

    @property
    def weight_shapes(self) -> dict[str, tuple[int, ...]]:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def weight_bytes(self) -> int:
        return sum(math.prod(s) for s in self.weight_shapes.values()) * F32

    @property
    def out_elems(self) -> int:
        return math.prod(self.shape)

    def out_bytes(self, batch: int = 1) -> int:
        return batch * self.out_elems * F32

    @property
    def cout(self) -> int:
        return self.shape[-1]

    def geometry(self):
        h, w, c = self.in_shapes[0]
        return K.conv_geometry(h, w, self.attrs["k"], self.attrs["s"], self.attrs["padding"])

    def pad_bytes(self, batch: int = 1) -> int:
        """Scratch for the zero-padded input of a ``same`` convolution (0 when none needed)."""
        if self.op not in ("conv", "dwconv"):
            return 0
        h, w, c = self.in_shapes[0]
        _, _, (pt, pb, pl, pr) = self.geometry()
        if not (pt or pb or pl or pr):
            return 0
        return batch * (h + pt + pb) * (w + pl + pr) * c * F32

    def band_bytes(self, rows: int | None = None, batch: int = 1) -> int:
        """im2col scratch for ``rows`` output rows (all rows by default) of a convolution."""
        ho, wo, _ = self.geometry()
        kk = self.weight_shapes["w"][0]
        return batch * min(rows or ho, ho) * wo * kk * F32

    def scratch_bytes(self, batch: int = 1, *, rows: int | None = None,
                      kernel: str = "im2col") -> int:
        """Intermediates (not weights, not activations) the layer needs while it runs."""
        if self.op == "conv":
            if kernel == "direct":
                return self.pad_bytes(batch) + self.out_bytes(batch)
            return self.pad_bytes(batch) + self.band_bytes(rows, batch)
        if self.op == "dwconv":
            return self.pad_bytes(batch) + self.out_bytes(batch)
        if self.op == "attention":  # one head's scores at a time
            return self.shape[0] * self.shape[0] * F32
        return 0

    def slice_bytes(self, c0: int, c1: int) -> int:
        """Bytes of the weights producing output channels ``c0:c1`` (their file's size)."""
        if self.op in ("conv", "dense"):
            rows = self.weight_shapes["w"][0]
            return (rows + ("b" in self.weight_shapes)) * (c1 - c0) * F32
        return self.weight_bytes

    def views(self, flat: np.ndarray, c0: int, c1: int) -> dict[str, np.ndarray]:
        """Weight arrays over a flat float32 buffer holding the weights of channels ``c0:c1``
        (file order: the matrix, then the bias; other ops: every weight whole, in order)."""
        if self.op in ("conv", "dense"):
            rows, n = self.weight_shapes["w"][0], c1 - c0
            v = {"w": flat[: rows * n].reshape(rows, n)}
            if "b" in self.weight_shapes:
                v["b"] = flat[rows * n: rows * n + n]
            return v
        v, at = {}, 0
        for key, shape in self.weight_shapes.items():
            n = math.prod(shape)
            v[key] = flat[at: at + n].reshape(shape)
            at += n
        return v

    def compute(self, xs: list[np.ndarray], out: np.ndarray, *, w: dict | None = None,
                cols: tuple[int, int] | None = None, scratch: np.ndarray | None = None,
                rows: int | None = None, kernel: str = "im2col", build: bool = True) -> None:
        """Run the layer (or the output-channel block ``cols``) into ``out``.

        ``scratch`` is a flat float32 array of at least ``scratch_bytes`` (allocated here when
        None); ``w`` the weights as :meth:`views` gives them (None for layers without any).
        """
        w = w or {}
        a = self.attrs
        batch = xs[0].shape[0]
        if scratch is None:
            scratch = np.empty(self.scratch_bytes(batch, rows=rows, kernel=kernel) // F32 + 1,
                               np.float32)
        pad_n = self.pad_bytes(batch) // F32
        pad, rest = scratch[:pad_n], scratch[pad_n:]
        if self.op == "conv":
            if kernel == "direct":
                kh, kw = a["k"]
                c = self.in_shapes[0][-1]
                w4 = w["w"].reshape(c, kh, kw, -1).transpose(1, 2, 0, 3)
                K.conv_direct(xs[0], w4, w.get("b"), k=a["k"], s=a["s"], padding=a["padding"],
                              act=a.get("act"), out=out, tmp=rest, pad=pad, cols=cols)
            else:
                K.conv_im2col(xs[0], w["w"], w.get("b"), k=a["k"], s=a["s"],
                              padding=a["padding"], act=a.get("act"), out=out, col=rest, pad=pad,
                              rows=rows, cols=cols, build=build)
        elif self.op == "dwconv":
            K.dwconv(xs[0], w["w"], w.get("b"), k=a["k"], s=a["s"], padding=a["padding"],
                     act=a.get("act"), out=out, tmp=rest, pad=pad)
        elif self.op == "dense":
            if len(self.shape) > 1:  # per token: (batch, tokens, d) as (batch * tokens, d)
                x2, o2 = xs[0].reshape(-1, xs[0].shape[-1]), out.reshape(-1, self.cout)
            else:
                x2, o2 = xs[0].reshape(batch, -1), out
            K.dense(x2, w["w"], w.get("b"), act=a.get("act"), out=o2, cols=cols)
            if a.get("act") == "softmax" and (cols is None or cols[1] == self.cout):
                K.activate(o2, "softmax")
        elif self.op == "pool":
            K.pool(xs[0], kind=a["kind"], k=a["k"], s=a["s"], padding=a["padding"], out=out)
        elif self.op == "gap":
            K.gap(xs[0], out=out)
        elif self.op == "flatten":
            np.copyto(out, xs[0].reshape(out.shape))
        elif self.op == "zeropad":
            K.padded(xs[0], a["pads"], out)
        elif self.op == "add":
            K.add(xs[0], xs[1], act=a.get("act"), out=out)
        elif self.op == "concat":  # channels last: SqueezeNet's fire modules
            np.concatenate(xs, axis=-1, out=out)
        elif self.op == "affine":
            K.affine(xs[0], w["scale"], w["shift"], act=a.get("act"), out=out)
        elif self.op == "act":
            np.copyto(out, xs[0])
            K.activate(out, a.get("act"))
        elif self.op == "tokens":  # (h, w, c) patches -> (h * w, c) tokens
            np.copyto(out, xs[0].reshape(out.shape))
        elif self.op == "cls_pos":  # prepend the class token, add position embeddings
            out[:, 0] = w["cls"]
            out[:, 1:] = xs[0]
            out += w["pos"]
        elif self.op == "embed":
            K.embed(xs[0], w["wte"], w["wpe"], out=out)
        elif self.op == "layernorm":
            K.layernorm(xs[0], w["gamma"], w["beta"], eps=a.get("eps", 1e-6), out=out)
        elif self.op == "attention":
            K.attention(xs[0], heads=a["heads"], causal=bool(a.get("causal")), out=out,
                        tmp=rest)
        elif self.op == "token":
            np.copyto(out, xs[0][:, a.get("index", 0)])
        else:  # pragma: no cover - graphs and programs refuse unknown ops
            raise ValueError(self.op)

    def spec(self) -> dict[str, Any]:
        """The layer as a program stores it (JSON): everything but the weight values."""
        return {"name": self.name, "op": self.op, "inputs": list(self.inputs),
                "shape": list(self.shape), "in_shapes": [list(s) for s in self.in_shapes],
                "attrs": {k: list(v) if isinstance(v, tuple) else v
                          for k, v in self.attrs.items()},
                "weights": {k: list(s) for k, s in self.weight_shapes.items()}}


def last_use(layers: Sequence[LayerOps]) -> dict[str, int]:
    """For each layer output (and ``input``): the index of the last layer reading it (the model
    output lives to the end)."""
    last = {"input": 0}
    for i, ly in enumerate(layers):
        last.setdefault(ly.name, i)
        for src in ly.inputs:
            last[src] = max(last.get(src, i), i)
    last[layers[-1].name] = len(layers)
    return last


def live_activation_bytes(layers: Sequence[LayerOps], input_shape: tuple[int, ...], batch: int = 1,
                          *, size=None) -> list[int]:
    """Per layer: bytes of the activations live while it runs (inputs still needed later, its
    output). ``size`` maps a tensor's bytes to what it occupies (e.g. aligned)."""
    size = size or (lambda n: n)
    last = last_use(layers)
    live = {"input": size(batch * math.prod(input_shape) * F32)}
    out = []
    for i, ly in enumerate(layers):
        live[ly.name] = size(ly.out_bytes(batch))
        out.append(sum(live.values()))
        for src in set(ly.inputs):
            if last[src] == i:
                live.pop(src, None)
    return out


@dataclass
class LayerSpec(LayerOps):
    """A layer read from a program: its weights come from files."""

    name: str
    op: str
    inputs: list[str]
    shape: tuple[int, ...]
    attrs: dict = field(default_factory=dict)
    in_shapes: list[tuple[int, ...]] = field(default_factory=list)
    weights_shape: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        return self.weights_shape

    @classmethod
    def from_spec(cls, d: dict[str, Any]) -> "LayerSpec":
        """The inverse of :meth:`LayerOps.spec` (``d`` already checked by the program reader)."""
        attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in d.get("attrs", {}).items()}
        return cls(d["name"], d["op"], list(d["inputs"]), tuple(d["shape"]), attrs,
                   [tuple(s) for s in d.get("in_shapes", [])],
                   {k: tuple(s) for k, s in d.get("weights", {}).items()})
