"""The Runtime Manager's options in one validated dataclass (thresholds, hysteresis, preloading,
queueing), so a run's configuration is one value that can be printed, compared and stored."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from ..errors import InputError
from .monitor import meminfo_mb

PRELOAD_MODES = ("next", "all", "none")
#: What a slow median invoke flags: every core the design runs on, or only its processor.
LATENCY_SCOPES = ("cores", "processor")
#: The longest monitor period: beyond a minute the runtime no longer reacts to anything.
MAX_PERIOD_S = 60.0


@dataclass(frozen=True)
class RuntimeOptions:
    """How the runtime watches the device and serves requests.

    Attributes:
        period_s: Monitor period.
        raise_after: Consecutive positive readings that raise a flag (hysteresis).
        clear_after: Consecutive negative readings that clear it.
        load_threshold: A core's busy fraction from *other* processes above which it has an issue.
        slow_factor: Median invoke time over the configuration's reference latency above which
            the design's cores have an issue (throttling shows up this way).
        latency_hold_s: A latency-raised flag on cores no longer in use clears after this long,
            so the runtime probes them again (there are no readings from an idle core's latency).
        latency_scope: What a slow median invoke flags. ``"cores"`` (default): every core of
            the design, so every processor sharing one of them (latency cannot tell which core
            is slow). ``"processor"``: only the processor (engine) serving the design, as on a
            phone whose engines are separate: a slow ``CPU[0,1]`` design then flags ``CPU[0,1]``
            and not ``CPU[0]`` or ``CPU[1]``, which the runtime may then try (its flag clears
            after ``latency_hold_s`` once the engine no longer serves).
        memory_low_mb: MemAvailable below this is a memory issue (None: 10% of RAM).
        memory_used_high_mb: Memory held by processes (AnonPages + Shmem) above this is a memory
            issue too (off when None).
        temperature_c: The hottest thermal zone above this flags every core (off when None).
        request_slo_ms: The latency SLO of a request, from its submission to its answer (off
            when None): a period whose median request latency is above it flags the processor
            serving the design (not its cores: a stream that falls behind says which engine
            serves it, not which core is slow). Real throttling (``throttle`` events, a CFS
            quota) stops the serving thread between invokes as much as inside them, so it shows
            here, in the requests that queue up, rather than in the invoke time.
        preload: ``"next"`` (the designs one more flag would pick), ``"all"`` or ``"none"``.
        max_queue: Requests waiting per task beyond which new ones are rejected.
        batch_wait_ms: How long a batched configuration waits to fill its batch.
        calibration_periods: Periods with samples on unflagged cores that set a configuration's
            reference latency (median, at least the profile's p99) before latency is judged.
    """

    period_s: float = 0.05
    raise_after: int = 3
    clear_after: int = 6
    load_threshold: float = 0.5
    slow_factor: float = 2.0
    latency_hold_s: float = 2.0
    memory_low_mb: float | None = None
    memory_used_high_mb: float | None = None
    temperature_c: float | None = None
    request_slo_ms: float | None = None
    preload: str = "next"
    max_queue: int = 256
    batch_wait_ms: float = 2.0
    calibration_periods: int = 5
    latency_scope: str = "cores"

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name not in ("preload", "latency_scope") and v is not None and (
                    not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)):
                raise InputError("must be a finite number", where=f.name, value=v)
        if self.preload not in PRELOAD_MODES:
            raise InputError(f"must be one of {', '.join(PRELOAD_MODES)}", where="preload",
                             value=self.preload)
        if self.latency_scope not in LATENCY_SCOPES:
            raise InputError(f"must be one of {', '.join(LATENCY_SCOPES)}",
                             where="latency_scope", value=self.latency_scope)
        for name in ("period_s", "slow_factor", "request_slo_ms"):
            if name == "request_slo_ms" and self.request_slo_ms is None:
                continue
            if not getattr(self, name) > 0:
                raise InputError("must be positive", where=name, value=getattr(self, name))
        if self.period_s > MAX_PERIOD_S:
            raise InputError(f"must be at most {MAX_PERIOD_S:g} s", where="period_s",
                             value=self.period_s)
        if self.memory_low_mb is not None:
            # A threshold above the RAM there is would flag a memory issue for ever.
            total = meminfo_mb().get("MemTotal")
            if total is not None and self.memory_low_mb > total:
                raise InputError(f"must be at most this machine's RAM ({total:.0f} MB)",
                                 where="memory_low_mb", value=self.memory_low_mb)
        for name in ("raise_after", "clear_after", "max_queue", "calibration_periods"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise InputError("must be a whole number >= 1", where=name, value=v)
        for name in ("load_threshold", "latency_hold_s", "batch_wait_ms", "memory_low_mb",
                     "memory_used_high_mb"):
            if getattr(self, name) is None:
                continue
            if not getattr(self, name) >= 0:
                raise InputError("must be >= 0", where=name, value=getattr(self, name))

    def with_overrides(self, **overrides: Any) -> "RuntimeOptions":
        """A copy with some fields changed; an unknown name is a user error naming it."""
        known = {f.name for f in fields(self)}
        bad = sorted(set(overrides) - known)
        if bad:
            raise InputError(f"unknown runtime option; known: {', '.join(sorted(known))}",
                             where=bad[0])
        return replace(self, **overrides)
