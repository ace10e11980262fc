"""``reports/index.html``: one page linking every report, the reproduction ledger (every figure
and table of the five papers, its claim, our number and its status: :mod:`.reproduction`), the
benchmarks, and where the data came from (measured, modelled, paper).

Built from what the reports wrote (their ``metrics.json``) and the ledger built from them; a report
not run yet is listed as such. No count on the page is typed: all come from the ledger.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...fileio import atomic_write_text
from ..bench.page import bench_targets
from ..reproduction import LEDGER, PAPERS, counts, summary_line, write_ledger
from .metrics import METRICS, validate_metrics


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


TITLES = {
    "quickstart": "Quickstart: UC1 on the Galaxy S20 FE",
    "carin_designs": "CARIn designs against the baselines (Figs 3-6, Tables 7-8)",
    "oodin_solve_time": "OODIn's solve time against RASS's look-up (Table 9)",
    "rass_vs_nsga2": "RASS against pymoo's NSGA-II and Optuna's NSGA-II and TPE",
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
.src{overflow-wrap:anywhere;word-break:break-word;max-width:28em;font-size:.85em;color:#555}
td{overflow-wrap:anywhere}code{background:#f4f4f4;padding:0 .3em}
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


def ledger_section(entries: list[dict[str, Any]]) -> list[str]:
    """The index's top: the ledger's counts, then every figure and table by paper, each with the
    paper's claim, ours, the tolerance, the status and why, and a link to its evidence."""
    e = html.escape
    c = counts(entries)
    head = (f"<p class='counts'><b>{e(summary_line(entries))}</b>: "
            f"<span class='st-reproduced'>{c['reproduced']} reproduced</span>, "
            f"<span class='st-partial'>{c['partial']} partial</span>, "
            f"<span class='st-not-reproduced'>{c['not-reproduced']} not reproduced</span>. "
            "Each status is decided from that item's own numbers (reproduced needs data measured "
            "here and the paper's claim holding within the stated tolerance; modelled or "
            "simulated data is at most partial). From <a href='reproduction.json'>"
            "reproduction.json</a>.</p>")
    parts = ["<h2>Every figure and table of the five papers</h2>", head]
    for key, name in PAPERS.items():
        mine = [i for i in entries if i["paper"] == key]
        cc = counts(mine)
        parts.append(f"<h3>{e(name)}: " + ", ".join(f"{v} {k.replace('-', ' ')}"
                                                    for k, v in cc.items() if v) + "</h3>")
        parts.append("<table><tr><th>figure / table</th><th>the paper's claim</th><th>ours</th>"
                     "<th>tolerance</th><th>status</th><th>why</th><th>data</th></tr>")
        for i in mine:
            links = []
            for ref in dict.fromkeys(x.split("#")[0].split(" ")[0] for x in i["evidence"]):
                top, _, rest = ref.partition("/")
                href = rest if top == "reports" else f"../{ref}"
                links.append(f"<a href='{e(href, quote=True)}'>{e(ref)}</a>")
            st = i["status"]
            parts.append(f"<tr><td>{e(i['id'])}</td><td>{e(i['claim'])}</td>"
                         f"<td>{e(i['ours'] or '')}</td><td>{e(i['tolerance'] or '')}</td>"
                         f"<td class='st-{st}'>{e(st.replace('-', ' '))}</td>"
                         f"<td>{e(i['why'])}</td><td class='src'>{e(i['data'])}"
                         + (f"<br>{' '.join(links)}" if links else "") + "</td></tr>")
        parts.append("</table>")
    return parts


def write_index(reports_dir: Path) -> Path:
    """Write ``index.html`` from the reports present under ``reports_dir``."""
    e = html.escape
    read = {name: _read(reports_dir, name) for name in TITLES}  # each metrics.json read once
    write_ledger(reports_dir)
    entries = json.loads((reports_dir / LEDGER).read_text(encoding="utf-8"))["items"]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>workbench reports</title>"
             f"<style>{_CSS}</style></head><body>",
             "<h1>workbench: every evaluation</h1>",
             "<p>Rebuild with <code>workbench report</code> (<code>--quick</code> for a small "
             "run). Phones are not available here: their profiles are <b>modelled</b> (an "
             "analytical model with documented parameters); this machine's are <b>measured</b>; "
             "the papers' numbers are data with citations. Each report says which it shows.</p>",
             *ledger_section(entries),
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
    parts.append("</table><h2>Benchmarks</h2>")
    if (reports_dir / "bench" / "index.html").is_file():
        parts.append("<p><a href='bench/index.html'>The benchmark page</a>: each target beside "
                     "its quartiles and its history over commits.</p>")
    parts.append("<table><tr><th>file</th><th>targets</th></tr>")
    for b in bench_targets(reports_dir / "bench", history=0):
        text = b.error or "; ".join(f"{t.name}: {_fmt(t.measured)} ({t.verdict})"
                                    for t in b.targets)
        parts.append(f"<tr><td><a href='bench/{e(b.file)}'>{e(b.file)}</a></td>"
                     f"<td>{e(text) or 'see file'}</td></tr>")
    parts.append("</table><h2>Explorer</h2><p><code>workbench explore</code> serves the "
                 "interactive Pareto explorer on localhost (Voila); in JupyterLab open "
                 "<code>notebooks/explorer.ipynb</code>.")
    if (reports_dir / "explorer" / "explorer.png").exists():
        parts.append(" The browser test's screenshot: <a href='explorer/explorer.png'>"
                     "explorer.png</a>.")
    parts.append(f"</p><p class='src'>written {date.today().isoformat()}</p></body></html>")
    return atomic_write_text(reports_dir / "index.html", "\n".join(parts) + "\n")
