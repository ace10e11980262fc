"""The networks of MASA's Table 1 at their published sizes, built with Keras at their input sizes
with random weights (latency and memory only): Levi-Hassner for AgeNet and GenderNet, AlexNet for
FaceNet, SoS, MemNet and SceneNet, VGG-S for EmotionNet, Tiny YOLO v2 for TinyYOLO, GoogLeNet for
GoogleNet (Szegedy et al.'s 2014 network without its two auxiliary classifiers, training-only
heads). Local response normalisation is left out (no weights, a few percent of the time). Each
role gets its own weight files, as the paper's networks are separate files; :func:`prepare`
writes them and measures their per-layer profiles, :func:`budgets` scales the paper's budgets."""

from __future__ import annotations

import pickle
import shutil
from collections.abc import Callable
from pathlib import Path

from ....memory import masa as M
from ....memory.graph import LayerGraph
from ..memory import PAPER_BUDGETS_MB, PAPER_MEMORY_MB, Nets

# Paper role -> architecture built here.
TABLE1 = {"AgeNet": "Levi-Hassner-8", "GenderNet": "Levi-Hassner-2", "FaceNet": "AlexNet",
          "SoS": "AlexNet", "MemNet": "AlexNet", "SceneNet": "AlexNet", "EmotionNet": "VGG-S",
          "TinyYOLO": "TinyYOLOv2", "GoogleNet": "GoogLeNet"}


def table1_model(arch: str):
    """A Keras model of ``arch`` (one of :data:`TABLE1`'s values) with random weights."""
    from ....host import zoo

    keras = zoo._keras()
    L = keras.layers
    keras.utils.set_random_seed(0)

    def conv(n, k, s=1, pad="same"):
        return L.Conv2D(n, k, strides=s, padding=pad, activation="relu")

    if arch.startswith("Levi-Hassner"):  # Levi & Hassner 2015, AgeNet (8) / GenderNet (2)
        size, body = 227, [conv(96, 7, 4, "valid"), L.MaxPooling2D(3, 2), conv(256, 5),
                           L.MaxPooling2D(3, 2), conv(384, 3), L.MaxPooling2D(3, 2)]
        head = [512, 512, int(arch.rsplit("-", 1)[1])]
    elif arch == "AlexNet":
        size, body = 227, [conv(96, 11, 4, "valid"), L.MaxPooling2D(3, 2), conv(256, 5),
                           L.MaxPooling2D(3, 2), conv(384, 3), conv(384, 3), conv(256, 3),
                           L.MaxPooling2D(3, 2)]
        head = [4096, 4096, 1000]
    elif arch == "VGG-S":  # Chatfield et al. 2014
        size, body = 224, [conv(96, 7, 2, "valid"), L.MaxPooling2D(3, 3), conv(256, 5),
                           L.MaxPooling2D(2, 2), conv(512, 3), conv(512, 3), conv(512, 3),
                           L.MaxPooling2D(3, 3)]
        head = [4096, 4096, 7]
    elif arch == "TinyYOLOv2":  # tiny-yolo-voc: nine convolutions, no FC
        size, body = 416, []
        for n in (16, 32, 64, 128, 256):
            body += [conv(n, 3), L.MaxPooling2D(2, 2)]
        body += [conv(512, 3), conv(1024, 3), conv(1024, 3), L.Conv2D(125, 1)]
        head = []
    elif arch == "GoogLeNet":
        return _googlenet(keras)
    else:
        raise KeyError(arch)
    x = inp = keras.Input((size, size, 3))
    for layer in body:
        x = layer(x)
    if head:
        x = L.Flatten()(x)
        for i, n in enumerate(head):
            x = L.Dense(n, activation="relu" if i < len(head) - 1 else None)(x)
    return keras.Model(inp, x, name=arch)


# GoogLeNet's nine inception modules (Szegedy et al. 2014, Table 1): 1x1, 3x3 reduce, 3x3,
# 5x5 reduce, 5x5, pool projection; "M" is a 3x3/2 max pooling between stages.
_INCEPTION = ((64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "M",
              (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64),
              (128, 128, 256, 24, 64, 64), (112, 144, 288, 32, 64, 64),
              (256, 160, 320, 32, 128, 128), "M", (256, 160, 320, 32, 128, 128),
              (384, 192, 384, 48, 128, 128))


def _googlenet(keras):
    L = keras.layers

    def conv(x, n, k, s=1):
        return L.Conv2D(n, k, strides=s, padding="same", activation="relu")(x)

    x = inp = keras.Input((224, 224, 3))
    x = L.MaxPooling2D(3, 2, padding="same")(conv(x, 64, 7, 2))
    x = L.MaxPooling2D(3, 2, padding="same")(conv(conv(x, 64, 1), 192, 3))
    for m in _INCEPTION:
        if m == "M":
            x = L.MaxPooling2D(3, 2, padding="same")(x)
            continue
        a, b3r, b3, b5r, b5, pp = m
        x = L.Concatenate()([conv(x, a, 1), conv(conv(x, b3r, 1), b3, 3),
                             conv(conv(x, b5r, 1), b5, 5),
                             conv(L.MaxPooling2D(3, 1, padding="same")(x), pp, 1)])
    x = L.Dense(1000)(L.GlobalAveragePooling2D()(x))
    return keras.Model(inp, x, name="GoogLeNet")


def layer_sizes(arch: str, root: str | Path, *, repeats: int = 2) -> list[dict]:
    """Each layer of ``arch`` (MASA Figs. 2 and 3(a)): its kind, weight bytes as stored under
    ``root`` and the peak resident-set growth while it loads and runs (measured, MASA's
    profiler; :func:`~workbench.memory.masa.profile_network`). Run it in a fresh process whose
    allocator maps every array (``MALLOC_MMAP_THRESHOLD_`` fixed) or a layer's growth hides in
    memory earlier layers freed."""
    prof = M.profile_network(table1_graph(arch), Path(root), repeats=repeats, sample_rss=True)
    return [{"layer": c.name, "kind": c.kind, "weight_bytes": c.weight_bytes,
             "out_bytes": c.out_bytes, "scratch_bytes": c.scratch_bytes,
             "rss_peak_bytes": c.rss_peak_bytes} for c in prof.layers]


def table1_graph(arch: str) -> LayerGraph:
    from ....memory.graph import from_keras

    return from_keras(table1_model(arch), name=arch)


def prepare(root: str | Path, *, roles=tuple(TABLE1), repeats: int = 3,
            progress: Callable[[str], None] | None = None) -> Nets:
    """Per-layer profiles of each architecture (measured here, once per architecture) and a
    stored copy (skeleton + weight files) per role."""
    from threadpoolctl import threadpool_limits

    from ....memory.measure import SKELETON, skeleton

    root = Path(root)
    graphs, roots, profiles, done = {}, {}, {}, {}
    for role in roles:
        arch = TABLE1[role]
        if arch not in done:
            g = table1_graph(arch)
            if progress:
                progress(f"{arch}: {g.weight_bytes / 1e6:.0f} MB of weights, "
                         f"{g.flops / 1e9:.1f} GFLOPs; profiling")
            with threadpool_limits(1):  # as the runs: one BLAS thread per worker
                done[arch] = (g, M.profile_network(g, root / arch, repeats=repeats,
                                                   sample_rss=False))
            with open(root / arch / SKELETON, "wb") as fh:
                pickle.dump(skeleton(g), fh)
        g, prof = done[arch]
        if not (root / role).exists():
            shutil.copytree(root / arch, root / role)  # its own files, as in the paper
        graphs[role], roots[role] = g, root / role
        profiles[role] = M.NetProfile(role, prof.layers)
    return Nets(graphs, roots, profiles, trained=False)


def budgets(nets: Nets, pool: list[str],
            mbs: tuple[int, ...] = PAPER_BUDGETS_MB) -> dict[str, dict[int, int]]:
    """The paper's memory sizes ``mbs`` (512 MB / 1 GB / 2 GB) in bytes two ways. ``by
    total``: scaled by the pool's bulk memory here over Table 1's; ``by largest layer``:
    keeping the paper's ratio to the largest layer, which is the paper's own size here (the
    same architectures)."""
    scale = sum(nets.profiles[n].bulk_bytes for n in pool) / sum(
        PAPER_MEMORY_MB[n] * 1e6 for n in pool)
    return {"by total": {mb: int(mb * 1e6 * scale) for mb in mbs},
            "by largest layer": {mb: int(mb * 1e6) for mb in mbs}}
