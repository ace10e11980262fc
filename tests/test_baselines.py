"""The papers' baselines: B-A, B-S, transferred (N/A and !), multi-DNN-unaware, OODIn's manager."""

import numpy as np
from conftest import make_profile  # noqa: I001

from workbench.moo import usecases
from workbench.moo.problem import DiscreteProblem
from workbench.solvers import OodinManager, rass
from workbench.solvers.baselines import (
    multi_dnn_unaware,
    single_architecture,
    transferred,
)

ROWS = [
    dict(id="big-cpu", model="big", processor="CPU", threads=4, A=80, TP=10, L=40, L_max=50,
         W=5e9, MF=60, params=12e6),
    dict(id="big-gpu", model="big", processor="GPU", A=80, TP=30, L=20, L_max=22, W=5e9, MF=90,
         params=12e6),
    dict(id="small-cpu", model="small", processor="CPU", threads=4, A=70, TP=100, L=5, L_max=6,
         W=5e8, MF=10, params=2e6),
    dict(id="mid-npu", model="mid", processor="NPU", A=76, TP=60, L=8, L_max=9, W=1e9, MF=30,
         params=5e6),
]


def test_single_architecture_baselines():
    pr = DiscreteProblem(make_profile(ROWS), "max A; max TP; max L <= 30")
    ba, bs = single_architecture(pr, by="accuracy"), single_architecture(pr, by="size")
    assert ba.outcome == "ok" and ba.design.configs == ("big-gpu",) and ba.reason == "big"
    assert bs.outcome == "ok" and bs.design.configs == ("small-cpu",)
    best = rass(pr).d0.optimality
    assert ba.optimality <= best and bs.optimality <= best
    tight = DiscreteProblem(make_profile(ROWS), "max A; max TP; max L <= 15")
    assert single_architecture(tight).outcome == "!"  # no variant of 'big' meets max L


def test_transferred_designs_na_and_failing():
    src = DiscreteProblem(make_profile(ROWS, name="phone-a"), "max A; max TP; max L <= 30")
    assert rass(src).d0.configs == ("mid-npu",)
    no_npu = DiscreteProblem(make_profile([r for r in ROWS if r["processor"] != "NPU"],
                                          name="phone-b"), "max A; max TP; max L <= 30")
    t = transferred(no_npu, src)
    assert t.outcome == "N/A" and "NPU" in t.reason and t.name == "T_phone-a"
    slow = [dict(r, L_max=40) if r["id"] == "mid-npu" else r for r in ROWS]
    t = transferred(DiscreteProblem(make_profile(slow, name="c"), "max A; max TP; max L <= 30"),
                    src)
    assert t.outcome == "!" and "max L" in t.reason and t.optimality is None
    same = transferred(src, src)
    assert same.outcome == "ok" and same.optimality == rass(src).d0.optimality


def test_multi_dnn_unaware_loses_to_rass_when_both_pick_the_gpu():
    rows = [
        dict(id="v-gpu", task="v", processor="GPU", L=10, A=80, W=2e9, MF=20),
        dict(id="v-cpu", task="v", processor="CPU", threads=4, L=14, A=80, W=2e9, MF=20),
        dict(id="a-gpu", task="a", processor="GPU", L=4, A=0.4, W=1e8, MF=10),
        dict(id="a-cpu", task="a", processor="CPU", threads=2, L=5, A=0.4, W=1e8, MF=10),
    ]
    pr = DiscreteProblem(make_profile(rows, cores=8), "min L", tasks=["v", "a"])
    mu = multi_dnn_unaware(pr)
    assert mu.design.configs == ("v-gpu", "a-gpu")  # each alone prefers the GPU
    best = rass(pr).d0
    assert best.configs != mu.design.configs and best.optimality > mu.optimality


def test_uc3_baselines_on_modelled_phones_are_scored_like_rass():
    pr = usecases.problem("uc3", "a71")
    d0 = rass(pr).d0.optimality
    for b in (single_architecture(pr), single_architecture(pr, by="size"), multi_dnn_unaware(pr)):
        assert b.outcome in ("ok", "!")
        if b.outcome == "ok":
            assert b.optimality <= d0 + 1e-9


def test_oodin_manager_resolves_around_unavailable_processors():
    pr = DiscreteProblem(make_profile(ROWS), "max A; max TP; max L <= 30")
    m = OodinManager(pr)
    # Weighted sum of best-normalised objectives: small 70/80 + 100/100 = 1.875 beats
    # mid 76/80 + 60/100 = 1.55 and big 1 + 0.3 (RASS's optimality prefers mid).
    first = m.resolve()
    assert pr.configs_of(first)[0].id == "small-cpu"
    assert pr.configs_of(m.resolve(unavailable=("CPU",)))[0].id == "mid-npu"
    assert m.resolve(unavailable=("NPU", "CPU", "GPU")) is None
    assert pr.configs_of(m.resolve(memory_limit_mb=50))[0].id == "small-cpu"
    assert pr.configs_of(m.resolve(unavailable=("CPU",), memory_limit_mb=50))[0].id == "mid-npu"
    assert np.isfinite(pr.optimality_of(np.array([first]))[0])


def test_oodin_normalises_by_the_model_space_and_the_old_way_can_flip_its_choice():
    """OODIn Eq. 5 divides by the best over the model space; the best over the feasible space
    (the old behaviour, kept as normalise="feasible") can pick another design."""
    import numpy as np

    from workbench.solvers.oodin import weighted_sum_scores

    maximise, w = np.array([True, True]), np.ones(2)
    feasible = np.array([[60.0, 100.0], [80.0, 70.0]])   # (A, TP) of the two feasible designs
    space_best = np.array([80.0, 1000.0])                 # an infeasible design runs at 1000/s
    assert np.argmax(weighted_sum_scores(feasible, maximise, w)) == 0
    assert np.argmax(weighted_sum_scores(feasible, maximise, w, best=space_best)) == 1


def test_oodin_normalisation_is_named_and_checked():
    import pytest

    from workbench.errors import InputError
    from workbench.moo.usecases import problem
    from workbench.solvers import oodin

    pb = problem("uc1", "s20fe")
    assert oodin(pb).extra["normalise"] == "model-space"
    assert oodin(pb, normalise="feasible").extra["normalise"] == "feasible"
    with pytest.raises(InputError, match="normalise"):
        oodin(pb, normalise="best")
    from workbench.solvers import OodinManager

    with pytest.raises(InputError, match="normalise"):
        OodinManager(pb, normalise="best")
