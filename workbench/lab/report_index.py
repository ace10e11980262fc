"""``reports/index.html``: one page linking every report, each paper's published figure or table
beside the workbench's result, and where the data came from (measured, modelled, paper).

Built from what the reports wrote (their ``metrics.json``) and the papers' data
(:mod:`workbench.papers`); a report not run yet is listed as such.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Callable

from .. import papers
from ..errors import InputError
from ..fileio import atomic_write_text
from .report_metrics import (
    METRICS,
    CarinDesignsMetrics,
    DelenMetrics,
    FlexnnMetrics,
    HostMetrics,
    MasaMetrics,
    OodinEvalMetrics,
    PhoneModelMetrics,
    QuickstartMetrics,
    RealScaleMetrics,
    RuntimeMetrics,
    SolveTimeMetrics,
    VersusMetrics,
    validate_metrics,
)


def _fmt(x: float | None, digits: int = 3) -> str:
    """A number for people: ``digits`` significant digits, never exponent notation for
    everyday magnitudes (100, not 1e+02), "n/a" when there is none."""
    if x is None:
        return "n/a"
    v = float(x)
    if v == 0:
        return "0"
    if abs(v) >= 1e6 or abs(v) < 1e-3:
        return f"{v:.{digits}g}"
    mag = int(f"{abs(v):e}".split("e")[1])
    decimals = max(0, digits - 1 - mag)
    text = f"{v:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text  # 2, not 2.00


def _pct_change(x: float | None, lower: str = "lower", higher: str = "higher") -> str:
    """A saving as words: 63% lower, or 3.9% higher for a negative saving (never "-3.9% lower")."""
    if x is None:
        return "n/a"
    return f"{_fmt(abs(x))}% {lower if x >= 0 else higher}"


def _quickstart(m: QuickstartMetrics) -> str:
    return (f"d0 = {m.d0.label} "
            f"({'matches' if m.matches_carin_table7_d0 else 'differs from'} the paper)")


def _gains(m: CarinDesignsMetrics) -> str:
    text = "; ".join(f"{r.use_cases} vs {r.baseline}: "
                     + (f"{_fmt(r.workbench_mean)}x mean" if r.workbench_mean is not None
                        else "no feasible baseline")
                     + (f" (paper {_fmt(r.paper_mean)}x)" if r.paper_mean is not None else "")
                     for r in m.gains_vs_paper[:4])
    # Say where a pooled number comes from: a use case whose baselines all fail adds nothing.
    empty = [f"{r.use_case.upper()} {r.baseline}" for r in m.gains_per_use_case
             if r.comparable == 0]
    if empty:
        text += f" (no comparable baseline: {', '.join(empty)})"
    return text


def _policy(key: str) -> Callable[[CarinDesignsMetrics], str]:
    def f(m: CarinDesignsMetrics) -> str:
        match = m.policies[key].match
        return f"{sum(match.values())} of {len(match)} roles give the paper's design"
    return f


def _solve_time(m: SolveTimeMetrics) -> str:
    space = max((r.space for r in m.rows), default=0)
    avg = max((r.oodin_avg_ms for r in m.rows if r.space == space), default=None)
    return (f"OODIn re-solve up to {_fmt(avg)} ms at {space or '?'} combinations "
            f"on this host; RASS's policy look-up at least {_fmt(m.min_speedup)}x faster")


def _nsga(m: VersusMetrics) -> str:
    s = m.summary
    return (f"NSGA-II optimality ratio {_fmt(s.mean_optimality_ratio)} mean, HV ratio "
            f"{_fmt(s.mean_hv_ratio)}; same d0 in {_fmt(100 * s.same_d0_share, 2)}%")


def _host(m: HostMetrics) -> str:
    ok = [k for k, v in m.use_cases.items() if v.status == "ok"]
    return f"{m.n_configs} configurations measured; RASS solves {', '.join(ok)}"


def _real(m: RealScaleMetrics) -> str:
    parts = []
    for uc in ("r1", "r2"):
        rows = {r.solver: r for r in m.solvers if r.use_case == uc}
        d0 = rows.get("rass")
        if d0 is None:
            continue
        ratio = rows.get("nsga2")
        parts.append(f"{uc}: {d0.status}" + (f", d0 {d0.design}" if d0.design else "")
                     + (f", NSGA-II {_fmt(ratio.optimality_ratio)} of it"
                        if ratio and ratio.optimality_ratio else ""))
    big = max((r.gflops_max for r in m.scale if r.profile != "host"), default=0)
    return f"{m.real_configs} configurations up to {big:.1f} GFLOPs measured; " + "; ".join(parts)


def _runtime_run(policy: str, scenario: str) -> Callable[[RuntimeMetrics], str]:
    def f(m: RuntimeMetrics) -> str:
        r = next((r for r in m.runs if r.policy == policy and r.scenario == scenario), None)
        if r is None:
            return "-"
        det = [d for d in r.detections if d["delay_ms"] is not None]
        seq = " -> ".join(r.designs_visited[:6]) if policy == "rass" else \
            f"{len(r.designs_visited)} designs"
        delays = ", ".join(f"{d['event'].split(':')[0]} {d['delay_ms']:.0f} ms" for d in det[:4])
        return f"{seq}; detected: {delays}; {r.lost} of {r.submitted} requests lost"
    return f


def _table10(m: RuntimeMetrics) -> str:
    rows = [r for r in m.storage_modelled if r.get("reduction")]
    if not rows:
        return "-"
    red = [r["reduction"] for r in rows]
    return (f"{min(red):.1f}-{max(red):.1f}x less storage (modelled phones); host h1 "
            f"{m.storage_host.get('reduction', 0):.1f}x")


def _delen_row(m: DelenMetrics, fig: str) -> dict[str, Any] | None:
    """The Delen report's own paper-beside row for ``fig`` (delen.paper_checks)."""
    return next((c for c in m.checks if c["figure"] == fig), None)


def _delen_check(fig: str) -> Callable[[DelenMetrics], str]:
    def f(m: DelenMetrics) -> str:
        row = _delen_row(m, fig)
        return "-" if row is None else row["workbench"]  # the status column says if it holds
    return f


def _delen_paper(fig: str) -> Callable[[], str]:
    """The paper's side for ``fig``, from the paper data (workbench/data/papers/delen.json)."""
    def f() -> str:
        P = papers.paper("delen")
        if fig == "Fig. 8":
            f8 = P["fig8"]
            return (f"Pareto frontier uses {f8['pf_vs_full_energy_saving_mean_pct']}% less energy "
                    f"than Full and {f8['pf_vs_pw_energy_saving_mean_pct']}% less than "
                    "per-workload (means)")
        if fig == "Fig. 10":
            h = P["fig10"]["battery_hours"]
            return (f"battery life: Pareto {h['Pareto']} h, per-workload {h['per-workload']} h, "
                    f"Full {h['full']} h (Jetson Nano)")
        if fig == "Table 3":
            t = P["table3"]
            return (f"criteria {t['criteria_eval_us']} us per exit; Pareto update "
                    f"{t['pareto_update_ms']} ms; all-exit overhead {t['overhead_mean_pct']}% mean")
        return str(P["fig12" if fig == "Figs 11-12" else fig.lower().replace(". ", "")])
    return f


def _masa_gain(m: MasaMetrics) -> str:
    return "; ".join(f"scenario {k}: MASA's mean response {_pct_change(v)} than Bulk's"
                     for k, v in m.tightest_gain_vs_bulk_pct.items())


def _masa_opt(m: MasaMetrics) -> str:
    return ", ".join(f"{r.workers} workers {_fmt(r.ratio)}" for r in m.optimality) or "-"


def _flexnn_best(m: FlexnnMetrics) -> str:
    return "; ".join(f"{b.model}: {_pct_change(b.memory_reduction_pct, 'less', 'more')} memory, "
                     f"latency {_pct_change(b.latency_increase_pct, 'higher', 'lower')}"
                     for b in m.best)


def _flexnn_full(m: FlexnnMetrics) -> str:
    """FlexNN's most frugal measured point per full-size network."""
    out = []
    for model in dict.fromkeys(p.model for p in m.full_size):
        pts = [p for p in m.full_size if p.model == model and p.mode == "flexnn"]
        if pts:
            b = max(pts, key=lambda p: p.memory_reduction_pct)
            out.append(f"{model} at 224: {_pct_change(b.memory_reduction_pct, 'less', 'more')} "
                       f"memory, latency {_pct_change(b.latency_increase_pct, 'higher', 'lower')}")
    return "; ".join(out) or "-"


def _masa_pressure(m: MasaMetrics) -> str:
    return "; ".join(
        f"{scaling}: mean response against Bulk's: MASA {_pct_change(g['masa'])}, "
        f"when-idle {_pct_change(g['masa-idle'])}" for scaling, g in m.pressure_gain_vs_bulk_pct.items()
        if "masa" in g and "masa-idle" in g) or "-"


def _phone_model(m: PhoneModelMetrics) -> str:
    errs = ", ".join(f"{e.engine} {_fmt(e.median_abs_pct, 2)}% (n={e.n})" for e in m.by_engine)
    fragile = sorted({r.parameter for r in m.sensitivity if r.table == "Table 7"
                      and min(r.matches_down, r.matches_up) < r.matches_base})
    return (f"median |error| on {len(m.held_out)} held-out latencies: {errs}; Table 7 loses a role "
            f"when {len(fragile)} of {len({r.parameter for r in m.sensitivity})} calibrated "
            "parameters move by 10%")


def _oodin_text(fig: str) -> Callable[[OodinEvalMetrics], str]:
    def f(m: OodinEvalMetrics) -> str:
        return "; ".join(f"{r.method} {_fmt(r.geomean)}x geomean, {_fmt(r.max)}x max (paper "
                         f"{_fmt(r.paper_geomean)}x, {_fmt(r.paper_max)}x)"
                         for r in m.summary if r.figure == fig)
    return f


def _oodin_paper(fig: str) -> Callable[[], str]:
    def f() -> str:
        sp = papers.paper("oodin")["speedups"][fig]
        return "; ".join(f"{k} up to {v['max']}x ({v['geomean']}x geomean)" for k, v in sp.items()
                         if isinstance(v, dict))
    return f


def _carin_fig(key: str) -> str:
    ra = papers.paper("carin")["runtime_adaptation"][key]
    return ra["text"]


# --- status: does the paper's claim hold in the report's data? ---------------------------------
#: The statuses, best first.
STATUSES = ("reproduced", "partial", "not reproduced")
Status = tuple[str, str]  # (one of STATUSES, why)


def _by_share(hits: int, total: int, what: str) -> Status:
    if total and hits == total:
        return "reproduced", f"{hits} of {total} {what}"
    return ("partial" if hits else "not reproduced"), f"{hits} of {total} {what}"


def _st_quickstart(m: QuickstartMetrics) -> Status:
    return (("reproduced", "d0 is the paper's (Table 7 was the phone model's calibration target)")
            if m.matches_carin_table7_d0 else ("not reproduced", "d0 differs"))


def _st_gains(m: CarinDesignsMetrics) -> Status:
    pairs = [(r.workbench_mean, r.paper_mean) for r in m.gains_vs_paper
             if r.paper_mean and r.workbench_mean]
    rows = [(float(w), float(p)) for w, p in pairs if w is not None and p is not None]
    close = sum(0.75 <= w / p <= 1.33 for w, p in rows)
    ahead = sum(w > 1 for w, _ in rows)
    if rows and close == len(rows):
        return "reproduced", f"all {len(rows)} mean gains within 25% of the paper's"
    return (("partial" if ahead else "not reproduced"),
            f"{close} of {len(rows)} mean gains within 25% of the paper's; CARIn ahead in {ahead}")


def _st_policy(key: str) -> Callable[[CarinDesignsMetrics], Status]:
    def f(m: CarinDesignsMetrics) -> Status:
        match = m.policies[key].match
        return _by_share(sum(match.values()), len(match), "roles give the paper's design")
    return f


def _st_solve_time(m: SolveTimeMetrics) -> Status:
    if m.min_speedup and m.min_speedup > 1:
        return "partial", ("OODIn's re-solve costs milliseconds and RASS's look-up less, as the "
                           "paper says; times from this machine, not the phones")
    return "not reproduced", "RASS's look-up is not faster here"


def _st_runtime(policy: str, scenario: str) -> Callable[[RuntimeMetrics], Status]:
    def f(m: RuntimeMetrics) -> Status:
        r = next((r for r in m.runs if r.policy == policy and r.scenario == scenario), None)
        if r is None:
            return "not reproduced", "no run"
        det = [d for d in r.detections if d["delay_ms"] is not None]
        ok = len(set(r.designs_visited)) >= 2 and r.lost == 0
        if ok and len(det) == len(r.detections):
            return "reproduced", (f"switched between {len(set(r.designs_visited))} designs, every "
                                  "event detected, none lost (on this machine)")
        return ("partial" if ok or det else "not reproduced"), (
            f"{len(det)} of {len(r.detections)} events detected, {r.lost} lost")
    return f


def _st_table10(m: RuntimeMetrics) -> Status:
    red = [r["reduction"] for r in m.storage_modelled if r.get("reduction")]
    return _by_share(sum(x > 1 for x in red), len(red), "use cases store less than OODIn")


def _st_delen(fig: str) -> Callable[[DelenMetrics], Status]:
    def f(m: DelenMetrics) -> Status:
        row = _delen_row(m, fig)
        if row is None:
            return "not reproduced", "not in this run"
        return ("reproduced" if row["holds"] else "not reproduced"), row["workbench"]
    return f


def _st_masa_gain(paper_value: float, gains: Callable[[MasaMetrics], list[float]]
                  ) -> Callable[[MasaMetrics], Status]:
    def f(m: MasaMetrics) -> Status:
        g = gains(m)
        if not g:
            return "not reproduced", "no gain measured"
        best = max(g)
        if best >= 50 * paper_value:  # at least half the paper's best reduction
            return "reproduced", f"up to {best:.0f}% lower response than Bulk"
        return ("partial" if best > 0 else "not reproduced"), (
            f"up to {best:.0f}% lower response than Bulk (paper: up to {100 * paper_value:.0f}%)")
    return f


def _st_masa_opt(m: MasaMetrics) -> Status:
    worst = max((r.ratio for r in m.optimality), default=None)
    paper = papers.paper("masa")["claims"]["fig13a_worst_ratio"]["value"]
    if worst is None:
        return "not reproduced", "no optimality run"
    return (("reproduced" if worst <= paper * 1.1 else "partial"),
            f"worst MASA/optimal makespan {worst:.2f} (paper {paper})")


def _st_flexnn(pick: Callable[[FlexnnMetrics], list[tuple[float, float]]]
               ) -> Callable[[FlexnnMetrics], Status]:
    def f(m: FlexnnMetrics) -> Status:
        pts = pick(m)
        if not pts:
            return "not reproduced", "no point measured"
        paper = papers.paper("flexnn")["claims"]["best_point"]["value"]
        cut, lat = max(pts)
        if cut >= 0.9 * paper["memory_reduction_pct"] and lat <= 3 * max(paper[
                "latency_increase_pct"], 2.0):
            return "reproduced", f"{cut:.1f}% less memory at {lat:+.1f}% latency"
        return ("partial" if cut > 50 else "not reproduced"), (
            f"{cut:.1f}% less memory at {lat:+.1f}% latency (paper {paper['memory_reduction_pct']}%"
            f" at +{paper['latency_increase_pct']}%)")
    return f


def _st_masa_context(heavy: bool) -> Callable[[MasaMetrics], Status]:
    """Fig. 10 (heavy): the context-aware policies beat MASA at most label probabilities;
    Fig. 11 (light): no clear advantage (within 10% of MASA)."""
    def f(m: MasaMetrics) -> Status:
        rows = m.context_heavy if heavy else m.context_light
        by: dict[float, dict[str, float]] = {}
        for r in rows:
            by.setdefault(r.label_probability, {})[r.policy] = r.mean_makespan_ms
        probs = [p for p, v in by.items() if "masa" in v and ("ca-wait" in v or "ca-preempt" in v)]
        if not probs:
            return "not reproduced", "no run"

        def ca(v: dict[str, float]) -> float:
            return min(x for k, x in v.items() if k != "masa")
        if heavy:
            return _by_share(sum(ca(by[p]) < by[p]["masa"] for p in probs), len(probs),
                             "label probabilities where context-aware execution beats MASA")
        return _by_share(sum(abs(ca(by[p]) / by[p]["masa"] - 1) <= 0.1 for p in probs),
                         len(probs), "label probabilities within 10% of MASA")
    return f


def _st_masa_batching(m: MasaMetrics) -> Status:
    if not m.batching:
        return "not reproduced", "no run"
    best = min(m.batching, key=lambda r: r.batched_ms_per_input)
    paper = papers.paper("masa")["claims"]["fig12_batching"]["value"]
    wins = [r.batch for r in m.batching if r.batched_ms_per_input < r.individual_ms_per_input]
    if best.batch == paper:
        return "reproduced", f"batch {best.batch} best per input (paper {paper})"
    return (("partial" if wins else "not reproduced"),
            f"batch {best.batch} best per input (paper {paper}); batching wins at {wins}")


def _st_flexnn_ablation(m: FlexnnMetrics) -> Status:
    """Fig. 13: without preloading FlexNN is slower; without slicing it cannot cut as deep."""
    def best(mode: str, key: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for p in m.full_size:
            if p.mode == mode:
                v = getattr(p, key)
                out[p.model] = max(out.get(p.model, -1e9), v) if key == "memory_reduction_pct" \
                    else min(out.get(p.model, 1e9), v)
        return out
    full_cut, noslice_cut = best("flexnn", "memory_reduction_pct"), \
        best("flexnn w.o. slicing", "memory_reduction_pct")
    full_lat, nopre_lat = best("flexnn", "latency_increase_pct"), \
        best("flexnn w.o. preload", "latency_increase_pct")
    models = sorted(set(full_cut) & set(noslice_cut) & set(full_lat) & set(nopre_lat))
    if not models:
        return "not reproduced", "no ablation measured"
    hits = sum(full_cut[k] > noslice_cut[k] and full_lat[k] < nopre_lat[k] for k in models)
    return _by_share(hits, len(models), "networks where slicing cuts deeper and preloading "
                     "is faster")


def _st_flexnn_adapt(m: FlexnnMetrics) -> Status:
    if not m.adaptations:
        return "not reproduced", "no run"
    worst = max(a.total_ms for a in m.adaptations)
    paper = papers.paper("flexnn")["claims"]["adaptation_s"]["value"]
    return (("reproduced" if worst <= 1000 * paper else "partial"),
            f"re-planning for a new budget takes up to {worst:.0f} ms (paper about {paper:g} s; "
            "32x32 models)")


def _st_oodin(fig: str) -> Callable[[OodinEvalMetrics], Status]:
    def f(m: OodinEvalMetrics) -> Status:
        rows = [r for r in m.summary if r.figure == fig and r.geomean is not None]
        close = sum(0.75 <= r.geomean / r.paper_geomean <= 1.33 for r in rows if r.geomean)
        ahead = sum((r.geomean or 0) > 1.05 for r in rows)
        if rows and close == len(rows):
            return "reproduced", f"all {len(rows)} geometric-mean speed-ups within 25% of the paper's"
        if ahead:
            return "partial", (f"OODIn ahead of {ahead} of {len(rows)} baselines; {close} geometric "
                               "means within 25% of the paper's")
        return "not reproduced", ("the modelled phones give OODIn the baselines' own configuration "
                                  "for every DNN (no speed-up)")
    return f


def _no_status(_m: Any) -> Status:
    return "", ""


def _no_text(_m: Any) -> str:
    return ""


@dataclass(frozen=True)
class Row:
    """One paper result beside the workbench's: which report, which of the paper's evaluation
    figures and tables it covers (ids from the paper data's ``evaluation``), what the paper
    reports, what the report shows, whether the claim holds, and what kind of data it is."""

    report: str
    paper: str
    item: str
    covers: tuple[str, ...]
    theirs: Callable[[], str]
    ours: Callable[[Any], str]
    status: Callable[[Any], Status]
    data: str


#: (report, paper, item, what the paper reports, the workbench's result from metrics.json, data).
ROWS: list[Row] = [
    Row("quickstart", "CARIn", "Table 7 (d0)", (),
        lambda: "UC1 on S20 FE: d0 = EfficientNet Lite0 FFX8, CPU 4 threads, XNNPACK",
        _quickstart, _st_quickstart, "modelled"),
    Row("carin_designs", "CARIn", "Figs 3-6", ("Fig. 3", "Fig. 4", "Fig. 5", "Fig. 6"),
        lambda: "mean optimality gains of CARIn's d0 over the baselines (section 7.1)", _gains,
        _st_gains, "modelled"),
    Row("carin_designs", "CARIn", "Table 7", ("Table 7",),
        lambda: "UC1 on S20 FE: designs and switching policy", _policy("uc1_s20fe"),
        _st_policy("uc1_s20fe"), "modelled (calibrated on this table)"),
    Row("carin_designs", "CARIn", "Table 8", ("Table 8",),
        lambda: "UC3 on A71: designs and switching policy", _policy("uc3_a71"),
        _st_policy("uc3_a71"), "modelled"),
    Row("oodin_solve_time", "CARIn", "Table 9", ("Table 9",),
        lambda: "OODIn's solve time 0.55-34 ms on phones (500-10,000 combinations)", _solve_time,
        _st_solve_time, "modelled profiles, times measured here"),
    Row("rass_vs_nsga2", "CARIn", "RASS vs evolutionary search", (),
        lambda: "RASS finds the exact optimum in one pass", _nsga, _no_status,
        "modelled profiles, times measured here"),
    Row("host", "CARIn", "UC1-UC4 on a device", (),
        lambda: "the pipeline on real phones (train/quantise/profile/solve)", _host, _no_status,
        "measured"),
    Row("host_real", "CARIn", "UC1-UC2 at real scale", (),
        lambda: "the papers' models (MobileNet, EfficientNet-Lite) on real phones", _real,
        _no_status, "measured (A: measured on Fashion-MNIST, cited for ImageNet)"),
    Row("runtime", "CARIn", "Fig. 7", ("Fig. 7",), lambda: _carin_fig("uc1_s20fe"),
        _runtime_run("rass", "single"), _st_runtime("rass", "single"), "measured"),
    Row("runtime", "CARIn", "Fig. 8", ("Fig. 8",), lambda: _carin_fig("uc3_a71"),
        _runtime_run("rass", "multi"), _st_runtime("rass", "multi"), "measured"),
    Row("runtime", "OODIn", "Figs 7-8", ("Fig. 7", "Fig. 8"),
        lambda: papers.paper("oodin")["runtime"]["throttling"]["text"],
        _runtime_run("oodin", "single"), _st_runtime("oodin", "single"), "measured"),
    *[Row("delen", "Delen", fig, covers, _delen_paper(fig), _delen_check(fig), _st_delen(fig),
          data) for fig, covers, data in (
        ("Fig. 5", ("Fig. 5",), "measured accuracy, energy modelled"),
        ("Fig. 7", ("Fig. 7",), "measured"),
        ("Fig. 8", ("Fig. 8",), "measured (energy modelled)"),
        ("Fig. 9", ("Fig. 9",), "measured (energy modelled)"),
        ("Fig. 10", ("Fig. 10",), "measured time, modelled power"),
        ("Figs 11-12", ("Fig. 11", "Fig. 12"), "measured"),
        ("Fig. 13", ("Fig. 13",), "measured"), ("Fig. 14", ("Fig. 14",), "measured"),
        ("Fig. 15", ("Fig. 15",), "measured"), ("Table 3", ("Table 3", "Fig. 16"), "measured"))],
    Row("masa", "MASA", "Figs 7-8 (Table 1 networks, real memory limit)", ("Fig. 7", "Fig. 8"),
        lambda: papers.paper("masa")["claims"]["fig7_max_gain"]["text"], _masa_pressure,
        _st_masa_gain(papers.paper("masa")["claims"]["fig7_max_gain"]["value"],
                      lambda m: [g["masa"] for g in m.pressure_gain_vs_bulk_pct.values()
                                 if "masa" in g]),
        "measured (real memory pressure)"),
    Row("masa", "MASA", "Figs 6-8 (32x32 stand-ins)", ("Fig. 6", "Fig. 7", "Fig. 8"),
        lambda: papers.paper("masa")["claims"]["fig7_max_gain"]["text"], _masa_gain,
        _st_masa_gain(papers.paper("masa")["claims"]["fig7_max_gain"]["value"],
                      lambda m: list(m.tightest_gain_vs_bulk_pct.values())),
        "measured layer times; paging modelled (fitted); simulated"),
    Row("masa", "MASA", "Fig. 13(a)", ("Fig. 13",),
        lambda: papers.paper("masa")["claims"]["fig13a_worst_ratio"]["text"], _masa_opt,
        _st_masa_opt, "measured layer times, exact MILP"),
    Row("masa", "MASA", "Fig. 10", ("Fig. 10",),
        lambda: papers.paper("masa")["claims"]["fig10_heavy"]["text"], _no_text,
        _st_masa_context(True), "measured layer times; simulated"),
    Row("masa", "MASA", "Fig. 11", ("Fig. 11",),
        lambda: papers.paper("masa")["claims"]["fig11_light"]["text"], _no_text,
        _st_masa_context(False), "measured layer times; simulated"),
    Row("masa", "MASA", "Fig. 12", ("Fig. 12",),
        lambda: papers.paper("masa")["claims"]["fig12_batching"]["text"], _no_text,
        _st_masa_batching, "measured"),
    Row("flexnn", "FlexNN", "Fig. 13 (ablation, full-size networks)", ("Fig. 13",),
        lambda: "each of slicing and preloading matters (w.o. either is worse)", _no_text,
        _st_flexnn_ablation, "measured (fresh processes)"),
    Row("flexnn", "FlexNN", "Fig. 14", ("Fig. 14",),
        lambda: papers.paper("flexnn")["claims"]["adaptation_s"]["text"], _no_text,
        _st_flexnn_adapt, "measured"),
    Row("flexnn", "FlexNN", "Fig. 10 (full-size networks)", ("Fig. 10",),
        lambda: papers.paper("flexnn")["claims"]["best_point"]["text"], _flexnn_full,
        _st_flexnn(lambda m: [(p.memory_reduction_pct, p.latency_increase_pct)
                              for p in m.full_size if p.mode == "flexnn"]),
        "measured (fresh processes)"),
    Row("flexnn", "FlexNN", "Fig. 10 (32x32 models)", ("Fig. 10",),
        lambda: papers.paper("flexnn")["claims"]["best_point"]["text"], _flexnn_best,
        _st_flexnn(lambda m: [(b.memory_reduction_pct, b.latency_increase_pct) for b in m.best]),
        "measured"),
    *[Row("oodin_eval", "OODIn", fig, (fig,), _oodin_paper(fig), _oodin_text(fig), _st_oodin(fig),
          "modelled") for fig in ("Fig. 3", "Fig. 4", "Fig. 5", "Fig. 6")],
    Row("phone_model", "CARIn", "the phone model on phones it was not calibrated on", (),
        lambda: "phones are not here: the profiles are modelled, calibrated on Table 7 only",
        _phone_model, _no_status, "modelled, against published measurements"),
    Row("runtime", "CARIn", "Table 10", ("Table 10",),
        lambda: "CARIn stores 1.66-19.98x less than OODIn", _table10, _st_table10,
        "modelled (phones), measured (host)"),
]

TITLES = {
    "quickstart": "Quickstart: UC1 on the Galaxy S20 FE",
    "carin_designs": "CARIn designs against the baselines (Figs 3-6, Tables 7-8)",
    "oodin_solve_time": "OODIn's solve time against RASS's look-up (Table 9)",
    "rass_vs_nsga2": "RASS against pymoo NSGA-II",
    "host": "The host end to end, measured",
    "host_real": "The host at real scale beside the toy host (r1/r2 vs h1/h2)",
    "runtime": "Runtime adaptation, measured (CARIn Figs 7-8, OODIn Figs 7-8, Table 10)",
    "delen": "Delen: multi-exit nets, policies, limiter and fair sharing (Figs 5-15, Table 3)",
    "masa": "MASA: memory-aware multi-DNN layer scheduling (Figs 6-8, 10-12, section 5.6)",
    "flexnn": "FlexNN: slicing and preload-aware planning under a budget (Figs 10, 14, Table 2)",
    "phone_model": "Can the phone model be trusted? Held-out error per engine, sensitivity of Tables 7-8",
    "oodin_eval": "OODIn's evaluation: oSQ, PAW-D and MAW-D baselines on the modelled phones (Figs 3-6)",
    "sweep": "Sweeps: RASS, OODIn and NSGA-II over the phones, the host and grids of latency bounds",
}

_CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222}table{border-collapse:collapse;margin:1em 0;width:100%}th,td{border-bottom:1px solid #ddd;
padding:.4em .6em;text-align:left;vertical-align:top;font-size:.92em}th{background:#f4f4f4}
.src{white-space:nowrap;font-size:.85em;color:#555}code{background:#f4f4f4;padding:0 .3em}
.missing{color:#a00}.st-reproduced{color:#060}.st-partial{color:#a60}
.st-not-reproduced,.st-not-attempted{color:#a00}.counts{font-size:1.1em}"""


@dataclass(frozen=True)
class _Read:
    """One report's metrics.json, read once: typed (or why not) and its data-source line."""

    exists: bool
    metrics: Any | None = None
    why: str | None = None
    source: str = ""


def _read(reports_dir: Path, name: str) -> _Read:
    path = reports_dir / name / "metrics.json"
    if not path.exists():
        return _Read(False)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        return _Read(True, why=f"{name}/metrics.json: cannot read metrics: {err}")
    source = str(data.get("source", data.get("profile_source", "")))
    try:
        return _Read(True, validate_metrics(data, METRICS[name]), None, source)
    except InputError as e:  # named relative to the reports folder: the page is committed
        why = ": ".join(x for x in (f"{name}/metrics.json", e.where, e.message) if x)
        return _Read(True, None, why, source)


#: The five papers: data key -> how the papers write their names.
PAPERS = {"carin": "CARIn", "oodin": "OODIn", "delen": "Delen", "masa": "MASA",
          "flexnn": "FlexNN"}


def evaluation_status(reports_dir: Path, read: dict[str, "_Read"] | None = None
                      ) -> list[dict[str, Any]]:
    """Every evaluation figure and table of the five papers (the paper data's ``evaluation``)
    with its status computed from the reports under ``reports_dir``: the best status of the
    rows that cover it (``reproduced`` > ``partial`` > ``not reproduced``), ``not attempted``
    when no report covers it or none has run, with the reasons, the reports and the data."""
    read = read or {name: _read(reports_dir, name) for name in TITLES}
    out = []
    for key in PAPERS:
        for fig, what in papers.paper(key)["evaluation"]:
            evidence = []
            for row in ROWS:
                if row.paper.lower() != key or fig not in row.covers:
                    continue
                r = read[row.report]
                if r.metrics is None:
                    continue
                st, why = row.status(r.metrics)
                if st:
                    evidence.append({"status": st, "why": why, "report": row.report,
                                     "item": row.item, "data": row.data})
            best = min((ev["status"] for ev in evidence), key=STATUSES.index,
                       default="not attempted")
            out.append({"paper": key, "figure": fig, "what": what, "status": best,
                        "evidence": evidence})
    return out


def status_counts(items: list[dict[str, Any]]) -> dict[str, int]:
    """How many figures and tables have each status."""
    keys = (*STATUSES, "not attempted")
    return {k: sum(i["status"] == k for i in items) for k in keys}


def status_section(reports_dir: Path, read: dict[str, "_Read"]) -> list[str]:
    """The index's top: the counts, then every evaluation figure and table by paper."""
    e = html.escape
    items = evaluation_status(reports_dir, read)
    c = status_counts(items)
    head = (f"<p class='counts'><b>{len(items)} evaluation figures and tables</b> of the five "
            f"papers: <span class='st-reproduced'>{c['reproduced']} reproduced</span>, "
            f"<span class='st-partial'>{c['partial']} partial</span>, "
            f"<span class='st-not-reproduced'>{c['not reproduced']} not reproduced</span>, "
            f"<span class='st-not-attempted'>{c['not attempted']} not attempted</span> "
            "(computed from the reports below; a status says whether the paper's claim holds "
            "in the report's data, and the data column says what kind of data that is).</p>")
    parts = ["<h2>Status of every evaluation</h2>", head]
    for key in PAPERS:
        mine = [i for i in items if i["paper"] == key]
        cc = status_counts(mine)
        parts.append(f"<h3>{e(PAPERS[key])}: "
                     + ", ".join(f"{v} {k}" for k, v in cc.items() if v) + "</h3>")
        parts.append("<table><tr><th>figure / table</th><th>what</th><th>status</th>"
                     "<th>why</th><th>data</th></tr>")
        for i in mine:
            ev = [x for x in i["evidence"] if x["status"] == i["status"]][:1]
            why = ev[0]["why"] if ev else ""
            link = (f"<a href='{ev[0]['report']}/{ev[0]['report']}.html'>{e(i['figure'])}</a>"
                    if ev else e(i["figure"]))
            parts.append(f"<tr><td>{link}</td><td>{e(i['what'])}</td>"
                         f"<td class='st-{i['status'].replace(' ', '-')}'>{e(i['status'])}</td>"
                         f"<td>{e(why)}</td><td class='src'>{e(ev[0]['data']) if ev else ''}"
                         "</td></tr>")
        parts.append("</table>")
    return parts


def write_index(reports_dir: Path) -> Path:
    """Write ``index.html`` from the reports present under ``reports_dir``."""
    e = html.escape
    read = {name: _read(reports_dir, name) for name in TITLES}  # each metrics.json read once
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>workbench reports</title>"
             f"<style>{_CSS}</style></head><body>",
             "<h1>workbench: every evaluation</h1>",
             "<p>Rebuild with <code>workbench report</code> (<code>--quick</code> for a small "
             "run). Phones are not available here: their profiles are <b>modelled</b> (an "
             "analytical model with documented parameters); this machine's are <b>measured</b>; "
             "the papers' numbers are data with citations. Each report says which it shows.</p>",
             *status_section(reports_dir, read),
             "<h2>Reports</h2><table><tr><th>report</th><th>data</th><th>files</th></tr>"]
    for name, title in TITLES.items():
        d = reports_dir / name
        if not (d / f"{name}.html").exists():
            parts.append(f"<tr><td>{e(title)}</td><td></td><td class='missing'>not run yet</td></tr>")
            continue
        figs = sorted((d / "figures").glob("*.png")) if (d / "figures").exists() else []
        files = [f"<a href='{name}/{name}.html'>page</a>", f"<a href='{name}/{name}.ipynb'>notebook</a>"]
        if read[name].exists:
            files.append(f"<a href='{name}/metrics.json'>metrics.json</a>")
        if figs:
            files.append(f"<a href='{name}/figures/'>{len(figs)} PNG figures</a>")
        src = e(read[name].source)
        parts.append(f"<tr><td><a href='{name}/{name}.html'>{e(title)}</a></td>"
                     f"<td class='src'>{src}</td><td>{' · '.join(files)}</td></tr>")
    parts.append("</table><h2>The papers' figures beside the workbench's</h2><table><tr>"
                 "<th>paper</th><th>figure / table</th><th>the paper</th><th>the workbench</th>"
                 "<th>status</th><th>data</th></tr>")
    for row in ROWS:
        r = read[row.report]
        mine = row.ours(r.metrics) if r.metrics is not None else (
            f"<{r.why}>" if r.why else "<not run yet>")
        st, why = row.status(r.metrics) if r.metrics is not None else ("", "")
        mine = mine or why  # rows whose result is their status's reason
        name = row.report
        parts.append(f"<tr><td><span title='{e(papers.citation(row.paper.lower()), quote=True)}'>"
                     f"{e(row.paper)}</span></td><td><a href='{name}/{name}.html'>"
                     f"{e(row.item)}</a></td><td>{e(row.theirs())}</td><td>{e(mine)}</td>"
                     f"<td class='st-{st.replace(' ', '-')}'>{e(st)}</td>"
                     f"<td class='src'>{e(row.data)}</td></tr>")
    parts.append("</table><h2>Benchmarks</h2><table><tr><th>file</th><th>targets</th></tr>")
    for b in sorted((reports_dir / "bench").glob("*.json")):
        try:
            m = json.loads(b.read_text())
        except (OSError, json.JSONDecodeError):
            m = {}
        targets = m.get("targets", {})
        text = "; ".join(f"{k}: {_fmt(v.get('measured', v.get('measured_max')))}"
                         + ("" if "met" not in v else (" (met)" if v["met"] else " (MISSED)"))
                         for k, v in targets.items() if isinstance(v, dict))
        parts.append(f"<tr><td><a href='bench/{b.name}'>{e(b.name)}</a></td>"
                     f"<td>{e(text) or 'see file'}</td></tr>")
    parts.append("</table><h2>Explorer</h2><p><code>workbench explore</code> serves the "
                 "interactive Pareto explorer on localhost (Voila); in JupyterLab open "
                 "<code>notebooks/explorer.ipynb</code>.")
    if (reports_dir / "explorer" / "explorer.png").exists():
        parts.append(" The browser test's screenshot: <a href='explorer/explorer.png'>"
                     "explorer.png</a>.")
    parts.append(f"</p><p class='src'>written {date.today().isoformat()}</p></body></html>")
    return atomic_write_text(reports_dir / "index.html", "\n".join(parts) + "\n")
