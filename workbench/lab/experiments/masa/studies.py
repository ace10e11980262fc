"""The committed outputs of the MASA benchmarks read back as typed studies: the real-pressure
runs with their fit (``reports/bench/memory.json``, :func:`load_pressure`) and the grid of
budgets and intensities (:func:`load_grid`), with the grid's figure."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .paging import FitRow
from .pressure import PressureRun


@dataclass(frozen=True)
class NetworkSize:
    """One Table 1 role as built here (measured) beside the paper's memory."""

    role: str
    architecture: str
    weights_mb: float
    bulk_mb: float
    largest_layer_mb: float
    bulk_ms: float
    paper_memory_mb: float


@dataclass(frozen=True)
class PressureStudy:
    """What ``benchmarks/bench_memory.py --only masa`` measured and fitted, read back typed."""

    cpu: str
    data: str
    fit_data: str
    jobs: int
    networks: list[NetworkSize]
    rows: list[PressureRun]
    gain_vs_bulk_pct: dict[str, dict[str, float]]
    fit: list[FitRow]
    held_out: list[FitRow]


def load_pressure(path: str | Path | None = None) -> PressureStudy | None:
    """The real-pressure runs committed in ``reports/bench/memory.json`` (see
    :func:`workbench.lab.bench.bench_section`), or None when the benchmark has not run."""
    from ....errors import InputError
    from ...bench import bench_section

    m = bench_section("memory.json", "masa_pressure", path)
    if m is None:
        return None
    try:
        return PressureStudy(m["cpu"], m["data"], m.get("fit_data", ""), m["jobs"],
                             [NetworkSize(**r) for r in m["networks"]],
                             [PressureRun(**r) for r in m["rows"]], m["gain_vs_bulk_pct"],
                             [FitRow(**r) for r in m["fit"]],
                             [FitRow(**r) for r in m.get("held_out", [])])
    except (KeyError, TypeError) as e:
        raise InputError(f"the benchmark's 'masa_pressure' section does not match this version: "
                         f"{e}", file=path or "reports/bench/memory.json") from None


@dataclass(frozen=True)
class GridCell:
    """One cell of Figs. 7-8's grid (measured): each policy's median mean response over its
    rounds with quartiles and what the kernel paged (``policies[p]``: ``median_ms``, ``q1_ms``,
    ``q3_ms``, ``runs``, ``finished``, ``swapped_mb``, ``major_faults``,
    ``overcommitted_tasks``), MASA's savings and the order, fastest first."""

    scenario: int
    paper_budget_mb: int
    intensity: float
    budget_mb: float
    policies: dict[str, dict]
    masa_saving_vs_bulk_pct: float | None
    masa_saving_vs_deepeye_pct: float | None
    masa_saving_vs_best_other_pct: float | None
    order_fastest_first: list[str]
    masa_saving_vs_best_other_rounds_pct: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class GridStudy:
    """What ``benchmarks/bench_masa_grid.py`` measured and fitted, read back typed: the cells,
    the ledger's readings (``derived``) and the simulator refitted on the grid, with its
    held-out rows (``held_out``, cells it did not see) and in-sample rows."""

    cpu: str
    source: str
    jobs: dict[str, int]
    budgets_mb: dict[str, float]
    networks: list[dict]
    cells: list[GridCell]
    derived: dict[str, float | int | None]
    fit_source: str
    held_out_rule: str
    held_out: list[FitRow]
    in_sample: list[FitRow]


def load_grid(path: str | Path | None = None) -> GridStudy | None:
    """The grid committed in ``reports/bench/masa_grid.json``, or None when it has not run."""
    from ....errors import InputError
    from ...bench import bench_section

    m = bench_section("masa_grid.json", None, path)
    if m is None:
        return None
    try:
        fit = m.get("fit", {})
        return GridStudy(m["cpu"], m["source"], m["jobs"], m["budgets_mb"], m["networks"],
                         [GridCell(**c) for c in m["cells"]], m.get("derived", {}),
                         fit.get("source", ""), fit.get("held_out_rule", ""),
                         [FitRow(**r) for r in fit.get("held_out", [])],
                         [FitRow(**r) for r in fit.get("in_sample", [])])
    except (KeyError, TypeError) as e:
        raise InputError(f"masa_grid.json does not match this version: {e}",
                         file=path or "reports/bench/masa_grid.json") from None


def grid_figure(study: GridStudy, scenario: int):
    """Grouped bars: each policy's median mean response per (memory, intensity) cell of one
    scenario, quartiles as error bars, log scale (plotly; drawing only)."""
    import plotly.graph_objects as go

    cells = [c for c in study.cells if c.scenario == scenario]
    fig = go.Figure()
    for pol in ("bulk", "deepeye", "masa"):
        xs, ys, lo, hi = [], [], [], []
        for c in cells:
            p = c.policies.get(pol, {})
            if p.get("median_ms") is None:
                continue
            xs.append(f"{c.paper_budget_mb} MB, {c.intensity}")
            ys.append(p["median_ms"])
            lo.append(p["median_ms"] - p["q1_ms"])
            hi.append(p["q3_ms"] - p["median_ms"])
        fig.add_trace(go.Bar(name=f"{pol} (measured)", x=xs, y=ys, error_y=dict(
            type="data", symmetric=False, array=hi, arrayminus=lo)))
    fig.update_layout(barmode="group", yaxis_type="log", template="plotly_white",
                      yaxis_title="mean response (ms)", xaxis_title="paper's memory, intensity",
                      title=f"Scenario {'I' * scenario} under a real memory limit (measured)")
    return fig
