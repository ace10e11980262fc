"""Showing a figure in a notebook: executed reports load one shared plotly.js
(``reports/assets/plotly.min.js``) instead of carrying 3.5 MB each, a caption goes under the
figure and must say what its data is (:func:`data_kinds`), and PNG copies are saved on request."""

from __future__ import annotations

import os
from typing import Any

import plotly.graph_objects as go

from ..reproduction.rules import DATA_KINDS

#: Set by ``workbench report`` while executing notebooks: figures then load the shared plotly.js.
REPORT_ENV = "WORKBENCH_REPORT_PLOTLYJS"

#: Set by ``workbench report`` when PNG figures are wanted: the folder they go to.
PNG_ENV = "WORKBENCH_REPORT_PNG_DIR"

_LOADED = False  # the shared plotly.js is included once per executed notebook

_PNG = {"n": 0, "failed": False}


def _save_png(fig: "go.Figure") -> None:
    """Also write the figure as a PNG (kaleido + a system Chromium); never fails the report."""
    folder = os.environ.get(PNG_ENV)
    if not folder or _PNG["failed"]:
        return
    _PNG["n"] += 1
    try:
        os.makedirs(folder, exist_ok=True)
        fig.write_image(os.path.join(folder, f"figure-{_PNG['n']:02d}.png"), width=1000,
                        height=int(fig.layout.height or 500), scale=1)
    except Exception as e:  # noqa: BLE001 - no Chromium, kaleido missing, ...: HTML still works
        _PNG["failed"] = True
        print(f"(PNG figures skipped: {type(e).__name__}: {str(e)[:200]})")


def _whole_tables() -> None:
    """In executed reports, tables are shown whole: pandas' default truncation (20 columns,
    50-character cells, "...") hid exactly the column where a result differed from the paper."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with the notebooks extra
        return
    pd.set_option("display.max_columns", None)
    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.max_rows", 500)
    pd.set_option("display.width", None)



if os.environ.get(REPORT_ENV):
    _whole_tables()

#: What a figure's data can be. Every report figure's caption names at least one, so a reader
#: never takes a modelled or simulated number for a measurement (or the paper's for ours).


def data_kinds(caption: str) -> list[str]:
    """The kinds of data (:data:`DATA_KINDS`) a caption names, in that order."""
    low = caption.lower()
    return [k for k in DATA_KINDS if k in low]


def show(fig: "go.Figure", *, caption: str | None = None) -> Any:
    """Display a figure: interactive in Jupyter, or as HTML sharing one plotly.js in reports.

    ``caption`` goes under it; in reports it says what the figure shows and which kind of data
    (measured / modelled / simulated / from the paper) each part is."""
    _save_png(fig)
    src = os.environ.get(REPORT_ENV)
    from IPython.display import HTML, Markdown, display

    if not src:
        fig.show()
        if caption:
            display(Markdown(f"*{caption}*"))
        return None

    global _LOADED
    loader = ""
    if not _LOADED:
        # nbconvert's page loads require.js; plotly.js would then register as an AMD module
        # instead of setting window.Plotly, so hide `define` while the shared bundle loads.
        loader = (f'<script>window.__wbDefine = window.define; window.define = undefined;</script>'
                  f'<script src="{src}"></script>'
                  f'<script>window.define = window.__wbDefine;</script>')
        _LOADED = True
    html = fig.to_html(include_plotlyjs=False, full_html=False, config={"displaylogo": False})
    if caption:
        html += ('<p class="wb-caption" style="margin:.2em 0 1.4em;font-size:.9em;color:#333">'
                 f'{_escape(caption)}</p>')
    display(HTML(loader + html))
    return None


def _escape(text: str) -> str:
    import html

    return html.escape(text, quote=False)
