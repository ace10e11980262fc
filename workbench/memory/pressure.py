"""Real memory pressure from the kernel: memory cgroups, swap files and cold page caches.

A 24 GiB machine never pages on its own. Pressure comes from a memory control group whose limit
is below what a run needs: the kernel reclaims page cache, swaps (when a swap file is on) or kills
the process, and charges the time to the run. Everything here is created by root and removed
afterwards, also when the run fails or the harness itself is killed (names carry the creating
process's id, and the next harness removes what a dead one left).

- :func:`support` says what this machine allows and, when it cannot, why (never faked).
- :func:`memory_group` is a cgroup with a limit (cgroup v1 ``memory.limit_in_bytes`` and
  ``memory.memsw.limit_in_bytes``, or v2 ``memory.max`` and ``memory.swap.max``).
- :func:`swap_file` turns on a swap file (``mkswap`` + ``swapon``) for the length of a block.
- :func:`drop_page_cache` makes the next read of files cold (the kernel's ``drop_caches`` knob as
  root, else ``posix_fadvise(DONTNEED)`` on the files named).
- :func:`run_limited` runs a command inside a fresh group and returns what the kernel saw.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import WorkbenchError
from ..procfs import alive

V1_ROOT = Path("/sys/fs/cgroup/memory")
PREFIX = "workbench"  # groups are workbench.PID.N, swap files .workbench-swap.PID.N
_serial = itertools.count()


class PressureUnavailable(WorkbenchError):
    """This machine cannot apply real memory pressure (says why); experiments skip, never fake."""


@dataclass(frozen=True)
class Support:
    """What this machine allows.

    Attributes:
        cgroup: ``v1``, ``v2`` or None (no memory controller this process may use).
        root: The memory hierarchy's mount point.
        swap: Whether swap files can be turned on (root with ``mkswap``/``swapon``).
        drop_caches: Whether the kernel's ``drop_caches`` knob is writable (root).
        why_not: Why ``cgroup`` is None.
    """

    cgroup: str | None
    root: Path | None
    swap: bool
    drop_caches: bool
    why_not: str = ""


def _v2_root() -> Path | None:
    """The cgroup2 mount whose controllers include memory, if any."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        parts = line.split()
        if len(parts) > 2 and parts[2] == "cgroup2":
            root = Path(parts[1])
            try:
                if "memory" in (root / "cgroup.controllers").read_text().split():
                    return root
            except OSError:
                continue
    return None


def _which(tool: str) -> bool:
    return any(os.access(Path(d) / tool, os.X_OK)
               for d in os.environ.get("PATH", "").split(os.pathsep) + ["/sbin", "/usr/sbin"])


def support() -> Support:
    """What this machine allows (cheap: reads a few files)."""
    root_user = os.geteuid() == 0
    swap = root_user and _which("mkswap") and _which("swapon") and Path("/proc/swaps").exists()
    drop = root_user and os.access("/proc/sys/vm/drop_caches", os.W_OK)
    if not root_user:
        return Support(None, None, False, False, "memory cgroups need root")
    if (V1_ROOT / "memory.limit_in_bytes").exists() and os.access(V1_ROOT, os.W_OK):
        return Support("v1", V1_ROOT, swap, drop)
    v2 = _v2_root()
    if v2 is not None and os.access(v2, os.W_OK):
        return Support("v2", v2, swap, drop)
    return Support(None, None, swap, drop,
                   "no writable memory cgroup hierarchy (`mount | grep cgroup` shows none "
                   "with the memory controller)")


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _pids(group: Path) -> list[int]:
    try:
        return [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def _keyed_ints(path: Path) -> dict[str, int]:
    """A kernel file of ``name value`` lines (``memory.stat``, ``memory.events``,
    ``memory.oom_control``, ``/proc/vmstat``) as a dict; unreadable -> empty."""
    out = {}
    try:
        for line in path.read_text().splitlines():
            k, _, v = line.partition(" ")
            if v.strip().lstrip("-").isdigit():
                out[k] = int(v)
    except OSError:
        pass
    return out


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return None if text == "max" else int(text)


class MemoryGroup:
    """One memory cgroup made by :func:`memory_group`. Use :meth:`add` (or ``preexec``) to
    put a process in it; readings are the kernel's counters for the whole group."""

    def __init__(self, path: Path, version: str):
        self.path, self.version = path, version

    # -- membership ---------------------------------------------------------------------------
    def add(self, pid: int) -> None:
        _write(self.path / "cgroup.procs", str(pid))

    def preexec(self) -> None:
        """For ``subprocess.Popen(preexec_fn=...)``: the child joins the group before it runs
        anything (so its first allocation is already charged)."""
        _write(self.path / "cgroup.procs", str(os.getpid()))

    def pids(self) -> list[int]:
        return _pids(self.path)

    # -- limits and readings ------------------------------------------------------------------
    def limit(self, limit_bytes: int, *, swap_bytes: int | None = 0) -> None:
        """Cap memory at ``limit_bytes``; swap at ``swap_bytes`` (0: none, None: no cap)."""
        if self.version == "v1":
            _write(self.path / "memory.limit_in_bytes", str(limit_bytes))
            memsw = self.path / "memory.memsw.limit_in_bytes"
            if memsw.exists():  # memory + swap: limit + swap_bytes
                _write(memsw, "-1" if swap_bytes is None else str(limit_bytes + swap_bytes))
            elif swap_bytes == 0:
                _write(self.path / "memory.swappiness", "0")
        else:
            _write(self.path / "memory.max", str(limit_bytes))
            swap = self.path / "memory.swap.max"
            if swap.exists():
                _write(swap, "max" if swap_bytes is None else str(swap_bytes))

    def peak_bytes(self) -> int | None:
        """The group's peak charge (anonymous memory and page cache), if the kernel keeps it."""
        name = "memory.max_usage_in_bytes" if self.version == "v1" else "memory.peak"
        return _read_int(self.path / name)

    def stat(self) -> dict[str, int]:
        """``memory.stat`` as a dict (the kernel's names)."""
        return _keyed_ints(self.path / "memory.stat")

    def oom_kills(self) -> int:
        """Processes the kernel killed for this group's limit (v1 reads ``oom_kill`` of
        ``memory.oom_control``, v2 ``memory.events``)."""
        name = "memory.oom_control" if self.version == "v1" else "memory.events"
        return _keyed_ints(self.path / name).get("oom_kill", 0)

    # -- removal ------------------------------------------------------------------------------
    def remove(self, *, timeout: float = 10.0) -> None:
        """Kill what is left in the group and remove it (a group with processes cannot go)."""
        _remove_group(self.path, timeout=timeout)


def _remove_group(path: Path, *, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while path.exists():
        pids = _pids(path)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise WorkbenchError(f"could not remove memory group {path} "
                                     f"(processes {pids} remain)") from None
            time.sleep(0.02)


def _sweep_groups(root: Path) -> None:
    """Remove groups a killed harness left (its pid gone)."""
    pat = re.compile(rf"{PREFIX}\.([0-9]+)\.[0-9]+$")
    with contextlib.suppress(OSError):
        for e in os.scandir(root):
            m = pat.match(e.name)
            if m and e.is_dir() and not alive(int(m.group(1))):
                with contextlib.suppress(WorkbenchError):
                    _remove_group(Path(e.path))


def _require(what: str) -> Support:
    s = support()
    if s.cgroup is None:
        raise PressureUnavailable(f"cannot {what}: {s.why_not}")
    return s


@contextlib.contextmanager
def memory_group(limit_bytes: int, *, swap_bytes: int | None = 0) -> Iterator[MemoryGroup]:
    """A fresh memory cgroup capped at ``limit_bytes`` (swap capped at ``swap_bytes``), removed
    with every process still in it when the block ends, however it ends.

    Raises:
        PressureUnavailable: no memory cgroup this process may create (says why).
    """
    if not isinstance(limit_bytes, int) or limit_bytes < 1 << 20:
        raise WorkbenchError(f"a memory limit must be at least 1 MiB, got {limit_bytes!r}")
    s = _require("create a memory group")
    assert s.root is not None and s.cgroup is not None
    _sweep_groups(s.root)
    if s.cgroup == "v2":  # children may use the memory controller only if the parent says so
        with contextlib.suppress(OSError):
            _write(s.root / "cgroup.subtree_control", "+memory")
    path = s.root / f"{PREFIX}.{os.getpid()}.{next(_serial)}"
    path.mkdir()
    group = MemoryGroup(path, s.cgroup)
    try:
        group.limit(limit_bytes, swap_bytes=swap_bytes)
        yield group
    finally:
        group.remove()


def _sweep_swap(folder: Path) -> None:
    pat = re.compile(rf"\.{PREFIX}-swap\.([0-9]+)\.[0-9]+$")
    try:
        active = {ln.split()[0] for ln in Path("/proc/swaps").read_text().splitlines()[1:]}
    except OSError:
        active = set()
    with contextlib.suppress(OSError):
        for e in os.scandir(folder):
            m = pat.match(e.name)
            if m and not alive(int(m.group(1))):
                if e.path in active:
                    subprocess.run(["swapoff", e.path], capture_output=True)
                with contextlib.suppress(OSError):
                    os.unlink(e.path)


@contextlib.contextmanager
def swap_file(size_bytes: int, *, folder: str | Path = "/var/tmp") -> Iterator[Path]:
    """A swap file of ``size_bytes`` turned on for the block, then off and deleted.

    Raises:
        PressureUnavailable: not root, or ``mkswap``/``swapon`` missing or refused.
    """
    if not support().swap:
        raise PressureUnavailable("cannot turn on a swap file: needs root and mkswap/swapon")
    folder = Path(folder)
    _sweep_swap(folder)
    path = folder / f".{PREFIX}-swap.{os.getpid()}.{next(_serial)}"
    on = False
    try:
        with open(path, "wb") as fh:  # written, not fallocated: swapon refuses holes
            os.fchmod(fh.fileno(), 0o600)
            block = b"\0" * (1 << 20)
            for _ in range(-(-size_bytes // len(block))):
                fh.write(block)
        for cmd in (["mkswap", str(path)], ["swapon", str(path)]):
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise PressureUnavailable(f"{cmd[0]} refused {path}: "
                                          f"{(r.stderr or r.stdout).strip()}")
        on = True
        yield path
    finally:
        if on:
            subprocess.run(["swapoff", str(path)], capture_output=True)
        with contextlib.suppress(OSError):
            os.unlink(path)


def drop_page_cache(files: Iterable[str | Path] = (), *, only: bool = False) -> str:
    """Make the next read of ``files`` cold. As root, the whole page cache goes (``sync`` then
    ``drop_caches``): returns ``"drop_caches"``; otherwise, or with ``only``, each named file's
    cached pages are dropped with ``posix_fadvise(DONTNEED)`` and everything else stays cached:
    returns ``"fadvise"``."""
    if support().drop_caches and not only:
        os.sync()
        _write(Path("/proc/sys/vm/drop_caches"), "1")
        return "drop_caches"
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return "fadvise"


@dataclass(frozen=True)
class Limited:
    """What the kernel saw of one command run in a fresh memory group.

    Attributes:
        returncode: The command's exit status (negative: killed by that signal).
        stdout, stderr: Its output.
        limit_bytes, swap_bytes: The group's caps (``swap_bytes`` None: no cap).
        peak_bytes: The group's peak charge (anonymous memory plus page cache).
        oom_killed: Processes the kernel killed for the limit.
        major_faults: Page faults that had to read from disk or swap.
        swapped_out_pages: Pages written to swap (``pswpout`` of /proc/vmstat over the run:
            machine-wide, so other swapping processes would add to it).
        wall_s: Wall-clock seconds of the run.
    """

    returncode: int
    stdout: str
    stderr: str
    limit_bytes: int
    swap_bytes: int | None
    peak_bytes: int | None
    oom_killed: int
    major_faults: int
    swapped_out_pages: int
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("stdout")
        d.pop("stderr")
        return d


def run_limited(cmd: Sequence[str], *, limit_bytes: int, swap_bytes: int | None = 0,
                env: dict[str, str] | None = None, timeout: float = 600.0) -> Limited:
    """Run ``cmd`` in a fresh memory group capped at ``limit_bytes`` and return what the kernel
    saw. The group (and anything the command left running in it) is removed afterwards, also
    on a timeout.

    Raises:
        PressureUnavailable: no memory cgroup (says why).
        subprocess.TimeoutExpired: the command ran past ``timeout`` (it is killed).
    """
    with memory_group(limit_bytes, swap_bytes=swap_bytes) as g:
        sw0 = _keyed_ints(Path("/proc/vmstat")).get("pswpout", 0)
        t0 = time.perf_counter()
        p = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env, preexec_fn=g.preexec)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise
        wall = time.perf_counter() - t0
        st = g.stat()
        return Limited(p.returncode, out, err, limit_bytes, swap_bytes, g.peak_bytes(),
                       g.oom_kills(), st.get("total_pgmajfault", st.get("pgmajfault", 0)),
                       _keyed_ints(Path("/proc/vmstat")).get("pswpout", 0) - sw0, wall)
