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
"""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError, WorkbenchError
from . import events as ev
from .bundle import Bundle, ModelFault
from .criteria import parse_criteria
from .device import DeviceMonitor
from .executor import Executor, ExecutorError, ProgramExecutor
from .limiter import NEED_MARGIN, TokenBucket, cooperative_shares, redistribute
from .monitor import rss_mb
from .multiexit import MultiExitExecutor, SegmentCache
from .options import RuntimeOptions
from .policy import Choice, DeviceState, Policy, SwitchingPolicy
from .timeline import Timeline, summarise

__all__ = ["SHARE_MODES", "Choice", "DeviceState", "Policy", "Rejected", "RuntimeManager",
           "RuntimeOptions", "SwitchingPolicy", "Timeline", "summarise"]

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


class Rejected(WorkbenchError):
    """A request the runtime explicitly did not serve (the message says why)."""


@dataclass
class _Req:
    x: np.ndarray | None
    t: float
    future: Future
    every: bool = False  # answer with every output of the model, by name


class RuntimeManager:
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
        self._waiting: set[str] = set()  # tasks with a batch waiting for tokens right now
        self._lent = False
        self._share_t = 0.0
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

    # --- requests -------------------------------------------------------------------------
    def submit(self, task: str, x: np.ndarray | None = None, *,
               every_output: bool = False) -> Future:
        """Queue one request for ``task`` (``x``: one or more samples; None = zeros). The future
        resolves to the float32 output the task's metric reads (the bundle's ``output``), or
        with ``every_output`` to a dict of every output of the model by name (signature keys
        such as ``output_0``, or the ONNX graph's output names), or raises :class:`Rejected`."""
        fut: Future = Future()
        with self._lock:
            self.stats["submitted"] += 1
            if task in self._window:
                self._window[task]["arrived"] += 1
        r = _Req(x, time.perf_counter(), fut, every_output)
        if not isinstance(task, str) or task not in self._queues:
            self._reject(r, f"unknown task {task!r}; the bundle has {', '.join(self.tasks)}")
        elif x is not None and np.size(x) == 0:
            self._reject(r, "bad input: no samples")
        elif not self._accepting:
            self._reject(r, "runtime not running")
        elif self._queues[task].qsize() >= self.options.max_queue:
            self._reject(r, "queue full")
        else:
            self._queues[task].put(r)
        return fut

    def _reject(self, r: _Req, reason: str) -> None:
        with self._lock:
            self.stats["rejected"] += 1
            rr = self.stats["rejected_reasons"]
            rr[reason] = rr.get(reason, 0) + 1
        r.future.set_exception(Rejected(reason))

    def _serve(self, task: str) -> None:
        q = self._queues[task]
        pinned: frozenset | None = None
        while True:
            try:
                first = q.get(timeout=0.05)
            except queue.Empty:
                if self._stop.is_set():
                    return
                continue
            ex = self._active.get(task)
            batch = [first]
            cap = ex.batch if ex else 1
            deadline = time.perf_counter() + self.batch_wait
            while len(batch) < cap:
                try:
                    batch.append(q.get(timeout=max(0.0, deadline - time.perf_counter())))
                except queue.Empty:
                    break
            cap_ms = float("inf")
            bucket = self._buckets.get(task)
            if bucket is not None and ex is not None:
                admitted = self._admit(task, bucket, ex, batch)
                if admitted is None:
                    continue  # dropped, or the runtime is stopping
                cap_ms = admitted
            started = self.now()
            for _attempt in range(2):
                ex = self._active.get(task)
                if ex is None:
                    for r in batch:
                        self._reject(r, "no usable design")
                    break
                if ex.cores != pinned:
                    os.sched_setaffinity(0, ex.cores)
                    pinned = ex.cores
                    # What runs on an engine is the thread pinned to its cores: a throttle of
                    # that engine confines this thread from now on, and releases it when it
                    # pins itself elsewhere.
                    self.injector.serving_on(threading.get_native_id(), ex.cores,
                                             ex.spec.processor)
                xs = [r.x for r in batch]
                try:
                    x = None if all(v is None for v in xs) else np.concatenate(
                        [np.zeros((1, *ex.input_shape), np.float32) if v is None else
                         np.asarray(v, np.float32).reshape(-1, *ex.input_shape) for v in xs])
                    every = any(r.every for r in batch)
                    if isinstance(ex, MultiExitExecutor):
                        capped = ex.capped
                        y, ms = ex.run(x, slowdown=self.injector.slowdown(ex.cores),
                                       cap_ms=cap_ms)
                        if ex.capped > capped:
                            with self._lock:
                                self.stats["limited"]["capped"] += ex.capped - capped
                            self._held(task)
                    else:
                        y, ms = ex.run(x, slowdown=self.injector.slowdown(ex.cores),
                                       every=every)
                except ExecutorError as e:
                    self._fail_config(ex.spec.id, str(e))
                    continue  # the policy fell back: retry the batch once on the new design
                except (ValueError, RuntimeError) as e:
                    for r in batch:
                        self._reject(r, f"bad input: {' '.join(str(e).split())[:200]}")
                    break
                self._samples[task].append(ms)
                if bucket is not None:
                    with self._bucket_lock:
                        bucket.charge(ms / 1e3, started)
                    with self._lock:
                        self._window[task]["busy"] += ms / 1e3
                if isinstance(ex, MultiExitExecutor):
                    with self._lock:
                        got = self.stats["exits"].setdefault(task, {})
                        for k in ex.last_exits:
                            got[k + 1] = got.get(k + 1, 0) + 1
                cur = self.current
                self.served_log.append((self.now(), task, ms, cur.name if cur else None,
                                        len(batch)))
                outs = ex.outputs(len(y)) if every else {}
                k = 0
                for r in batch:
                    n = 1 if r.x is None else len(np.asarray(r.x).reshape(-1, *ex.input_shape))
                    r.future.set_result({name: v[k:k + n] for name, v in outs.items()}
                                        if r.every else y[k:k + n])
                    k += n
                with self._lock:
                    self.stats["served"] += len(batch)
                if self.options.request_slo_ms is not None:
                    done, since = time.perf_counter(), self._active_since
                    self._requests[task].extend((done - r.t) * 1e3 for r in batch
                                                if r.t >= since)
                break
            else:
                for r in batch:
                    self._reject(r, "design failed twice")

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

    # --- shares across tasks (Delen section 4.2) --------------------------------------------
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

    # --- designs --------------------------------------------------------------------------
    def _usable(self) -> set[str]:
        return set(self.bundle.usable)

    def _load(self, cid: str) -> Executor:
        try:
            blob = self.bundle.model_bytes(cid)
        except ModelFault as e:
            raise ExecutorError(f"{cid}: {e}") from None
        spec = self.bundle.configs[cid]
        if spec.memory_mode:
            return ProgramExecutor(spec, blob, self.bundle.weights_dir(cid)).load()
        if spec.criteria is not None:
            try:
                blobs = [self.bundle.file_bytes(f) for f in spec.segments]
            except ModelFault as e:
                raise ExecutorError(f"{cid}: {e}") from None
            me = MultiExitExecutor(spec, blobs, self._segments)
            if spec.task in self._criteria:
                me.set_criteria(self._criteria[spec.task])
            return me.load()
        return Executor(spec, blob).load()

    def set_criteria(self, task: str, text: str) -> None:
        """Replace the exit criteria of ``task``'s multi-exit designs while serving (Delen's
        run-time updates): the next request uses them, and so does any point loaded later.

        Raises:
            InputError: an unknown task or text that is not criteria (nothing changes).
        """
        if task not in self.tasks:
            raise InputError("no such task in the bundle", where="task", value=task)
        parse_criteria(text)
        with self._lock:
            self._criteria[task] = text
            for ex in list(self._loaded.values()):
                if isinstance(ex, MultiExitExecutor) and ex.spec.task == task:
                    ex.set_criteria(text)
        self.timeline.events.append({"t": self.now(), "kind": "criteria", "task": task,
                                     "criteria": text})

    def _executor(self, cid: str) -> Executor:
        ex = self._loaded.get(cid)
        if ex is None:
            ex = self._loaded[cid] = self._load(cid)
        return ex

    def _remove_config(self, cid: str, reason: str) -> None:
        """Take a configuration's designs out of service and record the fault."""
        with self._lock:
            roles = self.bundle.remove_config(cid, reason)
            self._loaded.pop(cid, None)
            self.timeline.events.append({"t": self.now(), "kind": "fault", "config": cid,
                                         "removed": roles, "reason": reason})

    def _fail_config(self, cid: str, reason: str) -> None:
        self._remove_config(cid, reason)
        self._decide_and_switch(reason=f"fault: {cid}", force=True)

    def _decide_and_switch(self, *, reason: str, force: bool = False) -> None:
        with self._switch_lock:
            self._decide_and_switch_locked(reason, force)

    def _decide_and_switch_locked(self, reason: str, force: bool) -> None:
        while True:
            t0 = time.perf_counter()
            choice = self.policy.decide(self.state, self._usable())
            self.decision_us.append((time.perf_counter() - t0) * 1e6)
            if choice is None:
                if self.current is not None or force:
                    self._active = {t: None for t in self.tasks}
                    self.current = None
                return
            if self.current is not None and choice == self.current and not force:
                return
            t1 = time.perf_counter()
            try:
                cold = [c for c in choice.configs if c not in self._loaded]
                execs = [self._executor(c) for c in choice.configs]
            except ExecutorError as e:
                self._remove_config(next(c for c in choice.configs if c not in self._loaded),
                                    str(e))
                continue  # decide again without the broken design
            # The switch itself: serving threads read _active on their next batch.
            self._active = dict(zip(self.tasks, execs))
            self._active_since = time.perf_counter()
            switch_ms = (time.perf_counter() - t1) * 1e3
            prev, self.current = self.current, choice
            self.timeline.switches.append({
                "t": self.now(), "from": prev.name if prev else None, "to": choice.name,
                "configs": list(choice.configs),
                "reason": reason, "flags": list(self.state.flagged) + (
                    ["memory"] if self.state.memory else []),
                "decision_us": self.decision_us[-1], "switch_ms": switch_ms, "cold": cold})
            return

    def _schedule_preload(self) -> None:
        if self.options.preload == "none":
            return
        usable = self._usable()
        if self.options.preload == "all":
            want = [self.bundle.designs[r].configs for r in self.bundle.fallback if r in usable]
        else:
            want = [c.configs for c in (self.policy.decide(s, usable) for s in self._next_states())
                    if c is not None]
        keep = set(self.current.configs if self.current else ())
        for cfgs in want:
            keep |= set(cfgs)
            for c in cfgs:
                if c not in self._loaded:
                    self._load_q.put(c)
        if self.state.memory:  # under memory pressure hold only what the policy may need next
            for c in [c for c in self._loaded if c not in keep]:
                self._loaded.pop(c).close()
            self.bundle.release(keep)

    def _next_states(self) -> list[DeviceState]:
        """The states one more loaded core, or a memory issue, would lead to: what to preload.
        Per core, not per processor name, because core sets overlap (core 0 loaded flags both
        CPU[0] and CPU[0,1])."""
        out = []
        for c in self.cores:
            procs = {p: v or c in self.device.proc_cores[p]
                     for p, v in self.state.processors.items()}
            if procs != self.state.processors:
                out.append(DeviceState(procs, self.state.memory))
        if not self.state.memory:
            out.append(DeviceState(dict(self.state.processors), True))
        return out

    def _loader(self) -> None:
        while not self._stop.is_set():
            try:
                cid = self._load_q.get(timeout=0.05)
            except queue.Empty:
                continue
            if cid in self._loaded or cid not in self.bundle.configs:
                continue
            try:
                ex = self._load(cid)
            except ExecutorError as e:
                self._remove_config(cid, str(e))
                continue
            self._loaded.setdefault(cid, ex)

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
