"""Processor ids: the one grammar for where a configuration runs. Standard library only.

A processor id is an engine kind, optionally with a CPU core set::

    CPU        every CPU core the profile timed a plain CPU on (its fastest cores on a phone)
    CPU[0,1]   CPU cores 0 and 1 (the host profiles pin threads with sched_setaffinity)
    GPU, NPU, DSP   an accelerator

Profiles, the SLO problem, bundles, the runtime and its event scripts all parse ids here, so an
id that one of them accepts every other one accepts too. Labels in CARIn's notation add the
options: ``CPU_{4,T}`` is the CPU with 4 threads and XNNPACK on (``F``: off).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Literal, get_args

from .errors import InputError

#: Engine kinds, in the order reports list them.
EngineKind = Literal["CPU", "GPU", "NPU", "DSP"]
KINDS: tuple[EngineKind, ...] = get_args(EngineKind)
_RE = re.compile(r"^(CPU|GPU|NPU|DSP)(?:\[([0-9]{1,6}(?:,[0-9]{1,6})*)\])?$")
#: The highest core id a processor id may name (masks are Python ints, so many-core hosts work;
#: this bounds what a typo can make the solver build).
MAX_CORE_ID = 4095
#: Execution limits every layer shares (profiles, bundles, the runtime): LiteRT crashes on absurd
#: thread counts, and a huge batch allocates without bound.
MAX_THREADS = 256
MAX_BATCH = 4096
_HELP = "expected CPU, GPU, NPU or DSP, optionally with a CPU core set such as CPU[0] or CPU[0,1]"


@dataclass(frozen=True)
class Processor:
    """A parsed processor id.

    Attributes:
        kind: ``CPU``, ``GPU``, ``NPU`` or ``DSP``.
        cores: The explicit CPU core set (``CPU[0,1]`` -> (0, 1)); None for a plain ``CPU``
            and for accelerators.
    """

    kind: str
    cores: tuple[int, ...] | None = None

    @property
    def is_cpu(self) -> bool:
        return self.kind == "CPU"

    def core_ids(self, n_cores: int | None = None) -> tuple[int, ...] | None:
        """The CPU cores it runs on: its core set, every core (``n_cores`` or this machine's) for
        a plain ``CPU``, None for an accelerator."""
        if not self.is_cpu:
            return None
        if self.cores is not None:
            return self.cores
        return tuple(range(n_cores or os.cpu_count() or 1))

    def core_mask(self, n_cores: int | None = None) -> int:
        """Bit mask of :meth:`core_ids` (0 for an accelerator)."""
        return sum(1 << c for c in self.core_ids(n_cores) or ())

    def __str__(self) -> str:
        if self.cores is None:
            return self.kind
        return f"{self.kind}[{','.join(map(str, self.cores))}]"


def machine_cores() -> set[int]:
    """The CPU cores this process may run on (its affinity; every core where that is unknown)."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return set(range(os.cpu_count() or 1))


def parse(text: str) -> Processor:
    """Parse a processor id.

    Raises:
        InputError: ``text`` is not a processor id (the message says what one looks like).
    """
    # A profile names a handful of processors on every row: parse each once.
    return _parse(text) if isinstance(text, str) else _parse_uncached(text)


@functools.lru_cache(maxsize=1024)
def _parse(text: str) -> Processor:
    return _parse_uncached(text)


def _parse_uncached(text: str) -> Processor:
    m = _RE.match(text) if isinstance(text, str) else None
    if not m:
        raise InputError(f"unknown processor: {_HELP}", value=text)
    cores = tuple(int(c) for c in m.group(2).split(",")) if m.group(2) else None
    if cores is not None and len(set(cores)) != len(cores):
        raise InputError("a core is listed twice in the processor's core set", value=text)
    if cores is not None and max(cores) > MAX_CORE_ID:
        raise InputError(f"core ids go up to {MAX_CORE_ID}", value=text)
    return Processor(m.group(1), cores)


def is_processor(text: str) -> bool:
    """Whether ``text`` parses as a processor id."""
    try:
        parse(text)
    except InputError:
        return False
    return True


def kind(text: str) -> str:
    """The engine kind of a processor id (``"CPU[0,1]"`` -> ``"CPU"``)."""
    return parse(text).kind


def cores(text: str, n_cores: int | None = None) -> tuple[int, ...] | None:
    """The CPU cores a processor id runs on (``CPU`` -> every core; None for accelerators)."""
    return parse(text).core_ids(n_cores)


def cpu_set(core_ids: tuple[int, ...] | list[int]) -> str:
    """The processor id of a CPU core set: ``(0, 1)`` -> ``"CPU[0,1]"``."""
    return str(Processor("CPU", tuple(core_ids)))


def label(processor: str, threads: int | None = None, xnnpack: bool | None = None) -> str:
    """CARIn's notation of a processor with its options: ``CPU_{4,T}`` (4 threads, XNNPACK on)."""
    if threads is None and xnnpack is None:
        return processor
    opts = [str(threads)] if threads is not None else []
    if xnnpack is not None:
        opts.append("T" if xnnpack else "F")
    return processor + "_{" + ",".join(opts) + "}"
