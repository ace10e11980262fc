"""CARIn's use cases UC1-UC4 as data (tasks, candidate models, SLOs), read from the paper
transcription in ``workbench/data/papers/carin.json``."""

from __future__ import annotations

from dataclasses import dataclass

from .. import papers
from ..errors import InputError

NAMES = papers.USE_CASES


@dataclass(frozen=True)
class UseCase:
    """A use case: which tasks run together and under which SLOs."""

    name: str
    tasks: tuple[str, ...]
    slo: str
    description: str
    models: dict[str, tuple[str, ...]]
    citation: str

    @property
    def multi(self) -> bool:
        return len(self.tasks) > 1


def use_case(name: str) -> UseCase:
    """One of CARIn's use cases by name (``uc1`` .. ``uc4``)."""
    key = name.lower()
    if key not in NAMES:
        raise InputError(f"unknown use case; known: {', '.join(NAMES)}", where="use case",
                         value=name)
    data = papers.paper("carin")["use_cases"][key]
    tasks = tuple(data["tasks"])
    tables = [papers.model_table(t) for t in tasks]
    return UseCase(
        name=key, tasks=tasks, slo=data["slo"],
        description="; ".join(dict.fromkeys(t["description"] for t in tables)),
        models={t["task"]: tuple(m["model"] for m in t["models"]) for t in tables},
        citation=papers.citation("carin") + f", section 6.2 ({', '.join(dict.fromkeys(t['table'] for t in tables))})")


def all_use_cases() -> list[UseCase]:
    return [use_case(n) for n in NAMES]


def problem(name: str, device: str, *, slo: str | None = None, weights: str | None = None):
    """The DiscreteProblem of a use case on a profile (a path, or a name in ``profiles/``)."""
    from ..profiles import load_profile, resolve_profile
    from .problem import DiscreteProblem

    uc = use_case(name)
    prof = load_profile(resolve_profile(device))
    return DiscreteProblem(prof, slo or uc.slo, tasks=list(uc.tasks), weights=weights)


#: The host's use cases (measured profile ``host``), mirroring UC1-UC4 on the host datasets:
#: name -> (tasks, SLO).
HOST_USE_CASES: dict[str, tuple[tuple[str, ...], str]] = {
    "h1": (("h1",), "max A; max TP; max L <= 20ms"),
    "h2": (("h2",), "min L; min S; max A; MF <= 20MB"),
    "h3": (("h3-audio", "h3-vision"), "min L; min std L; max A; avg L <= 50ms; std L <= 5ms"),
    "h4": (("h4-parity", "h4-value", "h4-group"), "min L; max A; max L <= 50ms"),
}


#: CARIn's UC1 and UC2 with their SLOs, on the real-scale host profile (``workbench profile
#: --real``): r1 classifies Fashion-MNIST (A measured) under UC1's 24 fps latency bound; r2 is an
#: ImageNet classifier (A cited) under UC2's memory bound.
REAL_USE_CASES: dict[str, tuple[tuple[str, ...], str]] = {
    "r1": (("fashion",), "max A; max TP; max L <= 41.67ms"),
    "r2": (("imagenet",), "min L; min S; max A; MF <= 90MB"),
}


def scenario(name: str) -> tuple[tuple[str, ...], str]:
    """(tasks, SLO) of any named use case: CARIn's uc1-uc4, the host's h1-h4 or the real-scale
    host's r1-r2. Each works with any profile that has its tasks."""
    key = name.lower()
    if key in NAMES:
        uc = use_case(key)
        return tuple(uc.tasks), uc.slo
    known = HOST_USE_CASES | REAL_USE_CASES
    if key not in known:
        raise InputError(f"unknown use case; known: {', '.join((*NAMES, *known))}",
                         where="use case", value=name)
    return known[key]


def scenarios_for(profile) -> dict[str, tuple[tuple[str, ...], str]]:
    """The use cases that fit a profile: UC1-UC4 for the phones, h1-h4 for the host, r1-r2 for the
    real-scale host (those whose tasks the profile has); for a profile of one's own models, one
    per task: the most accurate and the fastest (``max A; min L``, or ``min L`` where A was not measured).
    name -> (tasks, SLO)."""
    have = {c.task for c in profile.configs}
    cases = {n: (tuple(uc.tasks), uc.slo) for n, uc in ((n, use_case(n)) for n in NAMES)}
    cases |= HOST_USE_CASES | REAL_USE_CASES
    fit = {n: v for n, v in cases.items() if set(v[0]) <= have}
    if fit:
        return fit
    out: dict[str, tuple[tuple[str, ...], str]] = {}
    for task in dict.fromkeys(c.task for c in profile.configs):
        has_a = any(c.A is not None for c in profile.configs if c.task == task)
        out[task] = ((task,), "max A; min L" if has_a else "min L")
    return out
