"""Rows whose latency varied too much for their mean to stand for one inference.

A row's coefficient of variation (CV = L_std / L over its timed runs) above :data:`NOISY_CV` is
flagged wherever the row is used (``workbench profile``, ``workbench solve``). Why 0.25: with CV
c over n runs the 95% interval of the mean is +-1.96 c / sqrt(n) of it; at the quick protocol's 20
runs a CV of 0.25 makes that +-11%, wider than the 10% margin latency SLOs are usually set with,
so such a row cannot settle a latency bound. It also marks interference rather than the model:
the 480 rows of ``profiles/host-real.json`` (real-size models on this machine's 2 cores) measured
a CV of 0.011 at the median, 0.117 at the 95th and 0.239 at the 99th percentile, so 0.25 lies past
what quiet rows of real models showed here. (Sub-millisecond models show larger CVs from timer
and scheduler jitter alone; they are flagged too, since their means are as uncertain.)
"""

from __future__ import annotations

from typing import Iterable

from .schema import Config

NOISY_CV = 0.25


def noisy_rows(configs: Iterable[Config], threshold: float = NOISY_CV) -> list[Config]:
    """The rows whose latency CV is above ``threshold``, noisiest first."""
    rows = [c for c in configs if c.L_cv is not None and c.L_cv > threshold]
    return sorted(rows, key=lambda c: -(c.L_cv or 0.0))


def noisy_warning(configs: Iterable[Config], threshold: float = NOISY_CV) -> str | None:
    """One line naming the noisy rows (the five noisiest, then a count), or None."""
    from ..names import printable

    rows = noisy_rows(configs, threshold)
    if not rows:
        return None
    shown = ", ".join(f"{printable(c.id)} (CV {c.L_cv:.2f})" for c in rows[:5])
    more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
    return (f"warning: {len(rows)} row{'s' * (len(rows) != 1)} measured with a latency CV above "
            f"{threshold:g}, so {'their' if len(rows) != 1 else 'its'} mean latency is uncertain "
            f"(docs/metrics.md): {shown}{more}")
