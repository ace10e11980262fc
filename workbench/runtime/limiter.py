"""Delen's resource limiter: a token bucket of accelerator time (seconds), refilled at the
application's share. It lives in the runtime, which applies it on the device (``workbench run
--limit TASK=SHARE``); ``workbench.multiexit.serve`` applies the same bucket in its trace-driven
experiments. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

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

    def set_share(self, share: float, now: float) -> None:
        """A new share from ``now`` on (multi-tenant shares change every window)."""
        if not 0 < share <= 1:
            raise InputError("a share is a fraction of the accelerator in (0, 1]",
                             where="share", value=share)
        self._refill(now)
        self.share, self.capacity = share, share * self.interval
        self.tokens = min(self.tokens, self.capacity)


