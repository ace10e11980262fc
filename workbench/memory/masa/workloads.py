"""Job streams of MASA's evaluation: periodic, stochastic (its scenarios) and context trees."""

from __future__ import annotations

import numpy as np

from ...errors import InputError
from .model import Job, NetProfile


def periodic_jobs(nets: list[str], *, n: int, interval: float, start: float = 0.0) -> list[Job]:
    """The same networks on an image every ``interval`` seconds (MASA section 5.2)."""
    return [Job(i, start + i * interval, list(nets)) for i in range(n)]


def stochastic_jobs(pool: list[str], profiles: dict[str, NetProfile], *, scenario: int,
                    intensity: float, n: int, seed: int = 0, sd_frac: float = 0.2) -> list[Job]:
    """MASA section 5.3. Scenario I: one network drawn from ``pool`` per image, normal
    inter-arrivals; scenario II: periodic images, a uniform number of distinct networks each.
    The mean inter-arrival is the mean service time (Bulk, alone) divided by ``intensity``."""
    if intensity <= 0:
        raise InputError("traffic intensity must be positive", where="intensity", value=intensity)
    rng = np.random.default_rng(seed)
    mean_net = float(np.mean([profiles[p].bulk_seconds for p in pool]))
    jobs, t = [], 0.0
    for i in range(n):
        if scenario == 1:
            nets = [pool[rng.integers(len(pool))]]
            gap = max(0.0, rng.normal(mean_net / intensity, sd_frac * mean_net / intensity))
        elif scenario == 2:
            k = int(rng.integers(1, len(pool) + 1))
            nets = [pool[j] for j in sorted(rng.choice(len(pool), size=k, replace=False))]
            gap = mean_net * (len(pool) + 1) / 2 / intensity
        else:
            raise InputError("scenario must be 1 or 2", where="scenario", value=scenario)
        jobs.append(Job(i, t, nets))
        t += gap
    return jobs


def context_jobs(tree: dict[str, str | None], *, n: int, interval: float, p: float,
                 seed: int = 0, always_positive: tuple[str, ...] = ()) -> list[Job]:
    """Jobs over a dependency tree ``{net: parent or None}`` (MASA Fig. 9): each parent's outcome
    is positive with probability ``p`` (``always_positive`` nets are always positive)."""
    rng = np.random.default_rng(seed)
    names = list(tree)
    idx = {k: i for i, k in enumerate(names)}
    parents = {idx[k]: idx[v] for k, v in tree.items() if v is not None}
    jobs = []
    for i in range(n):
        pos = {idx[k]: (k in always_positive) or bool(rng.random() < p) for k in names}
        jobs.append(Job(i, i * interval, list(names), dict(parents), pos))
    return jobs
