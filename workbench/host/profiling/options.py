"""The hardware options of this machine (core sets x threads x XNNPACK) and the measuring
protocols (warm-up and timed runs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ... import processors
from ...errors import InputError


@dataclass(frozen=True)
class Option:
    """One hardware option: a processor (core set), threads and XNNPACK."""

    processor: str
    cores: tuple[int, ...]
    threads: int
    xnnpack: bool


def _cpu_cores(processor: str) -> tuple[int, ...]:
    cores = processors.cores(processor)
    if cores is None:
        raise InputError("the host profiler runs on CPU core sets only", where="processor",
                         value=processor)
    return cores


def core_sets() -> list[tuple[int, ...]]:
    """Each available core alone, then all of them together."""
    cores = sorted(processors.machine_cores())
    sets: list[tuple[int, ...]] = [(c,) for c in cores]
    if len(cores) > 1:
        sets.append(tuple(cores))
    return sets


def host_options(threads: Iterable[int] = (1, 2), *, xnnpack: Iterable[bool] = (True, False),
                 processor_ids: Iterable[str] | None = None) -> list[Option]:
    """This machine's hardware options: core sets x threads x XNNPACK on/off, optionally only
    some processors (``CPU[0]``, ``CPU[0,1]``; an unknown one is an InputError naming it)."""
    sets = core_sets()
    if processor_ids is not None:
        known = {processors.cpu_set(cs): cs for cs in sets}
        wanted = list(processor_ids)
        for p in wanted:
            if p not in known:
                raise InputError(f"not a processor of this machine; it has {', '.join(known)}",
                                 where="processors", value=p)
        sets = [known[p] for p in wanted]
    threads = list(threads)
    if not threads or any(t < 1 for t in threads):
        raise InputError("threads must be positive integers", where="threads", value=threads)
    return [Option(processors.cpu_set(cs), cs, t, x) for cs in sets for t in threads
            for x in xnnpack]


@dataclass(frozen=True)
class Protocol:
    """How many untimed warm-up runs and timed runs each configuration gets."""

    warmup: int
    runs: int


#: ``full`` is CARIn's protocol (5 warm-up runs, then 100 timed runs); ``quick`` is for trying a
#: model out and for tests (the rows say which protocol measured them).
PROTOCOLS: dict[str, Protocol] = {"quick": Protocol(2, 20), "full": Protocol(5, 100)}


def protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise InputError(f"unknown protocol; expected one of {', '.join(PROTOCOLS)}",
                         where="protocol", value=name) from None
