"""What the runtime asks when the device changes: a policy maps the device's flags to a choice of
design. :class:`SwitchingPolicy` is RASS's (a look-up in the bundle's policy vector, never a
re-solve); another policy (OODIn's re-solving one) plugs in through the :class:`Policy` protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .bundle import Bundle


@dataclass(frozen=True)
class Choice:
    """What a policy picked: a name (a role such as ``d1``) and one configuration per task."""

    name: str
    configs: tuple[str, ...]


@dataclass(frozen=True)
class DeviceState:
    """The flags a policy sees: issues per processor name and the memory issue."""

    processors: dict[str, bool]
    memory: bool

    @property
    def flagged(self) -> tuple[str, ...]:
        return tuple(p for p, v in self.processors.items() if v)


class Policy(Protocol):
    name: str

    def decide(self, state: DeviceState, usable: set[str]) -> Choice | None: ...


class SwitchingPolicy:
    """RASS's switching policy from the bundle: flags -> bit mask -> role, one list index.

    A role that is absent or out of service falls back to the best (by optimality) usable design
    that avoids every flagged processor, then to any usable design.
    """

    name = "rass"

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self.vector = bundle.policy_vector
        self.triggers = bundle.triggers
        self.mem_bit = 1 << len(self.triggers)
        self.procs = {r: {bundle.configs[c].processor for c in d.configs}
                      for r, d in bundle.designs.items()}

    def bits(self, state: DeviceState) -> int:
        b = self.mem_bit if state.memory else 0
        p = state.processors
        for k, t in enumerate(self.triggers):
            if p.get(t):
                b |= 1 << k
        return b

    def decide(self, state: DeviceState, usable: set[str]) -> Choice | None:
        role = self.vector[self.bits(state)]
        if role not in usable:
            flagged = set(state.flagged)
            role = next((r for r in self.bundle.fallback if r in usable
                         and not (self.procs[r] & flagged)), None)
            role = role or next((r for r in self.bundle.fallback if r in usable), None)
        if role is None:
            return None
        return Choice(role, self.bundle.designs[role].configs)
