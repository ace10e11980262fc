"""Real CPU throttling: a cgroup-v1 ``cpu`` group with a CFS bandwidth quota, the closest this
machine has to a phone engine throttled by DVFS (see :mod:`.events`, whose ``throttle`` events
make these groups). Whether it can be done here (:func:`throttle_problem`: the controller
mounted, the hierarchy writable), the group itself (:class:`CpuThrottle`), and the clean-up of
groups a killed run left behind. Standard library only."""

from __future__ import annotations

import atexit
import errno
import itertools
import os
import re
import threading

from ..errors import InputError
from ..procfs import alive

#: Where the cgroup-v1 ``cpu`` controller is mounted.
CPU_CGROUP = "/sys/fs/cgroup/cpu"
#: The CFS period of a throttle group. Bandwidth control is a duty cycle, not a lower clock: a
#: group that has used its quota is stopped until the period ends. A short period keeps each stall
#: short (8 ms at 20%, where the kernel's default 100 ms period would stop the thread for 80 ms),
#: which is as close to DVFS's uniform slowdown as a quota gets.
THROTTLE_PERIOD_US = 10_000
#: The kernel's smallest quota is 1 ms, so with a 10 ms period the least bandwidth is 10%; 100%
#: would be no throttle.
MIN_THROTTLE_PCT, MAX_THROTTLE_PCT = 10.0, 99.0
#: Throttle groups are named after the process that made them, so a group left behind by a
#: killed process is recognised (and removed) by the next one.
_GROUP = re.compile(r"workbench-throttle-([0-9]+)-[0-9]+")


def _own_group(root: str) -> str:
    """The folder of this process's group in the cpu hierarchy mounted at ``root``."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return root
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and "cpu" in parts[1].split(","):
            return os.path.join(root, parts[2].lstrip("/"))
    return root


def throttle_problem(root: str | None = None) -> str | None:
    """Why a real throttle cannot be made here (None when it can): the controller is missing or
    its hierarchy is not writable (it takes root)."""
    root = CPU_CGROUP if root is None else root
    if not os.path.isfile(os.path.join(root, "cpu.cfs_quota_us")):
        return (f"throttle needs the cgroup-v1 cpu controller, which is not mounted at {root} "
                "(no cpu.cfs_quota_us there)")
    base = _own_group(root)
    if not os.access(base, os.W_OK):
        return f"throttle needs root to create a cgroup in {base} (running as uid {os.geteuid()})"
    return None


def _write(path: str, value: object) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(f"{value}\n")


class CpuThrottle:
    """A cgroup-v1 cpu group with a CFS quota of ``pct`` % of one core per
    :data:`THROTTLE_PERIOD_US`, made under this process's own group (so any limit above still
    holds). Threads go in one at a time (cgroup v1 moves just the thread whose TID is written to
    ``tasks``) and back to the group they came from; :meth:`remove` takes every thread out and
    deletes the group, also at interpreter exit if a run never got to it."""

    _seq = itertools.count()
    _live: set["CpuThrottle"] = set()
    _live_lock = threading.Lock()
    _hooked = False

    def __init__(self, pct: float, *, engine: str = "", root: str | None = None) -> None:
        self.engine = engine
        self.root = CPU_CGROUP if root is None else root
        problem = throttle_problem(self.root)
        if problem is not None:
            raise InputError(problem, where="throttle")
        self.pct = float(pct)
        self.parent = _own_group(self.root)
        _remove_stale(self.parent)
        self.path = os.path.join(self.parent, f"workbench-throttle-{os.getpid()}-{next(self._seq)}")
        self.quota_us = max(1000, round(self.pct / 100 * THROTTLE_PERIOD_US))
        self.final_stat: dict[str, int] = {}
        os.mkdir(self.path)
        with CpuThrottle._live_lock:
            CpuThrottle._live.add(self)
            if not CpuThrottle._hooked:
                atexit.register(_remove_live)
                CpuThrottle._hooked = True
        try:
            _write(os.path.join(self.path, "cpu.cfs_period_us"), THROTTLE_PERIOD_US)
            _write(os.path.join(self.path, "cpu.cfs_quota_us"), self.quota_us)
        except BaseException:
            self.remove()
            raise

    def _move(self, group: str, tid: int) -> bool:
        """Write ``tid`` into ``group``; False when the thread has ended."""
        try:
            _write(os.path.join(group, "tasks"), tid)
        except OSError as e:
            if e.errno == errno.ESRCH:
                return False
            raise
        return True

    def add(self, tid: int) -> bool:
        """Confine thread ``tid`` (False: it has ended)."""
        return self._move(self.path, tid)

    def release(self, tid: int) -> bool:
        """Give thread ``tid`` back to the group it came from (False: it has ended)."""
        return self._move(self.parent, tid)

    def tids(self) -> list[int]:
        try:
            with open(os.path.join(self.path, "tasks"), encoding="ascii") as fh:
                return [int(x) for x in fh.read().split()]
        except OSError:
            return []

    def stat(self) -> dict[str, int]:
        """The kernel's count for the group: nr_periods, nr_throttled, throttled_time (ns)."""
        try:
            with open(os.path.join(self.path, "cpu.stat"), encoding="ascii") as fh:
                pairs = [line.split() for line in fh]
        except OSError:
            return dict(self.final_stat)
        return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[1].isdigit()}

    def remove(self) -> dict[str, int]:
        """Move every thread back and delete the group; returns its final cpu.stat."""
        if not os.path.isdir(self.path):
            return self.final_stat
        self.final_stat = self.stat()
        for _ in range(5):
            for tid in self.tids():
                try:
                    self.release(tid)
                except OSError:
                    pass
            try:
                os.rmdir(self.path)
                break
            except FileNotFoundError:
                break
            except OSError as e:  # EBUSY: a thread was still inside; move it and try again
                if e.errno != errno.EBUSY:
                    raise
        with CpuThrottle._live_lock:
            CpuThrottle._live.discard(self)
        return self.final_stat


def _remove_live() -> None:
    """At exit: remove every group this process still holds."""
    for t in list(CpuThrottle._live):
        try:
            t.remove()
        except OSError:
            pass


def _remove_stale(parent: str) -> None:
    """Remove throttle groups whose process is gone (a killed run); they are empty."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        m = _GROUP.fullmatch(name)
        if m and not alive(int(m.group(1))):
            try:
                os.rmdir(os.path.join(parent, name))
            except OSError:
                pass

