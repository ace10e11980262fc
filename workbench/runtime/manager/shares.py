"""The Runtime Manager's tenant limiter (Delen section 4.2): a token bucket of busy time per
limited task, a batch held or dropped until its task has what it is expected to cost, and the
moving shares (``work-conserving``, ``cooperative``) recomputed every window. The checks of the
limits come first (:func:`check_shares`, also run by the CLI before anything is loaded)."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from ...errors import InputError
from ..executor import Executor
from ..limiter import NEED_MARGIN, TokenBucket, cooperative_shares, redistribute
from ..multiexit import MultiExitExecutor
from .state import ManagerState

#: How the limited tasks' shares move while the runtime runs (Delen section 4.2): ``fixed`` (each
#: keeps its limit), ``work-conserving`` (share a task leaves unused is lent, every window, to the
#: tasks its limiter held back; the lender gets it back the moment its limiter holds it) and
#: ``cooperative`` (the limits' total is first re-split by each busy task's request rate, then
#: lent as in work-conserving).
SHARE_MODES = ("fixed", "work-conserving", "cooperative")


def _number(v: Any, where: str, *, upper: float = math.inf) -> float:
    """A finite number in (0, upper], or one clear error naming the argument."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        x = math.nan
    if not (math.isfinite(x) and 0 < x <= upper):
        bound = f" and <= {upper:g}" if upper < math.inf else ""
        raise InputError(f"must be a finite number > 0{bound}", where=where, value=v)
    return x


def check_shares(limits: dict[str, float], shares: str) -> None:
    """Moving shares needs two limited tasks whose limits add up to at most the whole device."""
    if shares == "fixed":
        return
    if len(limits) < 2:
        raise InputError("moving shares needs at least two limited tasks (--limit TASK=SHARE "
                         "for each)", where="--shares", value=shares)
    total = sum(limits.values())
    if total > 1 + 1e-9:
        raise InputError(f"the limits add up to {total:g}, more than the whole device (1); "
                         "moving shares lends and re-splits them, so they must fit",
                         where="--limit", value=", ".join(f"{t}={v:g}" for t, v in limits.items()))



class Shares(ManagerState):
    """The limiter and the moving shares, as a part of the Runtime Manager."""

    def _init_shares(self, limits: dict[str, float] | None, limit_mode: str,
                     limit_burst_s: float, shares: str, share_window_s: float) -> None:
        """Check the limits and set up a bucket per limited task and the share windows."""
        unknown = sorted(set(limits or {}) - set(self.tasks))
        if unknown:
            raise InputError(f"no such task in the bundle (tasks: {', '.join(self.tasks)})",
                             where="limits", value=unknown[0])
        limits = {t: _number(v, f"limits[{t}]", upper=1.0) for t, v in (limits or {}).items()}
        limit_burst_s = _number(limit_burst_s, "limit_burst_s")
        share_window_s = _number(share_window_s, "share_window_s")
        if shares not in SHARE_MODES:
            raise InputError(f"one of {', '.join(SHARE_MODES)}", where="shares", value=shares)
        check_shares(limits, shares)
        self._buckets = {t: TokenBucket(share, interval=limit_burst_s / share, mode=limit_mode)
                         for t, share in limits.items()}
        # Work conservation: each limited task's entitlement, and per window what it used (busy
        # seconds), whether its limiter held it back, and how many requests it got.
        self.share_mode, self.share_window_s = shares, share_window_s
        self._entitled = dict(limits)
        self._entitled_now = dict(self._entitled)  # cooperative: re-split every window
        self._window = {t: {"busy": 0.0, "held": False, "arrived": 0} for t in self._buckets}
        self._waiting = set()  # tasks with a batch waiting for tokens right now
        self._lent = False
        self._share_t = 0.0

    def _admit(self, task: str, bucket: TokenBucket, ex: Executor, batch: list) -> float | None:
        """Hold a batch until its task's bucket has what it is expected to cost (``delay``), or
        reject it (``drop``); returns what remains to spend on it (ms), None when it will not
        run."""
        # Expected: the profile's latency of the design (a multi-exit point: at its mean exit),
        # with a margin; dropping, the cheapest answer (the first exit) is enough to start.
        expected = ex.spec.expected.get("L") or 0.0
        if bucket.mode == "drop" and isinstance(ex, MultiExitExecutor) and ex.seg_ms[0] > 0:
            expected = ex.seg_ms[0]
        need = NEED_MARGIN * expected * len(batch) / 1e3
        now = self.now()
        with self._bucket_lock:
            short = bucket.tokens_at(now) < min(need, bucket.capacity) - 1e-12
        if short:
            self._held(task)
            if bucket.mode == "drop":
                with self._lock:
                    self.stats["limited"]["dropped"] += len(batch)
                for r in batch:
                    self._reject(r, "over its share (limiter)")
                return None
            with self._lock:
                self.stats["limited"]["delayed"] += len(batch)
            self._waiting.add(task)  # a waiting task has demand: it is never a lender
            try:
                while True:  # the share may move while it waits (work conservation)
                    self._held(task)  # lent while it waited: take it back
                    with self._bucket_lock:
                        now = self.now()
                        until = bucket.when(min(need, bucket.capacity), now)
                    if now >= until:
                        break
                    if self._stop.is_set() and not self._accepting:
                        for r in batch:
                            self._reject(r, "runtime stopped")
                        return None
                    time.sleep(min(0.005, max(0.0, until - now)))
            finally:
                self._waiting.discard(task)
        with self._bucket_lock:
            return bucket.tokens_at(self.now()) * 1e3

    def _held(self, task: str) -> None:
        """``task``'s limiter held it back: it has demand. A task that lent its share takes it
        back now (every loan is called in until the next window), not a window later."""
        with self._lock:
            self._window[task]["held"] = True
        with self._bucket_lock:
            if self._lent and self._buckets[task].share < self._entitled_now[task] - 1e-9:
                now = self.now()
                for t, b in self._buckets.items():
                    b.set_share(float(min(1.0, max(self._entitled_now[t], 1e-3))), now,
                                keep_burst=True)
                self._lent = False

    def _reshare(self, t: float) -> None:
        """Every ``share_window_s``: entitlements (cooperative: the limits' total re-split by
        the busy tasks' request rates), then what a task left unused lent to the tasks its
        limiter held back, max-min fairly."""
        span = max(t - self._share_t, 1e-9)
        names = list(self._buckets)
        with self._lock:
            seen = {n: dict(v) for n, v in self._window.items()}
            for v in self._window.values():
                v.update(busy=0.0, held=False, arrived=0)
        self._share_t = t
        ent = np.array([self._entitled[n] for n in names])
        if self.share_mode == "cooperative":
            ent = cooperative_shares(ent, [seen[n]["arrived"] / span for n in names])
        usage = [float("inf") if seen[n]["held"] or n in self._waiting else seen[n]["busy"] / span
                 for n in names]
        lent = redistribute(ent, usage, np.ones(len(names)))
        with self._bucket_lock:
            now = self.now()
            self._entitled_now = dict(zip(names, ent.tolist()))
            for n, share in zip(names, lent):
                self._buckets[n].set_share(float(min(1.0, max(share, 1e-3))), now,
                                           keep_burst=True)
            self._lent = bool(np.any(lent < ent - 1e-9))
