"""The discrete problem: F and G by hand, the multi-DNN product, contention and NTT/STP/F."""

import numpy as np
import pytest
from conftest import make_profile  # noqa: I001

from workbench.errors import InputError
from workbench.moo.problem import DiscreteProblem


def test_single_dnn_objectives_and_constraints(hand_profile):
    pr = DiscreteProblem(hand_profile, "max A; max TP; max L <= 30ms")
    assert pr.size == 5 and pr.objective_names == ["A", "TP"]
    ev = pr.evaluate_flat(np.arange(5))
    assert ev.F[:, 0].tolist() == [70, 75, 70, 75, 80]
    assert ev.G[:, 0].tolist() == [12 - 30, 25 - 30, 9 - 30, 16 - 30, 60 - 30]
    assert pr.feasible.index.tolist() == [0, 1, 2, 3]
    # pymoo sees a minimisation problem: maximised objectives negated, G as is.
    out = {}
    pr._evaluate(np.array([[2.0], [4.0]]), out)
    assert out["F"].tolist() == [[-70, -125], [-80, -20]]
    assert out["G"].tolist() == [[-21], [30]]


def test_lower_bound_constraint_and_lower_is_better_accuracy():
    prof = make_profile([dict(id="x", task="age-mae", A=6.0, L=1), dict(id="y", task="age-mae",
                                                                         A=5.0, L=2)],
                        tasks=["age-mae"])
    pr = DiscreteProblem(prof, "max A; L >= 1.5")
    assert pr.maximise.tolist() == [False]  # "max A" = best accuracy = lowest MAE
    assert pr.evaluate_flat(np.array([0, 1])).G[:, 0].tolist() == [0.5, -0.5]


TWO = [
    dict(id="x1", task="t1", processor="GPU", L=10, A=1, W=1e9, MF=10),
    dict(id="x2", task="t1", processor="CPU", threads=2, L=20, A=1, W=1e9, MF=10),
    dict(id="y1", task="t2", processor="GPU", L=5, A=1, W=1e8, MF=10),
    dict(id="y2", task="t2", processor="CPU", threads=4, L=8, A=1, W=1e8, MF=10),
]


def _multi(prof, slo="min L; max STP; max F; min NTT"):
    return DiscreteProblem(prof, slo, tasks=["t1", "t2"])


def test_contention_model_by_hand():
    pr = _multi(make_profile(TWO))
    assert pr.shape == (2, 2) and pr.size == 4
    L1, L2, STP, F, NTT = pr.evaluate_flat(np.arange(4)).F.T
    # (x1, y1): both on the GPU, time-shared: each waits for the other (s = 1).
    assert (L1[0], L2[0]) == (15, 15)
    assert STP[0] == pytest.approx(1 / 1.5 + 1 / 3) and F[0] == pytest.approx(0.5)
    assert NTT[0] == pytest.approx((1.5 + 3) / 2)
    # (x1, y2) and (x2, y1): different processors interfere mildly (c = 0.1).
    assert (L1[1], L2[1]) == pytest.approx((11, 8.8))
    assert (L1[2], L2[2]) == pytest.approx((22, 5.5))
    # (x2, y2): 2 + 4 threads on 4 cores: T/P x (1 + o (T-P)/P) = 1.5 x 1.25.
    assert (L1[3], L2[3]) == pytest.approx((37.5, 15.0))


def test_measured_coexecution_rows_take_precedence():
    prof = make_profile(TWO, coexecution=[{"configs": ["y2", "x2"], "L": [9.0, 30.0],
                                           "source": "measured"}])
    L1, L2 = _multi(prof, "min L").evaluate_flat(np.array([3])).F[0]
    assert (L1, L2) == (30.0, 9.0)  # matched by id, whatever the row's order


def test_totals_and_flat_index_round_trip():
    pr = _multi(make_profile(TWO), "min MF[total]; min L[t2]")
    assert pr.objective_names == ["MF[total]", "L[t2]"]
    assert pr.evaluate_flat(np.array([0])).F[0, 0] == 20
    flat = pr.flat_of(["x2", "y1"])
    assert [c.id for c in pr.configs_of(flat)] == ["x2", "y1"]
    for call in (pr.configs_of, lambda i: pr.metrics([i]), pr.describe):
        with pytest.raises(InputError, match="out of range 0..3"):  # one line, not a ValueError
            call(pr.size)


def test_bad_problems_are_clear(hand_profile):
    with pytest.raises(InputError, match="no 'std' statistic of MF"):
        DiscreteProblem(hand_profile, "min std MF")
    with pytest.raises(InputError, match="has no E values"):
        DiscreteProblem(hand_profile, "min E")
    with pytest.raises(InputError, match="multi-DNN metric"):
        DiscreteProblem(hand_profile, "max STP")
    with pytest.raises(InputError, match="unknown task"):
        DiscreteProblem(hand_profile, "max A", tasks=["nope"])
    with pytest.raises(InputError, match="not part of this problem"):
        DiscreteProblem(hand_profile, "max A[other]")
    two = make_profile(TWO)
    with pytest.raises(InputError, match="choose which to run"):
        DiscreteProblem(two, "min L")


def test_rows_missing_a_needed_value_are_dropped():
    prof = make_profile([dict(id="a", A=1, L=1), dict(id="b", A=2), dict(id="c", A=3, L=3)])
    pr = DiscreteProblem(prof, "max A; min L")
    assert pr.size == 2 and pr.dropped == {"t": 1}


def test_optimality_of_matches_ranking(hand_profile):
    pr = DiscreteProblem(hand_profile, "max A; max TP; max L <= 30ms")
    rk = pr.ranking
    assert np.allclose(pr.optimality_of(rk.index), rk.optimality)
    assert np.isnan(pr.optimality_of(np.array([4]))[0])  # infeasible: no optimality


def test_contention_fit_is_no_worse_than_the_defaults_on_measured_rows():
    """The fit minimises the squared log error over a grid that holds the defaults, so on the
    host's measured co-executions it cannot do worse than them; predict() gives each row's
    per-model latencies in order."""
    from pathlib import Path

    import numpy as np

    from workbench.moo import contention as ct
    from workbench.profiles import load_profile

    prof = load_profile(Path(__file__).resolve().parents[1] / "profiles" / "host.json")
    rows = list(prof.coexecution)
    fitted = ct.fit(prof.configs, rows)
    err = lambda params: sum(  # noqa: E731
        float(((np.log(p) - np.log(r.L)) ** 2).sum())
        for p, r in zip(ct.predict(prof.configs, rows, params), rows))
    assert err(fitted) <= err(ct.DEFAULTS)
    pred = ct.predict(prof.configs, rows, fitted)
    assert [len(p) for p in pred] == [len(r.configs) for r in rows]
