"""The model variants the phone model profiles: CARIn Tables 2-5 (by use case) and OODIn
Table II's eleven evaluated DNNs."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from ... import papers
from ..schema import PRECISIONS, Precision

#: CARIn's use cases whose models are profiled by default.
USE_CASES = papers.USE_CASES


@dataclass(frozen=True)
class Variant:
    """A model variant m = (arch, params, s_in, task, precision) from CARIn Tables 2-5."""

    task: str
    model: str
    arch: str
    precision: Precision
    flops: float
    params: float
    input_elements: int
    batch: int
    accuracy: float


def _input_elements(spec: str, kind: str) -> int:
    dims = [int(x) for x in spec.lower().split("x")]
    n = math.prod(dims)
    return n * 3 if kind == "image" else n


def paper_variants(use_cases: Iterable[str] = USE_CASES) -> list[Variant]:
    """Every model variant of the given CARIn use cases that exists ('-' variants are skipped)."""
    out = []
    for uc in use_cases:
        for task in papers.use_case_tasks(uc):
            t = papers.model_table(task)
            for m in t["models"]:
                for prec in PRECISIONS:
                    acc = m["accuracy"].get(prec)
                    if acc is None:
                        continue
                    out.append(Variant(
                        task=task, model=m["model"], arch=m["arch"], precision=prec,
                        flops=float(m["flops"]), params=float(m["params"]),
                        input_elements=_input_elements(m["input"], t["input_kind"]),
                        batch=int(t.get("batch", 1)), accuracy=float(acc)))
    return out


#: OODIn Table II's models and the families whose parameters the model uses for them.
OODIN_FAMILIES = {"MobileNetV2": "MobileNetV2", "EfficientNetLite": "EfficientNetLite",
                  "ResNetV2": "ResNet", "InceptionV3": "Inception", "DeepLabV3": "DeepLabV3"}
#: OODIn's phones (Table I).
OODIN_DEVICES = ("xperia-c5", "a71", "s20fe")
#: OODIn's recognition rates r modelled (section III-B: r = 1 runs inference on every frame,
#: r = 0.5 on every second one).
OODIN_RATES = (1.0, 0.5, 0.25)


def oodin_task(row: dict[str, Any]) -> str:
    """The task name of one evaluated DNN of OODIn Table II, e.g. ``mobilenetv2-1.0-int8``."""
    return f"{row['model']} {row['precision']}".lower().replace(" ", "-")


def oodin_variants() -> list[Variant]:
    """OODIn Table II's eleven evaluated DNNs, each its own task. OODIn's INT8 is TFLite
    dynamic-range quantisation (section III-E): DR8 here."""
    out = []
    for r in papers.paper("oodin")["models"]["rows"]:
        family = next(v for k, v in OODIN_FAMILIES.items() if r["model"].replace(" ", "").startswith(k))
        out.append(Variant(task=oodin_task(r), model=r["model"], arch=family,
                           precision="DR8" if r["precision"] == "INT8" else r["precision"],
                           flops=float(r["flops"]), params=float(r["params"]),
                           input_elements=_input_elements(r["resolution"], "image"), batch=1,
                           accuracy=float(r["accuracy"])))
    return out

