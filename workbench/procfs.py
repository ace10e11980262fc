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
