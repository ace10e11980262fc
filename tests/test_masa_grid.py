"""MASA Figs. 7-8's grid (benchmarks/bench_masa_grid.py): the cell summary, the readings the
ledger compares, the typed loader and the simulator's held-out fit across configurations."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_masa_grid as bg  # noqa: E402

from workbench.errors import InputError  # noqa: E402
from workbench.lab.experiments import masa as mp  # noqa: E402


def _row(sc, mb, it, pol, ms, rnd=0, finished=True):
    return asdict(mp.PressureRun("by total", mb, mb / 3, mb / 3 + 64, 6144, pol, rnd, finished,
                                 ms if finished else None, 1.0, 1.0, 200.0, 10, 5.0, 40.0, 3,
                                 intensity=it, scenario=sc, jobs=4))


def _grid_rows():
    rows = []
    for sc in (1, 2):
        for mb in (512, 1024, 2048):
            for it in (0.8, 1.0, 1.2):
                slow = 10.0 if mb == 2048 else 1000.0 / (mb / 512)
                rows += [_row(sc, mb, it, "bulk", slow * 2, r) for r in (0, 1)]
                rows += [_row(sc, mb, it, "deepeye", slow * 3)]
                # MASA: a quarter of Bulk under pressure, slower than both at 2 GB, light traffic
                masa = slow * (2.5 if (mb, it) == (2048, 0.8) else 0.5)
                rows += [_row(sc, mb, it, "masa", masa)]
    return rows


def test_cells_read_medians_savings_order_and_the_ledger_readings():
    rows = _grid_rows()
    rows.append(_row(1, 512, 1.2, "masa", None, rnd=1, finished=False))  # a timed-out round
    cells = bg.summarise(rows)
    assert len(cells) == 18
    c = next(c for c in cells if (c["scenario"], c["paper_budget_mb"], c["intensity"])
             == (1, 512, 1.2))
    assert c["policies"]["masa"]["runs"] == 2 and c["policies"]["masa"]["finished"] == 1
    assert c["policies"]["bulk"]["median_ms"] == pytest.approx(2000.0)
    assert c["masa_saving_vs_bulk_pct"] == pytest.approx(75.0)
    assert c["masa_saving_vs_best_other_pct"] == pytest.approx(75.0)  # Bulk is the better other
    assert c["order_fastest_first"] == ["masa", "bulk", "deepeye"]
    d = bg.derive(cells)
    assert d["s1_best_saving_vs_best_other_512_1024_pct"] == pytest.approx(75.0)
    assert d["s1_2048_i0.8_saving_vs_best_other_pct"] == pytest.approx(-25.0)
    assert d["s2_masa_512_over_2048_i1.0"] == pytest.approx(500.0 / 5.0)
    assert (d["s1_cells"], d["s1_masa_fastest_cells"]) == (9, 8)
    assert (d["s2_cells"], d["s2_masa_fastest_cells"]) == (9, 8)
    assert d["s1_masa_512_over_2048_i1.2"] == pytest.approx(500.0 / 5.0)
    assert d["s1_saving_512_minus_2048_i1.2_pct"] == pytest.approx(0.0)
    assert d["s2_order_1024_i1.2"] == ["masa", "bulk", "deepeye"]
    # The paper's "up to 90%" is read at the cell its text names, per round on the same draw;
    # a round where a policy did not finish has no pair.
    assert d["s1_512_i1.2_saving_vs_best_other_pct"] == pytest.approx(75.0)
    assert d["s1_512_i1.2_saving_vs_best_other_rounds_pct"] == [pytest.approx(75.0)]
    # Ratios and gaps across memory sizes pair the cells' rounds (one round, one draw).
    assert d["s1_masa_512_over_2048_i1.2_rounds"] == [pytest.approx(100.0)]
    assert d["s1_saving_512_minus_2048_i1.2_rounds_pct"] == [pytest.approx(0.0)]
    two = next(c for c in cells if (c["scenario"], c["paper_budget_mb"], c["intensity"])
               == (1, 1024, 0.8))
    assert two["masa_saving_vs_best_other_rounds_pct"] == [pytest.approx(75.0)]


def test_a_cell_missing_a_policy_reads_none_not_a_number():
    rows = [r for r in _grid_rows() if not (r["paper_budget_mb"] == 2048 and r["policy"] == "bulk")]
    d = bg.derive(bg.summarise(rows))
    assert d["s1_2048_i0.8_saving_vs_best_other_pct"] is None
    assert d["s1_cells"] == 6  # the 2 GB cells lack an order of three


def test_the_grid_loads_typed_and_refuses_another_version(tmp_path):
    rows = _grid_rows()
    cells = bg.summarise(rows)
    out = {"cpu": "x", "source": "measured", "jobs": {"1": 4, "2": 2}, "budgets_mb": {"512": 1.0},
           "networks": [], "rows": rows, "cells": cells, "derived": bg.derive(cells),
           "fit": {"source": "modelled", "held_out_rule": "r", "held_out": [], "in_sample": []}}
    path = tmp_path / "masa_grid.json"
    path.write_text(json.dumps(out))
    g = mp.load_grid(path)
    assert len(g.cells) == 18 and g.cells[0].policies["bulk"]["finished"] == 2
    assert g.derived["s1_masa_fastest_cells"] == 8
    fig = mp.grid_figure(g, 2)
    assert [t.name for t in fig.data] == ["bulk (measured)", "deepeye (measured)",
                                          "masa (measured)"]
    assert len(fig.data[2].x) == 9
    del out["cells"][0]["scenario"]
    path.write_text(json.dumps(out))
    with pytest.raises(InputError, match="masa_grid.json"):
        mp.load_grid(path)
    assert mp.load_grid(tmp_path / "none.json") is None


@pytest.fixture
def toy():
    from workbench.memory import masa as M

    def net(name, sizes, exec_s):
        return M.NetProfile(name, [M.LayerCost(f"{name}{i}", "conv", [i - 1], w, 1000, 0, 0.01,
                                               exec_s) for i, w in enumerate(sizes)])

    return {"a": net("a", [10_000, 20_000, 60_000, 30_000], 0.01),
            "b": net("b", [5_000, 5_000, 80_000, 10_000], 0.02)}


def test_the_fit_holds_out_what_it_did_not_see(toy):
    """fit_paging with ``fit_on`` fits only on the accepted runs: runs made by the simulator at
    known parameters are recovered from the intensity-1.2 runs alone, each run's jobs remade
    from its own workload; the intensity-0.8 runs, doubled, do not pull the fit and show as
    the -50% they are."""
    from workbench.lab.experiments.masa import run
    from workbench.lab.experiments.memory import Nets

    nets = Nets({}, {}, toy, trained=False)
    tight = int(max(p.layer_peak_bytes for p in toy.values()) * 1.1)
    rows = []
    for it in (0.8, 1.2):
        jobs = mp.jobs_for(nets, n=12, intensity=it, scenario=2)
        for pol in ("bulk", "masa"):
            ms = run(toy, jobs, pol, budget=tight, swap_bps=2e6, cache_factor=1.0,
                     anon_share=0.5, slack_bytes=0).mean_response * 1e3
            ms *= 2 if it == 0.8 else 1
            rows.append(mp.PressureRun("by total", 512, tight / 1e6, tight / 1e6, 0, pol, 0,
                                       True, ms, None, 0, None, None, None, 0.0, None,
                                       intensity=it, scenario=2, jobs=12))
    grid = {"swap_mb_per_s": (0.5, 2.0, 8.0), "cache_factor": (0.0, 1.0),
            "anon_share": (0.5, 1.0)}
    fit = mp.fit_paging(nets, rows, grid=grid, fitted_on="1.2",
                        fit_on=lambda r: r.intensity == 1.2)
    assert {(f.intensity, f.scenario, f.policy) for f in fit} == {
        (it, 2, p) for it in (0.8, 1.2) for p in ("bulk", "masa")}
    assert {(f.swap_mb_per_s, f.cache_factor, f.anon_share) for f in fit} == {(2.0, 1.0, 0.5)}
    assert all(abs(f.error_pct - (-50.0 if f.intensity == 0.8 else 0.0)) < 1e-6 for f in fit)
    with pytest.raises(ValueError, match="no finished run to fit on"):
        mp.fit_paging(nets, rows, grid=grid, fitted_on="every cell")  # a label, not a scaling
    other = mp.fit_paging(nets, rows, grid=grid, fit_on=lambda r: r.intensity == 0.8)
    assert {(f.swap_mb_per_s, f.cache_factor, f.anon_share) for f in other} != {(2.0, 1.0, 0.5)}
