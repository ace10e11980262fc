"""Events for runtime experiments: real CPU stress and memory pressure, and injected ones.

Syntax (``workbench run --inject``): comma-separated ``SECONDS:KIND[:ARG[:ARG]]``, e.g.
``2:stress:0, 6:unstress, 8:memory:2048, 12:unmemory, 14:slow:CPU[0]:3, 18:unslow``.

| kind | what happens | real or injected |
|---|---|---|
| ``stress:CORES`` | a busy-looping process pinned to CORES (``0`` or ``0+1``) | real |
| ``unstress`` | stop every stress process | real |
| ``memory:MB`` | a process holding MB of touched memory | real |
| ``unmemory`` | free it | real |
| ``slow:PROC:FACTOR`` | invokes on PROC's cores take FACTOR times longer (busy), like DVFS throttling | injected |
| ``unslow`` | end every slowdown | injected |
| ``flag:PROC`` / ``unflag:PROC`` | declare / clear an issue on a processor (e.g. GPU, DSP) | injected |
| ``memflag`` / ``unmemflag`` | declare / clear a memory issue | injected |
| ``criteria:TASK:TEXT`` | replace TASK's multi-exit criteria, e.g. ``4:criteria:h1:exit_number == 2`` | real |
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from dataclasses import dataclass

from .. import processors
from ..errors import InputError
from .monitor import meminfo_mb

_DIGITS = re.compile(r"[0-9]{1,9}")
KINDS = {"stress": 1, "unstress": 0, "memory": 1, "unmemory": 0, "slow": 2, "unslow": 0,
         "flag": 1, "unflag": 1, "memflag": 0, "unmemflag": 0, "criteria": 2}


@dataclass(frozen=True)
class Event:
    at: float
    kind: str
    args: tuple[str, ...] = ()

    def __str__(self) -> str:
        return ":".join((self.kind, *self.args))


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets (``CPU[0,1]`` stays whole)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [p.strip() for p in out if p.strip()]


#: The largest slowdown ``slow:PROC:FACTOR`` may inject (a larger one is a stalled core).
MAX_SLOWDOWN = 1000.0


def parse_events(text: str) -> list[Event]:
    """Parse ``--inject`` text into events sorted by time; a bad item names itself.

    Everything an event needs is checked here, before the run starts: a finite time, cores this
    machine has, megabytes it can hold, a finite slowdown."""
    events = []
    for item in _split_top(text):
        parts = item.split(":")
        where = f"--inject item {item!r}"
        try:
            at = float(parts[0])
        except ValueError:
            raise InputError("must start with the time in seconds", where=where,
                             value=parts[0]) from None
        if not math.isfinite(at) or at < 0 or len(parts) < 2:
            raise InputError("expected SECONDS:KIND[:ARG] with a finite time >= 0", where=where,
                             value=item)
        kind, args = parts[1], tuple(parts[2:])
        if kind not in KINDS:
            raise InputError(f"unknown event kind; use one of {', '.join(KINDS)}", where=where,
                             value=kind)
        if len(args) != KINDS[kind]:
            raise InputError(f"'{kind}' takes {KINDS[kind]} argument(s)", where=where, value=args)
        if kind == "stress":
            if not all(_DIGITS.fullmatch(c) for c in args[0].split("+")):
                raise InputError("cores must look like 0 or 0+1", where=where, value=args[0])
            parse_cores(args[0], where=where)
        if kind == "memory":
            total = int(meminfo_mb().get("MemTotal", 1 << 20))  # unreadable: no real bound
            if not _DIGITS.fullmatch(args[0]) or not 1 <= int(args[0]) <= total:
                raise InputError(f"memory takes whole megabytes, 1..{total} (this machine's RAM)",
                                 where=where, value=args[0])
        if kind == "criteria":
            from .criteria import parse_criteria

            parse_criteria(args[1])  # its error names the bad part of the criteria
        if kind in ("slow", "flag", "unflag") and not processors.is_processor(args[0]):
            raise InputError("not a processor name like CPU[0] or GPU", where=where, value=args[0])
        if kind == "slow":
            cores = processors.cores(args[0])
            if cores is not None:
                _on_this_machine(set(cores), where=where, value=args[0])
            try:
                factor = float(args[1])
            except ValueError:
                factor = math.nan
            if not 1 <= factor <= MAX_SLOWDOWN:  # also refuses nan and inf
                raise InputError(f"slowdown factor must be a number 1..{MAX_SLOWDOWN:g}",
                                 where=where, value=args[1])
        events.append(Event(at, kind, args))
    return sorted(events, key=lambda e: e.at)


def start_stress(cores: set[int]) -> subprocess.Popen:
    """A real busy-looping process pinned to ``cores``."""
    code = f"import os\nos.sched_setaffinity(0, {sorted(cores)!r})\nwhile True:\n    pass\n"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)


def start_memory_hog(mb: int) -> subprocess.Popen:
    """A real process that allocates and touches ``mb`` MB, then waits."""
    code = f"import time\nb = b'\\x01' * ({int(mb)} << 20)\ntime.sleep(1e9)\n"
    # Not waiting for the allocation: the monitor thread that injects it must not stall.
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
        if p.stdout:
            p.stdout.close()
    procs.clear()


def _on_this_machine(cores: set[int], *, where: str, value: str) -> None:
    have = processors.machine_cores()
    if not cores <= have:
        raise InputError(f"this machine has cores {','.join(map(str, sorted(have)))}",
                         where=where, value=value)


def parse_cores(arg: str, *, where: str = "stress") -> set[int]:
    cores = {int(c) for c in arg.split("+")}
    _on_this_machine(cores, where=where, value=arg)
    return cores


class EventInjector:
    """Applies events outside the serving path: real stress and memory-hog processes, injected
    slowdowns (per core) and forced flags, which the device monitor adds to its own readings."""

    def __init__(self) -> None:
        self.stress: list[subprocess.Popen] = []
        self.memory: list[subprocess.Popen] = []
        self.slow: dict[int, float] = {}  # core -> factor its invokes take longer
        self.forced: dict[str, bool] = {}  # processor -> issue declared
        self.forced_memory = False

    def apply(self, event: Event) -> None:
        k, a = event.kind, event.args
        if k == "stress":
            self.stress.append(start_stress(parse_cores(a[0])))
        elif k == "unstress":
            stop(self.stress)
        elif k == "memory":
            self.memory.append(start_memory_hog(int(a[0])))
        elif k == "unmemory":
            stop(self.memory)
        elif k == "slow":
            for c in processors.cores(a[0]) or ():
                self.slow[c] = float(a[1])
        elif k == "unslow":
            self.slow.clear()
        elif k == "flag":
            self.forced[a[0]] = True
        elif k == "unflag":
            self.forced.pop(a[0], None)
        elif k == "memflag":
            self.forced_memory = True
        elif k == "unmemflag":
            self.forced_memory = False

    def slowdown(self, cores: frozenset[int] | set[int]) -> float:
        """The factor an invoke on ``cores`` is slowed by (the slowest core counts)."""
        return max((self.slow.get(c, 1.0) for c in cores), default=1.0)

    def stop(self) -> None:
        """End every process this injector started."""
        stop(self.stress)
        stop(self.memory)
