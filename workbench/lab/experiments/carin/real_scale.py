"""The host at real scale beside the toy host: what the profiles hold, and CARIn's solvers on
the UC1/UC2-shaped use cases of each (plain rows; the ``host_real`` notebook draws them).

The real-scale profile is ``workbench profile --real`` (full-size models, measured here); the toy
one is ``workbench profile`` (the 32x32 zoo, measured here). r1/r2 on the first mirror h1/h2 on
the second: the same SLO shapes, two orders of magnitude apart in model size.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterable

from .... import metrics
from ....moo.problem import DiscreteProblem
from ....moo.usecases import scenario
from ....profiles import load_profile, resolve_profile
from ....solvers import evolutionary, oodin, rass

#: (real-scale use case, its toy counterpart on the host zoo)
PAIRS = (("r1", "h1"), ("r2", "h2"))


@dataclass(frozen=True)
class ScaleRow:
    """What one task of a profile spans: model size, latency and memory (measured), A (kind)."""

    profile: str
    task: str
    models: int
    configs: int
    gflops_min: float
    gflops_max: float
    latency_ms_min: float
    latency_ms_max: float
    latency_ms_median: float
    memory_mb_min: float
    memory_mb_max: float
    a_label: str
    a_kind: str          # measured / cited / none


@dataclass(frozen=True)
class SolverRow:
    """One solver on one use case and profile: its best design and what it cost."""

    use_case: str
    profile: str
    source: str
    solver: str
    status: str
    n_total: int
    design: str | None
    optimality: float | None
    optimality_ratio: float | None   # of RASS's d0 (1 = as good)
    A: float | None
    L_ms: float | None
    MF_mb: float | None
    solve_ms: float


def scale_rows(profile: str) -> list[ScaleRow]:
    """Per task of a profile (a name or path): how big and how fast its models are."""
    prof = load_profile(resolve_profile(profile))
    out = []
    for task in dict.fromkeys(c.task for c in prof.configs):
        rows = [c for c in prof.configs if c.task == task]
        info = prof.task(task)
        has_a = any(c.A is not None for c in rows)
        cited = metrics.is_cited(info.metric)
        gf = [c.W / 1e9 for c in rows if c.W]
        lat = [float(c.L) for c in rows if c.L is not None]
        out.append(ScaleRow(
            profile=profile, task=task, models=len({c.model for c in rows}), configs=len(rows),
            gflops_min=min(gf, default=0.0), gflops_max=max(gf, default=0.0),
            latency_ms_min=min(lat), latency_ms_max=max(lat),
            latency_ms_median=statistics.median(lat),
            memory_mb_min=min(c.MF for c in rows if c.MF is not None),
            memory_mb_max=max(c.MF for c in rows if c.MF is not None),
            a_label=info.metric, a_kind="none" if not has_a else "cited" if cited else "measured"))
    return out


def solvers_on(uc: str, profile: str, *, pop_size: int = 40, n_gen: int = 40,
               seed: int = 1) -> list[SolverRow]:
    """RASS, OODIn and pymoo's NSGA-II on a named use case and profile."""
    tasks, slo = scenario(uc)
    prof = load_profile(resolve_profile(profile))
    pr = DiscreteProblem(prof, slo, tasks=list(tasks))
    results = [rass(pr), oodin(pr),
               evolutionary(pr, algorithm="nsga2", pop_size=pop_size, n_gen=n_gen, seed=seed)]
    best = results[0].designs["d0"].optimality if results[0].ok else None
    out = []
    for res in results:
        d = res.designs.get("d0") if res.ok else None
        obj = d.objectives if d else {}
        out.append(SolverRow(
            use_case=uc, profile=profile, source=prof.source, solver=res.solver, status=res.status,
            n_total=res.n_total, design=" + ".join(d.labels) if d else None,
            optimality=d.optimality if d else None,
            optimality_ratio=(d.optimality / best) if d and best else None,
            A=_first(obj, "A"), L_ms=_first(obj, "L", "max L"), MF_mb=d.MF if d else None,
            solve_ms=res.timing_ms.get("total", 0.0)))
    return out


def _first(objectives: dict[str, float], *names: str) -> float | None:
    for n in names:
        if n in objectives:
            return float(objectives[n])
    return None


def real_vs_toy(real: str = "host-real", toy: str = "host", *,
                pairs: Iterable[tuple[str, str]] = PAIRS, quick: bool = False) -> list[SolverRow]:
    """Every solver on each real-scale use case and on its toy counterpart (``quick``: a smaller
    NSGA-II run)."""
    size = 16 if quick else 40
    return [row for r, t in pairs for uc, prof in ((r, real), (t, toy))
            for row in solvers_on(uc, prof, pop_size=size, n_gen=size)]
