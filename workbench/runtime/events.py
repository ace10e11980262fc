"""Events for runtime experiments: real CPU stress and memory pressure, and injected ones.

Syntax (``workbench run --inject``): comma-separated ``SECONDS:KIND[:ARG[:ARG]]``, e.g.
``2:stress:0, 6:unstress, 8:memory:2048, 12:unmemory, 14:slow:CPU[0]:3, 18:unslow``.

``throttle`` is real CPU throttling, the closest this machine has to a phone engine throttled by
DVFS (there is no cpufreq in the VM): a cgroup-v1 ``cpu`` group with a CFS bandwidth quota, into
which the runtime's serving thread is moved while it serves on that engine (see
:class:`EventInjector`). A quota stops the thread in bursts rather than slowing each invoke, so
the runtime sees it in its requests' latency (``RuntimeOptions.request_slo_ms``,
``--request-slo-ms``), not in the invoke time. It needs root and the cgroup-v1 cpu controller;
without them the event is refused before the run with one line saying which is missing.

| kind | what happens | real or injected |
|---|---|---|
| ``stress:CORES`` | a busy-looping process pinned to CORES (``0`` or ``0+1``) | real |
| ``unstress`` | stop every stress process | real |
| ``memory:MB`` | a process holding MB of touched memory | real |
| ``unmemory`` | free it | real |
| ``slow:PROC:FACTOR`` | invokes on PROC's cores take FACTOR times longer (busy), like DVFS throttling | injected |
| ``unslow`` | end every slowdown | injected |
| ``throttle:PROC:PCT`` | engine PROC (CPU core set; ``serving``: the one serving) gets PCT% of a core | real |
| ``unthrottle`` | end every throttle (threads back to their group, groups removed) | real |
| ``flag:PROC`` / ``unflag:PROC`` | declare / clear an issue on a processor (e.g. GPU, DSP) | injected |
| ``memflag`` / ``unmemflag`` | declare / clear a memory issue | injected |
| ``criteria:TASK:TEXT`` | replace TASK's multi-exit criteria, e.g. ``4:criteria:h1:exit_number == 2`` | real |
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import threading
from dataclasses import dataclass

from .. import processors
from ..errors import InputError
from .monitor import meminfo_mb

# The cgroup groups behind ``throttle`` events; their names stay importable from here.
from .throttle import CPU_CGROUP as CPU_CGROUP
from .throttle import MAX_THROTTLE_PCT as MAX_THROTTLE_PCT
from .throttle import MIN_THROTTLE_PCT as MIN_THROTTLE_PCT
from .throttle import THROTTLE_PERIOD_US as THROTTLE_PERIOD_US
from .throttle import CpuThrottle as CpuThrottle
from .throttle import _own_group as _own_group
from .throttle import throttle_problem as throttle_problem

_DIGITS = re.compile(r"[0-9]{1,9}")
KINDS = {"stress": 1, "unstress": 0, "memory": 1, "unmemory": 0, "slow": 2, "unslow": 0,
         "flag": 1, "unflag": 1, "memflag": 0, "unmemflag": 0, "criteria": 2,
         "throttle": 2, "unthrottle": 0}


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
        if kind == "throttle":
            check_throttle(args[0], args[1], where=where)
        events.append(Event(at, kind, args))
    return sorted(events, key=lambda e: e.at)


def start_stress(cores: set[int]) -> subprocess.Popen:
    """A real busy-looping process pinned to ``cores``."""
    code = f"import os\nos.sched_setaffinity(0, {sorted(cores)!r})\nwhile True:\n    pass\n"
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL)


#: The memory hog allocates in chunks of this many MB, resting after each for this many times
#: the chunk took: a memory event must not be a CPU event too. Touching 512 MB at once is a
#: quarter second of one core at 100%, which the monitor rightly reads as another process
#: loading that core (on this 2-core machine it flagged every engine before the memory flag);
#: paced, the hog keeps under 40% of a core (the load threshold is 50%) and has its 512 MB in
#: about 0.6 s, as an app's memory grows.
HOG_CHUNK_MB, HOG_REST = 8, 1.5


def start_memory_hog(mb: int) -> subprocess.Popen:
    """A real process that allocates and touches ``mb`` MB (paced, see :data:`HOG_CHUNK_MB`),
    then waits."""
    full, rest = divmod(int(mb), HOG_CHUNK_MB)
    sizes = [HOG_CHUNK_MB] * full + ([rest] if rest else [])
    # MAP_POPULATE: the kernel faults the pages in at once, the cheapest way to hold them.
    code = ("import mmap, time\nheld = []\n"
            "flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, 'MAP_POPULATE', 0)\n"
            f"for mb in {sizes!r}:\n"
            "    t = time.perf_counter()\n"
            "    m = mmap.mmap(-1, mb << 20, flags=flags)\n"
            "    m[::4096] = b'\\x01' * ((mb << 20) // 4096)\n"
            "    held.append(m)\n"
            f"    time.sleep({HOG_REST!r} * (time.perf_counter() - t))\n"
            "time.sleep(1e9)\n")
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


# --- throttle events (the groups themselves: :mod:`.throttle`) -------------------------------

#: ``throttle:serving:PCT`` throttles whichever engine is serving when the event happens.
SERVING = "serving"


def check_throttle(proc: str, pct: str, *, where: str) -> float:
    """Check a ``throttle:PROC:PCT`` event's arguments and this machine; returns the percent."""
    if proc != SERVING:
        if not processors.is_processor(proc) or processors.cores(proc) is None:
            raise InputError("throttle confines CPU time, so it takes a CPU core set like CPU[0] "
                             f"or CPU[0,1], or '{SERVING}' (the engine serving when it starts)",
                             where=where, value=proc)
        _on_this_machine(set(processors.cores(proc) or ()), where=where, value=proc)
    try:
        value = float(pct)
    except ValueError:
        value = math.nan
    if not MIN_THROTTLE_PCT <= value <= MAX_THROTTLE_PCT:  # also refuses nan and inf
        raise InputError(f"throttle takes a percent of one core, {MIN_THROTTLE_PCT:g}.."
                         f"{MAX_THROTTLE_PCT:g} (the kernel's least quota is 1 ms of a "
                         f"{THROTTLE_PERIOD_US // 1000} ms period)", where=where, value=pct)
    problem = throttle_problem()
    if problem is not None:
        raise InputError(problem, where=where)
    return value



class EventInjector:
    """Applies events outside the serving path: real stress and memory-hog processes, real CPU
    throttles, injected slowdowns (per core) and forced flags, which the device monitor adds to
    its own readings.

    A throttle confines an *engine*, the analog of a phone's NNAPI or GPU throttled by DVFS while
    the others run at full speed. Here an engine is a CPU core set (``CPU[0]``, ``CPU[1]``,
    ``CPU[0,1]``) and what runs on it is the serving thread pinned to that set: the runtime tells
    the injector whenever a serving thread pins itself (:meth:`serving_on`), and a thread pinned
    to a throttled engine's exact core set is moved into that engine's cgroup; when it moves to
    another engine's cores it goes back to its own group at full speed. So the quota is real
    (the kernel stops the thread when it has used its share, and counts it in cpu.stat) and
    follows the engine, not the thread. Engines that share a core are throttled independently,
    as a phone's separate engines are; DVFS on one core would slow every core set using it (that
    is what ``slow`` emulates). LiteRT's own worker threads (configurations with 2 threads) are
    not moved, only the thread that invokes.
    """

    def __init__(self) -> None:
        self.stress: list[subprocess.Popen] = []
        self.memory: list[subprocess.Popen] = []
        self.slow: dict[int, float] = {}  # core -> factor its invokes take longer
        self.forced: dict[str, bool] = {}  # processor -> issue declared
        self.forced_memory = False
        self.throttles: dict[frozenset[int], CpuThrottle] = {}  # engine cores -> its group
        #: What each throttle did (engine, percent, the kernel's cpu.stat when it ended).
        self.throttle_log: list[dict] = []
        self._serving: dict[int, frozenset[int]] = {}  # serving thread id -> cores it is on
        self._names: dict[frozenset[int], str] = {}  # cores -> the processor name served there
        self._inside: dict[int, CpuThrottle] = {}  # thread id -> the group it is in now
        self._throttle_lock = threading.Lock()

    def apply(self, event: Event) -> list[str] | None:
        """Apply ``event``; a throttle returns the engines it throttled."""
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
        elif k == "throttle":
            return self.throttle(a[0], float(a[1]))
        elif k == "unthrottle":
            self.unthrottle()
        elif k == "flag":
            self.forced[a[0]] = True
        elif k == "unflag":
            self.forced.pop(a[0], None)
        elif k == "memflag":
            self.forced_memory = True
        elif k == "unmemflag":
            self.forced_memory = False
        return None

    def slowdown(self, cores: frozenset[int] | set[int]) -> float:
        """The factor an invoke on ``cores`` is slowed by (the slowest core counts)."""
        return max((self.slow.get(c, 1.0) for c in cores), default=1.0)

    # --- real throttling ------------------------------------------------------------------
    def throttle(self, proc: str, pct: float) -> list[str]:
        """Give engine ``proc`` ``pct`` % of one core (replacing a throttle it already has) and
        move the serving threads on it into the group. ``proc`` ``serving``: every engine a
        serving thread is on right now (the one the stream heats up, as on the phone). Returns
        the engines throttled."""
        with self._throttle_lock:
            if proc == SERVING:
                engines = {c: self._names.get(c, processors.cpu_set(sorted(c)))
                           for c in self._serving.values()}
            else:
                engines = {frozenset(processors.cores(proc) or ()): proc}
            for engine, name in engines.items():
                old = self.throttles.pop(engine, None)
                if old is not None:
                    self._end(old)
                self.throttles[engine] = CpuThrottle(pct, engine=name)
            for tid in list(self._serving):
                self._place(tid)
        return sorted(engines.values())

    def serving_on(self, tid: int, cores: frozenset[int] | set[int], processor: str = ""
                   ) -> None:
        """A serving thread (native id ``tid``) has pinned itself to ``cores`` (the engine
        ``processor``): put it in that engine's throttle group, or back in its own group if the
        engine is not throttled."""
        with self._throttle_lock:
            self._serving[tid] = frozenset(cores)
            if processor:
                self._names[frozenset(cores)] = processor
            self._place(tid)

    def _place(self, tid: int) -> None:
        want = self.throttles.get(self._serving[tid])
        have = self._inside.get(tid)
        if want is have:
            return
        alive = want.add(tid) if want is not None else have.release(tid)  # type: ignore[union-attr]
        if not alive:
            self._serving.pop(tid, None)
            self._inside.pop(tid, None)
        elif want is None:
            self._inside.pop(tid, None)
        else:
            self._inside[tid] = want

    def _end(self, group: CpuThrottle) -> None:
        for tid in [t for t, g in self._inside.items() if g is group]:
            del self._inside[tid]
        st = group.remove()
        self.throttle_log.append({
            "engine": group.engine, "pct": group.pct, "period_us": THROTTLE_PERIOD_US,
            "quota_us": group.quota_us, "nr_periods": st.get("nr_periods"),
            "nr_throttled": st.get("nr_throttled"),
            "throttled_ms": None if "throttled_time" not in st else st["throttled_time"] / 1e6})

    def unthrottle(self) -> None:
        """End every throttle: threads back to their own group, every group removed (each one
        is tried even if another fails)."""
        with self._throttle_lock:
            failed: OSError | None = None
            for group in list(self.throttles.values()):
                try:
                    self._end(group)
                except OSError as e:
                    failed = failed or e
            self.throttles.clear()
            self._inside.clear()
        if failed is not None:
            raise failed

    def stop(self) -> None:
        """End every process this injector started and every throttle it made."""
        try:
            self.unthrottle()
        finally:
            stop(self.stress)
            stop(self.memory)
