"""The benchmarks as one page: each target beside its measured value, its verdict and its history
over the commits that changed the benchmark's output, so a regression shows at a glance.

Reads the committed ``reports/bench/*.json``. A benchmark states its targets in one form::

    "targets": {"<name>": {"target": 1.0, "measured": 0.88, "q1": 0.87, "q3": 0.89, "n": 7,
                           "unit": "ms", "met": true, "judged": "..."}}

(``met`` is true, false, or null for "not shown either way"; ``measured_max`` stands in for
``measured`` where the target bounds a maximum; a target may be text, or a ``reference`` cited
from a paper instead). Benchmarks whose targets are bare numbers, or that have none, are listed
with what they measure and no verdict. History comes from ``git log`` of each file: a point per
commit that changed it (none when git or the history is not there).

:func:`bench_targets` computes (plain data); :func:`render_page` draws it as self-contained HTML
with inline SVG (no script, nothing fetched).
"""

from __future__ import annotations

import html
import json
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ...fileio import atomic_write_text
from .outputs import bench_file

#: How many past versions of a benchmark file the history reads.
HISTORY = 20


@dataclass(frozen=True)
class Target:
    """One benchmark target: what was measured against what it should be."""

    file: str
    name: str
    target: float | str | None
    measured: float | None
    met: bool | None
    unit: str = ""
    q1: float | None = None
    q3: float | None = None
    n: int | None = None
    judged: str | None = None
    reference: str | None = None
    #: (commit date, short commit, measured) of earlier versions of the file, oldest first.
    history: list[tuple[str, str, float]] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """met / not met as the benchmark judged it; without a verdict: "not shown" when its
        quartiles straddle the target, else "no verdict" (e.g. too few samples to judge)."""
        if self.met is True:
            return "met"
        if self.met is False:
            return "not met"
        return "not shown" if self.q1 is not None and self.q3 is not None else "no verdict"


@dataclass(frozen=True)
class Bench:
    """One benchmark output file and its targets."""

    file: str
    what: str
    cpu: str | None
    targets: list[Target]
    #: Why the file could not be read (it is listed, named, and skipped).
    error: str | None = None


def _number(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and \
        math.isfinite(x) else None


def _measured(entry: dict) -> float | None:
    return _number(entry.get("measured", entry.get("measured_max")))


def _text(x) -> str | None:
    return x if isinstance(x, str) else None


def _count(x) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _targets_of(name: str, data: dict) -> list[Target]:
    raw = data.get("targets")
    if not isinstance(raw, dict):
        return []
    out = []
    for key, e in raw.items():
        if not isinstance(e, dict):
            continue  # a bare number: a target without its measured value beside it
        t = e.get("target")
        out.append(Target(
            file=name, name=str(key), target=t if isinstance(t, str) else _number(t),
            measured=_measured(e), met=e.get("met") if isinstance(e.get("met"), bool) else None,
            unit=_text(e.get("unit")) or "", q1=_number(e.get("q1")), q3=_number(e.get("q3")),
            n=_count(e.get("n", e.get("rounds"))), judged=_text(e.get("judged")),
            reference=_text(e.get("reference"))))
    return out


def _git(root: Path, *args: str) -> str | None:
    try:
        p = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def _history(root: Path, rel: str, limit: int) -> dict[str, list[tuple[str, str, float]]]:
    """Per target name, its measured value in each committed version of ``rel``, oldest
    first."""
    log = _git(root, "log", f"-{limit}", "--format=%h %cs", "--", rel)
    out: dict[str, list[tuple[str, str, float]]] = {}
    for line in reversed((log or "").splitlines()):
        commit, _, date = line.partition(" ")
        text = _git(root, "show", f"{commit}:{rel}")
        try:
            data = json.loads(text) if text else None
        except json.JSONDecodeError:
            continue
        if not isinstance(data, dict):
            continue
        for t in _targets_of(rel, data):
            if t.measured is not None:
                out.setdefault(t.name, []).append((date, commit, t.measured))
    return out


def bench_targets(folder: str | Path | None = None, *, history: int = HISTORY) -> list[Bench]:
    """Every benchmark output in ``folder`` (default: the checkout's ``reports/bench``) with its
    targets and, where git has them, their history. A file that is not a JSON object is listed
    with its ``error`` and no targets."""
    folder = Path(folder) if folder is not None else bench_file("x").parent
    root = folder.parent.parent
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError("expected a JSON object")
        except (OSError, UnicodeDecodeError, ValueError) as e:
            # One broken file is named and skipped: the page still shows the others.
            out.append(Bench(path.name, "", None, [], error=f"not a benchmark output: {e}"))
            continue
        targets = _targets_of(path.name, data)
        if targets and history:
            rel = str(path.relative_to(root))
            past = _history(root, rel, history)
            # The file as it is now, when that is not what was last committed (a benchmark
            # just run): its value ends the line, marked so.
            changed = bool((_git(root, "status", "--porcelain", "--", rel) or "").strip())
            targets = [Target(**{**t.__dict__, "history": past.get(t.name, []) + (
                [("now", "uncommitted", t.measured)] if changed and t.measured is not None
                else [])}) for t in targets]
        what = data.get("what") or data.get("source") or ""
        out.append(Bench(path.name, str(what), data.get("cpu") if isinstance(
            data.get("cpu"), str) else None, targets))
    return out


# --- drawing ------------------------------------------------------------------------------------

def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def _spark(t: Target, width: int = 160, height: int = 36) -> str:
    """The history as an inline SVG line, the target as a dashed line when numeric."""
    pts = [v for _, _, v in t.history]
    if len(pts) < 2:
        return '<span class="dim">one version</span>' if pts else ""
    vals = pts + ([float(t.target)] if isinstance(t.target, (int, float)) else [])
    lo, hi = min(vals), max(vals)
    span = hi - lo or 1.0

    def y(v: float) -> float:
        return round(height - 4 - (v - lo) / span * (height - 8), 1)

    step = (width - 8) / (len(pts) - 1)
    line = " ".join(f"{round(4 + i * step, 1)},{y(v)}" for i, v in enumerate(pts))
    title = html.escape("; ".join(f"{d} {c}: {_fmt(v)}" for d, c, v in t.history))
    parts = [f'<svg width="{width}" height="{height}" role="img"><title>{title}</title>']
    if isinstance(t.target, (int, float)):
        parts.append(f'<line x1="0" x2="{width}" y1="{y(float(t.target))}" '
                     f'y2="{y(float(t.target))}" class="target"/>')
    parts.append(f'<polyline points="{line}" class="hist"/>')
    last = pts[-1]
    parts.append(f'<circle cx="{round(4 + (len(pts) - 1) * step, 1)}" cy="{y(last)}" r="2.5" '
                 f'class="{"bad" if t.met is False else "last"}"/></svg>')
    return "".join(parts)


_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #ddd; text-align: left;
         vertical-align: middle; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.met { color: #1a7f37; } .notmet { color: #b42318; font-weight: 600; } .shown { color: #9a6700; }
.dim { color: #777; }
svg .hist { fill: none; stroke: #444; stroke-width: 1.5; }
svg .target { stroke: #b42318; stroke-dasharray: 4 3; stroke-width: 1; }
svg .last { fill: #444; } svg .bad { fill: #b42318; }
"""


def render_page(benches: list[Bench], path: str | Path, *, title: str = "Benchmarks") -> Path:
    """Write the benchmarks as one HTML page (atomically) and return its path."""
    e = html.escape
    n_met = sum(t.met is True for b in benches for t in b.targets)
    n_not = sum(t.met is False for b in benches for t in b.targets)
    n_open = sum(t.met is None for b in benches for t in b.targets)
    rows = [f"<!doctype html><meta charset=utf-8><title>{e(title)}</title>",
            f"<style>{_STYLE}</style><h1>{e(title)}</h1>",
            f"<p>Targets: {n_met} met, {n_not} not met, {n_open} without a verdict, over "
            f"{len(benches)} benchmark outputs in reports/bench/. Every value is measured on the "
            "CPU its file names unless the file says otherwise. A verdict is the benchmark's "
            "own; \"not shown\": its quartiles straddle the target; \"no verdict\": too little "
            "to judge. The history line is the measured value in each committed version of the "
            "file (and the file as it is now, when it differs; dashed: the target); a target "
            "whose method changed carries both methods on one line.</p>"]
    for b in benches:
        rows.append(f"<h2>{e(b.file)}</h2><p class=dim>{e(b.what)}"
                    + (f" CPU: {e(b.cpu)}." if b.cpu else "") + "</p>")
        if b.error:
            rows.append(f"<p class=notmet>{e(b.error)}</p>")
            continue
        if not b.targets:
            rows.append("<p class=dim>No targets recorded in the common form.</p>")
            continue
        rows.append("<table><tr><th>target</th><th>measured</th><th>quartiles</th><th>n</th>"
                    "<th>goal</th><th>verdict</th><th>history</th></tr>")
        for t in b.targets:
            cls = {"met": "met", "not met": "notmet"}.get(t.verdict, "shown")
            goal = (f"{_fmt(float(t.target))} {e(t.unit)}" if isinstance(t.target, (int, float))
                    else e(str(t.target)) if t.target is not None
                    else e(t.reference or "-"))
            quart = f"{_fmt(t.q1)} – {_fmt(t.q3)}" if t.q1 is not None and t.q3 is not None \
                else ""
            note = f' title="{e(t.judged)}"' if t.judged else ""
            rows.append(f"<tr><td>{e(t.name)}</td><td class=num>{_fmt(t.measured)} {e(t.unit)}"
                        f"</td><td class=num>{quart}</td><td class=num>{t.n or ''}</td>"
                        f"<td>{goal}</td><td class={cls}{note}>{t.verdict}</td>"
                        f"<td>{_spark(t)}</td></tr>")
        rows.append("</table>")
    return atomic_write_text(path, "\n".join(rows) + "\n")
