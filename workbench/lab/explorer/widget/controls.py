"""The controls a session opens on the explorer page: a switch and a weight slider per
objective, and per constraint a slider with a number box beside it, kept in step in the browser
and in the kernel. Each calls ``on_change`` when moved; the page (:mod:`.page`) lays them out."""

from __future__ import annotations

from typing import Any, Callable

import ipywidgets as W

from ..session import MAX_WEIGHT, Session


def objective_controls(s: Session, on_change: Callable[[], Any]
                       ) -> tuple[list[W.Checkbox], list[W.FloatSlider], list[W.HBox]]:
    """Per objective of ``s``: its on/off switch, its weight slider, and the row holding both."""
    enabled: list[W.Checkbox] = []
    weights: list[W.FloatSlider] = []
    rows = []
    for o in s.objectives:
        en = W.Checkbox(value=True, description=str(o), indent=False,
                        layout=W.Layout(width="180px"))
        wt = W.FloatSlider(value=o.weight, min=0.0, max=MAX_WEIGHT, step=0.1,
                           description="weight",
                           layout=W.Layout(width="300px"))
        en.observe(lambda _c: on_change(), "value")
        wt.observe(lambda _c: on_change(), "value")
        enabled.append(en)
        weights.append(wt)
        rows.append(W.HBox([en, wt]))
    return enabled, weights, rows


def constraint_controls(s: Session, on_change: Callable[[], Any]
                        ) -> tuple[list[W.FloatSlider], list[W.HBox]]:
    """Per constraint of ``s``: its bound's slider (over the range the space spans, widened to
    the SLO's bound) and the row holding it with its number box."""
    bounds: list[W.FloatSlider] = []
    rows = []
    for k, c in enumerate(s.constraints):
        lo, hi = s.constraint_range(k)
        lo, hi = min(lo, c.value), max(hi, c.value)
        step = (hi - lo) / 200 or 0.01
        sl = W.FloatSlider(value=c.value, min=lo, max=hi, step=step,
                           description=f"{str(c).rsplit(' ', 1)[0]}", readout_format=".4g",
                           continuous_update=False, layout=W.Layout(width="420px"),
                           style={"description_width": "120px"})
        box = W.FloatText(value=c.value, layout=W.Layout(width="110px"))
        box.add_class(f"wb-bound-{k}")
        sl.add_class(f"wb-slider-{k}")
        W.jslink((sl, "value"), (box, "value"))
        # jslink syncs in the browser; keep the kernel side in step too (headless use).
        box.observe(lambda ch, sl=sl: setattr(sl, "value", ch["new"])
                    if sl.value != ch["new"] else None, "value")

        def follow(ch: dict, box: W.FloatText = box) -> None:
            if box.value != ch["new"]:
                box.value = ch["new"]
            on_change()

        sl.observe(follow, "value")
        bounds.append(sl)
        rows.append(W.HBox([sl, box]))
    return bounds, rows
