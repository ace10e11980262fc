"""CARIn's designs (section 7) on the modelled phones: d0 against the baselines (Figs 3-6) with
the gains per use case, per objective and beside the paper's, the best design per
model-to-processor mapping (Fig. 6) and the designs and policy beside the paper's Tables 7-8.
Optimality is RASS's normalisation of the problem at hand, as CARIn's figures report it."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from itertools import product
from typing import Iterable

import numpy as np

from .... import papers
from ....moo.problem import DiscreteProblem
from ....moo.usecases import scenario
from ....profiles import Profile, load_profile, resolve_profile
from ....solvers import oodin, rass
from ....solvers.baselines import multi_dnn_unaware, single_architecture, transferred
from ....solvers.result import Design

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
        d0 = best.design().optimality if best.ok else None

        def row(method: str, outcome: str, opt: float | None, design: Design | None) -> MethodRow:
            gain = (d0 / opt) if (d0 and opt and outcome == "ok" and np.isfinite(d0)
                                  and np.isfinite(opt)) else None
            return MethodRow(uc, dev, method, outcome, opt,
                             " + ".join(design.labels) if design else None, gain, src,
                             dict(design.objectives) if design else None)

        rows.append(MethodRow(uc, dev, "CARIn", "ok" if best.ok else "!", d0,
                              " + ".join(best.design().labels) if best.ok else None, None, src,
                              dict(best.design().objectives) if best.ok else None))
        baselines = [single_architecture(pr, by="accuracy"), single_architecture(pr, by="size")]
        baselines += [transferred(pr, problems[o]) for o in devices if o != dev]
        if pr.multi:
            baselines.append(multi_dnn_unaware(pr))
        for b in baselines:
            rows.append(row(b.name, b.outcome, b.optimality, b.design))
        od = oodin(pr)
        rows.append(row("OODIn", "ok" if od.ok else "!", od.design().optimality if od.ok else None,
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
        carin = float(pr.optimality_of(np.array([pr.flat_of(res.design().configs)]))[0]) \
            if res.ok else None
        un = multi_dnn_unaware(sub)
        unaware = float(pr.optimality_of(np.array([pr.flat_of(un.design.configs)]))[0]) \
            if un.outcome == "ok" and un.design is not None else None
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
        p_configs: list[dict] | None = None if p is None else p["configs"]
        theirs = None if p_configs is None else key(
            (c["model"], c["precision"], c["processor"], c.get("threads"), c.get("xnnpack"))
            for c in p_configs)
        shown = paper_rows.get(role)
        rows.append({"flags": r["flags"], "role": role,
                     "ours": " + ".join(d.labels) if d else None,
                     "paper": None if shown is None else (
                         f"= {shown['same_as']}" if "same_as" in shown
                         else " + ".join(_label(c) for c in shown["configs"])),
                     "match": None if theirs is None else ours == theirs,
                     # Weaker: every model on the paper's processor, whatever precision/threads.
                     "same_processors": None if p_configs is None or d is None else (
                         key((c.model, c.processor) for c in pr.configs_of(d.index))
                         == key((c["model"], c["processor"]) for c in p_configs)),
                     # The baseline of that count: a guess of "all on the CPU" scores where this is.
                     "paper_all_cpu": None if p_configs is None else all(
                         c["processor"].startswith("CPU") for c in p_configs)})
    return {"triggers": res.triggers, "paper_table": paper["table"] if paper else None,
            "paper_columns": paper["columns"] if paper else None, "rows": rows,
            "source": pr.profile.source}


def _label(c: dict) -> str:
    hw = c["processor"]
    if c.get("threads") is not None:
        hw += "_{" + f"{c['threads']},{'T' if c.get('xnnpack') else 'F'}" + "}"
    return f"{c['model']} {c['precision']}, {hw}"


def as_dicts(rows: list) -> list[dict]:
    """Rows as plain dicts (for pandas and metrics.json)."""
    return [asdict(r) for r in rows]
