"""The committed outputs of the FlexNN benchmarks read back as typed studies: the measured
trade-off (:func:`load_measured`) and Figure 10 at full size with the page cache's share
(:func:`load_fig10`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .measured import MeasuredPoint, MeasuredRow, PressureRow


@dataclass(frozen=True)
class MeasuredStudy:
    """What ``benchmarks/bench_memory.py --only measured`` measured, read back typed."""

    cpu: str
    data: str
    rows: list[MeasuredRow]
    points: list[MeasuredPoint]
    pressure: list[PressureRow]
    pressure_data: str


def load_measured(path: str | Path | None = None) -> MeasuredStudy | None:
    """The full-size measurements committed in ``reports/bench/memory.json`` (see
    :func:`workbench.lab.bench.bench_section`), or None when the benchmark has not run."""
    from ....errors import InputError
    from ...bench import bench_section

    m = bench_section("memory.json", "measured", path)
    if m is None:
        return None
    try:
        press = m.get("pressure") or {}
        return MeasuredStudy(m["cpu"], m["data"], [MeasuredRow(**r) for r in m["rows"]],
                             [MeasuredPoint(**p) for p in m["points"]],
                             [PressureRow(**r) for r in press.get("rows", [])],
                             press.get("data", ""))
    except (KeyError, TypeError) as e:
        raise InputError(f"the benchmark's 'measured' section does not match this version: {e}",
                         file=path or "reports/bench/memory.json") from None


@dataclass(frozen=True)
class Fig10Point:
    """One mode of one model in ``benchmarks/bench_flexnn_fig10.py``: memory as FlexNN's artifact
    reads it (the largest sampled resident set less the idle one; the largest over rounds),
    latency the median over rounds of the artifact's trimmed mean of 8 inferences, and the
    median over rounds of the latency over Default's in the same round."""

    model: str
    mode: str  # default | direct | on-demand | flexnn
    budget_mb: float | None
    rounds: int
    pmap_mb: float
    latency_ms: float
    latency_vs_default_pct: float
    within_budget: bool | None


@dataclass(frozen=True)
class Fig10Comparison:
    """The paper's two readings against one baseline: FlexNN's memory cut at its smallest
    budget, and its latency cut at no more memory than the baseline's (paired per round)."""

    model: str
    baseline: str
    baseline_mb: float
    baseline_ms: float
    flexnn_min_budget_mb: float
    flexnn_min_mb: float
    memory_cut_pct: float
    flexnn_at_min_vs_baseline_pct: float
    same_memory_budget_mb: float | None
    same_memory_mb: float | None
    latency_cut_pct: float | None


@dataclass(frozen=True)
class PageCachePoint:
    """FlexNN at its smallest budget under one condition of the page-cache study: the latency
    added over the unlimited warm run of the same round, the MB read from storage per inference,
    and what reading that many MB costs at the disk's measured cold speed."""

    model: str
    condition: str
    runs: int
    ran: int
    budget_mb: float | None = None
    limit_mb: float | None = None
    latency_ms: float | None = None
    latency_vs_unlimited_pct: float | None = None
    added_ms: float | None = None
    read_mb_per_inference: float | None = None
    reread_ms_at_disk_speed: float | None = None
    first_ms: float | None = None
    group_peak_mb: float | None = None
    major_faults: float | None = None


@dataclass(frozen=True)
class Fig10Study:
    """``reports/bench/flexnn_fig10.json`` read back typed."""

    cpu: str
    source: str
    method: dict
    not_measured: dict[str, str]
    substituted: dict[str, str]
    points: list[Fig10Point]
    comparisons: list[Fig10Comparison]
    pagecache: list[PageCachePoint]
    disk: dict[str, dict]


def _typed(cls, row: dict):
    names = set(cls.__dataclass_fields__)
    return cls(**{k: v for k, v in row.items() if k in names})


def load_fig10(path: str | Path | None = None) -> Fig10Study | None:
    """The committed Figure 10 measurements (``benchmarks/bench_flexnn_fig10.py``), or None
    when the benchmark has not run."""
    from ....errors import InputError
    from ...bench import bench_section

    d = bench_section("flexnn_fig10.json", None, path)
    if d is None:
        return None
    try:
        return Fig10Study(d["cpu"], d["source"], d["method"], d.get("not_measured", {}),
                          d.get("substituted", {}),
                          [_typed(Fig10Point, r) for r in d.get("points", [])],
                          [_typed(Fig10Comparison, r) for r in d.get("comparisons", [])],
                          [_typed(PageCachePoint, r) for r in d.get("pagecache_points", [])],
                          d.get("disk", {}))
    except (KeyError, TypeError) as e:
        raise InputError(f"the Figure 10 benchmark's output does not match this version: {e}",
                         file=path or "reports/bench/flexnn_fig10.json") from None
