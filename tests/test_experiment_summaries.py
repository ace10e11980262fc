"""The analyses the reports and the benchmarks share (moved out of notebooks): MASA's gains,
FlexNN's best point and planning time, RASS-vs-NSGA-II summary, and display labels."""

import pytest

from workbench.lab.experiments import carin as ex
from workbench.lab.experiments import flexnn as fx
from workbench.lab.experiments import masa as ma


def _resp(sc, mb, rho, pol, ms):
    return ma.ResponseRow(sc, mb, mb / 20, pol, ms, rho)


def test_masa_gains_pair_policies_per_budget_and_intensity():
    rows = [_resp("I", 512, 1.2, "bulk", 100.0), _resp("I", 512, 1.2, "deepeye", 80.0),
            _resp("I", 512, 1.2, "masa", 40.0), _resp("I", 512, 0.8, "bulk", 10.0),
            _resp("I", 512, 0.8, "masa", 9.0),  # no DeepEye: not a comparable cell
            _resp("II", 512, 1.2, "bulk", 50.0), _resp("II", 512, 1.2, "deepeye", 50.0),
            _resp("II", 512, 1.2, "masa", 50.0), _resp("II", 1024, 1.2, "bulk", 5.0),
            _resp("II", 1024, 1.2, "deepeye", 5.0), _resp("II", 1024, 1.2, "masa", 1.0)]
    g = ma.gains(rows)
    assert [(x.scenario, x.paper_budget_mb, x.intensity) for x in g] == [
        ("I", 512, 1.2), ("II", 512, 1.2), ("II", 1024, 1.2)]
    assert g[0].gain_vs_bulk_pct == pytest.approx(60.0)
    assert g[0].gain_vs_deepeye_pct == pytest.approx(50.0)
    assert g[0].gain_vs_best_other_pct == pytest.approx(50.0)
    # The figure the paper quotes: the tightest budget at intensity 1.2, per scenario.
    assert ma.tightest_gains(g) == {"I": pytest.approx(60.0), "II": pytest.approx(0.0)}


def _point(model, mode, red, inc, plan=None):
    return fx.TradeoffRow(model, mode, 1.0, 1.0, 1.0, 1.0, red, inc, plan_ms=plan)


def test_flexnn_best_point_is_the_fastest_with_90pct_less_memory_else_the_most_frugal():
    rows = [_point("A", "bulk", 0, 0), _point("A", "on-demand", 95, 500),
            _point("A", "flexnn", 85, 1, 2.0), _point("A", "flexnn", 91, 30, 4.0),
            _point("A", "flexnn", 96, 12, 6.0),
            _point("B", "flexnn", 50, 1, 1.0), _point("B", "flexnn", 70, 9, 3.0)]
    best = fx.best_points(rows)
    assert [(b.model, b.memory_reduction_pct) for b in best] == [("A", 96), ("B", 70)]
    assert fx.planning_ms(rows) == {"A": 4.0, "B": 2.0}


def test_versus_summary_ignores_missing_ratios():
    def row(opt, hv, same, algo_ms):
        return ex.VersusRow("uc1", "s20fe", "nsga2", 10, 1.0, algo_ms, 100, opt, hv, None, same)

    s = ex.versus_summary([row(1.0, 0.9, True, 10.0), row(0.5, None, False, 30.0),
                           row(None, None, False, 20.0)])
    assert (s.mean_optimality_ratio, s.min_optimality_ratio) == (0.75, 0.5)
    assert s.mean_hv_ratio == 0.9 and s.same_d0_share == pytest.approx(1 / 3)
    assert s.mean_speed_ratio == pytest.approx(20.0)


def test_display_labels_are_applied_only_when_drawing():
    pytest.importorskip("plotly")
    from workbench.lab import viz

    assert viz.label("mean_response_ms") == "mean response ms"
    assert viz.label("gain_vs_bulk_pct") == "gain vs bulk %"
    assert viz.label("rss_growth_mb") == "RSS growth MB"
    rows = [_point("A", "flexnn", 91.23456, 30.0)]
    assert "memory_reduction_pct" in viz.frame(rows).columns
    t = viz.table(rows, columns=["model", "memory_reduction_pct"], digits=1)
    assert list(t.columns) == ["model", "memory reduction %"]
    assert t.iloc[0]["memory reduction %"] == 91.2
