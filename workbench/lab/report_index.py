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
    QuickstartMetrics,
    RealScaleMetrics,
    RuntimeMetrics,
    SolveTimeMetrics,
    VersusMetrics,
    validate_metrics,
)


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def _quickstart(m: QuickstartMetrics) -> str:
    return (f"d0 = {m.d0.label} "
            f"({'matches' if m.matches_carin_table7_d0 else 'differs from'} the paper)")


def _gains(m: CarinDesignsMetrics) -> str:
    return "; ".join(f"{r.use_cases} vs {r.baseline}: {_fmt(r.workbench_mean)}x mean "
                     f"(paper {_fmt(r.paper_mean)}x)" for r in m.gains_vs_paper[:4])


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


def _delen_check(fig: str) -> Callable[[DelenMetrics], str]:
    """The Delen report's own paper-beside row for ``fig`` (delen.paper_checks)."""
    def f(m: DelenMetrics) -> str:
        row = next((c for c in m.checks if c["figure"] == fig), None)
        if row is None:
            return "-"
        verdict = {True: "shape holds", False: "shape does not hold", None: ""}[row["holds"]]
        return f"{row['workbench']} ({verdict})" if verdict else row["workbench"]
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
    return "; ".join(f"scenario {k}: MASA {_fmt(v, 3)}% lower mean response than Bulk"
                     for k, v in m.tightest_gain_vs_bulk_pct.items())


def _masa_opt(m: MasaMetrics) -> str:
    return ", ".join(f"{r.workers} workers {_fmt(r.ratio)}" for r in m.optimality) or "-"


def _flexnn_best(m: FlexnnMetrics) -> str:
    return "; ".join(f"{b.model}: {_fmt(b.memory_reduction_pct, 3)}% less memory, "
                     f"{_fmt(b.latency_increase_pct, 3)}% more latency" for b in m.best)


def _flexnn_full(m: FlexnnMetrics) -> str:
    """FlexNN's most frugal measured point per full-size network."""
    out = []
    for model in dict.fromkeys(p.model for p in m.full_size):
        pts = [p for p in m.full_size if p.model == model and p.mode == "flexnn"]
        if pts:
            b = max(pts, key=lambda p: p.memory_reduction_pct)
            out.append(f"{model} at 224: {_fmt(b.memory_reduction_pct, 3)}% less memory, "
                       f"{_fmt(b.latency_increase_pct, 2)}% latency")
    return "; ".join(out) or "-"


def _masa_pressure(m: MasaMetrics) -> str:
    return "; ".join(
        f"{scaling}: MASA {_fmt(g['masa'], 3)}%, when-idle {_fmt(g['masa-idle'], 3)}% lower "
        f"mean response than Bulk" for scaling, g in m.pressure_gain_vs_bulk_pct.items()
        if "masa" in g and "masa-idle" in g) or "-"


def _carin_fig(key: str) -> str:
    ra = papers.paper("carin")["runtime_adaptation"][key]
    return ra["text"]


#: (report, paper, item, what the paper reports, the workbench's result from metrics.json, data).
ROWS: list[tuple[str, str, str, Callable[[], str], Callable[[Any], str], str]] = [
    ("quickstart", "CARIn", "Table 7 (d0)",
     lambda: "UC1 on S20 FE: d0 = EfficientNet Lite0 FFX8, CPU 4 threads, XNNPACK", _quickstart,
     "modelled"),
    ("carin_designs", "CARIn", "Figs 3-6",
     lambda: "mean optimality gains of CARIn's d0 over the baselines (section 7.1)", _gains,
     "modelled"),
    ("carin_designs", "CARIn", "Table 7", lambda: "UC1 on S20 FE: designs and switching policy",
     _policy("uc1_s20fe"), "modelled"),
    ("carin_designs", "CARIn", "Table 8", lambda: "UC3 on A71: designs and switching policy",
     _policy("uc3_a71"), "modelled"),
    ("oodin_solve_time", "CARIn", "Table 9",
     lambda: "OODIn's solve time 0.55-34 ms on phones (500-10,000 combinations)", _solve_time,
     "modelled profiles, times measured here"),
    ("rass_vs_nsga2", "CARIn", "RASS vs evolutionary search",
     lambda: "RASS finds the exact optimum in one pass", _nsga,
     "modelled profiles, times measured here"),
    ("host", "CARIn", "UC1-UC4 on a device",
     lambda: "the pipeline on real phones (train/quantise/profile/solve)", _host, "measured"),
    ("host_real", "CARIn", "UC1-UC2 at real scale",
     lambda: "the papers' models (MobileNet, EfficientNet-Lite) on real phones", _real,
     "measured (A: measured on Fashion-MNIST, cited for ImageNet)"),
    ("runtime", "CARIn", "Fig. 7", lambda: _carin_fig("uc1_s20fe"),
     _runtime_run("rass", "single"), "measured"),
    ("runtime", "CARIn", "Fig. 8", lambda: _carin_fig("uc3_a71"), _runtime_run("rass", "multi"),
     "measured"),
    ("runtime", "OODIn", "Figs 7-8",
     lambda: papers.paper("oodin")["runtime"]["throttling"]["text"],
     _runtime_run("oodin", "single"), "measured"),
    *[("delen", "Delen", fig, _delen_paper(fig), _delen_check(fig), data) for fig, data in (
        ("Fig. 5", "measured accuracy, energy modelled"), ("Fig. 7", "measured"),
        ("Fig. 8", "measured (energy modelled)"), ("Fig. 9", "measured (energy modelled)"),
        ("Fig. 10", "measured time, modelled power"), ("Figs 11-12", "measured"),
        ("Fig. 13", "measured"), ("Fig. 14", "measured"), ("Fig. 15", "measured"),
        ("Table 3", "measured"))],
    ("masa", "MASA", "Figs 7-8 (Table 1 networks, real memory limit)",
     lambda: papers.paper("masa")["claims"]["fig7_max_gain"]["text"], _masa_pressure,
     "measured (real memory pressure)"),
    ("masa", "MASA", "Figs 7-8 (32x32 stand-ins)",
     lambda: papers.paper("masa")["claims"]["fig7_max_gain"]["text"],
     _masa_gain, "measured layer times; paging modelled (fitted); simulated"),
    ("masa", "MASA", "Fig. 13(a)",
     lambda: papers.paper("masa")["claims"]["fig13a_worst_ratio"]["text"], _masa_opt,
     "measured layer times, exact MILP"),
    ("flexnn", "FlexNN", "Fig. 10 (full-size networks)",
     lambda: papers.paper("flexnn")["claims"]["best_point"]["text"], _flexnn_full,
     "measured (fresh processes)"),
    ("flexnn", "FlexNN", "Fig. 10 (32x32 models)",
     lambda: papers.paper("flexnn")["claims"]["best_point"]["text"], _flexnn_best, "measured"),
    ("runtime", "CARIn", "Table 10",
     lambda: "CARIn stores 1.66-19.98x less than OODIn", _table10, "modelled (phones), measured (host)"),
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
}

_CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222}table{border-collapse:collapse;margin:1em 0;width:100%}th,td{border-bottom:1px solid #ddd;
padding:.4em .6em;text-align:left;vertical-align:top;font-size:.92em}th{background:#f4f4f4}
.src{white-space:nowrap;font-size:.85em;color:#555}code{background:#f4f4f4;padding:0 .3em}
.missing{color:#a00}"""


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
                 "<th>data</th></tr>")
    for name, paper, item, theirs, ours, data in ROWS:
        r = read[name]
        mine = ours(r.metrics) if r.metrics is not None else (
            f"<{r.why}>" if r.why else "<not run yet>")
        parts.append(f"<tr><td><span title='{e(papers.citation(paper.lower()), quote=True)}'>"
                     f"{e(paper)}</span></td><td><a href='{name}/{name}.html'>{e(item)}</a></td>"
                     f"<td>{e(theirs())}</td><td>{e(mine)}</td><td class='src'>{e(data)}</td></tr>")
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
