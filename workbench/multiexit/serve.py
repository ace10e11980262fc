"""Trace-driven serving of multi-exit nets (Delen's runtime with its policies, limiter and shares).

Requests arrive from traces (Poisson or bursty); one accelerator (here: the CPU, one request at
a time, FIFO across applications) serves them. Every request is executed for real with
onnxruntime, segment by segment, its criteria evaluated after each exit; the clock is virtual
(it advances by each request's measured execution time and jumps over idle gaps), so minutes of
trace take seconds. Every request is served (``ok``), delayed by the limiter then served, or
explicitly ``dropped``; nothing is lost.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from .criteria import Node, Null
from .runner import CORE_POWER_W, SegmentedNet
from .sharing import CrossAppAdapter, TokenBucket

#: A policy: (observed request rate /s, time budget per request in ms) -> criteria.
Policy = Callable[[float, float], Node]


def poisson(rate: float, duration: float, *, seed: int = 0, start: float = 0.0) -> np.ndarray:
    """Poisson arrivals (s) at ``rate`` per second over ``duration`` seconds."""
    rng = np.random.default_rng(seed)
    n = rng.poisson(rate * duration)
    return np.sort(start + rng.uniform(0, duration, n))


def stepped(rates: list[float], step: float, *, seed: int = 0) -> np.ndarray:
    """Poisson arrivals whose rate changes every ``step`` seconds (bursts, Delen Figs 11-12)."""
    out = [poisson(r, step, seed=seed + i, start=i * step) for i, r in enumerate(rates)]
    return np.concatenate(out) if out else np.empty(0)


@dataclass
class App:
    """A tenant: its model, inputs to cycle through (with labels), policy, weight, cooperation."""

    name: str
    net: SegmentedNet
    x: np.ndarray
    y: np.ndarray
    policy: Policy
    weight: float = 1.0
    cooperative: bool = False
    oracle: bool = False       # take the first exit that is right (needs labels: an upper bound)
    cost_s: float = 0.0        # the limiter's first charge per request (then: observed mean)


@dataclass
class Record:
    app: str
    arrival: float
    start: float
    finish: float
    exit: int                  # 0-based; -1 when dropped
    correct: bool
    energy_mj: float
    action: str                # "serve", "delay" or "drop"

    @property
    def response_ms(self) -> float:
        return (self.finish - self.arrival) * 1e3


@dataclass
class ServeResult:
    records: list[Record]
    shares: list[dict[str, Any]] = field(default_factory=list)

    def summary(self, app: str | None = None, *, t0: float = -np.inf, t1: float = np.inf
                ) -> dict[str, Any]:
        rs = [r for r in self.records if (app is None or r.app == app) and t0 <= r.arrival < t1]
        done = [r for r in rs if r.action != "drop"]
        span = max((r.finish for r in done), default=0) - min((r.arrival for r in rs), default=0)
        n_exits = 1 + max((r.exit for r in done), default=0)
        return {"requests": len(rs), "served": len(done),
                "dropped": sum(r.action == "drop" for r in rs),
                "delayed": sum(r.action == "delay" for r in rs),
                "accuracy": float(np.mean([r.correct for r in done])) if done else None,
                "energy_mj": float(np.mean([r.energy_mj for r in done])) if done else None,
                "response_ms": float(np.mean([r.response_ms for r in done])) if done else None,
                "throughput": len(done) / span if span > 0 else None,
                "exits": np.bincount([r.exit for r in done], minlength=n_exits).tolist()}


def serve(apps: list[App], traces: dict[str, np.ndarray], *, update_every: float = 1.0,
          limit: dict[str, float] | None = None, limiter_mode: str = "delay",
          limiter_interval: float = 1.0, adapter: CrossAppAdapter | None = None) -> ServeResult:
    """Serve the traces; policies (and, with ``adapter``, shares) update every ``update_every``
    seconds from the request rates observed over the last window.

    Args:
        apps: The tenants.
        traces: Arrival times (s) per app name.
        update_every: Seconds between policy updates (Delen: 1 s).
        limit: A resource limit (share of the accelerator) per app: a token bucket.
        limiter_mode: ``"delay"`` or ``"drop"`` requests that find no tokens.
        adapter: Multi-tenant shares (Alg. 3); default: one share per app from the initial
            rates (``delen_shares``), equal when alone.
    """
    by_name = {a.name: a for a in apps}
    unknown = set(traces) - set(by_name)
    if unknown:
        raise InputError("traces for unknown apps", value=sorted(unknown))
    events = [(float(t), k, a) for a, ts in traces.items() for k, t in enumerate(ts)]
    events.sort()
    arrivals = {a.name: np.sort(np.asarray(traces.get(a.name, []), float)) for a in apps}
    buckets = {a: TokenBucket(s, interval=limiter_interval, mode=limiter_mode)
               for a, s in (limit or {}).items()}
    shares = {a.name: 1.0 / len(apps) for a in apps}
    budgets = {a.name: float("inf") for a in apps}
    crit: dict[str, Callable] = {a.name: Null().compile() for a in apps}
    share_log: list[dict[str, Any]] = []
    records: list[Record] = []
    clock = 0.0
    next_update = 0.0
    # (ready time, seq, app, k, action, what the limiter charged on admission)
    queue: list[tuple[float, int, str, int, str, float]] = []
    charge = {a.name: a.cost_s for a in apps}
    seq = 0
    i = 0

    def update(now: float) -> None:
        # Rate over the last window (the first window looks ahead: nothing has arrived yet).
        lo, hi = (now - update_every, now) if now > 0 else (0.0, update_every)
        rates = {a.name: (np.searchsorted(arrivals[a.name], hi, "left")
                          - np.searchsorted(arrivals[a.name], lo, "left")) / update_every
                 for a in apps}
        if adapter is not None:
            plan = adapter.step(rates)
            shares.update(plan.shares)
        for a in apps:
            r = max(rates[a.name], 1e-9)
            budgets[a.name] = shares[a.name] / r * 1000.0
            crit[a.name] = a.policy(rates[a.name], budgets[a.name]).compile()
        share_log.append({"t": now, **{f"share[{k}]": v for k, v in shares.items()},
                          **{f"rate[{k}]": v for k, v in rates.items()}})

    if adapter is not None:
        shares.update(dict(zip([t.name for t in adapter.tenants], adapter.initial.tolist())))
    while i < len(events) or queue:
        # Admit every arrival up to now (or the next one, if idle) through the limiter.
        if not queue and i < len(events):
            clock = max(clock, events[i][0])
        while i < len(events) and events[i][0] <= clock:
            t, k, a = events[i]
            i += 1
            d = buckets[a].request(charge[a], t) if a in buckets else None
            if d is not None and d.action == "drop":
                records.append(Record(a, t, t, t, -1, False, 0.0, "drop"))
                continue
            ready = t if d is None else d.start
            heapq.heappush(queue, (ready, seq, a, k, "serve" if d is None else d.action,
                                   charge[a]))
            seq += 1
        if not queue:
            continue
        ready, _, a, k, action, charged = heapq.heappop(queue)
        clock = max(clock, ready)
        while clock >= next_update:
            update(next_update)
            next_update += update_every
        app = by_name[a]
        arrival = float(traces[a][k])
        j = k % len(app.x)
        x = app.x[j:j + 1]
        if app.oracle:
            probs, times = app.net.run_all(x)
            ex = next((e for e, p in enumerate(probs) if int(p.argmax()) == int(app.y[j])), 0)
            p, exec_ms = probs[ex], times[ex]
        else:
            waited = (clock - arrival) * 1e3
            p, ex, state = app.net.run(x, crit[a], waited_ms=waited)
            exec_ms = state.response_time - waited
        finish = clock + exec_ms / 1e3
        if a in buckets:  # charge what it really used, not the estimate it was admitted on
            buckets[a].settle(exec_ms / 1e3 - charged)
            # Later admissions are charged what requests really cost: requests admitted on a low
            # estimate would otherwise queue up work the settlement only catches up with later.
            charge[a] += 0.2 * (exec_ms / 1e3 - charge[a])
        records.append(Record(a, arrival, clock, finish, ex, int(p.argmax()) == int(app.y[j]),
                              exec_ms * CORE_POWER_W * app.net.threads, action))
        clock = finish
    return ServeResult(records, share_log)

