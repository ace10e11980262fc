"""Plotly figures of workbench results. Computation lives elsewhere; these functions only draw.

Requires the ``notebooks`` extra (plotly). ``show`` embeds a figure so that executed reports share
one copy of plotly.js (``reports/assets/plotly.min.js``) instead of carrying 3.5 MB each.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from ..errors import MissingExtra

try:
    import plotly.graph_objects as go
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtra("plotly", "notebooks", needs="workbench.lab.viz") from exc

from ..moo.optimality import optimality_text  # noqa: E402  (after the guard: its message first)

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
DATA_KINDS = ("measured", "modelled", "simulated", "paper")
#: One look for the papers' own numbers on every figure: black diamonds (lines: black dashes).
PAPER_MARKER = {"symbol": "diamond", "size": 14, "color": "black"}


def data_kinds(caption: str) -> list[str]:
    """The kinds of data (:data:`DATA_KINDS`) a caption names, in that order."""
    low = caption.lower()
    return [k for k in DATA_KINDS if k in low]


def paper_marks(fig: "go.Figure", x: Sequence[Any], y: Sequence[float | None], *, name: str,
                **scatter: Any) -> "go.Figure":
    """Draw a paper's numbers on a figure's own axes as black diamonds named ``name``."""
    fig.add_trace(go.Scatter(x=list(x), y=list(y), mode="markers", name=name,
                             marker=dict(PAPER_MARKER), **scatter))
    return fig


def paper_line(fig: "go.Figure", value: float, *, text: str, axis: str = "y") -> "go.Figure":
    """Draw one number from a paper (a bound, a best point, a ratio) as a dashed black line
    across the plot, labelled ``text``; ``axis`` is the axis the value is on."""
    style = dict(line_dash="dash", line_color="black", annotation_text=text,
                 annotation_font_size=11, annotation_bgcolor="rgba(255,255,255,0.75)")
    if axis == "y":
        fig.add_hline(y=value, annotation_position="top left", **style)
    else:
        fig.add_vline(x=value, annotation_position="top right", **style)
    return fig


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


def tradeoff_scatter(x: Sequence[float], y: Sequence[float], *, labels: Sequence[str],
                     feasible: Sequence[bool], pareto: Sequence[bool] | None = None,
                     highlight: dict[str, int] | None = None, x_title: str, y_title: str,
                     title: str | None = None) -> "go.Figure":
    """Scatter of a configuration table in two metrics: infeasible grey, feasible blue, the
    Pareto front as a line, and named designs (e.g. ``{"d0": 12}``) as labelled stars."""
    fig = go.Figure()
    feas = list(feasible)
    for ok, name, color in ((False, "infeasible", "#c8c8c8"), (True, "feasible", "#4c78a8")):
        pts = [i for i, f in enumerate(feas) if f == ok]
        fig.add_trace(go.Scatter(
            x=[x[i] for i in pts], y=[y[i] for i in pts], mode="markers", name=name,
            text=[labels[i] for i in pts], marker=dict(color=color, size=6, opacity=0.8),
            hovertemplate="%{text}<br>%{x:.4g}, %{y:.4g}<extra></extra>"))
    if pareto is not None:
        pts = sorted((i for i, p in enumerate(pareto) if p), key=lambda i: x[i])
        fig.add_trace(go.Scatter(
            x=[x[i] for i in pts], y=[y[i] for i in pts], mode="lines+markers", name="Pareto front",
            text=[labels[i] for i in pts], line=dict(color="#f58518"),
            marker=dict(color="#f58518", size=8),
            hovertemplate="%{text}<br>%{x:.4g}, %{y:.4g}<extra></extra>"))
    for name, i in (highlight or {}).items():
        fig.add_trace(go.Scatter(
            x=[x[i]], y=[y[i]], mode="markers+text", name=f"{name}: {labels[i]}",
            text=[name], textposition="top center",
            marker=dict(symbol="star", size=16, color="#e45756", line=dict(width=1, color="black")),
            hovertemplate=f"{name}: {labels[i]}<extra></extra>"))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, template="plotly_white",
                      legend=dict(orientation="h", y=-0.2), height=480)
    return fig


def method_bars(rows: Sequence[Any], *, title: str | None = None) -> "go.Figure":
    """CARIn Figs 3-6's shape: optimality per device (x) and method (colour). Methods that fail
    their constraints ("!") or cannot run ("N/A") get an empty bar labelled so."""
    fig = go.Figure()
    methods = list(dict.fromkeys(r.method for r in rows))
    devices = list(dict.fromkeys(r.device for r in rows))
    for m in methods:
        sel = {r.device: r for r in rows if r.method == m}
        ys = [sel[d].optimality if d in sel and sel[d].optimality is not None else 0
              for d in devices]
        text = [("" if d not in sel else sel[d].outcome if sel[d].outcome != "ok"
                 else optimality_text(sel[d].optimality, ".2f")) for d in devices]
        hover = [sel[d].design or sel[d].outcome if d in sel else "" for d in devices]
        fig.add_trace(go.Bar(name=m, x=devices, y=ys, text=text, textposition="outside",
                             hovertext=hover, hovertemplate="%{x}: %{hovertext}<extra>" + m +
                             "</extra>"))
    fig.update_layout(barmode="group", title=title, yaxis_title="optimality (RASS normalisation)",
                      template="plotly_white", height=420, legend=dict(orientation="h", y=-0.15))
    return fig


def lines(x: Sequence[float], series: dict[str, Sequence[float]], *, x_title: str, y_title: str,
          title: str | None = None, log_y: bool = False) -> "go.Figure":
    """A few named series against one x axis (e.g. solve time against decision-space size)."""
    fig = go.Figure()
    for name, ys in series.items():
        fig.add_trace(go.Scatter(x=list(x), y=list(ys), mode="lines+markers", name=name))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title,
                      template="plotly_white", height=420, yaxis_type="log" if log_y else None,
                      legend=dict(orientation="h", y=-0.2))
    return fig


def hv_trace(points: Sequence[Any], *, title: str | None = None) -> "go.Figure":
    """Each solver's hypervolume ratio against the exact front over its wall time (one line per
    solver; points are :class:`~workbench.lab.experiments.carin.TracePoint`)."""
    fig = go.Figure()
    for solver in dict.fromkeys(p.solver for p in points):
        mine = [p for p in points if p.solver == solver and p.hv_ratio is not None]
        fig.add_trace(go.Scatter(x=[p.ms for p in mine], y=[p.hv_ratio for p in mine],
                                 mode="lines+markers", name=solver,
                                 text=[f"{p.evaluations} evaluations" for p in mine],
                                 hovertemplate="%{x:.0f} ms, HV ratio %{y:.4f} (%{text})"
                                               "<extra>%{fullData.name}</extra>"))
    fig.add_hline(y=1.0, line=dict(color="#888", dash="dot"),
                  annotation_text="exact front (RASS)", annotation_position="bottom right")
    fig.update_layout(title=title, xaxis_title="wall time (ms, log)", xaxis_type="log",
                      yaxis_title="hypervolume / exact front's", template="plotly_white",
                      height=420, legend=dict(orientation="h", y=-0.2))
    return fig


def fronts(x: str, y: str, series: dict[str, tuple[Sequence[float], Sequence[float]]], *,
           exact: tuple[Sequence[float], Sequence[float]], x_unit: str = "", y_unit: str = "",
           title: str | None = None) -> "go.Figure":
    """Fronts in two objectives: the exact front (RASS) as a line, each solver's front as
    markers."""
    fig = go.Figure()
    order = sorted(range(len(exact[0])), key=lambda i: exact[0][i])
    fig.add_trace(go.Scatter(x=[exact[0][i] for i in order], y=[exact[1][i] for i in order],
                             mode="lines+markers", name="exact front (RASS)",
                             line=dict(color="#222"), marker=dict(size=11, color="#222")))
    symbols = ("x", "diamond-open", "circle-open", "square-open", "triangle-up-open")
    for k, (name, (xs, ys)) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="markers", name=name,
                                 marker=dict(size=9, symbol=symbols[k % len(symbols)])))
    fig.update_layout(title=title, xaxis_title=_axis_title(x, x_unit),
                      yaxis_title=_axis_title(y, y_unit), template="plotly_white", height=440,
                      legend=dict(orientation="h", y=-0.2))
    return fig


def runtime_timeline(run: dict[str, Any], *, title: str | None = None,
                     task: str | None = None) -> "go.Figure":
    """CARIn Figs 7-8's shape from a runtime run (``RunResult.to_dict()``): invoke latency of
    every served batch coloured by the active design, the expected accuracy of the design and
    the memory held by processes, with the events marked."""
    from plotly.subplots import make_subplots

    served, rows = run["served"], run["timeline"]["rows"]
    tasks = list(dict.fromkeys(served["task"]))
    task = task or (tasks[-1] if tasks else None)
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        row_heights=[0.5, 0.25, 0.25],
                        subplot_titles=(f"latency per inference ({task})", "accuracy of the design",
                                        "memory held by processes"))
    designs = list(dict.fromkeys(d for d, t in zip(served["design"], served["task"]) if t == task))
    palette = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6"]
    for k, d in enumerate(designs):
        pts = [i for i, (dd, t) in enumerate(zip(served["design"], served["task"]))
               if dd == d and t == task]
        fig.add_trace(go.Scattergl(x=[served["t"][i] for i in pts], y=[served["ms"][i] for i in pts],
                                   mode="markers", name=str(d), legendgroup=str(d),
                                   marker=dict(size=4, color=palette[k % len(palette)])),
                      row=1, col=1)
    fig.add_trace(go.Scatter(x=rows["t"], y=rows["A"], mode="lines", name="A (expected)",
                             line=dict(shape="hv", color="#333")), row=2, col=1)
    used = [u for u in rows.get("mem_used_mb", []) if u is not None]
    if used:
        base = used[0]
        fig.add_trace(go.Scatter(x=rows["t"], y=[None if u is None else u - base
                                                 for u in rows["mem_used_mb"]],
                                 mode="lines", name="memory held (MB, vs start)",
                                 line=dict(color="#b279a2")), row=3, col=1)
    for e in run["timeline"]["events"]:
        if e["kind"] == "fault":
            continue
        fig.add_vline(x=e["t"], line=dict(color="#999", dash="dot", width=1))
        fig.add_annotation(x=e["t"], y=1.0, yref="paper", text=":".join([e["kind"], *e.get("args", [])]),
                           showarrow=False, textangle=-90, xanchor="right", yanchor="top",
                           font=dict(size=10, color="#666"))
    fig.update_yaxes(title_text="ms", type="log", row=1, col=1)
    fig.update_yaxes(title_text="%", row=2, col=1)
    fig.update_yaxes(title_text="MB", row=3, col=1)
    fig.update_xaxes(title_text="time (s)", row=3, col=1)
    fig.update_layout(title=title, template="plotly_white", height=720,
                      legend=dict(orientation="h", y=-0.12))
    return fig


#: Trace order of :func:`explorer_figure` (the widget updates the traces in place).
EXPLORER_TRACES = ("infeasible", "feasible", "Pareto front", "NSGA-II front", "OODIn", "RASS designs",
                   "runtime picks")


def _axis_title(name: str, unit: str) -> str:
    return f"{name} ({unit})" if unit else name


def _log_axis(v: Any) -> bool:
    """Log scale when positive values span more than two decades."""
    import numpy as np

    v = np.asarray(v, dtype=float)
    v = v[np.isfinite(v)]
    return bool(len(v)) and float(v.min()) > 0 and float(v.max()) / float(v.min()) > 100


def _span(v: Any, log: bool, pad: float = 0.05) -> list[float] | None:
    """The axis range that spans ``v`` (in the axis's own units: log10 on a log axis) with a
    margin of ``pad`` of the span each side; None when there is nothing finite to span."""
    import numpy as np

    v = np.asarray(v, dtype=float)
    v = v[np.isfinite(v) & (v > 0)] if log else v[np.isfinite(v)]
    if not len(v):
        return None
    lo, hi = float(v.min()), float(v.max())
    if log:
        lo, hi = np.log10(lo), np.log10(hi)
    width = hi - lo if hi > lo else max(abs(hi), 1.0) * 0.1
    start = lo - pad * width
    if not log and lo >= 0 > start:
        start = 0.0  # a latency or a size never runs below 0: the margin stops there
    return [start, hi + pad * width]


def explorer_layout(e: Any) -> dict[str, Any]:
    """What of the explorer's layout follows the data: axis titles with units, log axes where
    the values span decades, axis ranges that span the points (never a constraint's far side),
    and each constraint on a plotted metric as a dashed line with its infeasible side shaded
    up to the axis's end (a bound outside the points' range is not drawn: drawing it would
    stretch the axis and squash every point into a corner; the SLO in the title states it)."""
    import math

    xlog, ylog = _log_axis(e.x), _log_axis(e.y)
    ranges = {"x": _span(e.x, xlog), "y": _span(e.y, ylog)}
    shapes = []
    for b in e.bounds:
        log = xlog if b["axis"] == "x" else ylog
        v = b["value"]
        rng = ranges[b["axis"]]
        if (log and v <= 0) or rng is None:
            continue
        pos = math.log10(v) if log else v
        lo, hi = rng
        # The infeasible side, clipped to the axis: from the bound (or the axis's near end
        # when every point is past it) to the axis's far end. Compared in the axis's units
        # (log10 on a log axis); shapes take data values on any axis type, so they are drawn
        # back in data units (plotly reads a shape's x0 on a log axis as data, unlike a range).
        start, end = (max(pos, lo), hi) if b["op"] == "<=" else (lo, min(pos, hi))

        def data(u: float, log: bool = log) -> float:
            return 10.0 ** u if log else u
        line = dict(type="line", line=dict(color="#b00", dash="dash", width=2))
        rect = dict(type="rect", fillcolor="rgba(200,0,0,0.07)", line=dict(width=0), layer="below")
        # The constrained axis in data units, the other across the plot (paper units 0..1).
        a, o = b["axis"], "y" if b["axis"] == "x" else "x"
        refs = {f"{a}ref": a, f"{o}ref": "paper", f"{o}0": 0, f"{o}1": 1}
        if lo <= pos <= hi:
            shapes.append({**line, **refs, f"{a}0": v, f"{a}1": v})
        if start < end:
            shapes.append({**rect, **refs, f"{a}0": data(start), f"{a}1": data(end)})

    def axis(name: str, unit: str, log: bool, rng: list[float] | None) -> dict[str, Any]:
        out: dict[str, Any] = dict(title=dict(text=_axis_title(name, unit)),
                                   type="log" if log else "linear")
        return {**out, "range": rng, "autorange": False} if rng else {**out, "autorange": True}

    return {"xaxis": axis(e.x_name, e.x_unit, xlog, ranges["x"]),
            "yaxis": axis(e.y_name, e.y_unit, ylog, ranges["y"]),
            "shapes": shapes}


def explorer_figure(e: Any, *, title: str | None = None) -> "go.Figure":
    """The explorer's scatter from an :class:`workbench.lab.explore.Exploration`: the space (grey
    infeasible, blue feasible), the exact Pareto front, NSGA-II's front, OODIn's choice, RASS's
    designs d0..d_wm as labelled stars, a ring on the design the runtime would pick, and the
    constraints on the plotted metrics as lines with their infeasible side shaded."""
    fig = go.Figure()
    for trace in explorer_traces(e):
        fig.add_trace(trace)
    fig.update_layout(title=title or f"SLO: {e.slo}", template="plotly_white", height=520,
                      width=960, legend=dict(orientation="h", y=-0.18), uirevision="explorer",
                      **explorer_layout(e))
    return fig


def explorer_parallel(e: Any, *, max_lines: int = 5000) -> "go.Figure":
    """Every metric of the problem at once (parallel coordinates): one line per feasible
    combination (a sample of ``max_lines`` when there are more; the front and the designs are
    always kept), coloured by whether it is on the Pareto front. For SLOs with three or more
    objectives, where any two axes show a projection."""
    import numpy as np

    M = np.asarray(e.metrics)
    feas = np.flatnonzero(e.feasible)
    keep = np.zeros(len(M), bool)
    keep[np.flatnonzero(e.pareto)] = True
    keep[list(e.designs.values())] = True
    rest = np.setdiff1d(feas, np.flatnonzero(keep))
    if len(rest) > max_lines:
        rest = np.random.default_rng(0).choice(rest, max_lines, replace=False)
    keep[rest] = True
    idx = np.flatnonzero(keep)
    dims = []
    for k, (name, unit) in enumerate(zip(e.axis_names, e.axis_units or [""] * len(e.axis_names))):
        col = M[idx, k]
        dims.append(dict(label=_axis_title(name, unit), values=col,
                         range=[float(np.nanmin(col)), float(np.nanmax(col))] if len(col) else None))
    on_front = e.pareto[idx].astype(float)
    fig = go.Figure(go.Parcoords(
        line=dict(color=on_front, colorscale=[[0, "#9ecae1"], [1, "#f58518"]], cmin=0, cmax=1),
        dimensions=dims))
    fig.update_layout(title=f"every metric: {len(idx)} feasible combinations "
                            f"(orange: the Pareto front of {', '.join(e.objective_names)})",
                      template="plotly_white", height=480, width=960)
    return fig


def explorer_traces(e: Any) -> list:
    """The traces of :func:`explorer_figure`, in :data:`EXPLORER_TRACES` order."""
    import numpy as np

    x, y, lab = np.asarray(e.x), np.asarray(e.y), e.labels
    # The hover names the configuration and gives every metric of the problem with its unit
    # (Exploration.hover, built once per session).
    hv = e.hover or lab
    hover = "%{text}<extra></extra>"

    def pts(mask):
        idx = np.flatnonzero(mask)
        return x[idx], y[idx], [hv[i] for i in idx]

    out = []
    for mask, name, color, size in ((~e.feasible, "infeasible", "#d0d0d0", 5),
                                    (e.feasible, "feasible", "#4c78a8", 6)):
        px, py, pt = pts(mask)
        out.append(go.Scattergl(x=px, y=py, text=pt, mode="markers", name=name,
                                marker=dict(color=color, size=size, opacity=0.75),
                                hovertemplate=hover))
    order = np.flatnonzero(e.pareto)
    order = order[np.argsort(x[order], kind="stable")]
    two_d = e.front_is_2d
    objs = ", ".join(e.objective_names)
    out.append(go.Scatter(x=x[order], y=y[order], text=[hv[i] for i in order],
                          hovertemplate=hover,
                          # A front of more objectives than the two plotted is not a curve here:
                          # markers only, and the legend says it is a projection.
                          mode="lines+markers" if two_d else "markers",
                          name="Pareto front" if two_d else
                          f"Pareto front of {objs} (projected)",
                          line=dict(color="#f58518"),
                          marker=dict(size=8, color="#f58518")))
    ns = np.asarray(e.nsga2 if e.nsga2 is not None else [], dtype=int)
    out.append(go.Scatter(x=x[ns], y=y[ns], text=[hv[i] for i in ns],
                          mode="markers", name="NSGA-II front", hovertemplate=hover,
                          marker=dict(symbol="x", size=10, color="#54a24b")))
    # RASS's designs often coincide (d0 = dw, ...): one star per point, labelled with every role
    # there, so labels never print over each other.
    at: dict[int, list[str]] = {}
    for role, p in e.designs.items():
        at.setdefault(int(p), []).append(role)
    dp = list(at)
    texts = [", ".join(at[p]) for p in dp]
    xn, yn = (_normalised(v[dp], v, _log_axis(v)) for v in (x, y))
    out_designs = go.Scatter(x=x[dp], y=y[dp], text=texts,
                             customdata=[hv[i] for i in dp], mode="markers+text",
                             textposition=label_positions(xn, yn, texts), name="RASS designs",
                             marker=dict(symbol="star", size=16, color="#e45756",
                                         line=dict(width=1, color="black")),
                             hovertemplate="%{text}: %{customdata}<extra></extra>")
    # OODIn's choice as an open diamond drawn over the stars: visible where it coincides.
    oo = [] if e.oodin is None else [e.oodin]
    out.append(go.Scatter(x=x[oo], y=y[oo], text=[hv[i] for i in oo], mode="markers",
                          name="OODIn", marker=dict(symbol="diamond-open", size=22,
                                                    color="#b279a2", line=dict(width=3)),
                          hovertemplate="OODIn: %{text}<extra></extra>"))
    out.append(out_designs)
    pk = [] if e.picked is None or e.picked not in e.designs else [e.designs[e.picked]]
    out.append(go.Scatter(x=x[pk], y=y[pk], mode="markers", name="runtime picks",
                          text=[e.picked] * len(pk),
                          marker=dict(symbol="circle-open", size=28, color="#000",
                                      line=dict(width=3)),
                          hovertemplate="runtime runs %{text}<extra></extra>"))
    return out


def _normalised(v: Any, all_v: Any, log: bool) -> list[float]:
    """``v`` as a fraction of the axis that spans ``all_v`` (see :func:`_span`)."""
    import numpy as np

    rng = _span(all_v, log)
    v = np.asarray(v, dtype=float)
    if rng is None:
        return [0.5] * len(v)
    lo, hi = rng
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.log10(v) if log else v
    return [float((a - lo) / (hi - lo)) if np.isfinite(a) else 0.5 for a in t]


#: Where a design's label may go around its star, in order of preference, and the offset of the
#: label box's centre from the star in plot fractions (x, y).
_LABEL_SPOTS = (("top center", 0.0, 0.045), ("bottom center", 0.0, -0.045),
                ("middle right", 1.0, 0.0), ("middle left", -1.0, 0.0),
                ("top right", 1.0, 0.045), ("bottom left", -1.0, -0.045),
                ("top left", -1.0, 0.045), ("bottom right", 1.0, -0.045))
#: A label's size in plot fractions: a character's width and the line's height (960 x 520 px).
_CHAR_W, _LINE_H = 0.0085, 0.04


def label_boxes(xn: list[float], yn: list[float], texts: list[str],
                spots: list[str]) -> list[tuple[float, float, float, float]]:
    """The (x0, x1, y0, y1) box, in plot fractions, of each label placed at its spot."""
    where = {name: (dx, dy) for name, dx, dy in _LABEL_SPOTS}
    out = []
    for x, y, t, spot in zip(xn, yn, texts, spots):
        w, h = _CHAR_W * max(len(t), 1), _LINE_H
        dx, dy = where[spot]
        cx = x + dx * (w / 2 + 0.015)
        cy = y + dy
        out.append((cx - w / 2, cx + w / 2, cy - h / 2, cy + h / 2))
    return out


def label_positions(xn: list[float], yn: list[float], texts: list[str]) -> list[str]:
    """A text position for each design's label so that no two labels (nor a label and
    another design's star) overlap where a free spot exists: each label takes the first spot
    around its star that is clear of the labels placed before it, top first."""
    def clash(a, b):
        return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]

    stars = [(x - 0.012, x + 0.012, y - 0.02, y + 0.02) for x, y in zip(xn, yn)]
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for i in sorted(range(len(texts)), key=lambda k: -yn[k]):
        choice = _LABEL_SPOTS[0][0]
        for name, _, _ in _LABEL_SPOTS:
            box = label_boxes([xn[i]], [yn[i]], [texts[i]], [name])[0]
            if not any(clash(box, b) for b in placed) and \
                    not any(clash(box, s) for j, s in enumerate(stars) if j != i):
                choice = name
                break
        out.append((i, choice))
        placed.append(label_boxes([xn[i]], [yn[i]], [texts[i]], [choice])[0])
    return [c for _, c in sorted(out)]


#: Words of snake_case field names written differently in a table header.
_WORDS = {"ms": "ms", "mb": "MB", "us": "us", "s": "s", "pct": "%", "rss": "RSS", "milp": "MILP",
          "masa": "MASA", "id": "id", "d0": "d0", "hv": "HV", "igd": "IGD", "l": "L", "a": "A"}


def label(name: str) -> str:
    """The display label of a snake_case field: ``mean_response_ms`` -> ``mean response ms``,
    ``gain_vs_bulk_pct`` -> ``gain vs bulk %``."""
    return " ".join(_WORDS.get(w, w) for w in name.split("_"))


def frame(rows: Sequence[Any]) -> Any:
    """Typed rows (dataclasses) as a pandas DataFrame with their field names, for computing."""
    import dataclasses

    import pandas as pd

    return pd.DataFrame([dataclasses.asdict(r) if dataclasses.is_dataclass(r) and not isinstance(r, type)
                         else dict(r)
                         for r in rows])


def table(rows: Sequence[Any], *, columns: Sequence[str] | None = None, digits: int = 3) -> Any:
    """Typed rows as a DataFrame for display: chosen ``columns`` (fields), display labels, and
    floats rounded to ``digits`` decimals. Computation uses :func:`frame`; this only draws."""
    df = frame(rows)
    if columns is not None:
        df = df[list(columns)]
    return df.round(digits).rename(columns=label)
