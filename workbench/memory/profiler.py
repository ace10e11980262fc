"""A resident-memory sampler in the way of MASA's profiler: it reads ``/proc/self/statm`` from a
thread while the measured code runs and reports the peak growth over the starting RSS."""

from __future__ import annotations

import os
import threading
import time

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_bytes() -> int:
    """Resident set size of this process (0 where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        return 0


class RssSampler:
    """Context manager sampling RSS every ``period`` seconds; ``peak_delta`` is the largest
    growth over the RSS at entry (bytes), ``samples`` the readings."""

    def __init__(self, period: float = 0.0005, *, enabled: bool = True):
        self.period, self.enabled = period, enabled
        self.base = self.peak = 0
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._th: threading.Thread | None = None

    def _loop(self):
        t0 = time.perf_counter()
        while not self._stop.is_set():
            r = rss_bytes()
            self.samples.append((time.perf_counter() - t0, r))
            self.peak = max(self.peak, r)
            self._stop.wait(self.period)

    def __enter__(self):
        self.base = self.peak = rss_bytes()
        if self.enabled:
            self._th = threading.Thread(target=self._loop, daemon=True)
            self._th.start()
        return self

    def __exit__(self, *exc):
        self.peak = max(self.peak, rss_bytes())
        if self._th:
            self._stop.set()
            self._th.join()
        return False

    @property
    def peak_delta(self) -> int:
        return max(0, self.peak - self.base)
