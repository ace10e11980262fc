"""The reproduction ledger, ``reports/reproduction.json``: every figure and table of the five
papers that reports results (54) or setup (4), each with the paper's claim, the workbench's number,
where that number lives (evidence), and a status decided from that item's own numbers by
:mod:`.rules`. The index and the README render their counts from it; nothing is typed twice.

Rebuild after any report or benchmark with ``workbench report --ledger`` (every ``workbench
report`` writes it too, with the index), or from Python::

    from workbench.lab.reproduction import write_ledger
    write_ledger(Path("."))
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...fileio import atomic_write_text
from . import carin, delen, flexnn, masa, oodin
from .evidence import CHECKOUT, EvidenceError, Files
from .rules import DATA_KINDS, STATUSES, Item, Outcome, _num, decide, spread, spread_text, weaker

PAPERS = {"carin": "CARIn", "oodin": "OODIn", "delen": "Delen", "masa": "MASA",
          "flexnn": "FlexNN"}
#: Every item, paper by paper in the papers' own order.
ITEMS: tuple[Item, ...] = (*carin.ITEMS, *oodin.ITEMS, *delen.ITEMS, *masa.ITEMS, *flexnn.ITEMS)
LEDGER = "reproduction.json"


def _outcome(files: Files, c: Any) -> tuple[Outcome, list[str]]:
    refs = c.ours.refs()
    paths = c.ours.describe() if hasattr(c.ours, "describe") else [r.ref for r in refs]
    try:
        ours = c.ours.value(files)
    except EvidenceError as e:
        return Outcome(c.label, None, False, c.rule.paper_text(), c.rule.tolerance(), paths,
                       c.unit, str(e)), []
    try:
        kinds = [files.kind(r.ref.partition("#")[0], r.source) for r in refs]
    except EvidenceError:
        kinds = ["unstated"]
    tolerance = c.rule.tolerance()
    spread_, not_shown = None, False
    try:
        holds = bool(c.rule.holds(ours))
        if c.rounds is not None:
            # A median of noisy rounds: the spread must fit the tolerance too, so a difference
            # smaller than the round-to-round noise never counts as holding (or as the claim).
            paths += [f"{p} (rounds)" for p in (c.rounds.describe() if hasattr(
                c.rounds, "describe") else [r.ref for r in c.rounds.refs()])]
            vals = c.rounds.value(files)
            if not isinstance(vals, list) or not vals:
                raise TypeError(f"the rounds are not a non-empty list: {vals!r}")
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                spread_ = spread(vals)
                ends = [bool(c.rule.holds(v)) for v in spread_[:2]]
            else:  # an ordering or outcome per round: every round must agree
                ends = [bool(c.rule.holds(v)) for v in vals]
                spread_ = (float(sum(ends)), float(len(ends)),
                           f"rounds holding of {len(ends)}")
            tolerance += (", with the rounds' spread inside it too (their quartiles from 5 rounds "
                          "on, every round below 5)")
        elif c.halfwidth is not None:
            # One run with a known sampling error: ours +- two standard errors must fit.
            paths += [f"{r.ref} (sampling error)" for r in c.halfwidth.refs()]
            h, o = float(c.halfwidth.value(files)), float(ours)
            spread_ = (o - h, o + h, f"+-{_num(h)}, two standard errors")
            ends = [bool(c.rule.holds(v)) for v in spread_[:2]]
            tolerance += ", with ours +- two standard errors inside it too"
        if spread_ is not None:
            # Not shown: the median and the spread's ends do not all agree.
            not_shown = len({holds, *ends}) > 1
            holds = holds and all(ends)
    except EvidenceError as e:
        return Outcome(c.label, None, False, c.rule.paper_text(), tolerance, paths, c.unit,
                       str(e)), []
    except (TypeError, ValueError) as e:  # a value of the wrong type at the pointer
        return Outcome(c.label, None, False, c.rule.paper_text(), tolerance, paths,
                       c.unit, f"{'; '.join(paths)}: {e}"), []
    return Outcome(c.label, ours, holds, c.rule.paper_text(), tolerance, paths,
                   c.unit, spread=spread_, not_shown=not_shown), kinds


def _text(v: Any, unit: str = "") -> str:
    if isinstance(v, (list, tuple)):
        return " > ".join(map(str, v))
    return _num(v) + unit if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def entry(files: Files, item: Item) -> dict[str, Any]:
    """One ledger entry: the item, its outcomes and its status."""
    outs, data = [], item.data
    for c in item.comparisons:
        o, kinds = _outcome(files, c)
        outs.append(o)
        for k in kinds:
            data = weaker(data, k)
    d = decide(item, outs, data)
    return {
        "paper": item.paper, "id": item.id, "kind": item.kind, "what": item.what,
        # No number of ours (setup tables, unmeasured items): the only data is the paper's.
        "status": d.status, "data": data if item.kind == "result" and outs else "paper",
        "claim": item.claim + (f" (read off the plot: {item.reading})" if item.reading else ""),
        "ours": "; ".join(f"{o.label}: {_text(o.ours, o.unit)}" + (
            f" ({spread_text(o.spread, o.unit)})" if o.spread else "")
            for o in outs if o.ours is not None) or None,
        "paper_value": "; ".join(f"{o.label}: {o.paper}" for o in outs) or None,
        "tolerance": "; ".join(f"{o.label}: {o.tolerance}" for o in outs) or None,
        "evidence": [p for o in outs for p in o.evidence],
        "reason": d.reason if d.status != "reproduced" else None,
        # What of the claim has no number here (caps the status at partial).
        "missing": item.missing or None,
        "why": d.reason,
        "note": item.note or None,
        "comparisons": [{"label": o.label, "ours": o.ours, "paper": o.paper,
                         "tolerance": o.tolerance, "holds": o.holds, "evidence": o.evidence,
                         **({"rounds": {"low": o.spread[0], "high": o.spread[1],
                                        "what": o.spread[2]},
                             "not_shown": o.not_shown} if o.spread else {}),
                         **({"error": o.error} if o.error else {})} for o in outs],
    }


def build_ledger(reports_dir: Path, *, profiles_dir: Path | None = None
                 ) -> list[dict[str, Any]]:
    """Every item's entry, from the evidence under ``reports_dir`` (and the committed profiles,
    or ``profiles_dir``)."""
    files = Files(Path(reports_dir), profiles_dir)
    return [entry(files, i) for i in ITEMS]


def counts(entries: list[dict[str, Any]], *, kind: str = "result") -> dict[str, int]:
    """How many items of ``kind`` have each status."""
    mine = [e for e in entries if e["kind"] == kind]
    return {s: sum(e["status"] == s for e in mine) for s in STATUSES}


def counts_by_paper(entries: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    return {p: counts([e for e in entries if e["paper"] == p]) for p in PAPERS}


def summary_line(entries: list[dict[str, Any]]) -> str:
    """The one sentence the README and the index print."""
    c = counts(entries)
    n = sum(c.values())
    setup = sum(e["kind"] == "setup" for e in entries)
    return (f"{n} result figures and tables of the five papers: {c['reproduced']} reproduced, "
            f"{c['partial']} partial, {c['not-reproduced']} not reproduced "
            f"(plus {setup} setup tables)")


def ledger_document(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "what": "every result and setup figure and table of the five papers, each status decided "
                "from that item's own numbers (workbench.lab.reproduction.rules; "
                "docs/reproduction.md)",
        "statuses": list(STATUSES), "data_kinds": list(DATA_KINDS),
        "counts": counts(entries), "counts_by_paper": counts_by_paper(entries),
        "summary": summary_line(entries),
        "items": entries,
    }


README_START, README_END = "<!-- ledger:start -->", "<!-- ledger:end -->"
#: The pages (from the checkout) whose counts block `workbench report --ledger` rewrites.
COUNT_PAGES = ("README.md", "docs/reports.md")


def readme_block(entries: list[dict[str, Any]]) -> str:
    """The README's counts, generated (between the ledger markers)."""
    rows = ["| paper | reproduced | partial | not reproduced |", "|---|---|---|---|"]
    for p, c in counts_by_paper(entries).items():
        rows.append(f"| {PAPERS[p]} | {c['reproduced']} | {c['partial']} | "
                    f"{c['not-reproduced']} |")
    return "\n".join([README_START, summary_line(entries) + ".", "", *rows, README_END])


def write_ledger(reports_dir: Path) -> Path:
    """Write ``reproduction.json`` in ``reports_dir``; when that is the checkout's ``reports/``,
    also the counts block of the README and of the reports guide (the only places the docs state
    them; :data:`COUNT_PAGES`)."""
    reports_dir = Path(reports_dir)
    entries = build_ledger(reports_dir)
    path = atomic_write_text(reports_dir / LEDGER, json.dumps(ledger_document(entries), indent=1,
                                                              ensure_ascii=False) + "\n")
    if reports_dir.resolve() == (CHECKOUT / "reports").resolve():
        for name in COUNT_PAGES:
            page = CHECKOUT / name
            text = page.read_text(encoding="utf-8") if page.exists() else ""
            if README_START in text and README_END in text:
                head, _, rest = text.partition(README_START)
                _, _, tail = rest.partition(README_END)
                atomic_write_text(page, head + readme_block(entries) + tail)
    return path
