"""Delen's multi-tenancy (section 4.2): max-min fair shares, work-conserving redistribution,
cooperative re-weighting (Alg. 3) and a token-bucket resource limiter that delays or drops.

Shares are fractions of the accelerator's time (1.0 = all of it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from ..runtime.limiter import Decision, TokenBucket

__all__ = ["CrossAppAdapter", "Decision", "SharePlan", "Tenant", "TokenBucket", "delen_shares",
           "limit_trace", "max_min_shares", "redistribute"]


def max_min_shares(weights, demands=None, *, capacity: float = 1.0) -> np.ndarray:
    """Weighted max-min fair shares (water-filling): capacity is split in proportion to the
    weights, but nobody gets more than they demand; what they leave is split again among the
    rest. ``demands`` None (or inf) = unbounded."""
    w = np.asarray(weights, float)
    if w.ndim != 1 or len(w) == 0 or (w < 0).any() or not np.isfinite(w).all():
        raise InputError("weights must be finite and non-negative, one per application",
                         where="weights", value=list(np.atleast_1d(w)))
    d = np.full(len(w), np.inf) if demands is None else np.asarray(demands, float)
    if d.shape != w.shape or (d < 0).any():
        raise InputError("demands must be non-negative, one per application", where="demands",
                         value=list(np.atleast_1d(d)))
    share = np.zeros(len(w))
    active = (w > 0) & (d > 0)
    left = float(capacity)
    while active.any() and left > 1e-15:
        fair = left * w / w[active].sum()
        sated = active & (d - share <= fair + 1e-15)
        if not sated.any():
            share[active] += fair[active]
            break
        give = (d - share)[sated]
        share[sated] += give
        left -= give.sum()
        active &= ~sated
    return share


def delen_shares(rates, weights=None, latency_ms=None, *, capacity: float = 1.0) -> np.ndarray:
    """Shares as Delen assigns them: max-min fair with effective weights weight x request rate
    (two applications at 5 and 10 requests/s get 1/3 and 2/3), capped by each one's demand
    (rate x service time) when latencies are given."""
    r = np.asarray(rates, float)
    w = np.ones(len(r)) if weights is None else np.asarray(weights, float)
    demand = None if latency_ms is None else r * np.asarray(latency_ms, float) / 1000.0
    return max_min_shares(w * r, demand, capacity=capacity)


def redistribute(shares, usage, weights) -> np.ndarray:
    """Work conservation: applications using less than their share keep what they use; the
    rest is split max-min fairly (by weight) among those that use all of theirs (a usage of
    ``inf`` marks an application with more demand than it was given)."""
    s, u, w = (np.asarray(x, float) for x in (shares, usage, weights))
    under = u < s - 1e-12
    out = np.where(under, u, s)
    spare = float((s - out).sum())
    hungry = ~under
    if spare > 0 and hungry.any():
        out[hungry] += max_min_shares(np.where(hungry, w, 0.0)[hungry], capacity=spare)
    return out


@dataclass
class Tenant:
    """One application: its initial request rate, priority weight, whether it cooperates
    (beta), and how it turns a time budget per request into criteria."""

    name: str
    rate: float
    weight: float = 1.0
    cooperative: bool = False
    latency_ms: float | None = None     # service time at full depth (for the demand)
    to_criteria: Callable[[float], Any] | None = None


@dataclass
class SharePlan:
    shares: dict[str, float]
    budget_ms: dict[str, float]
    criteria: dict[str, Any] = field(default_factory=dict)


class CrossAppAdapter:
    """Delen Alg. 3: shares from rates and weights; cooperative tenants are re-weighted by their
    observed rates, non-cooperative ones keep their initial shares (changed only by work
    conservation); each tenant gets the time per request its share allows and turns it into
    criteria (e.g. a Pareto look-up under that latency budget)."""

    def __init__(self, tenants: list[Tenant]) -> None:
        if not tenants:
            raise InputError("no tenants", where="tenants")
        self.tenants = tenants
        self.initial = delen_shares([t.rate for t in tenants], [t.weight for t in tenants])

    def step(self, observed_rates: Mapping[str, float] | None = None,
             usage: dict[str, float] | None = None) -> SharePlan:
        obs = observed_rates or {}
        rates = np.array([obs.get(t.name, t.rate) for t in self.tenants], float)
        coop = np.array([t.cooperative for t in self.tenants])
        shares = self.initial.copy()
        if coop.any():
            # Cooperative tenants split their combined initial share by their current workload.
            pool = shares[coop].sum()
            w = np.array([t.weight for t in self.tenants], float)
            shares[coop] = pool * (w[coop] * rates[coop]) / max((w[coop] * rates[coop]).sum(),
                                                                 1e-12)
        if usage is not None:
            shares = redistribute(shares, [usage.get(t.name, s) for t, s in
                                           zip(self.tenants, shares)],
                                  [t.weight for t in self.tenants])
        plan = SharePlan({}, {})
        for t, s, r in zip(self.tenants, shares, rates):
            plan.shares[t.name] = float(s)
            plan.budget_ms[t.name] = float(s / r * 1000.0) if r > 0 else float("inf")
            if t.to_criteria is not None:
                plan.criteria[t.name] = t.to_criteria(plan.budget_ms[t.name])
        return plan


def limit_trace(arrivals, costs, share: float, *, interval: float = 1.0, mode: str = "delay"
                ) -> list[Decision]:
    """Run a request trace (arrival times in s, costs in s of accelerator time) through a
    token bucket; one decision per request, in order."""
    tb = TokenBucket(share, interval=interval, mode=mode)
    return [tb.request(float(c), float(a)) for a, c in zip(arrivals, costs)]
