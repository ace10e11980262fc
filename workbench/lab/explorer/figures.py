"""The explorer's figures, drawn from an :class:`~.session.Exploration`: the scatter of the
space (feasible, infeasible, the Pareto front, the designs), its axes and the parallel
coordinates of every objective. Drawing only; the computation is :mod:`.session`."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from ..viz.labels import _axis_title, label_positions

#: Trace order of :func:`explorer_figure` (the widget updates the traces in place).
EXPLORER_TRACES = ("infeasible", "feasible", "Pareto front", "NSGA-II front", "OODIn", "RASS designs",
                   "runtime picks")


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
    """The explorer's scatter from an :class:`workbench.lab.explorer.Exploration`: the space (grey
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
