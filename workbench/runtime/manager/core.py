"""CARIn's Runtime Manager (sections 3.2, 4.3.3-4.3.4): run the current design, watch the device,
raise processor and memory flags with hysteresis, and switch designs by looking up the switching
policy (never re-solving). ``OODIn``-style managers plug in a policy that re-solves instead.

Threads: one serving thread per task (so the DNNs of a multi-DNN design run concurrently, each
pinned to its design's cores, batching requests up to the configuration's batch size), one
monitor thread (every ``period_s``: apply due events, read the device through
:class:`~.device.DeviceMonitor`, apply the policy, record the timeline) and one loader thread that
preloads the designs the policy would pick next.

Every request is answered (its future gets the outputs) or explicitly rejected (its future gets a
:class:`Rejected` with the reason); ``stats`` counts both and nothing else can happen to one.

The manager is one object in parts: :mod:`.serving` (requests, batches, answers), :mod:`.shares`
(the tenant limiter and moving shares), :mod:`.designs` (loading, deciding, switching,
preloading); this module sets it up, starts and stops it, and holds the monitor.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

from ...errors import InputError
from .. import events as ev
from ..bundle import Bundle
from ..device import DeviceMonitor
from ..executor import Executor, ExecutorError
from ..monitor import rss_mb
from ..multiexit import SegmentCache
from ..options import RuntimeOptions
from ..policy import Choice, DeviceState, Policy, SwitchingPolicy
from ..timeline import Timeline
from .designs import Designs
from .serving import Serving
from .shares import Shares


class RuntimeManager(Serving, Shares, Designs):
    """Run a bundle's designs and adapt to the device.

    Args:
        bundle: A loaded bundle (see :func:`workbench.runtime.load_bundle`).
        policy: What to run under which flags; default: the bundle's RASS switching policy.
        options: Thresholds, hysteresis, preloading, queueing (:class:`RuntimeOptions`).
        events: Timed events (:func:`workbench.runtime.events.parse_events`).
        limits: A share of the device per task (Delen's tenant limiter, a token bucket of busy
            time): a request runs when its task has what it is expected to cost, a multi-exit
            design exits before a segment that would pass what remains, and what it used is
            charged; ``limit_mode`` ``"delay"`` waits for tokens, ``"drop"`` rejects the request
            ("over its share"). ``limit_burst_s``: the bucket holds share x this.
        shares: How the limits move between tasks (:data:`SHARE_MODES`); ``share_window_s``
            is how often they are recomputed from what each task used (Delen: every second).
            The shares in force are in the timeline (``share[TASK]``).
        **overrides: Fields of :class:`RuntimeOptions` to change (``preload="none"``).
    """

    def __init__(self, bundle: Bundle, *, policy: Policy | None = None,
                 options: RuntimeOptions | None = None, events: list[ev.Event] | None = None,
                 limits: dict[str, float] | None = None, limit_mode: str = "delay",
                 limit_burst_s: float = 0.1, shares: str = "fixed", share_window_s: float = 1.0,
                 **overrides: Any) -> None:
        self.options = opts = (options or RuntimeOptions()).with_overrides(**overrides)
        self.bundle = bundle
        self.policy = policy or SwitchingPolicy(bundle)
        self.batch_wait = opts.batch_wait_ms / 1e3
        self.events = sorted(events or [], key=lambda e: e.at)
        self.injector = ev.EventInjector()
        self.processors = sorted({c.processor for c in bundle.configs.values()} |
                                 set(bundle.triggers))
        self.device = DeviceMonitor(self.processors, opts)
        self.cores = self.device.cores
        self.tasks = bundle.task_names
        self._queues: dict[str, queue.Queue] = {t: queue.Queue() for t in self.tasks}
        self._samples: dict[str, list[float]] = {t: [] for t in self.tasks}
        # Request latency (submission to answer, ms) per task, judged against request_slo_ms:
        # only of requests submitted since the current design took over (perf_counter), as one
        # that waited on the previous design measures that one.
        self._requests: dict[str, list[float]] = {t: [] for t in self.tasks}
        self._active_since = time.perf_counter()
        self._lock = threading.Lock()
        self._switch_lock = threading.RLock()
        self._loaded: dict[str, Executor] = {}
        # Multi-exit points of one stored model share its loaded segments; criteria a run
        # replaced per task (Delen's run-time updates) apply to every point loaded later too.
        self._segments = SegmentCache()
        self._criteria: dict[str, str] = {}
        self._init_shares(limits, limit_mode, limit_burst_s, shares, share_window_s)
        # The serving threads and the monitor move shares: every bucket read or change, and
        # _lent and _entitled_now, under this lock (never taken while holding self._lock).
        self._bucket_lock = threading.Lock()
        for e in self.events:
            if e.kind == "criteria" and e.args[0] not in self.tasks:
                raise InputError(f"no task {e.args[0]!r} in the bundle (tasks: "
                                 f"{', '.join(self.tasks)})", where=f"--inject {e}",
                                 value=e.args[0])
            if e.kind == "throttle":  # before the run, not in the monitor thread mid-run
                ev.check_throttle(*e.args, where=f"--inject {e}")
        self._active: dict[str, Executor | None] = {t: None for t in self.tasks}
        self.current: Choice | None = None
        self.state = DeviceState({p: False for p in self.processors}, False)
        self.stats: dict[str, Any] = {"submitted": 0, "served": 0, "rejected": 0,
                                      "rejected_reasons": {},
                                      "exits": {},  # multi-exit: task -> {exit: answers}
                                      "limited": {"delayed": 0, "dropped": 0, "capped": 0}}
        self.timeline = Timeline()
        self.decision_us: list[float] = []
        #: (t, task, invoke ms, design, batch size) of every batch served.
        self.served_log: list[tuple[float, str, float, str | None, int]] = []
        self._stop = threading.Event()
        self._accepting = False
        self._threads: list[threading.Thread] = []
        self._load_q: queue.Queue = queue.Queue()
        self._t0 = time.monotonic()

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> "RuntimeManager":
        """Load the initial design (the policy's choice with no flags raised) and start."""
        self._t0 = time.monotonic()
        self._decide_and_switch(reason="start")
        if self.current is None:
            raise ExecutorError("no design of the bundle can run here: "
                                + "; ".join(f"{r}: {p}" for r, p in self.bundle.problems.items()))
        self._accepting = True
        for t in self.tasks:
            self._spawn(self._serve, t, name=f"serve-{t}")
        self._spawn(self._monitor, name="monitor")
        self._spawn(self._loader, name="loader")
        self._schedule_preload()
        return self

    def _spawn(self, fn, *args, name: str) -> None:
        th = threading.Thread(target=fn, args=args, name=name, daemon=True)
        th.start()
        self._threads.append(th)

    def stop(self, *, drain_s: float = 5.0) -> dict[str, Any]:
        """Stop accepting requests, serve what is queued (up to ``drain_s``), reject the rest,
        stop every thread and event process. Returns ``stats``."""
        self._accepting = False
        end = time.monotonic() + drain_s
        while any(not q.empty() for q in self._queues.values()) and time.monotonic() < end:
            time.sleep(0.005)
        self._stop.set()
        for th in self._threads:
            th.join(timeout=5)
        for q in self._queues.values():
            while True:
                try:
                    r = q.get_nowait()
                except queue.Empty:
                    break
                self._reject(r, "runtime stopped")
        self.injector.stop()
        if self.injector.throttle_log:
            self.stats["throttles"] = list(self.injector.throttle_log)
        return self.stats

    def __enter__(self) -> "RuntimeManager":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- monitoring -----------------------------------------------------------------------
    def now(self) -> float:
        return time.monotonic() - self._t0

    def inject(self, event: ev.Event) -> None:
        """Apply an event now (see :mod:`workbench.runtime.events`)."""
        if event.kind == "criteria":
            self.set_criteria(*event.args)
            return
        engines = self.injector.apply(event)
        self.timeline.events.append({"t": self.now(), "kind": event.kind,
                                     "args": list(event.args),
                                     **({} if engines is None else {"engines": engines})})

    def _monitor(self) -> None:
        period = self.options.period_s
        next_t = time.monotonic() + period
        while not self._stop.is_set():
            time.sleep(max(0.0, next_t - time.monotonic()))
            next_t += period
            try:
                self.tick()
            except Exception as e:  # noqa: BLE001 - the loop must survive a bad reading
                self.timeline.events.append({"t": self.now(), "kind": "monitor-error",
                                             "reason": repr(e)})

    def tick(self) -> None:
        """One monitor step: events due, readings, flags, policy, preload, timeline row."""
        t = self.now()
        while self.events and self.events[0].at <= t:
            self.inject(self.events.pop(0))
        if self.share_mode != "fixed" and t - self._share_t >= self.share_window_s:
            self._reshare(t)
        samples, requests = {}, {}
        for task in self.tasks:
            samples[task], self._samples[task] = self._samples[task], []
            requests[task], self._requests[task] = self._requests[task], []
        r = self.device.read(t, self._active, samples, forced=self.injector.forced,
                             forced_memory=self.injector.forced_memory,
                             requests=requests if self.options.request_slo_ms is not None
                             else None)
        if r.state != self.state:
            self.state = r.state
            self._decide_and_switch(reason="flags")
            self._schedule_preload()
        cur, state = self.current, r.state
        acc = None
        if cur:
            vals = [self.bundle.configs[c].expected.get("A") for c in cur.configs]
            acc = vals[-1] if vals else None

        def frac(v: float | None) -> float | None:
            return None if v is None or v != v else round(v, 3)

        self.timeline.add(
            t=round(t, 4), design=cur.name if cur else None,
            flags=",".join(list(state.flagged) + (["memory"] if state.memory else [])),
            **{f"L[{k}]": v for k, v in r.latency_ms.items()},
            **{f"R[{k}]": v for k, v in r.request_ms.items()},
            **{f"load[{c}]": frac(r.busy.get(c)) for c in self.cores},
            **{f"other[{c}]": frac(r.other.get(c)) for c in self.cores},
            A=acc, rss_mb=rss_mb(), mem_available_mb=r.mem_available_mb,
            mem_used_mb=r.mem_used_mb, temperature_c=r.temperature_c,
            served=self.stats["served"], rejected=self.stats["rejected"],
            **{f"share[{k}]": round(b.share, 4) for k, b in self._buckets.items()})
