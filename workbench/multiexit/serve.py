"""Trace-driven serving of multi-exit nets (Delen's runtime with its policies, limiter and shares).

Requests arrive from traces (Poisson or bursty); one accelerator (here: the CPU, one request at
a time, FIFO across applications) serves them. Every request is executed for real with
onnxruntime, segment by segment, its criteria evaluated after each exit; the clock is virtual
(it advances by each request's measured execution time and jumps over idle gaps), so minutes of
trace take seconds. Every request is served (``ok``), delayed by the limiter then served, or
explicitly ``dropped``; nothing is lost.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InputError
from ..power import HOST_CORE
from ..runtime.criteria import ExitState, Node, Null
from ..runtime.limiter import NEED_MARGIN
from .policies import ExitProfile
from .runner import SegmentedNet
from .sharing import CrossAppAdapter, TokenBucket, redistribute

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
    """A tenant: its model, inputs to cycle through (with labels), policy, weight, cooperation.

    ``segment_ms`` is what each exit segment is expected to cost (ms; the limiter keeps a
    request within its remaining budget with it); None takes it from ``profile`` or measures
    it when serving starts. ``profile`` (the exit profile: each sample's confidence at each
    exit) lets the limiter know which exit the current criteria will choose, and so what a
    request will cost before it runs."""

    name: str
    net: SegmentedNet
    x: np.ndarray
    y: np.ndarray
    policy: Policy
    weight: float = 1.0
    cooperative: bool = False
    oracle: bool = False       # take the first exit that is right (needs labels: an upper bound)
    segment_ms: list[float] | None = None
    profile: ExitProfile | None = None


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
    capped: bool = False       # the limiter's budget, not the policy, chose an earlier exit
    confidence: float = float("nan")  # the top probability at the exit taken
    elapsed_ms: float = float("nan")  # the response time the criteria saw there (wait + run)

    @property
    def response_ms(self) -> float:
        return (self.finish - self.arrival) * 1e3

    @property
    def service_ms(self) -> float:
        """The time it ran (no queueing): what a share's time budget per request bounds."""
        return (self.finish - self.start) * 1e3


@dataclass
class ServeResult:
    records: list[Record]
    shares: list[dict[str, Any]] = field(default_factory=list)
    #: The limiter per app: share and burst (seconds of accelerator time) it enforced last.
    limits: dict[str, dict[str, float]] = field(default_factory=dict)
    #: The most a request ran past its limiter's remaining budget (s): a segment cannot be
    #: interrupted, so one segment's misestimate is the limiter's only slack.
    overrun_s: float = 0.0

    def summary(self, app: str | None = None, *, t0: float = -np.inf, t1: float = np.inf
                ) -> dict[str, Any]:
        rs = [r for r in self.records if (app is None or r.app == app) and t0 <= r.arrival < t1]
        done = [r for r in rs if r.action != "drop"]
        span = max((r.finish for r in done), default=0) - min((r.arrival for r in rs), default=0)
        n_exits = 1 + max((r.exit for r in done), default=0)
        return {"requests": len(rs), "served": len(done),
                "dropped": sum(r.action == "drop" for r in rs),
                "delayed": sum(r.action == "delay" for r in rs),
                "capped": sum(r.capped for r in done),
                "accuracy": float(np.mean([r.correct for r in done])) if done else None,
                "energy_mj": float(np.mean([r.energy_mj for r in done])) if done else None,
                "response_ms": float(np.mean([r.response_ms for r in done])) if done else None,
                "service_ms": float(np.mean([r.service_ms for r in done])) if done else None,
                "throughput": len(done) / span if span > 0 else None,
                "exits": np.bincount([r.exit for r in done], minlength=n_exits).tolist()}

    def usage(self, app: str, *, window: float = 1.0) -> np.ndarray:
        """The share of the accelerator ``app`` used in each ``window`` seconds (busy time
        clipped to the window over its length), from the first arrival to the last finish."""
        rs = [r for r in self.records if r.action != "drop"]
        if not rs:
            return np.zeros(0)
        t0 = min(r.arrival for r in self.records)
        n = max(1, int(np.ceil((max(r.finish for r in rs) - t0) / window)))
        used = np.zeros(n)
        for r in rs:
            if r.app != app:
                continue
            a, b = r.start - t0, r.finish - t0
            for w in range(int(a // window), min(n, int(b // window) + 1)):
                used[w] += max(0.0, min(b, (w + 1) * window) - max(a, w * window))
        return used / window

    def max_usage(self, app: str, *, window: float = 1.0) -> float:
        """The largest window usage of ``app`` over windows starting every tenth of a window
        (the limiter's bound must hold for any window, not only aligned ones)."""
        best = 0.0
        for k in range(10):
            shifted = ServeResult([Record(r.app, r.arrival, r.start + k * window / 10,
                                          r.finish + k * window / 10, r.exit, r.correct,
                                          r.energy_mj, r.action) for r in self.records])
            u = shifted.usage(app, window=window)
            best = max(best, float(u.max()) if len(u) else 0.0)
        return best

    def usage_bound(self, app: str, *, window: float = 1.0) -> float:
        """What the limiter guarantees for any window: its share plus its burst and one
        segment's overrun, over the window. A bound only for a fixed limit: it reads the last
        share and burst, so under moving shares (work-conserving) an earlier, larger loan is
        not in it."""
        lim = self.limits[app]
        return lim["share"] + (lim["burst_s"] + self.overrun_s) / window


def segment_times(net: SegmentedNet, x: np.ndarray, *, repeats: int = 5) -> list[float]:
    """Each exit segment's time (ms, the median over ``repeats`` runs of one sample)."""
    runs = [np.diff([0.0, *net.run_all(x[:1])[1]]) for _ in range(repeats)]
    return [float(v) for v in np.median(runs, axis=0)]


def expected_cost_ms(app: App, criteria: Callable[[ExitState], bool],
                     segment_ms: Sequence[float], *, samples: int = 200) -> float:
    """What a request of ``app`` will cost (ms) at the exit ``criteria`` choose: the mean over
    the exit profile's samples (their confidence at each exit, no queueing wait). Without a
    profile, the cheapest exit."""
    if app.profile is None:
        return float(segment_ms[0])
    cum = np.cumsum(segment_ms)
    net, conf = app.net, app.profile.confidence[:samples]
    last = len(cum) - 1
    total = 0.0
    for row in conf:
        for k in range(len(cum)):
            state = ExitState(float(cum[k]), float(row[k]), net.accuracy[k],
                              HOST_CORE.busy_mj(float(cum[k]), net.threads), net.flops[k], k + 1)
            if k == last or criteria(state):
                total += cum[k]
                break
    return total / len(conf)


def serve(apps: list[App], traces: dict[str, np.ndarray], *, update_every: float = 1.0,
          limit: dict[str, float] | None = None, limiter_mode: str = "delay",
          limiter_interval: float = 1.0, adapter: CrossAppAdapter | None = None,
          enforce_shares: bool = False, work_conserving: bool = True,
          calibrate: bool = True) -> ServeResult:
    """Serve the traces; policies (and, with ``adapter``, shares) update every ``update_every``
    seconds from the request rates observed over the last window.

    The limiter (a token bucket per limited app: tokens are seconds of accelerator time) is
    applied when a request is about to run: it runs only when its app has tokens for its
    cheapest exit, and its policy's criteria are capped by what remains (an exit is taken
    before a segment that would not fit). Its actual busy time is then charged. A request that
    finds no tokens waits for them (``"delay"``) or is dropped (``"drop"``); waiting apps do not
    hold the accelerator from others (first come, first served among the apps that may run).

    Args:
        apps: The tenants.
        traces: Arrival times (s) per app name.
        update_every: Seconds between policy updates (Delen: 1 s).
        limit: A resource limit (share of the accelerator) per app.
        limiter_mode: ``"delay"`` or ``"drop"`` requests that find no tokens.
        limiter_interval: The bucket holds ``share x interval`` seconds (the burst allowance).
        adapter: Multi-tenant shares (Alg. 3); default: equal shares.
        enforce_shares: With ``adapter``, every tenant is limited to the share the adapter
            gives it (updated every window).
        work_conserving: With ``enforce_shares``, share a tenant leaves unused (it used less
            and its limiter never held it back) goes to tenants with demand (Delen's
            work-conserving mode), max-min fairly by weight. A lender lends only its refill rate
            and keeps the burst of its own share, so its next request starts at once; a
            borrower's bucket grows with what it borrows. The buckets then hold up to
            ``limiter_interval`` x (1 + what the lenders lent) seconds together, at most twice
            the interval: requests run one at a time, so usage stays at most 1, but a loan is
            not guaranteed within a window. (The runtime keeps every bucket at its own share's
            burst and takes a loan back the moment the lender's limiter holds it; here the
            loan returns at the next update.)
        calibrate: Policies plan with the exit profile's latencies; serving can run slower or
            faster than when the profile was measured (the machine's load and clock change).
            Every update, each app's time budget is divided by its observed slowdown (its
            requests' run time over what the profile says their exits cost, over the run so
            far), so the budget is in the profile's units. The slowdown is in the share log
            (``slowdown[APP]``).
    """
    by_name = {a.name: a for a in apps}
    unknown = set(traces) - set(by_name)
    if unknown:
        raise InputError("traces for unknown apps", value=sorted(unknown))
    if enforce_shares and adapter is None:
        raise InputError("enforce_shares needs an adapter (the shares to enforce)",
                         where="enforce_shares")
    return _Server(apps, traces, update_every=update_every, limit=limit,
                   limiter_mode=limiter_mode, limiter_interval=limiter_interval, adapter=adapter,
                   enforce_shares=enforce_shares, work_conserving=work_conserving,
                   calibrate=calibrate).run()


class _Server:
    """One :func:`serve` run: the virtual clock, each app's queue, limiter, criteria and budget,
    and what has been served so far. ``run`` is the event loop; ``_update`` is the once-a-window
    policy (and share) update; ``_pick`` chooses the next request; ``_execute`` runs it."""

    def __init__(self, apps: list[App], traces: dict[str, np.ndarray], *, update_every: float,
                 limit: dict[str, float] | None, limiter_mode: str, limiter_interval: float,
                 adapter: CrossAppAdapter | None, enforce_shares: bool, work_conserving: bool,
                 calibrate: bool) -> None:
        self.apps, self.by_name = apps, {a.name: a for a in apps}
        self.update_every, self.adapter = update_every, adapter
        self.enforce_shares, self.work_conserving = enforce_shares, work_conserving
        self.calibrate = calibrate
        self.arrivals = {a.name: np.sort(np.asarray(traces.get(a.name, []), float)) for a in apps}
        self.events = sorted((float(t), k, a) for a, ts in traces.items()
                             for k, t in enumerate(ts))
        self.seg_ms = {a.name: list(a.segment_ms) if a.segment_ms is not None
                       else np.diff([0.0, *a.profile.latency_ms]).tolist()
                       if a.profile is not None
                       else segment_times(a.net, a.x) for a in apps}
        self.shares = {a.name: 1.0 / len(apps) for a in apps}
        if adapter is not None:
            self.shares.update(dict(zip([t.name for t in adapter.tenants],
                                        adapter.initial.tolist())))
        limited = dict(limit or {})
        if enforce_shares:
            limited.update({a.name: self.shares[a.name] for a in apps})
        self.buckets = {a: TokenBucket(max(s, 1e-6), interval=limiter_interval, mode=limiter_mode)
                        for a, s in limited.items()}
        self.budgets = {a.name: float("inf") for a in apps}
        self.crit: dict[str, Callable] = {a.name: Null().compile() for a in apps}
        # Tokens a request needs before it starts (s): delaying, what it will cost at the exit
        # its criteria choose (so a delayed request is not then cut short); dropping, its
        # cheapest exit (a request that fits no exit is dropped). The run is capped by what
        # remains either way.
        self.need = {a.name: self.seg_ms[a.name][0] / 1e3 for a in apps}
        self.share_log: list[dict[str, Any]] = []
        self.records: list[Record] = []
        # (arrival, k, held back) per app
        self.waiting: dict[str, deque] = {a.name: deque() for a in apps}
        self.held: dict[str, bool] = {a.name: False for a in apps}  # limiter held it in window
        self.busy_in_window: dict[str, float] = {a.name: 0.0 for a in apps}
        self.overrun = 0.0
        self.clock = 0.0
        self.next_update = 0.0
        self.i = 0
        # Observed run time and the profile's cost of the exits taken (ms), per app.
        self.ran = {a.name: [0.0, 0.0] for a in apps}

    def slowdown(self, name: str) -> float:
        obs, prof = self.ran[name]
        return obs / prof if self.calibrate and prof > 0 and obs > 0 else 1.0

    def _rates(self, now: float) -> dict[str, float]:
        # Rate over the last window (the first window looks ahead: nothing has arrived yet).
        lo, hi = (now - self.update_every, now) if now > 0 else (0.0, self.update_every)
        return {a.name: (np.searchsorted(self.arrivals[a.name], hi, "left")
                         - np.searchsorted(self.arrivals[a.name], lo, "left")) / self.update_every
                for a in self.apps}

    def _reshare(self, now: float, rates: dict[str, float]) -> dict[str, float]:
        """The adapter's new shares; with ``enforce_shares``, each tenant's limiter set to the
        share it may use now (its own, or with work conservation what it lends or borrows).
        Returns those limits by app."""
        adapter = self.adapter
        assert adapter is not None
        # A tenant's entitlement (max-min, cooperative re-weighting) sets its policy's time
        # budget; work conservation only lends what it leaves unused to others' limiters,
        # so a quiet window does not shrink its budget and its accuracy with it.
        plan = adapter.step(rates)
        self.shares.update(plan.shares)
        limits_now = dict(plan.shares)
        if self.enforce_shares and self.work_conserving and now > 0:
            # A tenant its limiter held back used all it was given: it has demand.
            names = [t.name for t in adapter.tenants]
            usage = [float("inf") if self.held[n] else self.busy_in_window[n] / self.update_every
                     for n in names]
            lent = redistribute([plan.shares[n] for n in names], usage,
                                [t.weight for t in adapter.tenants])
            limits_now = dict(zip(names, lent.tolist()))
        if self.enforce_shares:
            for a in self.apps:
                own, now_share = plan.shares[a.name], max(limits_now[a.name], 1e-6)
                if now_share < own:
                    # A lender keeps the burst of its own share (only its refill rate is
                    # lent), as in the runtime: its next request starts at once instead of
                    # waiting for tokens and taking the whole share back for a window.
                    self.buckets[a.name].set_share(own, now)
                    self.buckets[a.name].set_share(now_share, now, keep_burst=True)
                else:
                    self.buckets[a.name].set_share(now_share, now)
        return limits_now

    def _update(self, now: float) -> None:
        """The window's update: shares, each app's time budget and criteria, what a request
        needs before it starts; logged."""
        rates = self._rates(now)
        limits_now = self._reshare(now, rates) if self.adapter is not None else {}
        for a in self.apps:
            r = max(rates[a.name], 1e-9)
            self.budgets[a.name] = self.shares[a.name] / r * 1000.0 / self.slowdown(a.name)
            self.crit[a.name] = a.policy(rates[a.name], self.budgets[a.name]).compile()
            self.held[a.name], self.busy_in_window[a.name] = False, 0.0
            b = self.buckets.get(a.name)
            if b is not None and b.mode == "delay":
                self.need[a.name] = min(
                    NEED_MARGIN * self.slowdown(a.name)
                    * expected_cost_ms(a, self.crit[a.name], self.seg_ms[a.name]) / 1e3,
                    b.capacity)
        self.share_log.append({"t": now, **{f"share[{k}]": v for k, v in self.shares.items()},
                               **{f"limit[{k}]": v for k, v in limits_now.items()},
                               **{f"rate[{k}]": v for k, v in rates.items()},
                               **{f"slowdown[{a.name}]": self.slowdown(a.name)
                                  for a in self.apps}})

    def _pick(self) -> tuple[tuple[float, str] | None, float]:
        """First come, first served among the apps whose limiter lets their head run now:
        (arrival, app) of the request to run (None: none may), and when the earliest held
        request will have its tokens. A limiter that drops drops its heads that may not run."""
        clock = self.clock
        best, wake = None, float("inf")
        for name, q in self.waiting.items():
            while q:
                t, k, was_held = q[0]
                b = self.buckets.get(name)
                if b is None or b.tokens_at(clock) >= self.need[name] - 1e-12:
                    if best is None or t < best[0]:
                        best = (t, name)
                    break
                self.held[name] = True
                if b.mode == "drop":
                    q.popleft()
                    b.counts["drop"] += 1
                    self.records.append(Record(name, t, clock, clock, -1, False, 0.0, "drop"))
                    continue
                q[0] = (t, k, True)
                wake = min(wake, b.when(self.need[name], clock))
                break
        return best, wake

    def _execute(self, name: str) -> None:
        """Run the head request of ``name`` now, charge its limiter, record it and advance the
        clock by its run time."""
        clock = self.clock
        arrival, k, was_held = self.waiting[name].popleft()
        app = self.by_name[name]
        b = self.buckets.get(name)
        cap_ms = b.tokens_at(clock) * 1e3 if b is not None else float("inf")
        j = k % len(app.x)
        x = app.x[j:j + 1]
        if app.oracle:
            probs, times = app.net.run_all(x)
            ex = next((e for e, p in enumerate(probs) if int(p.argmax()) == int(app.y[j])), 0)
            p, exec_ms = probs[ex], times[ex]
            capped = False
            elapsed = (clock - arrival) * 1e3 + exec_ms
        else:
            waited = (clock - arrival) * 1e3
            p, ex, state = app.net.run(x, self.crit[name], waited_ms=waited, cap_ms=cap_ms,
                                       segment_ms=[v * self.slowdown(name)
                                                   for v in self.seg_ms[name]]
                                       if b is not None else None)
            exec_ms = state.response_time - waited
            elapsed = state.response_time
            capped = b is not None and ex < app.net.n_exits - 1 and not self.crit[name](state)
        finish = clock + exec_ms / 1e3
        if b is not None:
            b.charge(exec_ms / 1e3, clock)
            b.counts["delay" if was_held else "serve"] += 1
            self.overrun = (max(self.overrun, exec_ms - cap_ms) if np.isfinite(cap_ms)
                            else self.overrun)
            if capped:
                self.held[name] = True
        self.busy_in_window[name] += exec_ms / 1e3
        self.ran[name][0] += exec_ms
        self.ran[name][1] += float(sum(self.seg_ms[name][:ex + 1]))
        self.records.append(Record(name, arrival, clock, finish, ex,
                                   int(p.argmax()) == int(app.y[j]),
                                   HOST_CORE.busy_mj(exec_ms, app.net.threads),
                                   "delay" if was_held else "serve", capped, float(np.max(p)),
                                   float(elapsed)))
        self.clock = finish

    def run(self) -> ServeResult:
        events = self.events
        while True:
            while self.i < len(events) and events[self.i][0] <= self.clock:
                t, k, a = events[self.i]  # arrivals join their app's queue
                self.waiting[a].append((t, k, False))
                self.i += 1
            while self.clock >= self.next_update:
                self._update(self.next_update)
                self.next_update += self.update_every
            best, wake = self._pick()
            if best is None:
                nxt = events[self.i][0] if self.i < len(events) else float("inf")
                if min(nxt, wake) == float("inf"):
                    break
                # A request its limiter holds waits for tokens at the share in force now; the
                # next share update may lend it more (work conservation), so it must not sleep
                # past it.
                until = (min(nxt, wake, self.next_update) if wake < float("inf")
                         else min(nxt, wake))
                self.clock = max(self.clock, until)
                continue
            self._execute(best[1])
        limits = {a: {"share": bk.share, "burst_s": bk.capacity}
                  for a, bk in self.buckets.items()}
        return ServeResult(self.records, self.share_log, limits, max(0.0, self.overrun / 1e3))
