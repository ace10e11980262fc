"""Delen's multi-exit training engine (PyTorch): a block-structured backbone with a small head
after chosen blocks, trained at once with a weighted cumulative loss whose weights grow with
depth (Delen section 5: equal weights let later exits fall behind earlier ones).

Backbones for the host datasets: ``resnet`` (basic residual blocks), ``effnet`` (MBConv blocks
with squeeze-excitation) for images, and ``audio1d`` (1-D conv blocks) for mnist1d signals.
Needs the ``torch`` extra (``torch==2.13.0``, CPU).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence, cast

import numpy as np

from ..errors import MissingExtra

try:
    import torch
    from torch import nn
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtra("PyTorch", "torch", needs="the multi-exit training engine",
                       hint="torch==2.13.0, the CPU build") from exc

from ..errors import InputError

ARCHS = ("resnet", "effnet", "audio1d")


# --- blocks ----------------------------------------------------------------------------------

class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.skip = (nn.Identity() if stride == 1 and cin == cout else
                     nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                   nn.BatchNorm2d(cout)))
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.body(x) + self.skip(x))


class MBConv(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int = 4) -> None:
        super().__init__()
        mid = cin * expand
        self.use_skip = stride == 1 and cin == cout
        self.expand = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid),
                                    nn.SiLU())
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
                                nn.BatchNorm2d(mid), nn.SiLU())
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(mid, max(4, mid // 8), 1),
                                nn.SiLU(), nn.Conv2d(max(4, mid // 8), mid, 1), nn.Sigmoid())
        self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = self.dw(self.expand(x))
        h = self.project(h * self.se(h))
        return h + x if self.use_skip else h


def _conv1d_block(cin: int, cout: int, stride: int) -> nn.Module:
    return nn.Sequential(nn.Conv1d(cin, cout, 5, stride, 2, bias=False), nn.BatchNorm1d(cout),
                         nn.ReLU(), nn.Conv1d(cout, cout, 3, 1, 1, bias=False),
                         nn.BatchNorm1d(cout), nn.ReLU())


def backbone(arch: str, in_channels: int, *, width: int = 16) -> tuple[list[nn.Module], list[int]]:
    """The backbone's blocks (the stem folded into the first) and each block's output channels."""
    if arch == "resnet":
        w = [width, width * 2, width * 4, width * 8]
        stem = nn.Sequential(nn.Conv2d(in_channels, w[0], 3, 1, 1, bias=False),
                             nn.BatchNorm2d(w[0]), nn.ReLU())
        blocks = [nn.Sequential(stem, BasicBlock(w[0], w[0], 1)), BasicBlock(w[0], w[1], 2),
                  BasicBlock(w[1], w[2], 2), BasicBlock(w[2], w[3], 2)]
        return blocks, w
    if arch == "effnet":
        w = [width, int(width * 1.5), width * 3, width * 5]
        stem = nn.Sequential(nn.Conv2d(in_channels, w[0], 3, 2, 1, bias=False),
                             nn.BatchNorm2d(w[0]), nn.SiLU())
        blocks = [nn.Sequential(stem, MBConv(w[0], w[0], 1)), MBConv(w[0], w[1], 2),
                  nn.Sequential(MBConv(w[1], w[2], 2), MBConv(w[2], w[2], 1)),
                  MBConv(w[2], w[3], 1)]
        return blocks, w
    if arch == "audio1d":
        w = [width, width * 2, width * 4, width * 8]
        blocks = [_conv1d_block(in_channels, w[0], 2), _conv1d_block(w[0], w[1], 2),
                  _conv1d_block(w[1], w[2], 2), _conv1d_block(w[2], w[3], 2)]
        return blocks, w
    raise InputError(f"unknown backbone; use one of {', '.join(ARCHS)}", where="arch", value=arch)


def _head(channels: int, n_classes: int, dims: int) -> nn.Module:
    pool = nn.AdaptiveAvgPool2d(1) if dims == 2 else nn.AdaptiveAvgPool1d(1)
    return nn.Sequential(pool, nn.Flatten(), nn.Linear(channels, n_classes))


class MultiExitNet(nn.Module):
    """Blocks with a head after each block listed in ``exits`` (the last block always has one).

    ``forward`` returns every exit's logits; ``forward_to(x, k)`` runs only up to exit k
    (0-based), which is what conditional execution does.
    """

    def __init__(self, arch: str, in_channels: int, n_classes: int, *,
                 exits: Sequence[int] | None = None, width: int = 16) -> None:
        super().__init__()
        blocks, ch = backbone(arch, in_channels, width=width)
        n = len(blocks)
        exits = sorted(set(exits if exits is not None else range(n)) | {n - 1})
        if exits[0] < 0 or exits[-1] >= n:
            raise InputError(f"exits are block indices 0..{n - 1}", where="exits", value=exits)
        self.arch, self.exit_blocks = arch, list(exits)
        self.dims = 1 if arch == "audio1d" else 2
        self.blocks = nn.ModuleList(blocks)
        self.heads = nn.ModuleList([_head(ch[b], n_classes, self.dims) for b in exits])
        self.n_classes = n_classes

    @property
    def n_exits(self) -> int:
        return len(self.heads)

    def forward(self, x):
        outs, k = [], 0
        for b, block in enumerate(self.blocks):
            x = block(x)
            if k < len(self.exit_blocks) and b == self.exit_blocks[k]:
                outs.append(self.heads[k](x))
                k += 1
        return outs

    def forward_to(self, x, k: int):
        for block in self.blocks[:self.exit_blocks[k] + 1]:
            x = block(x)
        return self.heads[k](x)


def exit_weights(n: int, kind: str | Sequence[float] = "linear") -> list[float]:
    """Loss weights that grow with depth: ``linear`` (i / n), ``equal`` (MSDNet), or explicit."""
    if not isinstance(kind, str):
        w = [float(x) for x in kind]
        if len(w) != n or any(x <= 0 for x in w):
            raise InputError(f"need {n} positive exit weights", where="weights", value=kind)
        return w
    if kind == "linear":
        return [(i + 1) / n for i in range(n)]
    if kind == "equal":
        return [1.0] * n
    raise InputError("weights are 'linear', 'equal' or a list", where="weights", value=kind)


def to_torch(x: np.ndarray, dims: int) -> "torch.Tensor":
    """Host datasets are channels-last (N, H, W, C) / (N, L, C); torch wants channels first."""
    x = np.asarray(x, np.float32)
    return torch.from_numpy(np.ascontiguousarray(np.moveaxis(x, -1, 1)))


@dataclass
class TrainResult:
    arch: str
    task: str
    exit_accuracy: list[float]           # test accuracy per exit (0..1)
    weights: list[float]
    epochs: int
    train_seconds: float
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def monotonic(self) -> bool:
        """Accuracy never falls by more than 2 points from one exit to the next."""
        a = self.exit_accuracy
        return all(b >= x - 0.02 for x, b in zip(a, a[1:]))


def train(net: MultiExitNet, data, *, epochs: int = 10, lr: float = 1e-3, batch: int = 64,
          weights: str | Sequence[float] = "linear", seed: int = 0, threads: int = 2,
          task: str = "") -> TrainResult:
    """Train every exit at once with L = mean over the batch of sum_i w_i CE(f_i(x), y) (Adam)."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    w = exit_weights(net.n_exits, weights)
    x, y = to_torch(data.x_train, net.dims), torch.from_numpy(np.asarray(data.y_train, np.int64))
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    ce = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed)
    hist = []
    t0 = time.perf_counter()
    # oneDNN's CPU backward corrupted the heap here (torch 2.13, 2 threads, 8-channel convs:
    # "free(): invalid next size"); the native kernels are safe and as fast at these sizes.
    with warnings.catch_warnings():
        # Restoring the flags re-sets TF32 and torch warns that Intel GPUs could use it: noise.
        warnings.filterwarnings("ignore", message="TF32 acceleration on top of oneDNN")
        with torch.backends.mkldnn.flags(enabled=False):
            hist = _epochs(net, x, y, w, opt, ce, gen, epochs, batch)
    secs = time.perf_counter() - t0
    acc = evaluate(net, data.x_test, data.y_test)
    return TrainResult(net.arch, task, acc, w, epochs, secs, hist)


def _epochs(net, x, y, w, opt, ce, gen, epochs: int, batch: int) -> list[dict[str, Any]]:
    hist = []
    for ep in range(epochs):
        net.train()
        perm = torch.randperm(len(x), generator=gen)
        total = 0.0
        for s in range(0, len(x), batch):
            idx = perm[s:s + batch]
            outs = net(x[idx])
            loss = sum(wi * ce(o, y[idx]) for wi, o in zip(w, outs))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        hist.append({"epoch": ep + 1, "loss": total / len(x)})
    return hist


@torch.no_grad()
def predict_all(net: MultiExitNet, x: np.ndarray, batch: int = 256) -> np.ndarray:
    """Softmax outputs of every exit: (exits, samples, classes)."""
    net.eval()
    xt = to_torch(x, net.dims)
    outs: list[list[np.ndarray]] = [[] for _ in range(net.n_exits)]
    for s in range(0, len(xt), batch):
        for k, o in enumerate(net(xt[s:s + batch])):
            outs[k].append(torch.softmax(o, dim=1).numpy())
    return np.stack([np.concatenate(o) for o in outs])


def evaluate(net: MultiExitNet, x: np.ndarray, y: np.ndarray) -> list[float]:
    p = predict_all(net, x)
    return [float((pk.argmax(axis=1) == np.asarray(y)).mean()) for pk in p]


def count_flops(net: MultiExitNet, input_shape: tuple[int, ...]) -> list[float]:
    """Cumulative FLOPs (2 x MACs of convolutions and linear layers, plus the SE multiplies) to
    reach and run each exit, for one sample; counted with forward hooks."""
    macs: list[float] = []

    def hook(m, inp, out):
        if isinstance(m, (nn.Conv1d, nn.Conv2d)):
            k = int(np.prod(m.kernel_size))
            macs.append(out.numel() * (m.in_channels // m.groups) * k)
        elif isinstance(m, nn.Linear):
            macs.append(m.in_features * m.out_features)

    hs = [m.register_forward_hook(hook) for m in net.modules()
          if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Linear))]
    net.eval()
    out = []
    try:
        with torch.no_grad():
            x = torch.zeros((1, *input_shape))
            for k in range(net.n_exits):
                macs.clear()
                net.forward_to(x, k)
                # forward_to re-runs the earlier heads' blocks but not their heads: add them.
                lasts = [cast(nn.Linear, cast(nn.Sequential, net.heads[j])[-1]) for j in range(k)]
                heads = sum(h.in_features * h.out_features for h in lasts)
                out.append(2.0 * (sum(macs) + heads))
    finally:
        for h in hs:
            h.remove()
    return out


# --- export ------------------------------------------------------------------------------------

class _Segment(nn.Module):
    """Blocks from the previous exit to exit k, and exit k's head: features -> (features, logits)."""

    def __init__(self, blocks: Sequence[nn.Module], head: nn.Module) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*blocks)
        self.head = head

    def forward(self, x):
        f = self.blocks(x)
        return f, self.head(f)


class _Plain(nn.Module):
    """The same backbone with only its last head: the single-exit model of Delen's Fig. 16."""

    def __init__(self, net: MultiExitNet) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*net.blocks)
        self.head = net.heads[-1]

    def forward(self, x):
        return self.head(self.blocks(x))


def segments(net: MultiExitNet) -> list[nn.Module]:
    out: list[nn.Module] = []
    start = 0
    for k, b in enumerate(net.exit_blocks):
        out.append(_Segment(list(net.blocks[start:b + 1]), net.heads[k]))
        start = b + 1
    return out


def export_onnx(net: MultiExitNet, input_shape: tuple[int, ...], folder, *,
                plain: bool = True) -> dict[str, Any]:
    """Export each exit's segment (and, with ``plain``, the single-exit backbone) to ONNX, so that
    the device needs onnxruntime and numpy only. Returns the file names and feature shapes."""
    import io
    import logging
    import os
    import warnings
    from contextlib import redirect_stdout
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    net.eval()
    x = torch.zeros((1, *input_shape))
    files, shapes = [], []

    # The exporter logs, for every export, that torchvision's detection ops are not registered
    # (they are not used here): keep the reports' stderr for what matters.
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)

    # The default (dynamo) exporter, though 2-3x slower: the TorchScript one (dynamo=False)
    # exported these segments with different outputs (test_segments_exported_to_onnx_match_torch).
    def export(module, args, path, outputs):
        with warnings.catch_warnings(), redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(module, args, str(path), input_names=["x"], output_names=outputs,
                              external_data=False, verbose=False)

    with torch.no_grad():
        for k, seg in enumerate(segments(net)):
            name = f"exit{k + 1}.onnx"
            export(seg, (x,), folder / name, ["features", "logits"])
            shapes.append(list(x.shape[1:]))
            x, _ = seg(x)
            files.append(name)
        if plain:
            export(_Plain(net), (torch.zeros((1, *input_shape)),), folder / "plain.onnx",
                   ["logits"])
    for f in folder.glob("*.onnx.data"):
        os.unlink(f)
    return {"segments": files, "input_shapes": shapes, "plain": "plain.onnx" if plain else None}
