"""Delen's resource limiter and shares: a token bucket of accelerator time (seconds), refilled at
the application's share, and the max-min fair shares across applications that set it (weighted
by request rate, work-conserving). They live in the runtime, which applies them on the device
(``workbench run --limit TASK=SHARE --shares work-conserving``); ``workbench.multiexit.serve``
applies the same bucket and shares in its trace-driven experiments. Numpy and the standard
library only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

#: A request waits for this times what it is expected to cost before it starts: times vary by
#: tens of percent, and one started on exactly its estimate would often be cut an exit short.
NEED_MARGIN = 1.25

@dataclass
class Decision:
    action: str          # "serve", "delay" or "drop"
    start: float         # when it may run (seconds); arrival time when dropped


class TokenBucket:
    """Delen's resource limiter: tokens are seconds of accelerator time, refilled at ``share``
    per second up to ``share x interval`` (a burst allowance). A request that finds too few
    tokens is delayed until enough have accrued (``mode="delay"``) or dropped (``"drop"``);
    every request gets exactly one of serve/delay/drop."""

    def __init__(self, share: float, *, interval: float = 1.0, mode: str = "delay") -> None:
        if not 0 < share <= 1:
            raise InputError("a share is a fraction of the accelerator in (0, 1]",
                             where="share", value=share)
        if mode not in ("delay", "drop"):
            raise InputError("mode is 'delay' or 'drop'", where="mode", value=mode)
        if interval <= 0:
            raise InputError("interval must be positive", where="interval", value=interval)
        self.share, self.interval, self.mode = share, interval, mode
        self.capacity = share * interval
        self.tokens = self.capacity
        self.t = 0.0
        self.counts = {"serve": 0, "delay": 0, "drop": 0}

    def _refill(self, now: float) -> None:
        if now > self.t:
            self.tokens = min(self.capacity, self.tokens + (now - self.t) * self.share)
            self.t = now

    def request(self, cost_s: float, now: float) -> Decision:
        """Admit a request costing ``cost_s`` seconds of accelerator time arriving at ``now``."""
        if cost_s < 0:
            raise InputError("cost must be non-negative", where="cost", value=cost_s)
        self._refill(max(now, self.t))
        cost = min(cost_s, self.capacity)  # a request larger than the burst waits for a full bucket
        if self.tokens >= cost - 1e-12:
            self.tokens -= cost
            self.counts["serve"] += 1
            return Decision("serve", max(now, self.t))
        if self.mode == "drop":
            self.counts["drop"] += 1
            return Decision("drop", now)
        wait = (cost - self.tokens) / self.share
        start = self.t + wait
        self._refill(start)
        self.tokens -= cost
        self.counts["delay"] += 1
        return Decision("delay", start)


    # -- the serving loop's use: checked when a request is about to run, charged what it used --
    def tokens_at(self, now: float) -> float:
        """Seconds of accelerator time available at ``now`` (negative: debt)."""
        self._refill(now)
        return self.tokens

    def when(self, need_s: float, now: float) -> float:
        """The earliest time from ``now`` at which ``need_s`` seconds are available."""
        have = self.tokens_at(now)
        return now if have >= need_s else max(now, self.t) + (need_s - have) / self.share

    def charge(self, used_s: float, now: float) -> None:
        """A request that starts at ``now`` used ``used_s`` seconds (may leave a debt)."""
        if used_s < 0:
            raise InputError("cost must be non-negative", where="cost", value=used_s)
        self._refill(now)
        self.tokens -= used_s

    def set_share(self, share: float, now: float, *, keep_burst: bool = False) -> None:
        """A new share from ``now`` on (multi-tenant shares change every window). With
        ``keep_burst`` only the refill rate changes: the bucket keeps its size and its tokens
        (a task whose share is lent for a while still starts its next request on its burst)."""
        if not 0 < share <= 1:
            raise InputError("a share is a fraction of the accelerator in (0, 1]",
                             where="share", value=share)
        self._refill(now)
        self.share = share
        if not keep_burst:
            self.capacity = share * self.interval
        self.tokens = min(self.tokens, self.capacity)


# --- shares across tenants (Delen section 4.2) ----------------------------------------------

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


def cooperative_shares(shares, rates, weights=None, cooperative=None) -> np.ndarray:
    """Delen Alg. 3's re-weighting: the cooperative tenants that saw requests split their
    combined share by weight x request rate. One that saw none (or has no weight) keeps its own
    share, which work conservation then lends: a quiet window of a slow Poisson trace is not an
    end of demand, and a share of 0 would hold its next request until the update after it."""
    s, r = np.array(shares, float), np.asarray(rates, float)
    w = np.ones(len(s)) if weights is None else np.asarray(weights, float)
    coop = np.ones(len(s), bool) if cooperative is None else np.asarray(cooperative, bool)
    busy = coop & (r > 0) & (w > 0)
    if busy.any():
        s[busy] = s[busy].sum() * w[busy] * r[busy] / (w[busy] * r[busy]).sum()
    return s


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
