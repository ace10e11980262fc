"""What a run did, as plain columns: one row per monitor period, plus switches and events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Timeline:
    """What happened, as columns (one row per monitor period) plus switches and events."""

    rows: dict[str, list] = field(default_factory=dict)
    switches: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)

    def add(self, **row: Any) -> None:
        n = len(next(iter(self.rows.values()), []))
        for k, v in row.items():
            self.rows.setdefault(k, [None] * n).append(v)
        for col in self.rows.values():
            if len(col) == n:
                col.append(None)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "switches": self.switches, "events": self.events}


def summarise(timeline: Timeline) -> dict[str, Any]:
    """Counts and times from a timeline (designs visited, switches, their cost)."""
    sw = timeline.switches
    ms = [s["switch_ms"] for s in sw[1:]]
    return {"switches": max(0, len(sw) - 1), "designs": [s["to"] for s in sw],
            "switch_ms_max": max(ms) if ms else None,
            "decision_us_max": max((s["decision_us"] for s in sw), default=None),
            "faults": [e for e in timeline.events if e["kind"] == "fault"],
            "duration_s": timeline.rows.get("t", [0])[-1] if timeline.rows.get("t") else 0.0}
