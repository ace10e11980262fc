"""MASA's and FlexNN's evaluations on this machine (notebooks 16_masa, 17_flexnn, and
benchmarks/bench_memory.py): one function per figure, each returning plain rows.

Networks are the memory-study zoo models (``workbench.host.zoo.MEMORY_SPECS``: trained here on h1,
stand-ins of the papers' networks by architecture family); ``quick`` uses the same architectures
with their initial (untrained) weights, which leaves memory and time unchanged. Every latency and
memory number is measured here, except the paging penalty of memory-unaware policies, which is
modelled (``workbench.memory.masa.SWAP_BPS``); the reports say so.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...host import zoo
from ...memory import flexnn as F
from ...memory import masa as M
from ...memory.graph import LayerGraph, from_keras
from ...memory.profiler import RssSampler
from ...timing import median_ms, samples_ms

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


def network_table(nets: Nets) -> list[dict]:
    rows = []
    for role, model in STAND_INS.items():
        p, g = nets.profiles[role], nets.graphs[role]
        rows.append({"paper network": role, "paper memory MB": PAPER_MEMORY_MB[role],
                     "stand-in": model, "layers": len(g.layers),
                     "conv": sum(1 for ly in g.layers if ly.kind == "conv"),
                     "fc": sum(1 for ly in g.layers if ly.kind == "fc"),
                     "weights MB": round(g.weight_bytes / 1e6, 2),
                     "bulk memory MB": round(p.bulk_bytes / 1e6, 2),
                     "bulk time ms": round(p.bulk_seconds * 1e3, 2),
                     "RSS-profiled peak layer MB": round(max(x.rss_peak_bytes for x in p.layers)
                                                         / 1e6, 2)})
    return rows


def budgets_for(nets: Nets, names: list[str]) -> dict[int, int]:
    """The paper's 512 MB / 1 GB / 2 GB scaled by our networks' memory over the paper's."""
    scale = sum(nets.profiles[n].bulk_bytes for n in names) / sum(
        PAPER_MEMORY_MB[n] * 1e6 for n in names)
    return {mb: int(mb * 1e6 * scale) for mb in PAPER_BUDGETS_MB}


def deterministic(nets: Nets, *, n: int = 20, workers: int = 2) -> list[dict]:
    """Fig. 6: periodic images, every network of the scenario on each (simulated)."""
    rows = []
    for sc, names in SCENARIOS.items():
        serial = sum(nets.profiles[x].bulk_seconds for x in names)
        jobs = M.periodic_jobs(names, n=n, interval=serial * 1.5)
        for paper_mb, b in budgets_for(nets, names).items():
            for pol in ("bulk", "deepeye", "masa"):
                r = M.simulate(nets.profiles, jobs, policy=pol, budget=b, workers=workers)
                rows.append({"scenario": sc, "paper budget MB": paper_mb, "budget MB": b / 1e6,
                             "policy": pol, "mean response ms": r.mean_response * 1e3})
    return rows


def stochastic(nets: Nets, *, scenario: int, n: int = 150, workers: int = 2,
               intensities=(0.8, 1.0, 1.2), seed: int = 0) -> list[dict]:
    """Figs. 7 (scenario I) and 8 (scenario II) on the nine roles (simulated)."""
    pool = list(PAPER_MEMORY_MB)
    pool = [p for p in pool if p in nets.profiles]
    rows = []
    for paper_mb, b in budgets_for(nets, pool).items():
        for rho in intensities:
            jobs = M.stochastic_jobs(pool, nets.profiles, scenario=scenario, intensity=rho, n=n,
                                     seed=seed)
            for pol in ("bulk", "deepeye", "masa"):
                r = M.simulate(nets.profiles, jobs, policy=pol, budget=b, workers=workers)
                rows.append({"paper budget MB": paper_mb, "budget MB": b / 1e6, "intensity": rho,
                             "policy": pol, "mean response ms": r.mean_response * 1e3,
                             "overcommitted tasks": r.overcommit_tasks})
    return rows


HEAVY = {"TinyYOLO": None, "FaceNet": "TinyYOLO", "AgeNet": "FaceNet", "GenderNet": "FaceNet",
         "EmotionNet": "FaceNet", "MemNet": None}
LIGHT = {"FaceNet": None, "AgeNet": "FaceNet", "GenderNet": "FaceNet"}


def context(nets: Nets, tree: dict, *, probs=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0), n: int = 60,
            workers: int = 2, budget_mb: int = 1024) -> list[dict]:
    """Figs. 10 (heavy) and 11 (light): mean makespan against the root's label probability."""
    names = list(tree)
    b = budgets_for(nets, names)[budget_mb]
    serial = sum(nets.profiles[x].bulk_seconds for x in names)
    rows = []
    for p in probs:
        jobs = M.context_jobs(tree, n=n, interval=serial, p=p, seed=1,
                              always_positive=("FaceNet",))
        for pol in ("masa", "ca-wait", "ca-preempt"):
            r = M.simulate(nets.profiles, jobs, policy=pol, budget=b, workers=workers)
            rows.append({"label probability": p, "policy": pol,
                         "mean makespan ms": r.mean_response * 1e3,
                         "aborted tasks": r.aborted_tasks})
    return rows


def batching(nets: Nets, *, sizes=(1, 2, 4, 8, 16, 32), workers: int = 2,
             budget_mb: int = 1024) -> list[dict]:
    """Fig. 12: a 2-network task, batched (1 x B inputs) against individual arrivals (B x 1):
    per-input time (simulated; a batch scales execution time and activations by B and loads
    each layer once)."""
    names = ["AgeNet", "GenderNet"]
    b = budgets_for(nets, names)[budget_mb]
    rows = []
    for size in sizes:
        batched = {f"{x}": M.NetProfile(x, [M.LayerCost(
            ly.name, ly.kind, ly.inputs, ly.weight_bytes, ly.out_bytes * size,
            ly.scratch_bytes * size, ly.load_s, ly.exec_s * size) for ly in nets.profiles[x].layers])
            for x in names}
        rb = M.simulate(batched, [M.Job(0, 0.0, names)], policy="masa", budget=b, workers=workers)
        ri = M.simulate(nets.profiles, M.periodic_jobs(names, n=size, interval=0.0),
                        policy="masa", budget=b, workers=workers)
        rows.append({"batch": size, "batched ms/input": rb.jobs[0].done_at / size * 1e3,
                     "individual ms/input": max(j.done_at for j in ri.jobs) / size * 1e3})
    return rows


def optimality(nets: Nets, *, workers=(1, 2, 3, 4), time_limit: float = 60.0) -> list[dict]:
    """Section 5.6 / Fig. 13(a): two 4-layer networks (24 tasks), MASA against the MILP."""
    from ...memory.optimal import check_schedule, instance_from_profiles, masa_schedule, solve_milp

    inst = instance_from_profiles([nets.profiles["AgeNet"], nets.profiles["TinyYOLO"]], layers=4)
    rows = []
    for k in workers:
        m = masa_schedule(inst, workers=k)
        o = solve_milp(inst, workers=k, time_limit=time_limit)
        check_schedule(inst, o, workers=k)
        rows.append({"workers": k, "MASA makespan": m.makespan, "optimal makespan": o.makespan,
                     "ratio": m.makespan / o.makespan, "MILP status": o.status,
                     "MILP s": round(o.seconds, 2)})
    return rows


def workers_effect(nets: Nets, *, workers=(1, 2, 4), n: int = 150,
                   intensity: float = 1.2) -> list[dict]:
    """Section 5.3's remark: 2 -> 4 workers on three small DNNs under high random traffic."""
    pool = SCENARIOS["small"]
    b = budgets_for(nets, pool)[1024]
    jobs = M.stochastic_jobs(pool, nets.profiles, scenario=1, intensity=intensity, n=n, seed=3)
    rows = []
    for k in workers:
        for pol in ("bulk", "deepeye", "masa"):
            r = M.simulate(nets.profiles, jobs, policy=pol, budget=b, workers=k)
            rows.append({"workers": k, "policy": pol, "mean response ms": r.mean_response * 1e3})
    return rows


def real_vs_sim(nets: Nets, *, n: int = 30, intensity: float = 1.2, workers: int = 2,
                policies=("bulk", "deepeye", "masa"), scenario: int = 1) -> list[dict]:
    """Real runs (threads, weights read from disk, layers executed) against the simulator on
    the same jobs at the tightest budget: the simulator's error."""
    pool = ["AgeNet", "GenderNet", "TinyYOLO", "FaceNet"]
    b = budgets_for(nets, pool)[PAPER_BUDGETS_MB[0]]
    jobs = M.stochastic_jobs(pool, nets.profiles, scenario=scenario, intensity=intensity, n=n,
                             seed=2)
    # Calibrated on a job outside the evaluated ones (GenderNet alone, one worker).
    over = M.calibrate_overhead(nets.graphs, nets.roots, nets.profiles, "GenderNet")
    rows = []
    for pol in policies:
        real = M.run_real(nets.graphs, nets.roots, jobs, policy=pol, budget=b, workers=workers,
                          nets=nets.profiles)
        t0 = time.perf_counter()
        sim = M.simulate(nets.profiles, jobs, policy=pol, budget=b, workers=workers)
        sim_ms = (time.perf_counter() - t0) * 1e3
        cal = M.simulate(nets.profiles, jobs, policy=pol, budget=b, workers=workers,
                         overhead_s=over)
        rows.append({"policy": pol, "budget MB": b / 1e6, "real mean response ms":
                     real.mean_response * 1e3, "simulated ms": sim.mean_response * 1e3,
                     "error %": 100 * (sim.mean_response / real.mean_response - 1),
                     "calibrated ms": cal.mean_response * 1e3,
                     "calibrated error %": 100 * (cal.mean_response / real.mean_response - 1),
                     "overhead per task us": over * 1e6,
                     "simulation ms": sim_ms, "real wall s": real.wall_s,
                     "overcommitted tasks": real.overcommit_tasks})
    return rows


# --- FlexNN ----------------------------------------------------------------------------------

def flexnn_tradeoff(graph: LayerGraph, *, fracs=(0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0),
                    reps: int = 10, rounds: int = 7, root: Path | None = None) -> list[dict]:
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
    runners = {}
    plans = {}
    for b in budgets:
        p = F.plan(F.slice_graph(graph, b), b)
        plans[b] = p
        runners[b] = F.FlexRunner(p, root)
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
    bulk_ms = statistics.median(lat["bulk"])
    rows = [{"model": graph.name, "mode": "bulk", "budget MB": None,
             "peak MB": bulk_b / 1e6, "RSS growth MB": rss["bulk"] / 1e6,
             "latency ms": bulk_ms, "simulated ms": None},
            {"model": graph.name, "mode": "on-demand", "budget MB": None,
             "peak MB": F.on_demand_peak_bytes(graph) / 1e6,
             "RSS growth MB": rss["on-demand"] / 1e6,
             "latency ms": statistics.median(lat["on-demand"]), "simulated ms": None}]
    for b in budgets:
        p = plans[b]
        k = f"flexnn@{b}"
        # The runner's buffer is allocated before measuring: its RSS is the buffer itself.
        rows.append({"model": graph.name, "mode": "flexnn", "budget MB": b / 1e6,
                     "peak MB": p.buffer_bytes / 1e6, "RSS growth MB": (rss[k] + p.buffer_bytes)
                     / 1e6, "latency ms": statistics.median(lat[k]),
                     "simulated ms": F.simulate(p, lt) * 1e3, "steps": len(p.slicing.steps),
                     "pinned MB": p.pinned_bytes / 1e6, "streamed MB": p.streamed_bytes / 1e6,
                     "preloaded": p.preloaded, "plan ms": p.seconds * 1e3})
        runners[b].close()
    # Paired per round against bulk: this VM's speed drifts by tens of percent over seconds, so
    # each round's ratio to the bulk median of the same round is the stable comparison.
    keys = ["bulk", "on-demand"] + [f"flexnn@{b}" for b in budgets]
    for r, k in zip(rows, keys):
        r["memory reduction %"] = 100 * (1 - r["peak MB"] / (bulk_b / 1e6))
        r["latency increase %"] = 100 * (statistics.median(
            a / b for a, b in zip(lat[k], lat["bulk"])) - 1)
        if r["simulated ms"] is not None:
            r["simulator error %"] = 100 * (r["simulated ms"] / r["latency ms"] - 1)
    return rows


def dm_with_memory_modes(base: str | Path = "host",
                         augmented: str | Path = "host-memory",
                         slo: str = "max A; max TP; max L <= 20ms", task: str = "h1") -> list[dict]:
    """RASS's designs on the host profile with and without memory-mode rows: what d_m becomes."""
    from ...moo.problem import DiscreteProblem
    from ...profiles import load_profile
    from ...solvers import solve

    rows = []
    for name, path in (("LiteRT rows only", base), ("+ memory-mode rows", augmented)):
        res = solve(DiscreteProblem(load_profile(path), slo, tasks=[task]), "rass")
        for role in ("d0", "dm", "dwm"):
            d = res.designs.get(role)
            if d is None:
                continue
            cfg = load_profile(path).config(d.configs[0])
            rows.append({"profile": name, "role": role, "design": d.labels[0],
                         "A": d.objectives.get("A"), "L ms": cfg.L, "MF MB": cfg.MF})
    return rows


def flexnn_adaptation(graph: LayerGraph, *, fracs=(0.5, 0.15, 0.3, 1.0), loops: int = 16,
                      root: Path | None = None) -> tuple[list[dict], list[dict]]:
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
    t_start = time.perf_counter()
    with threadpool_limits(1):
        for i, b in enumerate(budgets):
            a = f.history[-1] if i == 0 else f.adapt(b)
            adapts.append({"budget MB": b / 1e6, "resliced": a.resliced, "slice ms": a.slice_ms,
                           "plan ms": a.plan_ms, "setup ms": a.setup_ms, "total ms": a.total_ms})
            for _ in range(loops):
                t0 = time.perf_counter()
                f.run(x)
                rows.append({"t s": t0 - t_start, "budget MB": b / 1e6,
                             "buffer MB": f.plan.buffer_bytes / 1e6,
                             "latency ms": (time.perf_counter() - t0) * 1e3})
    f.close()
    return rows, adapts


def simulator_speed(nets: Nets, graph: LayerGraph, *, root: Path | None = None) -> dict:
    """Milliseconds per what-if: a MASA stochastic run (150 jobs) and a FlexNN re-slice + plan +
    simulate at a new budget."""
    pool = [p for p in PAPER_MEMORY_MB if p in nets.profiles]
    jobs = M.stochastic_jobs(pool, nets.profiles, scenario=1, intensity=1.2, n=150)
    b = budgets_for(nets, pool)[512]
    ts = samples_ms(lambda: M.simulate(nets.profiles, jobs, policy="masa", budget=b), runs=5)
    root = Path(root or tempfile.mkdtemp(prefix="wb-flexnn-"))
    lt = F.measure_layer_times(graph, root, repeats=3)
    mb = F.min_budget(graph)

    def whatif(frac: float) -> None:
        bb = max(mb, int(graph.bulk_peak_bytes() * frac))
        F.simulate(F.plan(F.slice_graph(graph, bb), bb), lt)

    tf = [samples_ms(whatif, frac, runs=1)[0] for frac in (0.1, 0.2, 0.4, 0.8)]
    return {"masa_whatif_ms_p50": statistics.median(ts), "masa_whatif_ms_max": max(ts),
            "flexnn_whatif_ms_p50": statistics.median(tf), "flexnn_whatif_ms_max": max(tf)}
