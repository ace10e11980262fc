"""Round statistics every benchmark reports the same way: a median with its quartiles over rounds
(each round itself a median of interleaved repeats), and a verdict that can fail."""

from __future__ import annotations

import numpy as np


def summary(xs, *, digits: int = 4) -> dict:
    """Median, lower and upper quartile and count of a benchmark's per-round values."""
    a = np.asarray(list(xs), dtype=float)
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return {"median": round(float(med), digits), "q1": round(float(q1), digits),
            "q3": round(float(q3), digits), "n": int(a.size)}


def at_most(s: dict, target: float) -> bool | None:
    """Whether a value summarised over rounds is at most ``target``: True when its upper
    quartile is, False when its lower quartile is above it, None (not shown either way) when the
    middle half straddles the target."""
    if s["q3"] <= target:
        return True
    if s["q1"] > target:
        return False
    return None
