"""The explorer page (:class:`Explorer`): ipywidgets controls wired to a
:class:`~..session.Session`, drawn with :func:`~..figures.explorer_traces` in a plotly
``FigureWidget``; re-solved and redrawn on every change, NSGA-II overlaid in the background,
sessions saved, loaded, linked and downloaded."""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import Any

import ipywidgets as W
import plotly.graph_objects as go

from ....errors import InputError, WorkbenchError
from ....fileio import csv_text
from ....moo.usecases import scenarios_for
from ....names import printable
from ....profiles import Profile, list_profiles, load_profile, resolve_profile
from ....solvers.result import jsonable
from ..figures import explorer_figure, explorer_layout, explorer_parallel, explorer_traces
from ..session import Exploration, Session, export_rows
from ..state import (
    MAX_SESSION,
    ExplorerState,
    check_controls,
    check_state,
    load_state,
    parse_state,
    save_state,
    session_profile,
    state_json,
)
from .controls import constraint_controls, objective_controls
from .nsga2 import Nsga2Overlay
from .views import _error, designs_html, download_links


class Explorer(Nsga2Overlay):
    """The explorer. ``Explorer(...).widget`` is the ipywidgets box to display.

    Args:
        profile: A profile name in ``profiles/`` or a path (default: the modelled S20 FE).
        scenario: A use case of that profile (``uc1``..``uc4`` for phones, ``h1``..``h4`` for
            the host); default: the first that fits.
        slo: Start from this SLO instead of the use case's.
        profiles_dir: Where to list profiles from (default ``profiles/``).
    """

    def __init__(self, profile: str = "s20fe", scenario: str | None = None, *,
                 slo: str | None = None, profiles_dir: str | Path | None = None) -> None:
        self.profiles_dir = profiles_dir
        # Whoever opened the explorer chose this profile, wherever it lies; a session (a file,
        # an upload, a link) may only name profiles and files inside the workspace.
        self.trusted = (profile,)
        self._make_controls(profile)
        self.last: Exploration | None = None
        self.update_ms: float | None = None
        self.failed = False  # the last edit could not be solved (its error is shown)
        self.error: Exception | None = None
        self._quiet = False
        # The next update draws the figure anew (a loaded session: nothing of the old view,
        # shading, axes or traces, may survive into it).
        self._rebuild = False
        self.widget = self._layout()
        self._wire()
        self._load_profile(profile, scenario=scenario, slo=slo)

    def _make_controls(self, profile: str) -> None:
        """The page's widgets (the controls a session opens come with the session)."""
        names = [(p.stem, p.stem) for p in list_profiles(self.profiles_dir)]
        if profile not in dict(names).values():  # a profile given by path: one more choice
            names.append((Path(profile).stem if Path(profile).suffix else profile, profile))
        self.w_profile = W.Dropdown(options=names, value=profile, description="device")
        self.w_scenario = W.Dropdown(description="use case")
        self.w_tasks = W.SelectMultiple(description="tasks", rows=3,
                                        layout=W.Layout(width="300px"))
        self.w_slo = W.Text(description="SLO", layout=W.Layout(width="520px"),
                            continuous_update=False)
        self.w_x = W.Dropdown(description="x axis")
        self.w_y = W.Dropdown(description="y axis")
        self.w_nsga2 = W.Checkbox(description="overlay NSGA-II", value=False)
        self.w_view = W.ToggleButtons(options=["two axes", "every metric"], value="two axes",
                                      tooltips=["a scatter of the two chosen metrics",
                                                "parallel coordinates of every metric"],
                                      style={"button_width": "110px"})
        self.fig_parallel: go.FigureWidget | None = None
        self._make_nsga2_controls()
        self.w_status = W.HTML()
        self.w_designs = W.HTML()
        self.w_policy = W.HTML()
        self.w_pick = W.HTML()
        self.objective_box = W.VBox()
        self.constraint_box = W.VBox()
        self.flag_box = W.HBox()
        self.fig: go.FigureWidget | None = None
        self.fig_box = W.Box()
        self.w_prepare = W.Button(description="prepare downloads", icon="download",
                                  tooltip="CSV of the feasible set, the front and the designs; "
                                          "this session as JSON")
        self.w_downloads = W.HTML()
        self.w_link = W.HTML()
        self.w_upload = W.FileUpload(accept=".json", multiple=False,
                                     description="load session")

    def _layout(self) -> W.VBox:
        """The page: controls above the figure, the designs and the policy below it."""
        return W.VBox([
            W.HTML("<h3>workbench explorer: SLOs, Pareto front, RASS designs and policy</h3>"),
            W.HBox([self.w_profile, self.w_scenario, self.w_tasks]), self.w_slo,
            W.HBox([W.VBox([W.HTML("<b>objectives</b> (on/off, weight)"), self.objective_box]),
                    W.VBox([W.HTML("<b>constraints</b>"), self.constraint_box])]),
            W.HBox([self.w_view, self.w_x, self.w_y, self.w_nsga2, self.w_nsga2_box]),
            self.fig_box, self.w_status,
            W.HTML("<b>device flags</b>: which design would the runtime run?"), self.flag_box,
            self.w_pick, self.w_designs, W.HTML("<b>switching policy</b> (CARIn Table 7 shape)"),
            self.w_policy, W.HBox([self.w_prepare, self.w_upload, self.w_link]),
            self.w_downloads])

    def _wire(self) -> None:
        """Every control to what it changes."""
        self.w_prepare.on_click(lambda _b: self._prepare_downloads())
        # Stable hooks for pages and browser tests.
        for w, css in ((self.w_slo, "wb-slo"), (self.w_prepare, "wb-prepare"),
                       (self.w_upload, "wb-upload"), (self.w_nsga2, "wb-nsga2"),
                       (self.fig_box, "wb-figure"), (self.w_status, "wb-status")):
            w.add_class(css)
        self.w_upload.observe(self._on_upload, "value")
        self.w_profile.observe(self._on_profile, "value")
        self.w_scenario.observe(self._on_scenario, "value")
        self.w_slo.observe(self._on_slo, "value")
        self.w_tasks.observe(self._on_tasks, "value")
        for w in (self.w_x, self.w_y, self.w_nsga2, self.w_view):
            w.observe(lambda _c: self.update(), "value")
        self.w_nsga2_cancel.on_click(lambda _b: self.cancel_nsga2())

    # --- building the controls ------------------------------------------------------------
    def _load_profile(self, name: str, *, scenario: str | None = None,
                      slo: str | None = None, profile: Profile | None = None) -> None:
        self.profile = profile or load_profile(resolve_profile(name, directory=self.profiles_dir))
        self.cases = scenarios_for(self.profile)
        self._quiet = True
        self.w_scenario.options = list(self.cases) or ["(none)"]
        self.w_scenario.value = scenario if scenario in self.cases else self.w_scenario.options[0]
        self._task_options()
        self._quiet = False
        self._new_session(slo)

    def _task_options(self) -> None:
        """The tasks a use case runs together (all the profile's when it has no use cases)."""
        case_tasks = self.cases.get(self.w_scenario.value, (None, None))[0]
        self.w_tasks.options = list(case_tasks or dict.fromkeys(c.task for c in
                                                                self.profile.configs))

    def _new_session(self, slo: str | None = None, tasks: tuple[str, ...] | None = None
                     ) -> bool:
        """Start a session for the SLO (default: the use case's); False (and the error shown,
        the previous session kept) when it cannot be used."""
        case_tasks, case_slo = self.cases.get(self.w_scenario.value, (None, None))
        tasks = tasks or case_tasks
        text = slo or case_slo
        if not text:
            self._fail(InputError("type SLOs or pick a use case", where="SLO"))
            return False
        try:
            self.session = Session(self.profile, text, tasks=list(tasks) if tasks else None)
        except WorkbenchError as e:
            self._fail(e)
            return False
        self._quiet = True
        self.w_slo.value = str(self.session.slo)
        self.w_tasks.value = tuple(self.session.base.task_names)
        s = self.session
        self.w_enabled, self.w_weights, rows = objective_controls(s, lambda: self.update())
        self.objective_box.children = rows
        self.w_bounds, rows = constraint_controls(s, lambda: self.update())
        self.constraint_box.children = rows or [W.HTML("<i>no constraints</i>")]
        self.w_x.options = s.axis_names
        self.w_y.options = s.axis_names
        xi, yi = s._axes(None, None)
        self.w_x.value, self.w_y.value = s.axis_names[xi], s.axis_names[yi]
        self._quiet = False
        self._build_flags()
        self.update()
        return True

    def _fail(self, err: Exception) -> None:
        """Show an error and take down what no longer answers the controls: the figure, the
        designs and the policy were solved for a different SLO than the one now typed."""
        self.w_status.value = _error(err)
        self.error = err
        self.fig_box.layout.display = "none"
        self.w_designs.value = self.w_policy.value = ""
        self.w_pick.value = ('<span class="wb-picked wb-stale">runtime runs: (fix the error '
                             "above to solve again)</span>")
        self.failed = True

    def _build_flags(self) -> None:
        self.w_flags = {}
        for p in self.session.flag_names:
            cb = W.Checkbox(value=False, description=f"issue on {p}" if p != "memory"
                            else "memory issue", indent=False, layout=W.Layout(width="150px"))
            cb.add_class(f"wb-flag-{p.replace('[', '-').replace(']', '').replace(',', '-')}")
            cb.observe(lambda _c: self.update(), "value")
            self.w_flags[p] = cb
        self.flag_box.children = list(self.w_flags.values())

    # --- events ---------------------------------------------------------------------------
    def _on_profile(self, change: dict) -> None:
        # A typed SLO travels to the new device (the comparison a user is making); the use case's
        # own SLO is replaced by the new device's use case's.
        old_case = self.cases.get(self.w_scenario.value, (None, None))[1]
        typed = self.w_slo.value.strip()
        custom = typed if typed and typed != old_case else None
        self._load_profile(change["new"], scenario=self.w_scenario.value, slo=custom)
        if custom and self.failed:  # it does not fit this device: say so, use the use case's
            why = self.w_status.value
            self._new_session()
            self.w_status.value = (f"<div class='wb-note'>your SLO does not fit "
                                   f"{html.escape(change['new'])}; showing its use case's "
                                   f"instead:</div>{why}" + self.w_status.value)

    def _on_scenario(self, change: dict) -> None:
        if not self._quiet:
            self._quiet = True
            self._task_options()
            self._quiet = False
            self._new_session()

    def _on_tasks(self, change: dict) -> None:
        if not self._quiet and change["new"] and tuple(change["new"]) != tuple(
                self.session.base.task_names):
            self._new_session(self.w_slo.value, tasks=tuple(change["new"]))

    def _on_slo(self, change: dict) -> None:
        if self._quiet:
            return
        typed = change["new"].strip()
        if typed == self.slo_text():
            if self.failed:
                self.update()  # back to the SLO the controls hold: solve it again, error gone
        elif typed == str(self.session.slo):
            # The session's SLO as first typed, after bounds moved: the bounds go back to it
            # (the box must not show an SLO other than the one solved).
            self._quiet = True
            for w, c in zip(self.w_bounds, self.session.constraints):
                w.value = c.value
            self._quiet = False
            self.update()
        else:
            self._new_session(change["new"], tasks=tuple(self.w_tasks.value) or None)

    def slo_text(self) -> str:
        """The SLO the constraint controls now express: the session's objectives as typed
        with each constraint at its control's bound (weights and switches are not part of
        the SLO language; they stay in their controls)."""
        return str(self.session.edited_slo(bounds=[w.value for w in self.w_bounds]))

    # --- the update -----------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The controls' values as :meth:`Session.explore` arguments."""
        return {"enabled": [w.value for w in self.w_enabled],
                "weights": [w.value for w in self.w_weights],
                "bounds": [w.value for w in self.w_bounds],
                "flags": {p: w.value for p, w in self.w_flags.items()},
                "x": self.w_x.value, "y": self.w_y.value}

    def update(self) -> Exploration | None:
        """Re-solve from the controls and redraw (called on every change)."""
        if self._quiet:
            return None
        t0 = time.perf_counter()
        try:
            e = self.session.explore(**self.state())
        except WorkbenchError as err:
            self._fail(err)
            return None
        self.failed = False
        # The text box follows the bounds, so it never shows an SLO other than the one solved.
        self._quiet = True
        self.w_slo.value = self.slo_text()
        self._quiet = False
        self.fig_box.layout.display = None
        fig = self.fig
        traces = None if fig is None or self._rebuild else explorer_traces(e)
        if fig is None or traces is None or len(traces) != len(fig.data):
            # Built with its traces (first, after a session is loaded, or when the traces
            # change in number); ordinary edits change the traces' data in place.
            if fig is not None:
                fig.close()
            self.fig = go.FigureWidget(explorer_figure(e))
            self.fig_box.children = [self.fig]
            self._rebuild = False
        else:
            with fig.batch_update():
                for old, new in zip(fig.data, traces):
                    old.x, old.y, old.text = new.x, new.y, new.text
                    old.customdata, old.marker = new.customdata, new.marker
                    old.mode, old.name, old.hovertemplate = new.mode, new.name, new.hovertemplate
                fig.layout.title.text = f"SLO: {e.slo}"
                fig.update_layout(**explorer_layout(e))
        if self.w_view.value == "every metric":
            # Built on demand (not on every edit of the scatter view); replaced, not patched.
            if self.fig_parallel is not None:
                self.fig_parallel.close()
            self.fig_parallel = go.FigureWidget(explorer_parallel(e))
            self.fig_box.children = [self.fig_parallel]
        elif self.fig_box.children != (self.fig,):
            self.fig_box.children = [self.fig]
        self.last = e
        self._show(e)
        self.update_ms = (time.perf_counter() - t0) * 1e3
        self.w_status.value = (
            f"{e.n_feasible} of {e.result.n_total} combinations feasible; "
            f"solved and drawn in {self.update_ms:.0f} ms "
            f"(RASS {e.timing_ms['rass']:.1f} ms, front {e.timing_ms['front']:.1f} ms)")
        # A link that reproduces this view (the page reads its query string on load).
        self.w_link.value = (f'<a class="wb-link" href="?{html.escape(self.view_query())}">'
                             "link to this view</a>")
        if self.w_nsga2.value:
            self._start_nsga2(self.state())
        else:
            self.cancel_nsga2()
        return e

    def _show(self, e: Exploration) -> None:
        self.w_designs.value, self.w_pick.value, self.w_policy.value = designs_html(e)

    # --- sessions and exports ------------------------------------------------------------
    def session_state(self) -> ExplorerState:
        """Everything needed to come back to this view (see :meth:`apply_state`)."""
        st = self.state()
        scenario = self.w_scenario.value if self.w_scenario.value in self.cases else None
        return ExplorerState(profile=str(self.w_profile.value), use_case=scenario,
                             tasks=list(self.session.base.task_names), slo=str(self.session.slo),
                             enabled=st["enabled"], weights=st["weights"], bounds=st["bounds"],
                             flags={p: v for p, v in st["flags"].items() if v},
                             x=st["x"], y=st["y"])

    def apply_state(self, state: ExplorerState) -> Exploration | None:
        """Come back to a saved view: its profile, use case, SLO and every control.

        Raises:
            InputError: the state names a profile outside the workspace (other than the one
                the explorer was opened with), or does not fit its profile (a use case, task,
                flag or axis it does not have, a list of the wrong length); the explorer goes
                back to its view.
        """
        previous = self.session_state() if self.last is not None and not self.failed else None
        try:
            return self._apply_state(state)
        except InputError:
            if previous is not None:
                self._apply_state(previous)
            raise

    def _apply_state(self, state: ExplorerState) -> Exploration | None:
        # Checked before anything changes: the profile file it names (inside the workspace)
        # and the use case and tasks that profile has.
        path = session_profile(state.profile, trusted=self.trusted, directory=self.profiles_dir)
        profile = load_profile(path)
        check_state(state, profile)
        self._quiet = True
        try:
            names = dict(self.w_profile.options)
            if state.profile not in names.values():
                self.w_profile.options = [*self.w_profile.options,
                                          (Path(state.profile).stem, state.profile)]
            self.w_profile.value = state.profile
        finally:
            self._quiet = False
        self._load_profile(state.profile, scenario=state.use_case, slo=state.slo, profile=profile)
        if state.tasks and list(state.tasks) != list(self.session.base.task_names):
            self._new_session(state.slo, tasks=tuple(state.tasks))
        if self.failed:
            raise InputError(f"the saved SLO cannot be used here: {self.error}", where="slo")
        check_controls(state, self.session)
        self._quiet = True
        try:
            for key, widgets in (("enabled", self.w_enabled), ("weights", self.w_weights),
                                 ("bounds", self.w_bounds)):
                for w, v in zip(widgets, getattr(state, key) or []):
                    if key == "bounds":  # a saved bound may lie outside this slider's range
                        w.min, w.max = min(w.min, v), max(w.max, v)
                    w.value = v
            for p, w in self.w_flags.items():
                w.value = bool(state.flags.get(p, False))
            if state.x:
                self.w_x.value = state.x
            if state.y:
                self.w_y.value = state.y
        finally:
            self._quiet = False
        self._rebuild = True
        return self.update()

    def view_query(self) -> str:
        """This view as a URL query string (:meth:`ExplorerState.to_query`)."""
        return self.session_state().to_query()

    def apply_query(self, query: str) -> Exploration | None:
        """Open the view a page's URL query string describes (Voila's ``QUERY_STRING``). A
        query without an SLO leaves the explorer as it is; a bad one is shown on the page (the
        error names the parameter), not raised."""
        if "slo=" not in query:
            return None
        try:
            return self.apply_state(ExplorerState.from_query(query))
        except WorkbenchError as err:
            self._fail(err)
            return None

    def save(self, path: str | Path) -> Path:
        """Save this view as JSON (:class:`ExplorerState`)."""
        return save_state(self.session_state(), path)

    def load(self, path: str | Path) -> Exploration | None:
        """Come back to a view saved with :meth:`save`."""
        return self.apply_state(load_state(path))

    def export(self, what: str, path: str | Path | None = None, *,
               fmt: str = "csv") -> str:
        """The feasible set, the front or the designs of the current view as CSV (or JSON);
        written to ``path`` when given. Returns the text."""
        from ....fileio import atomic_write_text

        if self.last is None:
            raise InputError("nothing solved yet", where="export")
        if fmt not in ("csv", "json"):
            raise InputError("export as csv or json", where="export fmt", value=fmt)
        rows = export_rows(self.last, what)
        text = (csv_text(rows) if fmt == "csv"
                else json.dumps(jsonable(rows), indent=1, allow_nan=False) + "\n")
        if path is not None:
            atomic_write_text(path, text)
        return text

    def _prepare_downloads(self) -> None:
        """Download links (data URLs: nothing is written on the server)."""
        if self.last is None or self.failed:
            self.w_downloads.value = "<i>nothing to download: fix the SLO first</i>"
            return
        files = [(f"{what}.csv", "text/csv", self.export(what))
                 for what in ("feasible", "front", "designs")]
        files.append(("designs.json", "application/json", self.export("designs", fmt="json")))
        files.append(("session.json", "application/json", state_json(self.session_state())))
        self.w_downloads.value = download_links(files)

    def _on_upload(self, change: dict) -> None:
        files = change["new"]
        if not files:
            return
        f = files[0]
        name = printable(f["name"])
        try:
            if len(f["content"]) > MAX_SESSION:  # before decoding and parsing it
                raise InputError(f"a session has at most {MAX_SESSION} bytes "
                                 f"(got {len(f['content'])})", file=name)
            self.apply_state(parse_state(bytes(f["content"]).decode("utf-8", "replace"),
                                         file=name))
        except WorkbenchError as e:
            self._fail(e)
