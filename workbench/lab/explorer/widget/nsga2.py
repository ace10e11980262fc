"""NSGA-II overlaid on the explorer's scatter, in the background: a thread runs it on the view
as it was when started (the controls stay live), with a progress bar and a cancel button; its
front is drawn when it finishes, unless the view changed meanwhile or it was cancelled."""

from __future__ import annotations

import html
import threading
import time
from typing import Any

import ipywidgets as W
import plotly.graph_objects as go

from ..figures import explorer_traces
from ..session import Session


class Nsga2Overlay:
    """The NSGA-II overlay of :class:`.page.Explorer` (a mixin: the page holds the session, the
    figure, the overlay's checkbox and the status line it reports to)."""

    session: Session
    fig: go.FigureWidget | None
    w_nsga2: W.Checkbox
    w_status: W.HTML

    def _make_nsga2_controls(self) -> None:
        """The progress bar and cancel button (shown while a run is going), and no run yet."""
        self.w_nsga2_bar = W.IntProgress(value=0, min=0, max=1, description="NSGA-II",
                                         layout=W.Layout(width="300px"))
        self.w_nsga2_cancel = W.Button(description="cancel", icon="stop",
                                       layout=W.Layout(width="90px"))
        self.w_nsga2_box = W.HBox([self.w_nsga2_bar, self.w_nsga2_cancel],
                                  layout=W.Layout(display="none"))
        self.nsga2_generations = 40
        self.nsga2_thread: threading.Thread | None = None
        self._nsga2_token: dict[str, Any] | None = None
        self.nsga2_note = ""

    def _start_nsga2(self, state: dict[str, Any]) -> None:
        """Run NSGA-II on the current view in a thread (the controls stay live), with a progress
        bar and a cancel button; its front is drawn when it finishes, unless the view changed or
        it was cancelled."""
        self.cancel_nsga2()
        token: dict[str, Any] = {"cancel": False, "session": self.session, "state": state}
        self._nsga2_token = token
        total = self.nsga2_generations
        self.w_nsga2_bar.max, self.w_nsga2_bar.value = total, 0
        self.w_nsga2_box.layout.display = None

        def progress(done: int, n: int) -> bool:
            self.w_nsga2_bar.value = done
            return not token["cancel"]

        def work() -> None:
            t0 = time.perf_counter()
            try:
                e = token["session"].explore(**token["state"], nsga2=True,
                                             nsga2_generations=total, nsga2_progress=progress)
            except Exception as err:  # noqa: BLE001 - shown, never raised in a thread
                token["error"] = err
                e = None
            token["seconds"] = time.perf_counter() - t0
            if self._nsga2_token is not token:
                return  # superseded by a newer view: its own run draws
            self.w_nsga2_box.layout.display = "none"
            if e is None:
                self.nsga2_note = f"NSGA-II failed: {token['error']}"
            elif token["cancel"] or e.nsga2_note:
                self.nsga2_note = e.nsga2_note or "NSGA-II cancelled"
            else:
                self.nsga2_note = (f"NSGA-II: {len(e.nsga2 if e.nsga2 is not None else [])} "
                                   f"points on its front in {token['seconds']:.1f} s")
            if e is not None and not token["cancel"] and self.fig is not None:
                nsga = explorer_traces(e)[3]
                with self.fig.batch_update():
                    self.fig.data[3].x, self.fig.data[3].y = nsga.x, nsga.y
                    self.fig.data[3].text = nsga.text
            self.w_nsga2.description = f"overlay NSGA-II (last: {token['seconds']:.1f} s)"
            self.w_status.value += f"<br>{html.escape(self.nsga2_note)}"

        self.nsga2_thread = threading.Thread(target=work, name="workbench-nsga2", daemon=True)
        self.nsga2_thread.start()

    def cancel_nsga2(self) -> None:
        """Stop a running NSGA-II overlay (it stops after its current generation)."""
        if self._nsga2_token is not None:
            self._nsga2_token["cancel"] = True
        self.w_nsga2_box.layout.display = "none"
