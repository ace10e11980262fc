"""The real-scale host profile: full-size models x five schemes x this machine's options, measured.

| task | models | A |
|---|---|---|
| ``fashion`` | MobileNetV2-1.0, EfficientNet-Lite0/1/2 backbones + heads | measured (LiteRT) |
| ``imagenet`` | the same four as ImageNet classifiers | cited top-1 where published |
| ``full-size`` | MobileNetV3-Large, EfficientNetB0, ResNet-50 (no weights) | agreement with FP32 (fidelity only) |
| ``text-embedding`` | all-MiniLM-L6-v2 (sequence length 128) | cosine with FP32, measured on offline sentences |

Models already in the registry under these names are reused (so a killed build resumes: the
registry keeps converted schemes and the profile keeps measured rows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from . import fashion, minilm, pretrained, profiling, registry

#: (registry name, task, full-size model)
MODELS: tuple[tuple[str, str, str], ...] = (
    *((f"fashion-{m}", "fashion", m) for m in ("MobileNetV2-1.0", "EfficientNet-Lite0",
                                                "EfficientNet-Lite1", "EfficientNet-Lite2")),
    *((m, "imagenet", m) for m in ("MobileNetV2-1.0", "EfficientNet-Lite0", "EfficientNet-Lite1",
                                   "EfficientNet-Lite2")),
    *((m, "full-size", m) for m in ("MobileNetV3-Large", "EfficientNetB0", "ResNet-50")),
    ("all-MiniLM-L6-v2", "text-embedding", "all-MiniLM-L6-v2"),
)

#: The reduced protocol's options: one core alone and both cores (the other single core is the
#: same silicon), threads 1 and 2, XNNPACK on and off.
REDUCED_PROCESSORS = 2


def ensure_models(names: Iterable[str] | None = None, *, train_samples: int = 10000,
                  test_samples: int = 1000, progress: bool = True) -> list[str]:
    """Register (if absent) and quantise (what is missing) the real-scale models."""
    wanted = list(names) if names is not None else [n for n, _, _ in MODELS]
    known = {n: (task, model) for n, task, model in MODELS}
    done = {r.name for r in registry.list_models()}
    for name in wanted:
        task, model = known[name]
        if name not in done:
            if task == "fashion":
                fashion.register(name, backbone=model, n_train=train_samples,
                                 n_test=test_samples, progress=progress)
            elif task == "text-embedding":
                minilm.register(name, progress=progress)
            else:
                pretrained.register(model, name=name, progress=progress)
        registry.quantise(name, progress=progress)
    return wanted


def build(out: str | Path, *, names: Iterable[str] | None = None, protocol: str = "quick",
          options: list[profiling.Option] | None = None, train_samples: int = 10000,
          test_samples: int = 1000, progress: bool = True):
    """Register, quantise and measure the real-scale models into one measured profile."""
    wanted = ensure_models(names, train_samples=train_samples, test_samples=test_samples,
                           progress=progress)
    variants, inputs = registry.profiling_inputs(wanted)
    if options is None:
        sets = profiling.core_sets()
        chosen = [sets[0]] + ([sets[-1]] if len(sets) > 1 else [])
        from .. import processors

        options = profiling.host_options((1, 2), processor_ids=[processors.cpu_set(c)
                                                                 for c in chosen])
    proto = profiling.protocol(protocol)
    return profiling.profile_variants(
        variants, inputs, Path(out), warmup=proto.warmup, runs=proto.runs, options=options,
        progress=progress,
        notes=["real scale: full-size models (0.4-7.7 GFLOPs) x five schemes; task fashion: A "
               "measured with LiteRT on Fashion-MNIST test images; task imagenet: A CITED (no "
               "ImageNet data offline); task full-size: random weights, A = agreement with FP32; "
               "task text-embedding: A = cosine with the FP32 embedding on held-out sentences"])
