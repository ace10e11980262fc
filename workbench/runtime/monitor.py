"""What the Runtime Manager watches, and how raw readings become stable flags.

Readers use /proc and /sys only (Linux; on other systems they return None and the flags then come
from latency and injected events). ``Debounce`` turns a noisy boolean signal into a flag with
hysteresis: it rises after ``raise_after`` consecutive positive readings and clears after
``clear_after`` consecutive negative ones; a NaN/None reading counts for neither, so a missing
reading or a one-off spike cannot make the runtime flap between designs.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read()
    except OSError:
        return None


class CoreLoad:
    """Busy fraction of each CPU core over the interval since the previous call (/proc/stat),
    and the part of it this process caused (/proc/self/stat), so that the load *other* work puts
    on a core can be told apart from our own inference."""

    def __init__(self) -> None:
        self._prev = self._snapshot()
        self._own_prev = self._own()
        self._t_prev = time.monotonic()

    @staticmethod
    def _snapshot() -> dict[int, tuple[int, int]] | None:
        text = _read("/proc/stat")
        if text is None:
            return None
        out = {}
        for line in text.splitlines():
            if line.startswith("cpu") and line[3:4].isdigit():
                parts = line.split()
                vals = [int(x) for x in parts[1:]]
                idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
                out[int(parts[0][3:])] = (sum(vals[:8]), idle)
        return out

    @staticmethod
    def _own() -> float | None:
        text = _read("/proc/self/stat")
        if text is None:
            return None
        f = text.rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, seconds

    def read(self, own_cores: tuple[int, ...] = ()) -> tuple[dict[int, float], dict[int, float]]:
        """(total busy fraction per core, busy fraction from other processes per core).

        Our own CPU time is attributed evenly to ``own_cores`` (the cores the running design is
        pinned to). Returns empty dicts where /proc is unavailable or no time has passed.
        """
        snap, own, t = self._snapshot(), self._own(), time.monotonic()
        prev, own_prev, t_prev = self._prev, self._own_prev, self._t_prev
        self._prev, self._own_prev, self._t_prev = snap, own, t
        if snap is None or prev is None:
            return {}, {}
        busy = {}
        for c, (tot, idle) in snap.items():
            if c in prev:
                dt, di = tot - prev[c][0], idle - prev[c][1]
                busy[c] = (dt - di) / dt if dt > 0 else math.nan
        other = dict(busy)
        if own is not None and own_prev is not None and own_cores and t > t_prev:
            share = (own - own_prev) / (t - t_prev) / len(own_cores)
            for c in own_cores:
                if c in other and other[c] == other[c]:
                    other[c] = max(0.0, other[c] - share)
        return busy, other


def meminfo_mb() -> dict[str, float]:
    """/proc/meminfo in MB (empty where unreadable)."""
    text = _read("/proc/meminfo")
    out = {}
    for line in (text or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0]) / 1024
    return out


def mem_available_mb() -> float | None:
    """MemAvailable from /proc/meminfo, in MB (None if unreadable)."""
    return meminfo_mb().get("MemAvailable")


def anon_mb(info: dict[str, float] | None = None) -> float | None:
    """Memory held by processes system-wide (AnonPages + Shmem), in MB, from ``info`` (a
    :func:`meminfo_mb` reading) or a fresh reading. Rises and falls with a memory-hungry process
    at once, unlike MemAvailable on some VMs (this machine's returns freed memory at ~16 MB/s)."""
    info = meminfo_mb() if info is None else info
    held = [info[k] for k in ("AnonPages", "Shmem") if k in info]
    return sum(held) if held else None


def rss_mb() -> float | None:
    """This process's resident memory in MB."""
    text = _read("/proc/self/statm")
    if text is None:
        return None
    return int(text.split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def temperature_c() -> float | None:
    """The hottest thermal zone in degrees C (None where the system exposes none, e.g. VMs)."""
    temps = []
    for p in Path("/sys/class/thermal").glob("thermal_zone*/temp"):
        v = _read(str(p))
        if v and v.strip().lstrip("-").isdigit():
            temps.append(int(v) / 1000)
    return max(temps) if temps else None


@dataclass
class Debounce:
    """A flag with hysteresis over a stream of boolean readings (None/NaN readings are skipped)."""

    raise_after: int = 3
    clear_after: int = 6
    state: bool = False
    _run: int = field(default=0, repr=False)

    def update(self, reading: bool | float | None) -> bool:
        if reading is None or (isinstance(reading, float) and math.isnan(reading)):
            return self.state
        if bool(reading) != self.state:
            self._run += 1
            if self._run >= (self.clear_after if self.state else self.raise_after):
                self.state, self._run = bool(reading), 0
        else:
            self._run = 0
        return self.state

    def force(self, state: bool) -> None:
        self.state, self._run = state, 0
