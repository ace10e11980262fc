"""Readings of this process from Linux's ``/proc``: one home for the probes that measure memory.
Standard library only."""

from __future__ import annotations

from pathlib import Path


def status_kb(field: str) -> int:
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``; ``VmHWM``, the kernel's peak resident
    set, which writing ``5`` to ``/proc/self/clear_refs`` resets)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")
