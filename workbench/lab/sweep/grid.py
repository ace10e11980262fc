"""A sweep's grid: brace templates expanded (``"L <= {10,20}ms"`` -> two SLOs), the tasks
(:class:`SweepTask`) of every combination, and grid files; all checked before anything runs,
within :data:`MAX_PROBLEMS`."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from ...errors import InputError
from .profile_files import _read_profile

_BRACES = re.compile(r"\{([^{}]*)\}")

#: The most problems one sweep takes (a grid of braces multiplies fast: nine braces of ten
#: choices are a billion strings, more than the memory of the machine).
MAX_PROBLEMS = 100_000


def _braces(text: str) -> tuple[list[str], list[list[str]]]:
    """The fixed parts of a brace template and the choices of each brace (checked)."""
    if text.count("{") != text.count("}") or re.search(r"\{[^}]*\{", text):
        raise InputError("braces must close and not nest, e.g. 'L <= {10,20}ms'", value=text)
    parts = _BRACES.split(text)
    fixed, choices = parts[0::2], parts[1::2]
    options = []
    for c in choices:
        vals = [v.strip() for v in c.split(",")]
        if not all(vals):
            raise InputError("an empty choice inside braces", value="{" + c + "}")
        options.append(vals)
    return fixed, options


def count(text: str) -> int:
    """How many strings :func:`expand` makes of ``text``, without making them."""
    return math.prod(len(o) for o in _braces(text)[1])


def _too_many(n: int, what: str, text: Any = ...) -> InputError:
    return InputError(f"{what} {n:,} problems, over the limit of {MAX_PROBLEMS:,} a sweep takes; "
                      "split it into smaller sweeps", value=text)


def expand(text: str) -> list[str]:
    """Brace expansion: ``"L <= {10,20}ms; TP >= {5,10}"`` -> the four strings, in order (the
    last brace varies fastest). Braces do not nest; an empty or unclosed brace is an error, and
    so is a template of more than :data:`MAX_PROBLEMS` strings (counted first)."""
    fixed, options = _braces(text)
    n = math.prod(len(o) for o in options)
    if n > MAX_PROBLEMS:
        raise _too_many(n, "the braces expand to", text)
    out = []
    for combo in itertools.product(*options):
        s = fixed[0]
        for v, f in zip(combo, fixed[1:]):
            s += v + f
        out.append(s)
    return out


@dataclass(frozen=True)
class SweepTask:
    """One problem to solve: a profile (name or file), a use case or some of the profile's own
    tasks, an SLO (None: the use case's own), weights (``"A=2,TP=1"`` or None), a solver and a
    repeat number (the seed of stochastic solvers)."""

    profile: str
    use_case: str | None
    slo: str | None
    weights: str | None
    solver: str
    repeat: int = 0
    #: Evolutionary solvers' effort (None: the solver's defaults, 100 x 100).
    pop_size: int | None = None
    n_gen: int | None = None
    #: The profile's own tasks, comma-separated (instead of a use case; then ``slo`` is given).
    tasks: str | None = None

    def key(self) -> str:
        """A stable id: the same task has the same key in every run (what resuming matches)."""
        d = asdict(self)
        if d["tasks"] is None:  # keys of use-case tasks stay what they were
            del d["tasks"]
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def sweep_grid(*, profiles: Sequence[str], use_cases: Sequence[str] = (),
               slos: Sequence[str | None] = (None,), weights: Sequence[str | None] = (None,),
               solvers: Sequence[str] = ("rass",), repeat: int = 1, pop_size: int | None = None,
               n_gen: int | None = None, tasks: Sequence[str] = ()) -> list[SweepTask]:
    """Every combination, braces in SLOs and weights expanded. Names are checked here, before
    anything runs, so a typo is one error instead of a thousand error rows.

    The problems are the built-in ``use_cases`` (each with its own SLO unless ``slos`` are
    given), or the profiles' own ``tasks``: each entry one task or several joined by commas
    (``"h1"``, ``"det,cls"``: a multi-DNN problem), solved under every one of ``slos`` (which
    are then required); every profile must hold every task named."""
    from ...moo.usecases import scenario
    from ...profiles import resolve_profile
    from ...solvers import ALGORITHMS, SAMPLERS, SOLVERS
    from ...solvers.evolutionary import MAX_EFFORT

    if not (1 <= repeat <= 1000):
        raise InputError("repeat is a whole number 1..1000", where="repeat", value=repeat)
    # Checked here, not left to the solver: 0 would silently mean "the default", and a bad
    # value would otherwise be an error row per task.
    for name, v, lo in (("pop_size", pop_size, 2), ("n_gen", n_gen, 1)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)
                              or not lo <= v <= MAX_EFFORT):
            raise InputError(f"must be a whole number {lo}..{MAX_EFFORT}", where=name, value=v)
    # Counted before anything is expanded: each brace grid may be small and their product not.
    if bool(use_cases) == bool(tasks):
        raise InputError("give use cases or the profiles' own tasks, not both or neither",
                         where="use_cases" if use_cases else "tasks")
    task_sets = [",".join(t.strip() for t in entry.split(",") if t.strip()) for entry in tasks]
    for entry in task_sets:
        names = entry.split(",")
        if not entry or len(set(names)) != len(names):
            raise InputError("each entry names one or more different tasks, joined by commas",
                             where="tasks", value=entry)
    if tasks and any(s is None for s in slos):
        raise InputError("the profiles' own tasks have no SLO of their own: give --slo",
                         where="slo")
    n = (len(profiles) * len(use_cases or task_sets) * len(solvers) * repeat
         * sum(1 if s is None else count(s) for s in slos)
         * sum(1 if w is None else count(w) for w in weights))
    if n > MAX_PROBLEMS:
        raise _too_many(n, "the grid is")
    for p in profiles:
        path = resolve_profile(p)
        if task_sets:
            have = {t.name for t in _read_profile(path)[0].tasks}
            for entry in task_sets:
                for t in entry.split(","):
                    if t not in have:
                        raise InputError(f"profile {p} has no task {t!r} (its tasks: "
                                         f"{', '.join(sorted(have))})", where="tasks", value=t)
    for uc in use_cases:
        scenario(uc)
    for s in solvers:
        if s not in SOLVERS and s.lower() not in ALGORITHMS and s.lower() not in SAMPLERS:
            raise InputError(f"unknown solver; use {', '.join([*SOLVERS, *ALGORITHMS, *SAMPLERS])}",
                             where="solvers", value=s)
    slo_list = [x for s in slos for x in ([None] if s is None else expand(s))]
    w_list = [x for w in weights for x in ([None] if w is None else expand(w))]
    # Effort belongs to evolutionary solvers only: an exact solver's task key must not vary
    # with it.
    problems: list[tuple[str | None, str | None]] = (
        [(uc, None) for uc in use_cases] or [(None, t) for t in task_sets])
    return [SweepTask(p, uc, s, w, solver, r, None if solver in SOLVERS else pop_size,
                      None if solver in SOLVERS else n_gen, ts)
            for p, (uc, ts), s, w, solver, r in itertools.product(
                profiles, problems, slo_list, w_list, solvers, range(repeat))]


def load_grid(path: str | os.PathLike) -> list[SweepTask]:
    """A grid file: JSON with the keyword arguments of :func:`sweep_grid`, e.g.
    ``{"profiles": ["s20fe"], "use_cases": ["uc1"], "slos": ["max A; L <= {10,20}ms"],
    "solvers": ["rass", "nsga2"], "n_gen": 20}`` (or ``"tasks": ["fashion"]`` for the profiles'
    own tasks). A bad file is one error naming the field."""
    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    from ...fileio import parse_json, read_text
    from ...profiles.store import error_from_validation

    class _Grid(BaseModel):
        model_config = ConfigDict(extra="forbid")
        profiles: list[str] = Field(min_length=1)
        use_cases: list[str] = []
        tasks: list[str] = []
        slos: list[str | None] = [None]
        weights: list[str | None] = [None]
        solvers: list[str] = ["rass"]
        repeat: int = 1
        pop_size: int | None = None
        n_gen: int | None = None

    data = parse_json(read_text(path, what="sweep grid"), file=path)
    try:
        g = _Grid.model_validate(data)
    except ValidationError as e:
        raise error_from_validation(e, file=path) from None
    return sweep_grid(**g.model_dump())
