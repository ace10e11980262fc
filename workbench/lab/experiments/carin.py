"""CARIn's evaluations (section 7) as functions returning plain rows; notebooks draw them.

Every function works on device profiles (the modelled phones by default) and reports optimality
in RASS's normalisation of the problem at hand, as CARIn's Figs 3-6 do.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from itertools import product
from typing import Iterable

import numpy as np

from ... import papers
from ...moo.problem import DiscreteProblem
from ...moo.usecases import scenario
from ...profiles import Profile, load_profile, resolve_profile
from ...solvers import OodinManager, oodin, rass
from ...solvers.baselines import multi_dnn_unaware, single_architecture, transferred
from ...solvers.result import Design
from ...timing import mean_ms, samples_ms

#: The phones of CARIn's evaluation (Table 6).
CARIN_DEVICES = ("pixel7", "s20fe", "a71")


@dataclass(frozen=True)
class MethodRow:
    """One bar of CARIn Figs 3-6: a method's outcome and optimality on a device."""

    use_case: str
    device: str
    method: str
    outcome: str            # "ok", "!" (constraints fail) or "N/A"
    optimality: float | None
    design: str | None
    gain: float | None      # CARIn's d0 optimality / this method's (None for CARIn itself)
    source: str             # profile source: measured / modelled / imported
    #: The design's objective values (the SLO's metrics, natural units), when it has one.
    objectives: dict[str, float] | None = None


def _problem(uc: str, device: str | Profile, slo: str | None = None) -> DiscreteProblem:
    """A named use case (CARIn's, the host's or the real-scale host's) on a profile (a name, a
    path or a Profile in memory)."""
    tasks, uc_slo = scenario(uc)
    prof = device if isinstance(device, Profile) else load_profile(resolve_profile(device))
    return DiscreteProblem(prof, slo or uc_slo, tasks=list(tasks))


def designs_vs_baselines(uc: str, devices: Iterable[str] = CARIN_DEVICES) -> list[MethodRow]:
    """CARIn's d0 against B-A, B-S, the transferred designs, OODIn and, for multi-DNN use cases,
    the multi-DNN-unaware baseline, on each device (the shape of CARIn Figs 3-6)."""
    devices = list(devices)
    problems = {d: _problem(uc, d) for d in devices}
    rows: list[MethodRow] = []
    for dev, pr in problems.items():
        src = pr.profile.source
        best = rass(pr)
        d0 = best.d0.optimality if best.ok else None

        def row(method: str, outcome: str, opt: float | None, design: Design | None) -> MethodRow:
            gain = (d0 / opt) if (d0 and opt and outcome == "ok" and np.isfinite(d0)
                                  and np.isfinite(opt)) else None
            return MethodRow(uc, dev, method, outcome, opt,
                             " + ".join(design.labels) if design else None, gain, src,
                             dict(design.objectives) if design else None)

        rows.append(MethodRow(uc, dev, "CARIn", "ok" if best.ok else "!", d0,
                              " + ".join(best.d0.labels) if best.ok else None, None, src,
                              dict(best.d0.objectives) if best.ok else None))
        baselines = [single_architecture(pr, by="accuracy"), single_architecture(pr, by="size")]
        baselines += [transferred(pr, problems[o]) for o in devices if o != dev]
        if pr.multi:
            baselines.append(multi_dnn_unaware(pr))
        for b in baselines:
            rows.append(row(b.name, b.outcome, b.optimality, b.design))
        od = oodin(pr)
        rows.append(row("OODIn", "ok" if od.ok else "!", od.d0.optimality if od.ok else None,
                        od.d0 if od.ok else None))
    return rows


def gains_summary(rows: list[MethodRow]) -> dict[str, dict[str, float | int]]:
    """Average and maximum gain of CARIn over each kind of baseline (transferred pooled)."""
    groups: dict[str, list[float]] = {}
    for r in rows:
        if r.gain is None:
            continue
        key = "transferred" if r.method.startswith("T_") else r.method
        groups.setdefault(key, []).append(r.gain)
    return {k: {"mean": statistics.fmean(v), "max": max(v), "n": len(v)}
            for k, v in groups.items()}


#: CARIn section 7.1's published gains (text of 7.1.2-7.1.3), for the side-by-side tables.
PAPER_GAINS = {
    "single": {"B-A": {"mean": 1.19, "max": 1.46}, "B-S": {"mean": 1.57, "max": 1.92},
               "transferred": {"mean": 1.17, "max": 1.84}, "OODIn": {"mean": 1.5, "max": 1.99}},
    "uc3": {"multi-DNN-unaware": {"mean": 1.47, "max": 3.24},
            "transferred": {"mean": 1.87, "max": 4.06}, "OODIn": {"mean": 2.83, "max": 10.69}},
}


@dataclass(frozen=True)
class UseCaseGainRow:
    """CARIn's gain over one kind of baseline in one use case, with how many baselines could be
    compared (a baseline that breaks the constraints or does not apply has no gain)."""

    use_case: str
    baseline: str
    comparable: int
    not_comparable: int
    mean: float | None
    max: float | None


def gains_per_use_case(rows_by_uc: dict[str, list[MethodRow]]) -> list[UseCaseGainRow]:
    """Gains per use case (the pooled UC1-UC2 numbers can come mostly from one use case: on the
    modelled phones UC1's B-A and B-S designs break the constraints on most phones)."""
    out = []
    for uc, rows in rows_by_uc.items():
        kinds: dict[str, list[MethodRow]] = {}
        for r in rows:
            if r.method != "CARIn":
                kinds.setdefault("transferred" if r.method.startswith("T_") else r.method, []).append(r)
        for kind, rs in kinds.items():
            gains = [r.gain for r in rs if r.gain is not None]
            out.append(UseCaseGainRow(uc, kind, len(gains), len(rs) - len(gains),
                                      statistics.fmean(gains) if gains else None,
                                      max(gains) if gains else None))
    return out


#: CARIn section 7.1.2's per-objective improvements of d0 over the transferred baselines.
PAPER_OBJECTIVE_GAINS = {
    "uc1": {"A": ("accuracy, mean increase (units of A)", 0.156),
            "TP": ("throughput, mean increase (%)", 32.7)},
    "uc2": {"S": ("model size, mean change (MB)", -2.8),
            "L": ("latency speedup at the same accuracy, mean (%)", 19.9)},
}


@dataclass(frozen=True)
class ObjectiveGainRow:
    """One objective of d0 against the transferred baselines, beside CARIn's text (7.1.2)."""

    use_case: str
    objective: str
    what: str
    paper: float
    workbench: float | None
    comparable: int


def objective_gains(rows_by_uc: dict[str, list[MethodRow]]) -> list[ObjectiveGainRow]:
    """d0 against each feasible transferred design on the same device, per objective CARIn
    states: accuracy difference, throughput change (%), size difference (MB), latency speedup
    (%) (only between designs of equal accuracy, as the paper's 'at the same accuracy level')."""
    out = []
    for uc, claims in PAPER_OBJECTIVE_GAINS.items():
        rows = rows_by_uc.get(uc, [])
        d0 = {r.device: r.objectives for r in rows if r.method == "CARIn" and r.objectives}
        pairs = [(d0[r.device], r.objectives) for r in rows if r.method.startswith("T_")
                 and r.outcome == "ok" and r.objectives and r.device in d0]
        for key, (what, paper) in claims.items():
            vals = []
            for a, b in pairs:
                if key not in a or key not in b:
                    continue
                if key == "TP":
                    vals.append(100.0 * (a[key] / b[key] - 1.0))
                elif key == "L":
                    if "A" in a and "A" in b and abs(a["A"] - b["A"]) < 1e-9:
                        vals.append(100.0 * (b[key] / a[key] - 1.0))
                else:
                    vals.append(a[key] - b[key])
            out.append(ObjectiveGainRow(uc, key, what, paper,
                                        statistics.fmean(vals) if vals else None, len(vals)))
    return out


@dataclass(frozen=True)
class PaperGainRow:
    """CARIn's mean and maximum gain over one baseline beside the paper's (section 7.1)."""

    use_cases: str
    baseline: str
    paper_mean: float
    paper_max: float
    workbench_mean: float | None
    workbench_max: float | None
    comparable_baselines: int


def gains_vs_paper(rows_by_uc: dict[str, list[MethodRow]]) -> list[PaperGainRow]:
    """The workbench's gains for UC1-UC2 (pooled, as the paper pools them; per use case:
    :func:`gains_per_use_case`) and UC3 beside CARIn section 7.1's."""
    single = [r for uc in ("uc1", "uc2") for r in rows_by_uc.get(uc, [])]
    out = []
    for group, rows, paper in (("UC1-UC2", single, PAPER_GAINS["single"]),
                               ("UC3", rows_by_uc.get("uc3", []), PAPER_GAINS["uc3"])):
        ours = gains_summary(rows)
        for method, theirs in paper.items():
            o = ours.get(method)
            out.append(PaperGainRow(group, method, theirs["mean"], theirs["max"],
                                    None if o is None else o["mean"],
                                    None if o is None else o["max"],
                                    0 if o is None else int(o["n"])))
    return out


@dataclass(frozen=True)
class MappingRow:
    """CARIn Figs 5-6's x axis: one model-to-processor mapping of a multi-DNN use case."""

    device: str
    mapping: str
    carin: float | None
    unaware: float | None
    unaware_outcome: str


def per_mapping(uc: str, device: str, *, top: int = 5) -> list[MappingRow]:
    """For each model-to-processor mapping, CARIn's best design restricted to that mapping and
    the multi-DNN-unaware design restricted to it, both scored in the full problem; the top
    mappings by CARIn's optimality (CARIn Fig. 6 shows the top 5)."""
    pr = _problem(uc, device)
    per_task = [sorted({c.processor for c in ts.configs}) for ts in pr.tasks]
    out = []
    for mapping in product(*per_task):
        rows = {ts.name: [c.id for c in ts.configs if c.processor == p]
                for ts, p in zip(pr.tasks, mapping)}
        sub = pr.variant(rows=rows)
        res = rass(sub)
        carin = float(pr.optimality_of(np.array([pr.flat_of(res.d0.configs)]))[0]) \
            if res.ok else None
        un = multi_dnn_unaware(sub)
        unaware = float(pr.optimality_of(np.array([pr.flat_of(un.design.configs)]))[0]) \
            if un.outcome == "ok" else None
        out.append(MappingRow(device, " | ".join(mapping), carin, unaware, un.outcome))
    out.sort(key=lambda r: -(r.carin or 0))
    return out[:top]


def policy_comparison(uc: str, device: str, *, profile: Profile | None = None) -> dict:
    """Our designs and policy beside the paper's (CARIn Table 7 for uc1/s20fe, Table 8 for
    uc3/a71): one row per policy rule with both designs and whether they agree. ``profile``:
    the device's profile in memory (e.g. modelled with edited parameters) instead of its file."""
    pr = _problem(uc, profile if profile is not None else device)
    res = rass(pr)
    paper = next((t for t in papers.paper("carin")["designs"]
                  if t["use_case"] == uc and t["device"] == device), None)
    paper_rows = {r["design"]: r for r in (paper or {}).get("rows", [])}

    def resolve(role: str) -> dict | None:
        r = paper_rows.get(role)
        while r is not None and "same_as" in r:
            r = paper_rows.get(r["same_as"])
        return r

    def key(items) -> list[str]:
        return sorted(str(x) for x in items)

    rows = []
    for r in res.policy_table():
        role = r["design"]
        d = res.designs.get(role)
        ours = None if d is None else key(
            (c.model, c.precision, c.processor, c.threads, c.xnnpack)
            for c in pr.configs_of(d.index))
        p = resolve(role)
        theirs = None if p is None else key(
            (c["model"], c["precision"], c["processor"], c.get("threads"), c.get("xnnpack"))
            for c in p["configs"])
        shown = paper_rows.get(role)
        rows.append({"flags": r["flags"], "role": role,
                     "ours": " + ".join(d.labels) if d else None,
                     "paper": None if shown is None else (
                         f"= {shown['same_as']}" if "same_as" in shown
                         else " + ".join(_label(c) for c in shown["configs"])),
                     "match": None if theirs is None else ours == theirs,
                     # Weaker: every model on the paper's processor, whatever precision/threads.
                     "same_processors": None if theirs is None or d is None else (
                         key((c.model, c.processor) for c in pr.configs_of(d.index))
                         == key((c["model"], c["processor"]) for c in p["configs"])),
                     # The baseline of that count: a guess of "all on the CPU" scores where this is.
                     "paper_all_cpu": None if theirs is None else all(
                         c["processor"].startswith("CPU") for c in p["configs"])})
    return {"triggers": res.triggers, "paper_table": paper["table"] if paper else None,
            "paper_columns": paper["columns"] if paper else None, "rows": rows,
            "source": pr.profile.source}


def _label(c: dict) -> str:
    hw = c["processor"]
    if c.get("threads") is not None:
        hw += "_{" + f"{c['threads']},{'T' if c.get('xnnpack') else 'F'}" + "}"
    return f"{c['model']} {c['precision']}, {hw}"


@dataclass(frozen=True)
class SolveTimeRow:
    """CARIn Table 9's shape: OODIn's re-solve time against the decision-space size."""

    device: str
    space: int
    oodin_avg_ms: float
    oodin_max_ms: float
    rass_lookup_us: float
    paper_avg_ms: float | None
    paper_max_ms: float | None


def oodin_solve_times(devices: Iterable[str] = CARIN_DEVICES,
                      sizes: Iterable[int] = (500, 2000, 5000, 10000), *, reps: int = 50,
                      seed: int = 0) -> list[SolveTimeRow]:
    """OODIn's runtime re-solve (search of its look-up tables after a processor issue) on
    decision spaces of exactly the given sizes, against RASS's policy lookup. The spaces are
    random combinations of the device's UC4 product space (three DNNs, 110,592 combinations),
    as CARIn's Table 9 pools applications."""
    paper = {(r[1], r[0]): (r[2], r[3])
             for r in papers.paper("carin")["oodin_solve_time_ms"]["rows"]}
    rng = np.random.default_rng(seed)
    out = []
    for dev in devices:
        full = _problem("uc4", dev)
        res = rass(full)
        trig = tuple(res.triggers[:1]) if res.ok else ()
        bits = res.flag_bits({t: True for t in trig}) if res.ok else 0
        for n in sizes:
            flat = np.sort(rng.choice(full.size, size=min(n, full.size), replace=False))
            mgr = OodinManager(full, index=flat)
            times = samples_ms(lambda: mgr.resolve(unavailable=trig), runs=reps)
            lookup_us = mean_ms(res.decide_bits, bits, runs=10000) * 1e3
            p = paper.get((dev, n), (None, None))
            out.append(SolveTimeRow(dev, len(flat), statistics.fmean(times), max(times),
                                    lookup_us, p[0], p[1]))
    return out


@dataclass(frozen=True)
class VersusRow:
    """RASS against an evolutionary solver (pymoo's or Optuna's) on one use case and device."""

    use_case: str
    device: str
    algorithm: str
    space: int
    rass_ms: float
    algo_ms: float
    evaluations: int
    optimality_ratio: float | None
    hv_ratio: float | None
    igd: float | None
    same_d0: bool
    #: Share of the exact Pareto front's designs the solver's front holds.
    front_recall: float | None = None
    #: Which library ran it ("pymoo", "optuna 5.1.0").
    library: str = "pymoo"


#: The evolutionary solvers compared with RASS: pymoo's NSGA-II and Optuna's NSGA-II and TPE.
VERSUS_SOLVERS = ("nsga2", "optuna-nsga2", "optuna-tpe")


def rass_vs_evolutionary(use_cases: Iterable[str] = ("uc1", "uc2", "uc3", "uc4"),
                         devices: Iterable[str] = CARIN_DEVICES, *,
                         solvers: Iterable[str] = VERSUS_SOLVERS, pop_size: int = 100,
                         n_gen: int = 100, seed: int = 1,
                         optuna_pop_size: int = 50, optuna_n_gen: int = 20) -> list[VersusRow]:
    """RASS (exact) against evolutionary solvers of both libraries: optimality of the best
    design found, HV ratio and IGD of its front against the exact front, the share of the exact
    front it found, evaluations and wall time. pymoo runs ``pop_size x n_gen``; Optuna
    ``optuna_pop_size x optuna_n_gen`` trials (TPE's cost per trial grows with the trials)."""
    from ...moo.front import exact_front
    from ...solvers import SAMPLERS, solve

    out = []
    for uc in use_cases:
        for dev in devices:
            pr = _problem(uc, dev)
            t0 = time.perf_counter()
            r = rass(pr)
            rass_ms = (time.perf_counter() - t0) * 1e3
            if not r.ok:
                continue
            exact = set(int(f) for f in exact_front(pr))
            for solver in solvers:
                effort = ((optuna_pop_size, optuna_n_gen) if solver in SAMPLERS
                          else (pop_size, n_gen))
                e = solve(pr, solver, pop_size=effort[0], n_gen=effort[1], seed=seed)
                ex = e.extra
                found = set(ex.get("front", []))
                out.append(VersusRow(uc, dev, solver, pr.size, rass_ms, e.timing_ms["total"],
                                     ex["evaluations"], ex.get("optimality_ratio"),
                                     ex.get("hv_ratio"), ex.get("igd"),
                                     bool(e.ok and e.d0.index == r.d0.index),
                                     len(found & exact) / len(exact) if exact else None,
                                     ex.get("library", "pymoo")))
    return out


@dataclass(frozen=True)
class TracePoint:
    """An evolutionary solver's front after some of its work: wall time since it started (ms),
    evaluations so far, and its hypervolume ratio against the exact front."""

    solver: str
    evaluations: int
    ms: float
    hv_ratio: float | None


def hv_over_time(use_case: str, device: str, *, solvers: Iterable[str] = VERSUS_SOLVERS,
                 pop_size: int = 50, n_gen: int = 20, seed: int = 1) -> list[TracePoint]:
    """Each solver's hypervolume ratio (against the exact front) after every generation (every
    ``pop_size`` trials for Optuna), with the wall time it had taken: how fast each library
    approaches the front RASS computes exactly."""
    from ...moo.front import exact_front, front_indicators
    from ...solvers import SAMPLERS, evolutionary, optuna_search
    from ...solvers.evolutionary import feasible_front

    pr = _problem(use_case, device)
    exact = exact_front(pr)

    def hv(flats: np.ndarray) -> float | None:
        nd = feasible_front(pr, flats)
        return front_indicators(pr, nd, exact).get("hv_ratio") if len(nd) else None

    out: list[TracePoint] = []
    for solver in solvers:
        if solver in SAMPLERS:
            res = optuna_search(pr, sampler=solver, pop_size=pop_size, n_gen=n_gen, seed=seed,
                                compare=False)
            trials = res.raw.trials
            t0 = trials[0].datetime_start
            flats = [int(np.ravel_multi_index(tuple(t.params[f"x{i}"]
                                                    for i in range(len(pr.shape))), pr.shape))
                     for t in trials]
            for k in range(pop_size, len(trials) + 1, pop_size):
                ms = (trials[k - 1].datetime_complete - t0).total_seconds() * 1e3
                out.append(TracePoint(solver, k, ms, hv(np.array(flats[:k]))))
        else:
            stamps: list[float] = []
            t_start = time.perf_counter()

            def tick(done: int, total: int) -> None:
                stamps.append((time.perf_counter() - t_start) * 1e3)

            res = evolutionary(pr, algorithm=solver, pop_size=pop_size, n_gen=n_gen, seed=seed,
                               compare=False, progress=tick, history=True)
            for algo, ms in zip(res.raw.history, stamps):
                X = np.atleast_2d(algo.opt.get("X")).astype(np.int64)
                flats = np.ravel_multi_index(tuple(X.T), pr.shape) if X.size else np.empty(0)
                out.append(TracePoint(solver, int(algo.evaluator.n_eval), ms, hv(flats)))
    return out


@dataclass(frozen=True)
class VersusSummary:
    mean_optimality_ratio: float | None
    min_optimality_ratio: float | None
    same_d0_share: float
    mean_hv_ratio: float | None
    mean_speed_ratio: float
    #: The solver summarised ("" for rows of several).
    solver: str = ""
    mean_front_recall: float | None = None
    #: Use case x device problems summarised.
    n: int = 0


def versus_summary(rows: list[VersusRow]) -> VersusSummary:
    """Means over use cases and devices of :func:`rass_vs_evolutionary`'s rows (pass one
    solver's rows; :func:`versus_by_solver` does each)."""
    opt = [r.optimality_ratio for r in rows if r.optimality_ratio is not None]
    hv = [r.hv_ratio for r in rows if r.hv_ratio is not None]
    rec = [r.front_recall for r in rows if r.front_recall is not None]
    names = {r.algorithm for r in rows}
    return VersusSummary(statistics.fmean(opt) if opt else None, min(opt) if opt else None,
                         statistics.fmean(r.same_d0 for r in rows) if rows else 0.0,
                         statistics.fmean(hv) if hv else None,
                         statistics.fmean(r.algo_ms / r.rass_ms for r in rows) if rows else 0.0,
                         names.pop() if len(names) == 1 else "",
                         statistics.fmean(rec) if rec else None, len(rows))


def versus_by_solver(rows: list[VersusRow]) -> list[VersusSummary]:
    """One :class:`VersusSummary` per solver, in the rows' order."""
    return [versus_summary([r for r in rows if r.algorithm == s])
            for s in dict.fromkeys(r.algorithm for r in rows)]


def as_dicts(rows: list) -> list[dict]:
    """Rows as plain dicts (for pandas and metrics.json)."""
    return [asdict(r) for r in rows]
