"""A saved explorer session (:class:`ExplorerState`): written to a file, an upload or a link
anyone can send, and so checked before anything is read or solved: its size and its SLO's
length (:data:`MAX_SESSION`, :data:`MAX_SLO`), its names (no control characters), its profile
(a profile name or a file inside the workspace: :func:`session_profile`), its use case and
tasks (the profile's: :func:`check_state`) and its controls (:func:`check_controls`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Iterable, Literal
from urllib.parse import parse_qs, urlencode

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ... import workspace
from ...errors import InputError
from ...fileio import atomic_write_text, dumps_json, parse_json, read_text
from ...moo.usecases import scenarios_for
from ...names import MAX_NAME, check_name
from ...names import validator as name_validator
from ...profiles import Profile, list_profiles, load_profile, resolve_profile
from ...profiles.store import error_from_validation
from .session import MAX_SLO, MAX_WEIGHT, Session, check_slo_length

#: The largest session the explorer reads (a link's query string, a session file or an upload),
#: in bytes; one holds a few hundred. Larger input is refused before it is parsed.
MAX_SESSION = 64 * 1024

#: The longest profile path a session may name (Linux's PATH_MAX).
MAX_PATH = 4096


def _named(what: str, max_len: int = MAX_NAME):
    """A pydantic check that a field is a name (:func:`workbench.names.check_name`); its message
    becomes the session error's, at the field's JSON path."""
    return AfterValidator(name_validator(what, max_len=max_len))


class ExplorerState(BaseModel):
    """An exploration as a user would save or share it: the profile, the use case, the SLO as
    typed and every control (objective switches and weights, constraint bounds, device flags,
    axes). ``save_state`` / ``load_state`` keep it as JSON; ``to_query`` / ``from_query`` in a
    page's URL. ``slo`` is the SLO as typed and ``bounds`` where its constraints' controls
    stand: when given, the bounds are what is solved (the page's SLO box shows them), and
    typing ``slo`` again brings its own bounds back."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    profile: Annotated[str, _named("profile", MAX_PATH)]
    use_case: Annotated[str, _named("use case")] | None = None
    tasks: list[Annotated[str, _named("task")]] | None = None
    slo: str = Field(min_length=1, max_length=MAX_SLO)
    enabled: list[bool] | None = None
    weights: list[Annotated[float, Field(ge=0, allow_inf_nan=False)]] | None = None
    bounds: list[Annotated[float, Field(allow_inf_nan=False)]] | None = None
    flags: dict[str, bool] = Field(default_factory=dict)
    x: Annotated[str, _named("axis")] | None = None
    y: Annotated[str, _named("axis")] | None = None

    @field_validator("flags")
    @classmethod
    def _flag_names(cls, flags: dict[str, bool]) -> dict[str, bool]:
        # Checked whole: a key in the error's JSON path would be printed as it is.
        for p in flags:
            try:
                check_name(p, what="flag")
            except InputError as e:
                raise ValueError(f"{e.message}: {p!r}") from None
        return flags

    def to_query(self) -> str:
        """The state as a URL query string (lists comma-separated, flags as the set ones)."""
        q: dict[str, str] = {"profile": self.profile, "slo": self.slo}
        for key in ("use_case", "x", "y"):
            if getattr(self, key):
                q[key] = getattr(self, key)
        if self.tasks:
            q["tasks"] = ",".join(self.tasks)
        if self.enabled is not None:
            q["enabled"] = "".join("1" if e else "0" for e in self.enabled)
        for key in ("weights", "bounds"):
            if getattr(self, key) is not None:
                # Every digit (repr is the shortest text that reads back as the same float):
                # a bound of 41.6666667 ms must not come back as 41.6667.
                q[key] = ",".join(repr(float(v)) for v in getattr(self, key))
        on = [p for p, v in self.flags.items() if v]
        if on:
            q["flags"] = ",".join(on)
        return urlencode(q)

    @classmethod
    def from_query(cls, query: str) -> "ExplorerState":
        """A state from a URL query string (what :meth:`to_query` wrote); bad values are an
        InputError naming the parameter."""
        if len(query) > MAX_SESSION:
            raise InputError(f"a link's query string has at most {MAX_SESSION} characters "
                             f"(got {len(query)})", where="URL")
        q = {k: v[-1] for k, v in parse_qs(query.lstrip("?"), keep_blank_values=True).items()}
        data: dict[str, Any] = {k: q[k] for k in ("profile", "slo", "use_case", "x", "y")
                                if q.get(k)}
        if q.get("tasks"):
            data["tasks"] = q["tasks"].split(",")
        if "enabled" in q:
            if set(q["enabled"]) - {"0", "1"}:
                raise InputError("objective switches are 0s and 1s", where="URL: enabled",
                                 value=q["enabled"])
            data["enabled"] = [c == "1" for c in q["enabled"]]
        for key in ("weights", "bounds"):
            if q.get(key):
                try:
                    data[key] = [float(v) for v in q[key].split(",")]
                except ValueError:
                    raise InputError("numbers separated by commas", where=f"URL: {key}",
                                     value=q[key]) from None
        if q.get("flags"):
            data["flags"] = {p: True for p in q["flags"].split(",")}
        return _validate_state(data, where="URL")


def _validate_state(data: Any, *, where: str | None = None, file: Any = None) -> ExplorerState:
    slo = data.get("slo") if isinstance(data, dict) else None
    if isinstance(slo, str):  # before pydantic, whose error would quote all of it
        check_slo_length(slo, where=f"{where}: slo" if where else "slo", file=file)
    try:
        return ExplorerState.model_validate(data)
    except ValidationError as e:
        raise error_from_validation(e, file=file, what="not an explorer session",
                                    where=where) from None


def state_json(state: ExplorerState) -> str:
    """A session as the JSON text :func:`save_state` writes (and the page downloads)."""
    return dumps_json(state.model_dump(exclude_none=True)) + "\n"


def parse_state(text: str, *, file: Any = None) -> ExplorerState:
    """A session from JSON text (a file's, or an upload's); bad text is an InputError naming
    ``file`` and the field."""
    if len(text) > MAX_SESSION:
        raise InputError(f"a session has at most {MAX_SESSION} characters (got {len(text)})",
                         file=file)
    return _validate_state(parse_json(text, file=file), file=file)


def save_state(state: ExplorerState, path: str | Path) -> Path:
    """Write a session as JSON (atomically: a crash leaves the old file or the new one)."""
    return atomic_write_text(path, state_json(state))


def load_state(path: str | Path) -> ExplorerState:
    """A session written by :func:`save_state`; a bad file is an InputError naming the file and
    the field."""
    try:
        size = Path(path).stat().st_size
    except OSError:
        size = 0  # read_text says what is wrong with it
    if size > MAX_SESSION:
        raise InputError(f"a session has at most {MAX_SESSION} bytes (got {size})", file=path)
    return parse_state(read_text(path, what="explorer session", limit=MAX_SESSION), file=path)


def session_profile(name: str, *, trusted: Iterable[str] = (),
                    directory: str | Path | None = None, file: Any = None) -> Path:
    """The profile file a session may open: a profile name (looked up as
    :func:`workbench.profiles.resolve_profile` looks names up) or a ``.json`` file inside the
    workspace, symlinks resolved first; ``trusted`` names (the profile the explorer was opened
    with) are taken as they are. Anything else is an InputError naming the ``profile`` field:
    a session comes from a file, an upload or a link anyone can send, and the page's kernel
    must not read what lies outside the workspace.

    Args:
        directory: Where names are looked up (default: the workspace's profile folders).
    """
    if name in trusted:
        return resolve_profile(name, directory=directory)
    dirs = [Path(directory)] if directory else workspace.profile_dirs()
    p = Path(name)
    if not p.suffix and p.name == name and name not in (".", ".."):  # a name such as s20fe
        # Looked up in the folders only: resolve_profile would also take a file of that name
        # in the kernel's working folder.
        found = next((d / f"{name}.json" for d in dirs if (d / f"{name}.json").exists()), None)
        if found is None:
            known = ", ".join(x.stem for x in list_profiles(directory))
            raise InputError(f"no profile named {name!r} (known: {known or 'none'})",
                             file=file, where="profile")
        p = found
    real = p.resolve()
    roots = {r.resolve() for r in (workspace.home(), *dirs)}
    if not any(real.is_relative_to(r) for r in roots):
        raise InputError("a session opens profile names and files inside the workspace "
                         f"({workspace.home()}); this one lies outside the workspace",
                         file=file, where="profile", value=name)
    if real.suffix != ".json":
        raise InputError("a profile is a .json file", file=file, where="profile", value=name)
    return real


def check_state(state: ExplorerState, profile: Profile, *, file: Any = None) -> None:
    """An InputError naming the field when ``state`` names a use case or task ``profile`` does
    not have (the SLO, flags and axes are checked when its problem is built)."""
    cases = scenarios_for(profile)
    if state.use_case is not None and state.use_case not in cases:
        raise InputError(f"no such use case for {profile.device.name} "
                         f"(use cases: {', '.join(cases)})", file=file, where="use_case",
                         value=state.use_case)
    tasks = list(dict.fromkeys(c.task for c in profile.configs))
    for i, t in enumerate(state.tasks or []):
        if t not in tasks:
            raise InputError(f"no such task in {profile.device.name} (tasks: {', '.join(tasks)})",
                             file=file, where=f"tasks[{i}]", value=t)


def check_controls(state: ExplorerState, session: Session, *, file: Any = None) -> None:
    """An InputError naming the field when ``state``'s controls do not fit ``session`` (the
    one its profile, tasks and SLO open): a list of the wrong length, a flag or axis it does
    not have."""
    for key, n in (("enabled", len(session.objectives)), ("weights", len(session.objectives)),
                   ("bounds", len(session.constraints))):
        vals = getattr(state, key)
        if vals is not None and len(vals) != n:
            raise InputError(f"{len(vals)} values for {n} "
                             f"{'constraints' if key == 'bounds' else 'objectives'}",
                             file=file, where=key)
    if state.enabled is not None and state.enabled and not any(state.enabled):
        raise InputError("every objective is switched off: nothing would be optimised",
                         file=file, where="enabled")
    if state.weights is not None:
        # The page's weight sliders end at MAX_WEIGHT: a larger weight would be clamped to it,
        # so the session would not reopen as it was saved.
        for i, w in enumerate(state.weights):
            if w > MAX_WEIGHT:
                raise InputError(f"a weight is at most {MAX_WEIGHT:g} here", file=file,
                                 where=f"weights[{i}]", value=w)
        on = state.enabled or [True] * len(state.weights)
        if state.weights and not any(w > 0 and e for w, e in zip(state.weights, on)):
            raise InputError("every objective that is on has weight 0: nothing would be "
                             "optimised", file=file, where="weights")
    flags = session.flag_names
    unknown = set(state.flags) - set(flags)
    if unknown:
        raise InputError(f"no such flag here (flags: {', '.join(flags)})", file=file,
                         where="flags", value=sorted(unknown)[0])
    for key in ("x", "y"):
        axis = getattr(state, key)
        if axis is not None and axis not in session.axis_names:
            raise InputError(f"not an axis here ({', '.join(session.axis_names)})", file=file,
                             where=key, value=axis)


def session_of(state: ExplorerState, *, trusted: Iterable[str] = (),
               directory: str | Path | None = None, file: Any = None) -> Session:
    """The :class:`Session` a saved state opens, headless, checked as the page checks it: its
    profile (:func:`session_profile`), use case and tasks (:func:`check_state`), SLO and
    controls (:func:`check_controls`); anything wrong is an InputError naming the field."""
    profile = load_profile(session_profile(state.profile, trusted=trusted, directory=directory,
                                           file=file))
    check_state(state, profile, file=file)
    tasks = state.tasks or scenarios_for(profile).get(state.use_case or "", (None, None))[0]
    try:
        session = Session(profile, state.slo, tasks=list(tasks) if tasks else None)
    except InputError as e:
        raise InputError(f"the saved SLO cannot be used here: {e}", file=file,
                         where="slo") from None
    check_controls(state, session, file=file)
    return session
