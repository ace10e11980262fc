"""The reports' figures: trade-off scatters, method bars, lines, hypervolume traces, fronts, a
runtime timeline, and the paper's values marked on them."""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from ...moo.optimality import optimality_text
from .labels import _axis_title

#: One look for the papers' own numbers on every figure: black diamonds (lines: black dashes).
PAPER_MARKER = {"symbol": "diamond", "size": 14, "color": "black"}


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
