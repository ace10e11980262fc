"""FlexNN's evaluation on this machine (notebook 17_flexnn, benchmarks/bench_memory.py): the
memory/latency trade-off (Fig. 10), the best point under the paper's criterion, planning time
(Table 2), adaptation to changing budgets (Fig. 14) and what d_m becomes in the optimiser. Rows
are typed with snake_case fields; every number is measured here (NumPy kernels, one compute
thread, one loader thread) except ``simulated_ms``, which is the what-if simulator's prediction.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...memory import flexnn as F
from ...memory.graph import LayerGraph
from ...memory.profiler import RssSampler
from ...timing import Stopwatch, median_ms


@dataclass(frozen=True)
class TradeoffRow:
    """One execution mode of one model: bulk, on-demand, or FlexNN at a budget."""

    model: str
    mode: str  # bulk | on-demand | flexnn
    budget_mb: float | None
    peak_mb: float
    rss_growth_mb: float
    latency_ms: float
    memory_reduction_pct: float
    latency_increase_pct: float
    simulated_ms: float | None = None
    simulator_error_pct: float | None = None
    steps: int | None = None
    pinned_mb: float | None = None
    streamed_mb: float | None = None
    preloaded: int | None = None
    plan_ms: float | None = None


def tradeoff(graph: LayerGraph, *, fracs=(0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0),
             reps: int = 10, rounds: int = 7, root: Path | None = None) -> list[TradeoffRow]:
    """FlexNN Fig. 10 for one model: bulk, on-demand and FlexNN at budgets (fractions of bulk
    peak memory, clipped to the minimum feasible budget). Latencies interleaved over ``rounds``
    (this VM's timing drifts); memory is the planned tensor bytes and the sampled RSS growth."""
    from threadpoolctl import threadpool_limits

    root = Path(root or tempfile.mkdtemp(prefix="wb-flexnn-"))
    x = np.random.default_rng(1).normal(size=(1,) + tuple(graph.input_shape)).astype(np.float32)
    bulk_b = graph.bulk_peak_bytes()
    mb = F.min_budget(graph)
    budgets = sorted({max(mb, int(bulk_b * f)) for f in fracs})
    lt = F.measure_layer_times(graph, root)
    plans = {b: F.slice_and_plan(graph, b) for b in budgets}
    runners = {b: F.FlexRunner(p, root) for b, p in plans.items()}
    ref = graph.run(x)
    modes = {"bulk": graph.run, "on-demand": lambda z: F.run_on_demand(graph, root, z)}
    modes.update({f"flexnn@{b}": runners[b].run for b in budgets})
    lat: dict[str, list[float]] = {k: [] for k in modes}
    rss: dict[str, int] = {}
    with threadpool_limits(1):
        for k, fn in modes.items():
            np.testing.assert_allclose(fn(x), ref, atol=1e-4, rtol=1e-3)
            with RssSampler() as rs:
                fn(x)
            rss[k] = rs.peak_delta
        for _ in range(rounds):
            for k, fn in modes.items():
                lat[k].append(median_ms(fn, x, runs=reps))
    for r in runners.values():
        r.close()

    def increase(k: str) -> float:
        # Paired per round against bulk: this VM's speed drifts by tens of percent over
        # seconds, so each round's ratio to the bulk median of the same round is the stable
        # comparison.
        return 100 * (statistics.median(a / b for a, b in zip(lat[k], lat["bulk"])) - 1)

    def reduction(peak: int) -> float:
        return 100 * (1 - peak / bulk_b)

    od = F.on_demand_peak_bytes(graph)
    rows = [TradeoffRow(graph.name, "bulk", None, bulk_b / 1e6, rss["bulk"] / 1e6,
                        statistics.median(lat["bulk"]), 0.0, increase("bulk")),
            TradeoffRow(graph.name, "on-demand", None, od / 1e6, rss["on-demand"] / 1e6,
                        statistics.median(lat["on-demand"]), reduction(od), increase("on-demand"))]
    for b, p in plans.items():
        k = f"flexnn@{b}"
        ms = statistics.median(lat[k])
        sim = F.simulate(p, lt) * 1e3
        # The runner's buffer is allocated before measuring: its RSS is the buffer itself.
        rows.append(TradeoffRow(
            graph.name, "flexnn", b / 1e6, p.buffer_bytes / 1e6,
            (rss[k] + p.buffer_bytes) / 1e6, ms, reduction(p.buffer_bytes), increase(k), sim,
            100 * (sim / ms - 1), len(p.slicing.steps), p.pinned_bytes / 1e6,
            p.streamed_bytes / 1e6, p.preloaded, p.seconds * 1e3))
    return rows


def best_points(rows: list[TradeoffRow], *, min_reduction_pct: float = 90.0) -> list[TradeoffRow]:
    """Per model, FlexNN's fastest point with at least ``min_reduction_pct`` less memory than
    bulk (the paper's criterion), else its most frugal point."""
    out = []
    for model in dict.fromkeys(r.model for r in rows):
        pts = [r for r in rows if r.model == model and r.mode == "flexnn"]
        if not pts:
            continue
        ok = [r for r in pts if r.memory_reduction_pct >= min_reduction_pct]
        out.append(min(ok, key=lambda r: r.latency_increase_pct) if ok
                   else max(pts, key=lambda r: r.memory_reduction_pct))
    return out


def planning_ms(rows: list[TradeoffRow]) -> dict[str, float]:
    """Median planning time per model (Table 2's comparison)."""
    by: dict[str, list[float]] = {}
    for r in rows:
        if r.plan_ms is not None:
            by.setdefault(r.model, []).append(r.plan_ms)
    return {m: statistics.median(v) for m, v in by.items()}


@dataclass(frozen=True)
class DmRow:
    profile: str
    role: str
    design: str
    accuracy: float | None
    latency_ms: float | None
    memory_mb: float | None


def dm_with_memory_modes(base: str | Path = "host", augmented: str | Path = "host-memory",
                         slo: str = "max A; max TP; max L <= 20ms", task: str = "h1"
                         ) -> list[DmRow]:
    """RASS's designs on the host profile with and without memory-mode rows: what d_m becomes."""
    from ...moo.problem import DiscreteProblem
    from ...profiles import load_profile
    from ...solvers import solve

    rows = []
    for name, path in (("LiteRT rows only", base), ("+ memory-mode rows", augmented)):
        prof = load_profile(path)
        res = solve(DiscreteProblem(prof, slo, tasks=[task]), "rass")
        for role in ("d0", "dm", "dwm"):
            d = res.designs.get(role)
            if d is None:
                continue
            cfg = prof.config(d.configs[0])
            rows.append(DmRow(name, role, d.labels[0], d.objectives.get("A"), cfg.L, cfg.MF))
    return rows


@dataclass(frozen=True)
class InferenceRow:
    t_s: float
    budget_mb: float
    buffer_mb: float
    latency_ms: float


@dataclass(frozen=True)
class AdaptationRow:
    budget_mb: float
    resliced: bool
    slice_ms: float
    plan_ms: float
    setup_ms: float
    total_ms: float


def adaptation(graph: LayerGraph, *, fracs=(0.5, 0.15, 0.3, 1.0), loops: int = 16,
               root: Path | None = None) -> tuple[list[InferenceRow], list[AdaptationRow]]:
    """FlexNN Fig. 14: inferences under a budget that changes ``len(fracs)`` times. Returns
    per-inference rows and per-adaptation rows (re-sliced or not, times)."""
    from threadpoolctl import threadpool_limits

    root = Path(root or tempfile.mkdtemp(prefix="wb-flexnn-"))
    x = np.random.default_rng(1).normal(size=(1,) + tuple(graph.input_shape)).astype(np.float32)
    bulk_b = graph.bulk_peak_bytes()
    mb = F.min_budget(graph)
    budgets = [max(mb, int(bulk_b * f)) for f in fracs]
    f = F.FlexNN(graph, root, budget=budgets[0])
    rows, adapts = [], []
    with threadpool_limits(1), Stopwatch() as clock:
        for i, b in enumerate(budgets):
            a = f.history[-1] if i == 0 else f.adapt(b)
            adapts.append(AdaptationRow(b / 1e6, a.resliced, a.slice_ms, a.plan_ms, a.setup_ms,
                                        a.total_ms))
            for _ in range(loops):
                t = clock.lap() / 1e3
                with Stopwatch() as sw:
                    f.run(x)
                rows.append(InferenceRow(t, b / 1e6, f.plan.buffer_bytes / 1e6, sw.ms))
    f.close()
    return rows, adapts


# --- measured in fresh processes (issue 16): full-size networks, real memory pressure ----------

#: Full-size networks of FlexNN's and MASA's evaluations, built without pretrained weights: their
#: latency and memory are the architecture's; accuracy is not measured. keras.applications builds
#: all but SqueezeNet, which :func:`squeezenet` builds (v1.1, the version NCNN's model zoo ships).
FULL_SIZE = ("VGG-16", "VGG-19", "ResNet-50", "ResNet-152", "MobileNetV2", "SqueezeNet", "ViT",
             "GPT-2")


def squeezenet(*, size: int = 224, classes: int = 1000):
    """SqueezeNet v1.1 (Iandola et al. 2016; the torchvision/NCNN layout) as a Keras model with
    random weights: eight fire modules (a 1x1 squeeze, then 1x1 and 3x3 expands concatenated)."""
    from ...host import zoo

    keras = zoo._keras()
    L = keras.layers
    x = inp = keras.Input((size, size, 3))
    x = L.Conv2D(64, 3, strides=2, activation="relu", name="conv1")(x)
    x = L.MaxPooling2D(3, 2, name="pool1")(x)

    def fire(x, n, squeeze, expand):
        s = L.Conv2D(squeeze, 1, activation="relu", name=f"fire{n}_squeeze")(x)
        a = L.Conv2D(expand, 1, activation="relu", name=f"fire{n}_expand1x1")(s)
        b = L.Conv2D(expand, 3, padding="same", activation="relu", name=f"fire{n}_expand3x3")(s)
        return L.Concatenate(name=f"fire{n}_concat")([a, b])

    x = fire(x, 2, 16, 64)
    x = fire(x, 3, 16, 64)
    x = L.MaxPooling2D(3, 2, name="pool3")(x)
    x = fire(x, 4, 32, 128)
    x = fire(x, 5, 32, 128)
    x = L.MaxPooling2D(3, 2, name="pool5")(x)
    for n, (sq, ex) in zip(range(6, 10), ((48, 192), (48, 192), (64, 256), (64, 256))):
        x = fire(x, n, sq, ex)
    x = L.Dropout(0.5)(x)
    x = L.Conv2D(classes, 1, activation="relu", name="conv10")(x)
    x = L.GlobalAveragePooling2D(name="gap")(x)
    x = L.Activation("softmax", name="softmax")(x)
    return keras.Model(inp, x, name="squeezenet1_1")


def _transformer_blocks(layers: list, x: str, *, tokens: int, dim: int, depth: int, heads: int,
                        mlp: int, causal: bool, rng, std: float = 0.02) -> str:
    """Pre-norm transformer blocks appended to ``layers`` after layer ``x``; returns the last
    layer's name. Weights ~ N(0, std) (GPT-2's and ViT's initialisation), biases zero."""
    from ...memory.graph import Layer

    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float32)

    def z(n):
        return np.zeros(n, np.float32)

    shapes = {ly.name: ly.shape for ly in layers}

    def add(name, op, ins, shape, attrs=None, weights=None):
        layers.append(Layer(name, op, ins, shape, attrs or {}, weights or {},
                            [shapes[s] for s in ins]))
        shapes[name] = shape
        return name

    t, d = tokens, dim
    for i in range(depth):
        ln1 = add(f"b{i}_ln1", "layernorm", [x], (t, d), {"eps": 1e-6},
                  {"gamma": np.ones(d, np.float32), "beta": z(d)})
        qkv = add(f"b{i}_qkv", "dense", [ln1], (t, 3 * d), {"act": None},
                  {"w": w(d, 3 * d), "b": z(3 * d)})
        att = add(f"b{i}_attn", "attention", [qkv], (t, d), {"heads": heads, "causal": causal})
        proj = add(f"b{i}_proj", "dense", [att], (t, d), {"act": None}, {"w": w(d, d), "b": z(d)})
        x = add(f"b{i}_add1", "add", [proj, x], (t, d), {"act": None})
        ln2 = add(f"b{i}_ln2", "layernorm", [x], (t, d), {"eps": 1e-6},
                  {"gamma": np.ones(d, np.float32), "beta": z(d)})
        fc1 = add(f"b{i}_fc1", "dense", [ln2], (t, mlp), {"act": "gelu"},
                  {"w": w(d, mlp), "b": z(mlp)})
        fc2 = add(f"b{i}_fc2", "dense", [fc1], (t, d), {"act": None}, {"w": w(mlp, d), "b": z(d)})
        x = add(f"b{i}_add2", "add", [fc2, x], (t, d), {"act": None})
    return add("ln_f", "layernorm", [x], (t, d), {"eps": 1e-6},
               {"gamma": np.ones(d, np.float32), "beta": z(d)})


def vit_graph(*, size: int = 384, patch: int = 16, dim: int = 768, depth: int = 12,
              heads: int = 12, mlp: int = 3072, classes: int = 1000, seed: int = 0) -> LayerGraph:
    """ViT-B/16 (Dosovitskiy et al. 2021) at ``size`` x ``size`` (FlexNN runs it at 384: 577
    tokens, 86.9M parameters) as a layer graph with random weights: a strided conv as patch
    embedding, a class token and position embeddings, ``depth`` pre-norm blocks, the class
    token's layer norm and a linear head. GELU is the tanh approximation."""
    from ...memory.graph import Layer

    rng = np.random.default_rng(seed)
    g = size // patch
    t = g * g + 1
    w = rng.standard_normal((3 * patch * patch, dim), dtype=np.float32) * np.float32(0.02)
    layers = [Layer("patch_embed", "conv", ["input"], (g, g, dim),
                    {"k": (patch, patch), "s": patch, "padding": "valid", "act": None},
                    {"w": w, "b": np.zeros(dim, np.float32)}, [(size, size, 3)]),
              Layer("tokens", "tokens", ["patch_embed"], (g * g, dim), {}, {}, [(g, g, dim)])]
    layers.append(Layer("cls_pos", "cls_pos", ["tokens"], (t, dim), {},
                        {"cls": np.zeros(dim, np.float32),
                         "pos": rng.standard_normal((t, dim), dtype=np.float32)
                         * np.float32(0.02)}, [(g * g, dim)]))
    x = _transformer_blocks(layers, "cls_pos", tokens=t, dim=dim, depth=depth, heads=heads,
                            mlp=mlp, causal=False, rng=rng)
    layers.append(Layer("cls", "token", [x], (dim,), {"index": 0}, {}, [(t, dim)]))
    layers.append(Layer("head", "dense", ["cls"], (classes,), {"act": "softmax"},
                        {"w": rng.standard_normal((dim, classes), dtype=np.float32)
                         * np.float32(0.02), "b": np.zeros(classes, np.float32)}, [(dim,)]))
    return LayerGraph("ViT", (size, size, 3), layers)


def gpt2_graph(*, tokens: int = 64, vocab: int = 50257, positions: int = 1024, dim: int = 768,
               depth: int = 12, heads: int = 12, seed: int = 0) -> LayerGraph:
    """GPT-2 small (Radford et al. 2019: 124M parameters) reading ``tokens`` token ids at once
    (one forward pass, as a prompt is read) as a layer graph with random weights: token and
    position embeddings, ``depth`` causal pre-norm blocks, the final layer norm and the
    language-model head on the last token. The head is a separate copy of the token embedding
    (the executor does not share a weight between layers): 163M parameters are stored."""
    from ...memory.graph import Layer

    rng = np.random.default_rng(seed)
    wte = rng.standard_normal((vocab, dim), dtype=np.float32) * np.float32(0.02)
    layers = [Layer("embed", "embed", ["input"], (tokens, dim), {},
                    {"wte": wte, "wpe": rng.standard_normal((positions, dim), dtype=np.float32)
                     * np.float32(0.01)}, [(tokens,)])]
    x = _transformer_blocks(layers, "embed", tokens=tokens, dim=dim, depth=depth, heads=heads,
                            mlp=4 * dim, causal=True, rng=rng)
    layers.append(Layer("last", "token", [x], (dim,), {"index": tokens - 1}, {}, [(tokens, dim)]))
    layers.append(Layer("lm_head", "dense", ["last"], (vocab,), {"act": None},
                        {"w": np.ascontiguousarray(wte.T)}, [(dim,)]))
    return LayerGraph("GPT-2", (tokens,), layers)


def full_size_graph(name: str, *, size: int = 224) -> LayerGraph:
    """One of :data:`FULL_SIZE` at ``size`` x ``size`` x 3 (random weights: latency and memory
    only)."""
    from ...host import zoo
    from ...memory.graph import from_keras

    if name not in FULL_SIZE:
        from ...errors import InputError

        raise InputError(f"no full-size network {name!r}: one of {', '.join(FULL_SIZE)}",
                         value=name)
    if name == "SqueezeNet":
        return from_keras(squeezenet(size=size), name=name)
    if name == "ViT":  # FlexNN runs ViT at 384x384
        return vit_graph(size=384 if size == 224 else size)
    if name == "GPT-2":
        return gpt2_graph()
    apps = zoo._keras().applications
    ctor = {"VGG-16": apps.VGG16, "VGG-19": apps.VGG19, "ResNet-50": apps.ResNet50,
            "ResNet-152": apps.ResNet152, "MobileNetV2": apps.MobileNetV2}[name]
    return from_keras(ctor(weights=None, input_shape=(size, size, 3)), name=name)


@dataclass(frozen=True)
class MeasuredRow:
    """One fresh-process run (``workbench.memory.measure``): every number read from the process.

    ``model_mb`` is the peak resident set over the pre-load baseline (less library code first run
    during it, ``Measurement.code_mb``); ``peak_mb`` the whole
    process; ``latency_ms`` the median of the run's timed inferences; ``round`` pairs rows that
    ran back to back (compare within a round: this machine drifts)."""

    model: str
    mode: str  # bulk | on-demand | flexnn | flexnn w.o. preload | flexnn w.o. slicing
    budget_mb: float | None
    round: int
    model_mb: float
    peak_mb: float
    base_mb: float
    latency_ms: float
    first_ms: float


def measured_tradeoff(graph: LayerGraph, *, fracs=(0.1, 0.2), rounds: int = 3, reps: int = 3,
                      root: Path | None = None, progress=None,
                      ablation: bool = True) -> list[MeasuredRow]:
    """FlexNN Fig. 10 and Fig. 13 measured: bulk, on-demand loading and FlexNN at budgets
    (fractions of the computed bulk peak, raised to the smallest feasible), each a fresh
    process, interleaved over ``rounds``. With ``ablation``, FlexNN also runs without preloading
    and without slicing (every layer whole) at each budget where that fits, and at the smallest
    budget that fits without slicing (so the two compare at one budget)."""
    from ...memory.measure import measure

    bulk_mb = graph.bulk_peak_bytes() / 1e6
    low = (F.min_budget(graph) + F.EXECUTOR_RESERVE) / 1e6 * 1.001
    whole_mb = (F.min_budget(graph, sliced=False) + F.EXECUTOR_RESERVE) / 1e6 * 1.001
    budgets = sorted({round(max(f * bulk_mb, low), 3) for f in fracs}
                     | ({round(whole_mb, 3)} if ablation and whole_mb < bulk_mb else set()))
    runs: list[tuple[str, dict]] = [("bulk", {}), ("on-demand", {"on_demand": True})]
    for b in budgets:
        runs.append(("flexnn", {"budget_mb": b}))
        if ablation:
            runs.append(("flexnn w.o. preload", {"budget_mb": b, "preload": False}))
            if b >= round(whole_mb, 3):
                runs.append(("flexnn w.o. slicing", {"budget_mb": b, "sliced": False}))
    rows = []
    with tempfile.TemporaryDirectory(prefix="wb-flexnn-") as tmp:
        where = Path(root or tmp)
        for r in range(rounds):
            for mode, kw in runs:
                m = measure(graph, reps=reps, root=where, **kw)
                rows.append(MeasuredRow(graph.name, mode, m.budget_mb, r, m.model_mb, m.peak_mb,
                                        m.base_mb, m.latency_ms, m.first_ms))
                if progress:
                    progress(rows[-1])
    return rows


@dataclass(frozen=True)
class MeasuredPoint:
    """A mode over rounds against bulk of the same rounds: memory is the largest reading (a
    budget must hold in every run), latency the median."""

    model: str
    mode: str
    budget_mb: float | None
    model_mb: float
    latency_ms: float
    memory_reduction_pct: float
    latency_increase_pct: float  # median over rounds of (latency / bulk latency of the round)


def measured_points(rows: list[MeasuredRow]) -> list[MeasuredPoint]:
    out = []
    bulk = {(r.model, r.round): r for r in rows if r.mode == "bulk"}
    keys = dict.fromkeys((r.model, r.mode, r.budget_mb) for r in rows)
    for model, mode, budget in keys:
        rs = [r for r in rows if (r.model, r.mode, r.budget_mb) == (model, mode, budget)]
        # The same statistic on both sides: a mode's worst reading against bulk's worst.
        b_mem = max(bulk[(model, r.round)].model_mb for r in rs)
        ratio = statistics.median(r.latency_ms / bulk[(model, r.round)].latency_ms for r in rs)
        mem = max(r.model_mb for r in rs)
        out.append(MeasuredPoint(model, mode, budget, mem,
                                 statistics.median(r.latency_ms for r in rs),
                                 100 * (1 - mem / b_mem), 100 * (ratio - 1)))
    return out


@dataclass(frozen=True)
class PressureRow:
    """One run inside a memory cgroup: real pressure, what the kernel did."""

    model: str
    mode: str  # bulk | flexnn
    budget_mb: float | None
    limit_mb: float
    swap_mb: float
    outcome: str  # ran | killed
    latency_ms: float | None
    first_ms: float | None
    group_peak_mb: float | None
    major_faults: int | None
    swapped_mb: float | None


def under_pressure(graph: LayerGraph, *, budget_mb: float, swap_mb: float, reps: int = 2,
                   root: Path | None = None) -> list[PressureRow]:
    """Bulk and FlexNN in the same memory: the limit is what the FlexNN run is charged plus a
    margin, measured first under a generous limit. Bulk is then killed (no swap) or pages
    (``swap_mb`` of swap); the plan runs. Raises PressureUnavailable where there is no cgroup."""
    from ...memory.measure import KilledByLimit, measure

    rows = []
    with tempfile.TemporaryDirectory(prefix="wb-pressure-") as tmp:
        where = Path(root or tmp)
        # Under a limit far above any run: what the plan is charged when nothing presses.
        free = measure(graph, budget_mb=budget_mb, reps=1, root=where, limit_mb=1e6 - 1)
        assert free.group_peak_mb is not None
        limit = round(free.group_peak_mb * 1.15 + 8, 1)  # the plan's charge and some headroom
        for mode, budget in (("flexnn", budget_mb), ("bulk", None)):
            for swap in (0.0, swap_mb):
                try:
                    m = measure(graph, budget_mb=budget, reps=reps, root=where, limit_mb=limit,
                                swap_mb=swap)
                except KilledByLimit:
                    rows.append(PressureRow(graph.name, mode, budget, limit, swap, "killed",
                                            None, None, None, None, None))
                    continue
                rows.append(PressureRow(graph.name, mode, budget, limit, swap, "ran",
                                        m.latency_ms, m.first_ms, m.group_peak_mb,
                                        m.major_faults, m.swapped_mb))
    return rows


@dataclass(frozen=True)
class MeasuredStudy:
    """What ``benchmarks/bench_memory.py --only measured`` measured, read back typed."""

    cpu: str
    data: str
    rows: list[MeasuredRow]
    points: list[MeasuredPoint]
    pressure: list[PressureRow]
    pressure_data: str


def load_measured(path: str | Path | None = None) -> MeasuredStudy | None:
    """The full-size measurements committed in ``reports/bench/memory.json`` (see
    :func:`workbench.lab.bench.bench_section`), or None when the benchmark has not run."""
    from ...errors import InputError
    from ..bench import bench_section

    m = bench_section("memory.json", "measured", path)
    if m is None:
        return None
    try:
        press = m.get("pressure") or {}
        return MeasuredStudy(m["cpu"], m["data"], [MeasuredRow(**r) for r in m["rows"]],
                             [MeasuredPoint(**p) for p in m["points"]],
                             [PressureRow(**r) for r in press.get("rows", [])],
                             press.get("data", ""))
    except (KeyError, TypeError) as e:
        raise InputError(f"the benchmark's 'measured' section does not match this version: {e}",
                         file=path or "reports/bench/memory.json") from None


# --- Figure 10 on the paper's terms, and under a limit that counts the page cache --------------

@dataclass(frozen=True)
class Fig10Point:
    """One mode of one model in ``benchmarks/bench_flexnn_fig10.py``: memory as FlexNN's artifact
    reads it (the largest sampled resident set less the idle one; the largest over rounds),
    latency the median over rounds of the artifact's trimmed mean of 8 inferences, and the
    median over rounds of the latency over Default's in the same round."""

    model: str
    mode: str  # default | direct | on-demand | flexnn
    budget_mb: float | None
    rounds: int
    pmap_mb: float
    latency_ms: float
    latency_vs_default_pct: float
    within_budget: bool | None


@dataclass(frozen=True)
class Fig10Comparison:
    """The paper's two readings against one baseline: FlexNN's memory cut at its smallest
    budget, and its latency cut at no more memory than the baseline's (paired per round)."""

    model: str
    baseline: str
    baseline_mb: float
    baseline_ms: float
    flexnn_min_budget_mb: float
    flexnn_min_mb: float
    memory_cut_pct: float
    flexnn_at_min_vs_baseline_pct: float
    same_memory_budget_mb: float | None
    same_memory_mb: float | None
    latency_cut_pct: float | None


@dataclass(frozen=True)
class PageCachePoint:
    """FlexNN at its smallest budget under one condition of the page-cache study: the latency
    added over the unlimited warm run of the same round, the MB read from storage per inference,
    and what reading that many MB costs at the disk's measured cold speed."""

    model: str
    condition: str
    runs: int
    ran: int
    budget_mb: float | None = None
    limit_mb: float | None = None
    latency_ms: float | None = None
    latency_vs_unlimited_pct: float | None = None
    added_ms: float | None = None
    read_mb_per_inference: float | None = None
    reread_ms_at_disk_speed: float | None = None
    first_ms: float | None = None
    group_peak_mb: float | None = None
    major_faults: float | None = None


@dataclass(frozen=True)
class Fig10Study:
    """``reports/bench/flexnn_fig10.json`` read back typed."""

    cpu: str
    source: str
    method: dict
    not_measured: dict[str, str]
    substituted: dict[str, str]
    points: list[Fig10Point]
    comparisons: list[Fig10Comparison]
    pagecache: list[PageCachePoint]
    disk: dict[str, dict]


def _typed(cls, row: dict):
    names = set(cls.__dataclass_fields__)
    return cls(**{k: v for k, v in row.items() if k in names})


def load_fig10(path: str | Path | None = None) -> Fig10Study | None:
    """The committed Figure 10 measurements (``benchmarks/bench_flexnn_fig10.py``), or None
    when the benchmark has not run."""
    from ...errors import InputError
    from ..bench import bench_section

    d = bench_section("flexnn_fig10.json", None, path)
    if d is None:
        return None
    try:
        return Fig10Study(d["cpu"], d["source"], d["method"], d.get("not_measured", {}),
                          d.get("substituted", {}),
                          [_typed(Fig10Point, r) for r in d.get("points", [])],
                          [_typed(Fig10Comparison, r) for r in d.get("comparisons", [])],
                          [_typed(PageCachePoint, r) for r in d.get("pagecache_points", [])],
                          d.get("disk", {}))
    except (KeyError, TypeError) as e:
        raise InputError(f"the Figure 10 benchmark's output does not match this version: {e}",
                         file=path or "reports/bench/flexnn_fig10.json") from None


# --- FlexNN "w.o. mem" (Fig. 13): the plan without its static buffer ---------------------------

class NativeAllocRunner:
    """FlexNN's "w.o. mem" ablation: the same plan (slicing, loading order, when each load may
    start) run without the static buffer. Every tensor is a fresh array from the process's
    allocator (numpy, glibc malloc) when it becomes live, dropped after its last use, as NCNN's
    native allocator does; the loader thread allocates the weights it reads. Memory is then what
    the allocator keeps (fragmentation, pages faulted in again on every inference), not the plan.

    Same interface as :class:`~workbench.memory.flexnn.FlexRunner` (``run``, ``close``, ``plan``).
    """

    def __init__(self, p: F.Plan, root: str | Path, *, preload: bool = True):
        import threading

        from ...memory.programs import planned_program, write_weight_files
        from ...runtime.programs import _Files

        self._threading = threading
        self.plan, self.preload = p, preload
        self.program = prog = planned_program(p)
        write_weight_files(p.slicing.graph, prog, root)
        self.files = _Files(prog, Path(root))
        self.w = {t.step: t for t in p.tensors if t.kind == "weight"}
        self.loads = sorted((t for t in self.w.values() if not t.pinned), key=lambda t: t.owner)
        self.scratch = {t.owner: t for t in p.tensors if t.kind == "intermediate"}
        for i, s in enumerate(p.slicing.steps):  # later weight slices use the first's matrix
            if s.shared and not s.first:
                self.scratch[i] = self.scratch[next(j for j, x in enumerate(p.slicing.steps)
                                                    if x.layer == s.layer and x.first)]
        self.free_after: dict[int, list[str]] = {}
        for t in p.tensors:
            if t.kind == "activation":
                self.free_after.setdefault(t.end, []).append(t.name)
        self.pinned = {i: self._read(t) for i, t in self.w.items() if t.pinned}

    def _read(self, t: F.Tensor) -> np.ndarray:
        s = self.program.steps[t.owner]
        assert s.file is not None  # a weight tensor's step always has a weight file
        a = np.empty(t.size, np.uint8)  # allocated when it is loaded: the native allocator
        self.files.read(s.file, a.data, self.program.file_bytes(s))
        return a

    def close(self) -> None:
        self.files.close()
        self.pinned = {}

    def run(self, x: np.ndarray) -> np.ndarray:
        threading = self._threading
        prog = self.program
        x = np.asarray(x, np.float32)
        batch = prog.batch
        acts = {"input": np.array(x, np.float32)}
        loaded: dict[int, np.ndarray] = {}
        events = {t.owner: threading.Event() for t in self.loads}
        done, cv = [-1], threading.Condition()
        err: list[BaseException] = []

        def loader():
            try:
                for t in self.loads:
                    with cv:  # the plan's timing: the load starts when its memory is free
                        while done[0] < t.time - 1 and not err:
                            cv.wait()
                    if err:
                        return
                    loaded[t.owner] = self._read(t)
                    events[t.owner].set()
            except BaseException as e:
                err.append(e)
                for ev in events.values():
                    ev.set()

        th = threading.Thread(target=loader, daemon=True) if self.preload and self.loads else None
        if th:
            th.start()
        scratch: dict[int, np.ndarray] = {}
        try:
            for i, s in enumerate(prog.steps):
                ly = prog.layers[s.layer]
                w = None
                flat: np.ndarray | None = None
                if s.file:
                    if i in self.pinned:
                        flat = self.pinned[i]
                    elif th is None:
                        flat = self._read(self.w[i])
                    else:
                        events[i].wait()
                        if err:
                            raise err[0]
                        flat = loaded.pop(i)
                    c0, c1 = s.cols or (0, ly.cout)
                    w = ly.views(flat.view(np.float32), c0, c1)
                if ly.name not in acts:
                    acts[ly.name] = np.empty((batch,) + ly.shape, np.float32)
                m = self.scratch.get(i)
                if m is not None and m.owner not in scratch:
                    scratch[m.owner] = np.empty(m.size // 4, np.float32)
                ly.compute([acts[n] for n in ly.inputs], acts[ly.name], w=w, cols=s.cols,
                           scratch=None if m is None else scratch[m.owner], rows=s.rows,
                           kernel=s.kernel if s.kernel != "-" else "im2col",
                           build=s.first or not s.shared)
                w = flat = None  # the step's weights are freed now
                if m is not None and m.end == i:
                    del scratch[m.owner]
                for n in self.free_after.get(i, ()):
                    if n != prog.layers[-1].name:
                        acts.pop(n, None)
                if th is not None:
                    with cv:
                        done[0] = i
                        cv.notify_all()
        finally:
            if th:
                with cv:
                    if not err and done[0] < len(prog.steps) - 1:
                        err.append(RuntimeError("inference aborted"))
                    cv.notify_all()
                th.join()
        return acts[prog.layers[-1].name]


def measure_without_static_memory(graph: LayerGraph, *, budget_mb: float, reps: int = 3,
                                  preload: bool = True, root: str | Path | None = None,
                                  timeout: float = 600.0):
    """:func:`workbench.memory.measure.measure` of FlexNN "w.o. mem": the plan at ``budget_mb``
    run by :class:`NativeAllocRunner` in a fresh process (this module's ``__main__``, which is
    the same probe with the runner swapped). Returns a ``Measurement``."""
    import json
    import subprocess
    import sys

    from ...errors import WorkbenchError
    from ...memory.measure import Measurement, prepare
    from ...timing import blas_threads_env

    with tempfile.TemporaryDirectory(prefix="wb-womem-") as tmp:
        where = Path(root or tmp)
        prepare(graph, where, budget_mb=budget_mb)
        cmd = [sys.executable, "-m", __name__, str(where), repr(float(budget_mb)), str(reps),
               "1" if preload else "0", "1"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=blas_threads_env(1))
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        raise WorkbenchError(f"w.o. mem probe of {graph.name} failed: "
                             f"{lines[-1] if lines else 'exit ' + str(r.returncode)}")
    m = Measurement(**json.loads(r.stdout.strip().splitlines()[-1]))
    if m.runner != NativeAllocRunner.__name__:  # the ablation must not measure FlexNN itself
        raise WorkbenchError(f"w.o. mem probe of {graph.name} ran {m.runner}, not the native "
                             "allocator")
    return m


if __name__ == "__main__":  # the probe of measure_without_static_memory
    import sys

    from ...memory import _probe

    F.FlexRunner = NativeAllocRunner  # type: ignore[misc, assignment]
    sys.exit(_probe.main(sys.argv[1:]))
