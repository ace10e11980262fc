"""Delen's multi-tenancy (section 4.2) in the trace-driven experiments: cooperative re-weighting
(Alg. 3) over the max-min fair shares, work-conserving redistribution and token bucket that the
runtime applies on the device (their one home is :mod:`workbench.runtime.limiter`).

Shares are fractions of the accelerator's time (1.0 = all of it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from ..runtime.limiter import Decision, TokenBucket, cooperative_shares, delen_shares, max_min_shares, redistribute

__all__ = ["CrossAppAdapter", "Decision", "SharePlan", "Tenant", "TokenBucket", "delen_shares",
           "limit_trace", "max_min_shares", "redistribute"]


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
        shares = cooperative_shares(self.initial, rates, [t.weight for t in self.tenants],
                                    [t.cooperative for t in self.tenants])
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
