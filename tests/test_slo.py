"""The SLO string form: the papers' examples, units, per-task forms, and errors that point."""

import pytest

from workbench.errors import InputError
from workbench.moo.slo import SLO, Constraint, Objective, SLOError, parse_slo, parse_weights


def test_carin_use_case_strings():
    uc1 = parse_slo("max A; max TP; max L <= 41.67ms")
    assert uc1.objectives == (Objective("max", "A"), Objective("max", "TP"))
    assert uc1.constraints == (Constraint("L", "<=", 41.67, "max"),)
    uc3 = parse_slo("min L; min std L; max A; avg L <= 100; std L <= 10")
    assert [str(o) for o in uc3.objectives] == ["min L", "min std L", "max A"]
    assert [c.stat for c in uc3.constraints] == ["avg", "std"]
    uc2 = parse_slo("min L; min S; max A; MF <= 90MB")
    assert uc2.constraints[0] == Constraint("MF", "<=", 90.0)


@pytest.mark.parametrize("text, value", [
    ("L <= 0.5s", 500.0), ("L <= 250us", 0.25), ("MF <= 1GB", 1024.0), ("W <= 2GFLOPs", 2e9),
    ("E <= 1.5J", 1500.0), ("TP >= 24fps", 24.0), ("A >= 75%", 75.0), ("L <= 3", 3.0),
])
def test_units_convert_to_workbench_units(text, value):
    (c,) = parse_slo(text).constraints
    assert c.value == pytest.approx(value)


def test_per_task_total_and_percentiles():
    slo = parse_slo("max STP; p90 L[uc3-audio] <= 50ms; MF[total] >= 1; min max L[2]")
    assert slo.constraints[0] == Constraint("L", "<=", 50.0, "p90", "uc3-audio")
    assert slo.constraints[1] == Constraint("MF", ">=", 1.0, "avg", "total")
    assert slo.objectives[1] == Objective("min", "L", "max", "2")


def test_constraints_become_objectives_when_none_is_given():
    slo = parse_slo("avg L <= 100; A >= 70")
    assert slo.objectives == ()
    assert slo.effective_objectives == (Objective("min", "L"), Objective("max", "A"))


def test_round_trip_through_str():
    text = "min L; min std L; max A; L <= 100ms; std L <= 10ms"
    assert str(parse_slo(text)) == text
    assert parse_slo(str(parse_slo(text))) == parse_slo(text)


@pytest.mark.parametrize("text, message, caret", [
    ("max A; max Lat", "unknown metric 'Lat'", "max A; max Lat".index("Lat")),
    ("max A; L <= fast", "expected a number", "max A; L <= fast".index("fast")),
    ("maximise A", "starts with min, max or target", 0),
    ("max A; L <= 40 MB", "unit 'MB' does not fit L", "max A; L <= 40 MB".index("MB")),
    ("max NTT[uc1]", "system metric", 4),
    ("max A; A[total] >= 3", "A[total] is not defined", 7),
    ("max A; L <= 3 <= 4", "one comparison", 14),
    ("max A; p999 L <= 3", "statistic", 7),
    ("   ;  ", "empty SLO", 0),
])
def test_errors_point_at_the_token(text, message, caret):
    with pytest.raises(SLOError) as info:
        parse_slo(text)
    err = info.value
    assert message in str(err)
    assert err.start == caret
    # The message repeats the string and puts carets under the token.
    lines = str(err).splitlines()
    assert lines[1].strip() == text.strip() or text.strip() == ""
    assert lines[2].index("^") - 2 == caret


def test_weights():
    slo = SLO.parse("max A; max TP; max L <= 40").with_weights("A=2, TP=0.5")
    assert [o.weight for o in slo.objectives] == [2.0, 0.5]
    assert parse_weights("std L=3") == {"std L": 3.0}
    with pytest.raises(InputError, match="matches no objective"):
        SLO.parse("max A").with_weights({"E": 1})
    with pytest.raises(InputError, match="METRIC=WEIGHT"):
        parse_weights("A:2")
    with pytest.raises(InputError, match="METRIC=WEIGHT"):
        parse_weights("A=-1")


def test_target_objectives_are_closest_to_a_value():
    """OODIn's "as close as possible to a target value": parsed, printed back, and solved as
    the distance to the target (RASS's d0 is the feasible design closest to 30 inferences/s)."""
    import numpy as np

    from workbench.moo.usecases import problem
    from workbench.solvers import rass

    slo = parse_slo("target TP = 30; L <= 100ms")
    assert slo.objectives[0].sense == "target" and slo.objectives[0].target == 30
    assert parse_slo(str(slo)) == slo
    assert parse_slo("target p99 L = 0.04s").objectives[0].target == pytest.approx(40.0)
    pb = problem("uc1", "s20fe", slo=str(slo))
    assert pb.objective_names == ["|TP - 30|"] and not pb.maximise[0]
    d0 = rass(pb).d0
    tp = [c.TP for c in pb.profile.configs if c.task == "uc1" and c.L <= 100]
    assert d0.objectives["|TP - 30|"] == pytest.approx(min(abs(np.array(tp) - 30)))
    for bad, msg in (("target TP 30", "target objective reads"), ("max TP = 30", "'=' sets a target"),
                     ("target TP = 30 = 4", "target objective reads")):
        with pytest.raises(SLOError, match=msg):
            parse_slo(bad)


def test_every_system_metric_and_statistic_of_the_table_is_computed():
    """The problem computes each multi-DNN system metric the metric table lists, for each
    statistic the table gives it: a system row without its computation fails here, not in a
    solve."""
    import numpy as np

    from workbench.metrics import BY_NAME, SYSTEM_METRICS
    from workbench.moo.problem.coexec import SYSTEM_VALUES

    assert set(SYSTEM_VALUES) == set(SYSTEM_METRICS)
    N = np.array([[1.0, 2.0], [4.0, 1.0]])
    for name in SYSTEM_METRICS:
        for stat in BY_NAME[name].stats:
            assert SYSTEM_VALUES[name](N, stat).shape == (2,)
    assert SYSTEM_VALUES["NTT"](N, "max").tolist() == [4.0, 2.0]
    assert SYSTEM_VALUES["STP"](N, "avg").tolist() == [1.25, 1.5]
    assert SYSTEM_VALUES["F"](N, "avg").tolist() == [0.25, 0.5]
