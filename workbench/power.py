"""Modelled power: this machine exposes no power counters (no RAPL, no powercap), so every
energy figure of the workbench is computed from measured busy time with one of these models and
is labelled modelled wherever it is shown.

A device draws ``idle_w`` whenever it is on and ``busy_w`` more for each unit of compute it keeps
busy (a core on a CPU; the whole accelerator where one request uses all of it). A request that
keeps ``units`` busy for ``busy_ms`` costs ``busy_ms x busy_w x units`` millijoules of *dynamic*
energy (what the profiles' ``E`` and Delen's per-request energy are); a device kept busy a
fraction ``u`` of the time draws ``idle_w + busy_w x u x units`` on average (what a battery
sees). The linear form is the standard utilisation model of server power (idle plus a part
proportional to utilisation); its parameters are not measured here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from .errors import InputError

if TYPE_CHECKING:
    import numpy as np

#: Busy time as one number or an array of them (an exit profile's per-exit latencies).
_Ms = TypeVar("_Ms", float, "np.ndarray")


@dataclass(frozen=True)
class PowerModel:
    """Idle and busy power of a device (modelled; ``source`` says where the numbers come
    from)."""

    name: str
    idle_w: float
    busy_w: float
    source: str

    def __post_init__(self) -> None:
        for field in ("idle_w", "busy_w"):
            v = getattr(self, field)
            if not v >= 0:
                raise InputError("power must be a non-negative number of watts", where=field,
                                 value=v)

    def busy_mj(self, busy_ms: _Ms, units: float = 1.0) -> _Ms:
        """Dynamic energy (mJ) of keeping ``units`` busy for ``busy_ms``."""
        return busy_ms * self.busy_w * units

    def average_w(self, utilisation: float, units: float = 1.0) -> float:
        """Average draw (W) when ``units`` are busy a fraction ``utilisation`` of the time."""
        return self.idle_w + self.busy_w * utilisation * units

    def battery_hours(self, usable_wh: float, utilisation: float, units: float = 1.0) -> float:
        """Hours a battery holding ``usable_wh`` lasts at that utilisation."""
        return usable_wh / self.average_w(utilisation, units)


#: This machine's cores as the host profiles and the multi-exit runner model them: a server core
#: at 2-3 GHz draws 4-7 W (e.g. 350 W TDP over 56 cores); idle power is not charged to requests.
HOST_CORE = PowerModel(
    "host core", idle_w=0.0, busy_w=5.0,
    source="modelled: 5 W per busy core (a 350 W TDP server CPU over 56 cores; RAPL unreadable)")

#: Delen's device, a Jetson Nano, as one accelerator: its 5 W mode while idle, 10 W at full load
#: (Delen section 2: "5-10W for the Jetson Nano"). Used for battery life.
JETSON_NANO = PowerModel(
    "Jetson Nano", idle_w=5.0, busy_w=5.0,
    source="modelled: Jetson Nano 5 W idle, 10 W fully busy (its power modes, Delen section 2)")
