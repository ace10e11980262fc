"""What the Runtime Manager's parts share: the attributes :class:`~.core.RuntimeManager` sets up
(one object, one set of locks) and the methods one part calls on another. Serving
(:mod:`.serving`), the limiter's shares (:mod:`.shares`) and the designs (:mod:`.designs`) are
each a base class of the manager; this is theirs, so each is type-checked on its own."""

from __future__ import annotations

import queue
import threading
from typing import Any

from ..bundle import Bundle
from ..device import DeviceMonitor
from ..events import EventInjector
from ..executor import Executor
from ..limiter import TokenBucket
from ..multiexit import SegmentCache
from ..options import RuntimeOptions
from ..policy import Choice, DeviceState, Policy
from ..timeline import Timeline


class ManagerState:
    """The Runtime Manager's state, declared (set in ``RuntimeManager.__init__``)."""

    options: RuntimeOptions
    bundle: Bundle
    policy: Policy
    batch_wait: float
    injector: EventInjector
    device: DeviceMonitor
    cores: list[int]
    tasks: list[str]
    _queues: dict[str, queue.Queue]
    _samples: dict[str, list[float]]
    _requests: dict[str, list[float]]
    _active_since: float
    # Stats, the timeline's events, the loaded executors and the share windows: under _lock.
    _lock: threading.Lock
    _switch_lock: threading.RLock
    _loaded: dict[str, Executor]
    _segments: SegmentCache
    _criteria: dict[str, str]
    _buckets: dict[str, TokenBucket]
    share_mode: str
    share_window_s: float
    _entitled: dict[str, float]
    _entitled_now: dict[str, float]
    _window: dict[str, dict[str, Any]]
    _waiting: set[str]
    _lent: bool
    _share_t: float
    _bucket_lock: threading.Lock
    _active: dict[str, Executor | None]
    current: Choice | None
    state: DeviceState
    stats: dict[str, Any]
    timeline: Timeline
    decision_us: list[float]
    served_log: list[tuple[float, str, float, str | None, int]]
    _stop: threading.Event
    _accepting: bool
    _load_q: queue.Queue

    # Implemented by the manager and its parts; declared here so each part can call them.
    def now(self) -> float:
        raise NotImplementedError

    def _reject(self, r: Any, reason: str) -> None:
        raise NotImplementedError

    def _held(self, task: str) -> None:
        raise NotImplementedError

    def _admit(self, task: str, bucket: TokenBucket, ex: Executor, batch: list) -> float | None:
        raise NotImplementedError

    def _fail_config(self, cid: str, reason: str) -> None:
        raise NotImplementedError
