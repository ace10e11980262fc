"""What the explorer page shows as HTML: tables, errors (the caret under the SLO kept in place),
the designs with the design the runtime would run, and download links. Plain strings from plain
data; the page (:mod:`.page`) puts them into its widgets."""

from __future__ import annotations

import base64
import html
from typing import Any

from ....moo.optimality import optimality_text
from ..session import Exploration


def _table(rows: list[dict[str, Any]], *, css: str = "") -> str:
    if not rows:
        return "<i>none</i>"
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in r.values())
                   + "</tr>" for r in rows)
    return f'<table class="wb-table {css}"><tr>{head}</tr>{body}</table>'


def _error(e: Exception) -> str:
    # The caret line points into the SLO line above it: both must be in one monospace font
    # with spaces kept, whatever the page's CSS does to <pre> (JupyterLab and Voila differ).
    return ('<pre class="wb-error" style="color:#b00;font-family:monospace;white-space:pre;'
            f'font-size:13px;line-height:1.3;margin:0">{html.escape(str(e))}</pre>')


def designs_html(e: Exploration) -> tuple[str, str, str]:
    """The designs table (with ties), the design the runtime runs under the flags, and the
    switching policy, as HTML; an infeasible problem names its nearest combinations."""
    if not e.result.ok:
        near = "; ".join(" + ".join(v.labels) + " breaks " + ", ".join(v.broken)
                         for v in e.result.nearest[:3])
        return ('<b class="wb-infeasible">infeasible</b>: no combination meets every '
                f"constraint. Nearest: {html.escape(near)}",
                '<span class="wb-picked">runtime runs: nothing</span>', "")
    rows = [{"role": r, "design": " + ".join(d.labels),
             "optimality": optimality_text(d.optimality, tied=d.tie is not None,
                                           unweighted=e.unweighted),
             **{k: d.value_text(k) for k in d.objectives}}
            for r, d in e.result.designs.items()]
    od = e.oodin_design
    if od is not None:
        rows.append({"role": "OODIn", "design": " + ".join(od.labels),
                     "optimality": optimality_text(od.optimality, tied=False),
                     **{k: od.value_text(k) for k in od.objectives}})
    d0 = html.escape(e.design_label("d0") or "")
    ties = "".join(f'<div class="wb-tie">{r}: {html.escape(d.tie)}</div>'
                   for r, d in e.result.designs.items() if d.tie)
    designs = f'<div class="wb-d0">d0 = {d0}</div>' + _table(rows) + ties
    picked = e.picked
    label = html.escape(e.design_label(picked) or "") if picked else "nothing"
    pick = f'<span class="wb-picked">runtime runs: <b>{picked}</b> = {label}</span>'
    return designs, pick, _table(e.policy)


def download_links(files: list[tuple[str, str, str]]) -> str:
    """A link per (file name, MIME type, text) that downloads it from a data URL: nothing is
    written on the server."""
    links = [f'<a download="{n}" class="wb-download" href="data:{mime};base64,'
             f'{base64.b64encode(text.encode()).decode()}">{n}</a>' for n, mime, text in files]
    return " · ".join(links)
