"""The device as the runtime sees it: raw readings (core load from other processes, the served
designs' latency, memory, temperature) turned into stable flags with hysteresis, and the
:class:`~.policy.DeviceState` a policy decides on.

The monitor owns no threads and serves nothing: the manager calls :meth:`DeviceMonitor.read` once
per period with the latency samples it collected, which keeps the monitor testable alone."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .. import processors as procs
from .executor import Executor
from .monitor import CoreLoad, Debounce, anon_mb, meminfo_mb, temperature_c
from .options import RuntimeOptions
from .policy import DeviceState


@dataclass(frozen=True)
class Reading:
    """One period's readings and the state they lead to (None: not available here)."""

    state: DeviceState
    latency_ms: dict[str, float | None]  # median invoke time per task this period
    busy: dict[int, float]  # per core: total busy fraction
    other: dict[int, float]  # per core: busy fraction from other processes
    mem_available_mb: float | None
    mem_used_mb: float | None
    temperature_c: float | None
    #: median request latency (submission to answer) per task this period, with request_slo_ms
    request_ms: dict[str, float | None] = field(default_factory=dict)


def _finite(v: float | None) -> float | None:
    return None if v is None or math.isnan(v) else v


class DeviceMonitor:
    """Flags per core (load from other processes, slow invokes, heat) and for memory, each behind
    a :class:`~.monitor.Debounce`; processor flags are the union of their cores' flags.

    Latency is judged against a configuration's reference: the median of its first
    ``calibration_periods`` periods on unflagged cores, never below the profile's p99 (a runtime
    serving sporadic requests runs colder than the profiler's back-to-back loop)."""

    def __init__(self, processors: list[str], options: RuntimeOptions) -> None:
        self.options = options
        self.cores = list(range(os.cpu_count() or 1))
        self.proc_cores = {p: set(procs.cores(p) or ()) for p in processors}
        ra, ca = options.raise_after, options.clear_after
        self._load_flag = {c: Debounce(ra, ca) for c in self.cores}
        self._lat_flag = {c: Debounce(ra, ca) for c in self.cores}
        self._lat_seen = {c: 0.0 for c in self.cores}
        # latency_scope "processor": slow invokes flag the processor serving, not its cores.
        self._plat_flag = {p: Debounce(ra, ca) for p in processors}
        self._plat_seen = {p: 0.0 for p in processors}
        self._mem_flag = Debounce(ra, ca)
        self._temp_flag = Debounce(ra, ca)
        # Request-latency SLO misses, per processor (see RuntimeOptions.request_slo_ms).
        self._slo_flag = {p: Debounce(ra, ca) for p in processors}
        self._slo_seen = {p: 0.0 for p in processors}
        self._ref: dict[str, float] = {}
        self._calib: dict[str, list[float]] = {}
        self._core_load = CoreLoad()
        low = options.memory_low_mb
        if low is None:
            total = meminfo_mb().get("MemTotal")
            low = 0.1 * total if total else None
        self.memory_low_mb = low

    def reference_ms(self, config: str) -> float | None:
        """The latency a configuration is judged against, once calibrated."""
        return self._ref.get(config)

    def read(self, t: float, active: Mapping[str, Executor | None],
             samples: Mapping[str, list[float]], *, forced: Mapping[str, bool] | None = None,
             forced_memory: bool = False,
             requests: Mapping[str, list[float]] | None = None) -> Reading:
        """Take this period's readings (``samples``: invoke ms per task since the last call;
        ``requests``: request latencies in ms, judged against ``request_slo_ms``)."""
        own = tuple(sorted(set().union(*(ex.cores for ex in active.values() if ex))))
        busy, other = self._core_load.read(own)
        for c in self.cores:
            v = _finite(other.get(c))
            self._load_flag[c].update(None if v is None else v > self.options.load_threshold)
        lat = {task: self._judge_latency(t, s, active.get(task)) for task, s in samples.items()}
        for c in self.cores:
            if self._lat_flag[c].state and t - self._lat_seen[c] > self.options.latency_hold_s:
                self._lat_flag[c].force(False)
        for p, f in self._plat_flag.items():
            if f.state and t - self._plat_seen[p] > self.options.latency_hold_s:
                f.force(False)
        info = meminfo_mb()  # one read per period for both memory signals
        avail, used = info.get("MemAvailable"), anon_mb(info)
        high_mb = self.options.memory_used_high_mb
        low = None if avail is None or self.memory_low_mb is None else avail < self.memory_low_mb
        high = None if used is None or high_mb is None else used > high_mb
        mem = self._mem_flag.update(None if low is None and high is None else bool(low or high))
        temp = temperature_c()
        limit = self.options.temperature_c
        hot = self._temp_flag.update(None if temp is None or limit is None else temp > limit)
        issue = {c: self._load_flag[c].state or self._lat_flag[c].state or hot for c in self.cores}
        req = self._judge_requests(t, requests or {}, active)
        forced = forced or {}
        state = DeviceState({p: bool(forced.get(p)) or any(issue.get(c, False) for c in cs)
                             or self._slo_flag[p].state or self._plat_flag[p].state
                             for p, cs in self.proc_cores.items()}, mem or forced_memory)
        return Reading(state, lat, busy, other, avail, used, temp, req)

    def _judge_requests(self, t: float, requests: Mapping[str, list[float]],
                        active: Mapping[str, Executor | None]) -> dict[str, float | None]:
        """Median request latency per task; over request_slo_ms it is a miss of the processor
        serving the task. A flag on a processor no longer serving clears after latency_hold_s."""
        slo, out = self.options.request_slo_ms, {}
        for task, s in requests.items():
            med = float(np.median(s)) if s else None
            out[task] = med
            ex = active.get(task)
            if slo is None or med is None or ex is None or ex.spec.processor not in self._slo_flag:
                continue
            self._slo_flag[ex.spec.processor].update(med > slo)
            self._slo_seen[ex.spec.processor] = t
        for p, f in self._slo_flag.items():
            if f.state and t - self._slo_seen[p] > self.options.latency_hold_s:
                f.force(False)
        return out

    def _judge_latency(self, t: float, s: list[float], ex: Executor | None) -> float | None:
        if not s:
            return None
        med = float(np.median(s))
        if ex is None:
            return med
        ref = self._ref.get(ex.spec.id)
        proc = str(getattr(ex.spec, "processor", ""))
        by_proc = self.options.latency_scope == "processor" and proc in self._plat_flag
        if ref is None:
            if not any(self._lat_flag[c].state or self._load_flag[c].state for c in ex.cores) \
                    and not (by_proc and self._plat_flag[proc].state):
                cal = self._calib.setdefault(ex.spec.id, [])
                cal.append(med)
                if len(cal) >= self.options.calibration_periods:
                    e = ex.spec.expected
                    self._ref[ex.spec.id] = max(float(np.median(cal)), e.get("L", 0.0),
                                                e.get("L_p99", 0.0))
            return med
        slow = med / ref > self.options.slow_factor
        if by_proc:
            self._plat_flag[proc].update(slow)
            self._plat_seen[proc] = t
            return med
        for c in ex.cores:
            self._lat_flag[c].update(slow)
            self._lat_seen[c] = t
        return med
