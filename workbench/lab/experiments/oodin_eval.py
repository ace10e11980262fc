"""OODIn's own evaluation (Figs 3-6, section IV-B) on the modelled phones.

Each of OODIn Table II's eleven DNNs is its own problem on each phone; OODIn picks the best of
every system configuration (engine, CPU threads and XNNPACK, DVFS governor) for the objective
(Fig. 3: least average latency; Figs 4-6: least 90th-percentile latency; no accuracy drop: the
DNN's transformation is fixed). The baselines (section IV-A):

* oSQ-CPU: the CPU with XNNPACK, threads tuned, the default governor; oSQ-GPU: the GPU;
  oSQ-NNAPI: the vendor's default NNAPI accelerator (the NPU, else the DSP; none on Android 6).
* PAW-D: the configuration that is best for EfficientNetLite4 on the same phone, used for
  every DNN (model-unaware).
* MAW-D: the configuration that is best for the DNN on the S20 FE, used on every phone
  (platform-agnostic); an engine or governor the phone lacks makes it N/A / the default.

Speed-up = the baseline's latency / OODIn's. The figures compare one inference per frame
(recognition rate r = 1); :func:`target_fps` uses r, OODIn's fourth system parameter, for a
"target TP = 30" objective. Computation only; notebooks/20_oodin_eval.ipynb draws it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ... import papers
from ...profiles import Profile
from ...profiles import phone_model as pm
from ...profiles.schema import Config

#: The statistic each figure minimises.
STAT = {"Fig. 3": "L", "Fig. 4": "L_p90", "Fig. 5": "L_p90", "Fig. 6": "L_p90"}


@dataclass(frozen=True)
class SpeedupRow:
    """OODIn's design for one DNN on one phone against one baseline's."""

    figure: str
    device: str
    dnn: str
    method: str
    outcome: str               # "ok" or "N/A" (the baseline cannot run here)
    oodin: str
    baseline: str | None
    oodin_ms: float
    baseline_ms: float | None
    speedup: float | None      # baseline_ms / oodin_ms

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SpeedupSummary:
    """Max and geometric-mean speed-up over one baseline in one figure, beside the paper's."""

    figure: str
    method: str
    n: int
    not_applicable: int
    max: float | None
    geomean: float | None
    paper_max: float
    paper_geomean: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _key(c: Config) -> tuple:
    return (c.processor, c.threads, c.xnnpack, c.governor)


def _best(rows: list[Config], stat: str) -> Config:
    return min(rows, key=lambda c: (_ms(c, stat), c.id))


def _ms(c: Config, stat: str) -> float:
    v = getattr(c, stat)
    assert v is not None  # modelled rows carry every latency statistic
    return float(v)


def _label(c: Config | None) -> str | None:
    if c is None:
        return None
    rate = "" if c.recognition_rate in (None, 1.0) else f" r={c.recognition_rate:g}"
    if c.processor != "CPU":
        return c.processor + rate
    return f"CPU {c.threads}t{' XNNPACK' if c.xnnpack else ''} {c.governor}{rate}"


def _default_governor(p: Profile) -> str:
    return p.engines[0].options.governors[0] if p.engines[0].options.governors else "schedutil"


def _osq(rows: list[Config], which: str, gov: str, stat: str, engines: list[str]) -> Config | None:
    if which == "oSQ-CPU":
        cpu = [c for c in rows if c.processor == "CPU" and c.xnnpack and c.governor == gov]
        return _best(cpu, stat) if cpu else None
    if which == "oSQ-GPU":
        gpu = [c for c in rows if c.processor == "GPU"]
        return _best(gpu, stat) if gpu else None
    acc = "NPU" if "NPU" in engines else ("DSP" if "DSP" in engines else None)
    nn = [c for c in rows if c.processor == acc]
    return nn[0] if nn else None


def profiles(devices: tuple[str, ...] = pm.OODIN_DEVICES) -> dict[str, Profile]:
    """The modelled OODIn profiles (Table II's DNNs, OODIn's system parameters)."""
    return {d: pm.build_oodin_profile(d) for d in dict.fromkeys((*devices, "s20fe"))}


def _rows(p: Profile, task: str) -> list[Config]:
    """The task's rows at recognition rate 1 (the figures compare latencies of one inference
    per frame)."""
    return [c for c in p.configs if c.task == task and c.recognition_rate in (None, 1.0)]


def fig3(profs: dict[str, Profile], devices: tuple[str, ...] = pm.OODIN_DEVICES) -> list[SpeedupRow]:
    """OODIn against the optimised status quo on each phone and DNN (least average latency)."""
    out = []
    for dev in devices:
        p = profs[dev]
        gov, engines = _default_governor(p), [e.name for e in p.engines]
        for task in [t.name for t in p.tasks]:
            rows = _rows(p, task)
            best = _best(rows, "L")
            for method in ("oSQ-CPU", "oSQ-GPU", "oSQ-NNAPI"):
                b = _osq(rows, method, gov, "L", engines)
                o, v = _ms(best, "L"), (_ms(b, "L") if b else None)
                out.append(SpeedupRow("Fig. 3", dev, task, method, "ok" if b else "N/A",
                                      str(_label(best)), _label(b), o, v,
                                      v / o if v is not None else None))
    return out


def figs4_6(profs: dict[str, Profile]) -> list[SpeedupRow]:
    """OODIn against PAW-D and MAW-D (least p90 latency): Fig. 4 on the Xperia C5, Fig. 5 on
    the A71, Fig. 6 on the S20 FE (PAW-D only: MAW-D is optimised there, so it is OODIn)."""
    stat = "L_p90"
    ref = profs["s20fe"]
    out = []
    for fig, dev in (("Fig. 4", "xperia-c5"), ("Fig. 5", "a71"), ("Fig. 6", "s20fe")):
        p = profs[dev]
        gov = _default_governor(p)
        govs = set(p.engines[0].options.governors)
        for task in [t.name for t in p.tasks]:
            rows = _rows(p, task)
            by_key = {_key(c): c for c in rows}
            best = _best(rows, stat)
            prec = task.rsplit("-", 1)[-1]
            proxy = next((t.name for t in p.tasks if t.name == f"efficientnetlite4-{prec}"),
                         "efficientnetlite4-fp32")
            paw = by_key.get(_key(_best(_rows(p, proxy), stat)))
            methods = [("PAW-D", paw)]
            if dev != "s20fe":
                k = _key(_best(_rows(ref, task), stat))
                if k[3] is not None and k[3] not in govs:
                    k = (*k[:3], gov)  # a governor the phone lacks: its default
                methods.append(("MAW-D", by_key.get(k)))
            for method, b in methods:
                o, v = _ms(best, stat), (_ms(b, stat) if b else None)
                out.append(SpeedupRow(fig, dev, task, method, "ok" if b else "N/A",
                                      str(_label(best)), _label(b), o, v,
                                      v / o if v is not None else None))
    return out


def summary(rows: list[SpeedupRow]) -> list[SpeedupSummary]:
    """Max and geometric mean per figure and baseline, beside OODIn section IV-B's numbers."""
    paper = papers.paper("oodin")["speedups"]
    out = []
    for fig in ("Fig. 3", "Fig. 4", "Fig. 5", "Fig. 6"):
        for method, pub in paper[fig].items():
            if not isinstance(pub, dict):
                continue
            sel = [r for r in rows if r.figure == fig and r.method == method]
            s = [r.speedup for r in sel if r.speedup is not None]
            out.append(SpeedupSummary(
                fig, method, len(s), len(sel) - len(s), max(s) if s else None,
                math.exp(sum(math.log(x) for x in s) / len(s)) if s else None,
                float(pub["max"]), float(pub["geomean"])))
    return out


@dataclass(frozen=True)
class TargetRow:
    """OODIn's design for ``target TP = fps`` (frames served per second as close as possible to
    the camera's rate) on one DNN and phone, over every engine, thread count, governor and
    recognition rate r."""

    device: str
    dnn: str
    target_fps: float
    best_fps_at_r1: float      # the fastest configuration running inference on every frame
    design: str
    design_fps: float
    recognition_rate: float
    needs_lower_rate: bool     # no configuration reaches the target at r = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_fps(profs: dict[str, Profile], *, fps: float = 30.0,
               devices: tuple[str, ...] = pm.OODIN_DEVICES) -> list[TargetRow]:
    """OODIn's "as close as possible to a target value" objective with its recognition rate:
    ``target TP = fps`` solved by OODIn on each phone and DNN."""
    from ...moo.problem import DiscreteProblem
    from ...solvers import oodin

    out = []
    for dev in devices:
        p = profs[dev]
        for task in [t.name for t in p.tasks]:
            res = oodin(DiscreteProblem(p, f"target TP = {fps:g}", tasks=[task]))
            c = p.config(res.designs["d0"].configs[0])
            top = max(float(r.TP or 0.0) for r in _rows(p, task))
            out.append(TargetRow(dev, task, fps, top, str(_label(c)), float(c.TP or 0.0),
                                 float(c.recognition_rate or 1.0), top < fps))
    return out
