"""Readings of this process from Linux's ``/proc``: one home for the probes that measure memory.
Standard library only."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), which every measurement records: the machine
    changes from day to day."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def status_kb(field: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``; ``VmHWM``, the kernel's peak resident
    set, which writing ``5`` to ``/proc/self/clear_refs`` resets)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (someone else's counts): what tells a dead writer's
    leftovers (staging files, memory groups, swap files) from a live one's."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def rollup_rss_kb(pid: int) -> int | None:
    """Process ``pid``'s resident set in kB as ``pmap -x`` totals it: the sum of every mapping's
    ``Rss`` (``/proc/PID/smaps_rollup``, which the kernel sums for us: one read, no fork). None
    once the process is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def read_bytes() -> int | None:
    """Bytes this process has caused to be read from storage (``read_bytes`` of
    ``/proc/self/io``: block-layer reads, not reads served by the page cache). None where the
    kernel does not account I/O."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None
