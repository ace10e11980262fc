"""What MASA's and FlexNN's evaluations share (notebooks 16_masa, 17_flexnn and
benchmarks/bench_memory.py): the memory-study networks, their measured per-layer profiles, the
paper budgets scaled to them, and the what-if speed of both simulators. The figures themselves
are in :mod:`.masa` and :mod:`.flexnn`.

Networks are the memory-study zoo models (``workbench.host.zoo.MEMORY_SPECS``: trained here on h1,
stand-ins of the papers' networks by architecture family); ``quick`` uses the same architectures
with their initial (untrained) weights, which leaves memory and time unchanged. Every latency and
memory number is measured here, except the paging penalty of memory-unaware policies, which is
modelled (``workbench.memory.masa.SWAP_BPS``); the reports say so.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ...host import zoo
from ...memory import flexnn as F
from ...memory import masa as M
from ...memory.graph import LayerGraph, from_keras
from ...timing import samples_ms

# MASA's networks (Table 1) and the stand-in that plays each here.
STAND_INS = {"AgeNet": "AgeNet-S", "GenderNet": "GenderNet-S", "FaceNet": "AlexNet-FC",
             "SoS": "AlexNet-FC", "MemNet": "AlexNet-FC", "SceneNet": "AlexNet-FC",
             "EmotionNet": "VGG-S", "TinyYOLO": "VGG-Conv"}
# MASA 5.2 workloads and Table 1 memory (MB) of the paper's networks, for budget scaling.
SCENARIOS = {"small": ["AgeNet", "GenderNet", "TinyYOLO"],
             "mixed": ["AgeNet", "EmotionNet", "FaceNet"],
             "lifelogging": ["TinyYOLO", "EmotionNet", "MemNet", "SceneNet", "SoS"]}
PAPER_MEMORY_MB = {"AgeNet": 183, "GenderNet": 186, "FaceNet": 875, "SoS": 875, "GoogleNet": 404,
                   "TinyYOLO": 263, "EmotionNet": 761, "MemNet": 880, "SceneNet": 892}
PAPER_BUDGETS_MB = (512, 1024, 2048)


@dataclass
class Nets:
    graphs: dict[str, LayerGraph]
    roots: dict[str, Path]
    profiles: dict[str, M.NetProfile]
    trained: bool


def load_graphs(*, quick: bool = False) -> tuple[dict[str, LayerGraph], bool]:
    """Layer graphs of the memory-study models (trained: from the zoo, training what is missing;
    quick: untrained weights)."""
    graphs = {}
    for spec in zoo.MEMORY_SPECS:
        if quick:
            zoo._keras().utils.set_random_seed(0)
            model = spec.build(_Shape())
        else:
            if zoo.record(spec) is None:
                zoo.train(spec)
            model = zoo.load_model(spec)
        graphs[spec.model] = from_keras(model, name=spec.model)
    return graphs, not quick


class _Shape:
    input_shape = (32, 32, 1)


def prepare(*, quick: bool = False, root: Path | None = None, repeats: int = 5) -> Nets:
    """Graphs, per-layer weight files and measured per-layer profiles of every stand-in; a
    role of the paper (e.g. MemNet) is a separate copy of its stand-in's files."""
    graphs, trained = load_graphs(quick=quick)
    root = Path(root or tempfile.mkdtemp(prefix="wb-memory-"))
    profiles = {n: M.profile_network(g, root / n, repeats=repeats) for n, g in graphs.items()}
    roles_g, roles_r, roles_p = dict(graphs), {n: root / n for n in graphs}, dict(profiles)
    for role, model in STAND_INS.items():
        roles_g[role] = graphs[model]
        roles_r[role] = root / model
        roles_p[role] = M.NetProfile(role, profiles[model].layers)
    return Nets(roles_g, roles_r, roles_p, trained)


def budgets_for(nets: Nets, names: list[str]) -> dict[int, int]:
    """The paper's 512 MB / 1 GB / 2 GB scaled by our networks' memory over the paper's."""
    scale = sum(nets.profiles[n].bulk_bytes for n in names) / sum(
        PAPER_MEMORY_MB[n] * 1e6 for n in names)
    return {mb: int(mb * 1e6 * scale) for mb in PAPER_BUDGETS_MB}


@dataclass(frozen=True)
class WhatIfSpeed:
    """Milliseconds per what-if question, measured."""

    masa_whatif_ms_p50: float
    masa_whatif_ms_max: float
    flexnn_whatif_ms_p50: float
    flexnn_whatif_ms_max: float


def simulator_speed(nets: Nets, graph: LayerGraph, *, root: Path | None = None) -> WhatIfSpeed:
    """A MASA stochastic run (150 jobs) and a FlexNN re-slice + plan + simulate at a new budget."""
    pool = [p for p in PAPER_MEMORY_MB if p in nets.profiles]
    jobs = M.stochastic_jobs(pool, nets.profiles, scenario=1, intensity=1.2, n=150)
    b = budgets_for(nets, pool)[512]
    ts = samples_ms(lambda: M.simulate(nets.profiles, jobs, policy="masa", budget=b), runs=10,
                    warmup=1)
    root = Path(root or tempfile.mkdtemp(prefix="wb-flexnn-"))
    lt = F.measure_layer_times(graph, root, repeats=3)
    mb = F.min_budget(graph)

    def whatif(frac: float) -> None:
        bb = max(mb, int(graph.bulk_peak_bytes() * frac))
        F.simulate(F.slice_and_plan(graph, bb), lt)

    tf = [samples_ms(whatif, frac, runs=1)[0] for frac in (0.1, 0.2, 0.4, 0.8)]
    return WhatIfSpeed(statistics.median(ts), max(ts), statistics.median(tf), max(tf))
