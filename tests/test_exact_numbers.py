"""Numbers are exact or refused (issue 35, "Trust, round 2"): SLO bounds keep every digit and
mean what they say; values that overflow, are not finite or are ambiguous are refused at load
with the place named; every ``--json`` output is strict JSON."""

import json

import numpy as np
import pytest
from conftest import make_profile
from hypothesis import given
from hypothesis import strategies as st

from workbench.cli import main
from workbench.errors import InputError
from workbench.fileio import parse_json
from workbench.moo.optimality import optimality
from workbench.moo.problem import DiscreteProblem
from workbench.moo.slo import (
    MAX_NUMBER_CHARS,
    MAX_SLO_CHARS,
    METRICS,
    SLO,
    Constraint,
    Objective,
    SLOError,
)
from workbench.profiles import load_profile


def _caret(err: SLOError) -> int:
    """Where the caret line points (the message repeats the SLO under two spaces)."""
    return str(err).splitlines()[2].index("^") - 2


# --- SLOs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, op", [("max A; L < 8ms", "<"), ("max A; TP > 30", ">"),
                                      ("p90 L[x]<8", "<")])
def test_strict_comparisons_are_refused_not_read_as_non_strict(text, op):
    """`L < 8ms` kept L = 8 and printed back as `<=`."""
    with pytest.raises(SLOError, match="<=" if op == "<" else ">=") as e:
        SLO.parse(text)
    assert _caret(e.value) == text.index(op)


def test_a_constraint_holds_only_the_comparisons_the_solver_knows():
    with pytest.raises(InputError, match="<= or >="):
        Constraint("L", "<", 8.0)


@pytest.mark.parametrize("text, bad", [("L <= 4 1ms", "1ms"), ("L <= 4 1", "1"),
                                       ("L <= 4.1 6 ms", "6"), ("L <= 4 ms ms", "ms ms")])
def test_a_space_inside_a_number_is_refused(text, bad):
    """`L <= 4 1ms` read 41 ms (the tokens were joined)."""
    with pytest.raises(SLOError) as e:
        SLO.parse(text)
    assert _caret(e.value) == text.rindex(bad)


def test_a_space_between_number_and_unit_stays_valid():
    assert SLO.parse("L <= 41.67 ms").constraints[0].value == 41.67
    assert SLO.parse("MF <= 1 GB").constraints[0].value == 1024.0


def test_a_bound_keeps_every_digit_when_printed():
    """`:g` printed 6 digits: 41.6666667 ms became 41.6667 in sessions, bundles and links."""
    slo = SLO.parse("max A; L <= 41.6666667ms; target TP = 29.9999999")
    assert str(slo) == "max A; target TP = 29.9999999/s; L <= 41.6666667ms"
    assert SLO.parse(str(slo)) == slo
    assert str(SLO.parse("L <= 100; MF <= 0.000001")) == "L <= 100ms; MF <= 0.000001MB"
    # A unit converts in decimal, rounded once (0.7 * 1000.0 is 700.0000000000001).
    assert str(SLO.parse("L <= 0.7s; E <= 0.0029J")) == "L <= 700ms; E <= 2.9mJ"


_values = st.floats(min_value=0, max_value=1e300, allow_nan=False, allow_infinity=False)


@given(_values, _values, st.sampled_from(["L", "MF", "W", "E", "A", "TP", "S"]),
       st.sampled_from(["<=", ">="]))
def test_any_slo_reads_back_as_itself(value, target, metric, op):
    slo = SLO((Objective("max", "A"), Objective("target", metric, target=target)),
              (Constraint(metric, op, value),))
    assert SLO.parse(str(slo)) == slo


@pytest.mark.parametrize("text, bad", [("L <= ４1ms", "４"), ("L <= 4²", "²"), ("L <= ٤", "٤"),
                                       ("L <= 1٫5", "٫"), ("p٩٠ L <= 4", "٩")])
def test_non_ascii_digits_are_refused_with_a_caret_under_them(text, bad):
    """float() reads '４1' as 41 and '٤' as 4."""
    with pytest.raises(SLOError, match="0-9") as e:
        SLO.parse(text)
    assert _caret(e.value) == text.index(bad)


def test_a_numeric_task_name_means_that_task_not_a_position():
    """With tasks "2" and "1" (in that order), L[1] bound the task at position 1, i.e. "2"."""
    rows = [dict(id=f"{t}{k}", task=t, L=float(k + 1), A=50.0 + k) for t in ("1", "2")
            for k in range(2)]
    prof = make_profile(rows, tasks=["2", "1"])
    pb = DiscreteProblem(prof, "max A; L[1] <= 1", tasks=["2", "1"])
    (bound,) = pb.limits
    assert pb.task_names[bound.term.task] == "1" and bound.name.startswith("L[1]")
    assert pb.task_slo("2").constraints == ()
    assert pb.task_slo("1").constraints == SLO.parse("L[1] <= 1").constraints


@pytest.mark.parametrize("names", [("7", "x"), ("uc1", "uc2")])
def test_a_number_in_brackets_is_never_a_position(names):
    """L[1] on tasks without a task named "1" is refused: read as "the first task" it bound a
    task the SLO did not name (the outside attack found it applied silently)."""
    rows = [dict(id=f"{t}{k}", task=t, L=float(k + 1), A=50.0 + k) for t in names
            for k in range(2)]
    with pytest.raises(InputError, match="task '1' is not part of this problem"):
        DiscreteProblem(make_profile(rows), "max A; L[1] <= 1", tasks=list(names))


def test_a_huge_slo_is_refused_at_once_naming_the_limit():
    text = "max A; " * (MAX_SLO_CHARS // 7 + 1)
    with pytest.raises(InputError, match=f"at most {MAX_SLO_CHARS} characters") as e:
        SLO.parse(text)
    assert len(str(e.value)) < 300  # the message does not repeat a megabyte of SLO
    with pytest.raises(InputError, match=f"at most {MAX_SLO_CHARS} characters"):
        SLO.parse("max A" + " " * 10 ** 6)


def test_a_huge_number_literal_is_refused_naming_the_limit():
    text = "L <= " + "1" * (MAX_NUMBER_CHARS + 1)
    with pytest.raises(SLOError, match=f"at most {MAX_NUMBER_CHARS} characters") as e:
        SLO.parse(text)
    assert _caret(e.value) == 5
    assert SLO.parse("L <= " + "0" * 40 + "1").constraints[0].value == 1.0


@pytest.mark.parametrize("text", ["MF >= 1e306GB", "W <= 1e300tflops", "L <= 1e306s",
                                  "target E = 1e306J"])
def test_a_bound_that_overflows_with_its_unit_is_refused(text):
    """`MF >= 1e306GB` became inf MB (and failed only when the session was saved)."""
    with pytest.raises(SLOError, match="too large"):
        SLO.parse(text)


# --- values in profiles -----------------------------------------------------------------------

def _profile_text(tmp_path, change, minimal_profile, raw=None):
    change(minimal_profile)
    text = json.dumps(minimal_profile)  # writes Infinity / NaN for non-finite floats
    if raw:
        text = text.replace('"__RAW__"', raw)
    p = tmp_path / "p.json"
    p.write_text(text)
    return p


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize("change, raw, where", [
    (lambda d: d["device"].update(ram_gb=INF), None, "device.ram_gb"),
    (lambda d: d["device"].update(dram_gbps="__RAW__"), "1e309", "device.dram_gbps"),
    (lambda d: d["device"].update(tdp_w=NAN), None, "device.tdp_w"),
    (lambda d: d["device"].update(battery_mah=INF), None, "device.battery_mah"),
    (lambda d: d["device"]["cpu_clusters"][0].update(ghz=INF), None, "cpu_clusters[0].ghz"),
    (lambda d: d["device"].update(gpu={"name": "g", "fp32_gflops": INF}), None,
     "device.gpu.fp32_gflops"),
    (lambda d: d["device"].update(npu={"name": "n", "int8_tops": NAN}), None,
     "device.npu.int8_tops"),
    (lambda d: d["configs"][0].update(memory_budget_mb=INF), None, "configs[0].memory_budget_mb"),
    (lambda d: d["configs"][0].update(memory_budget_mb="__RAW__"), "-1e309",
     "configs[0].memory_budget_mb"),
    (lambda d: d["configs"][0].update(recognition_rate=NAN), None, "configs[0].recognition_rate"),
    (lambda d: d["configs"][0].update(L_samples=[1.0, INF]), None, "configs[0].L_samples"),
    (lambda d: d.update(coexecution=[{"configs": ["a", "b"], "L": [1.0, 2.0], "MF": INF,
                                      "source": "modelled"}]), None, "coexecution[0].MF"),
    (lambda d: d.update(contention={"cross_processor": NAN}), None, "contention"),
    (lambda d: d.update(multi_exit=[{"name": "m", "task": "cls", "arch": "a", "processor": "CPU",
                                     "source": "measured", "size_mb": INF, "exits": [
                                         {"exit": 1, "latency_ms": 1.0, "accuracy": 0.5}]}]),
     None, "multi_exit[0].size_mb"),
    (lambda d: d.update(multi_exit=[{"name": "m", "task": "cls", "arch": "a", "processor": "CPU",
                                     "source": "measured", "exits": [
                                         {"exit": 1, "latency_ms": INF, "accuracy": 0.5}]}]),
     None, "multi_exit[0].exits[0].latency_ms"),
])
def test_non_finite_values_are_refused_at_load_naming_the_field(tmp_path, minimal_profile,
                                                                change, raw, where):
    with pytest.raises(InputError) as e:
        load_profile(_profile_text(tmp_path, change, minimal_profile, raw))
    assert where in str(e.value) and "p.json" in str(e.value) and "finite" in str(e.value)


@pytest.mark.parametrize("change, where", [
    (lambda d: d["configs"][0].update(L=1e300), "configs[0].L"),
    (lambda d: d["configs"][1].update(W=2e18), "configs[1].W"),
    (lambda d: d["configs"][1].update(L_samples=[4.0, 1e19]), "configs[1].L_samples"),
    (lambda d: d["device"].update(ram_gb=1e300), "device.ram_gb"),
    (lambda d: d.update(coexecution=[{"configs": ["a", "b"], "L": [1.0, 1e300],
                                      "source": "modelled"}]), "coexecution[0].L"),
])
def test_values_beyond_the_bound_are_refused_naming_it(tmp_path, minimal_profile, change, where):
    with pytest.raises(InputError, match=r"1e\+18") as e:
        load_profile(_profile_text(tmp_path, change, minimal_profile))
    assert where in str(e.value)


def test_the_largest_allowed_values_still_rank(tmp_path, minimal_profile):
    from workbench.solvers import rass

    minimal_profile["configs"][0].update(L=1e18, W=1e18, MF=1e18, A=80.0)
    p = _profile_text(tmp_path, lambda d: None, minimal_profile)
    res = rass(DiscreteProblem(load_profile(p), "min L; min MF; max A"))
    assert res.designs["d0"].configs == ("b",) and np.isfinite(res.designs["d0"].optimality)


def test_huge_objective_values_neither_drop_an_objective_nor_make_a_utopia():
    """L like [1e300, 5, 4]: the standard deviation overflowed to inf, L dropped out of every
    distance and the row best in A alone read as 'best in every objective'."""
    F = np.array([[1e300, 71.0], [5.0, 70.0], [4.0, 60.0]])
    res = optimality(F, [False, True])
    assert np.isfinite(res.optimality).all()
    # As with any outlier (1e3 ms): the balanced row first, the slowest no longer "best".
    assert res.index.tolist() == [1, 0, 2]
    assert res.index.tolist() == optimality(F * [1e-297, 1.0], [False, True]).index.tolist()
    # The same ranking, to the last bit, at any power-of-two scale of a column.
    small = optimality(F * [2.0 ** -990, 1.0], [False, True])
    assert small.index.tolist() == res.index.tolist()
    assert small.optimality.tolist() == res.optimality.tolist()
    both = np.array([[1e300, 1.0], [-1e300, 0.0], [0.0, 0.5]])  # 1e300 - (-1e300) = inf
    r = optimality(both, [False, True])
    assert np.isfinite(r.optimality).all() and np.isfinite(r.d_max)
    assert r.of(both).tolist() == [r.optimality[list(r.index).index(i)] for i in range(3)]


# --- JSON in and out --------------------------------------------------------------------------

def test_duplicate_keys_in_json_are_refused_naming_the_key_and_file():
    with pytest.raises(InputError, match="'L'.*twice") as e:
        parse_json('{"configs": [{"L": 5, "A": 1, "L": 50}]}', file="p.json")
    assert "p.json" in str(e.value)
    assert parse_json('{"a": {"L": 1}, "b": {"L": 2}}') == {"a": {"L": 1}, "b": {"L": 2}}


def test_a_5000_digit_integer_is_a_clear_error_naming_the_file():
    with pytest.raises(InputError, match="4300 digits") as e:
        parse_json('{"L": ' + "9" * 5000 + "}", file="p.json")
    assert "p.json" in str(e.value)


def test_duplicate_keys_in_a_profile_file_are_refused(tmp_path, minimal_profile):
    p = tmp_path / "p.json"
    text = json.dumps(minimal_profile)
    p.write_text(text.replace('"L": 5.0', '"L": 5.0, "L": 0.5'))
    with pytest.raises(InputError, match="'L' given twice"):
        load_profile(p)


def _reject(token):
    raise AssertionError(f"not strict JSON: {token}")


def test_solve_json_is_strict_json(capsys):
    argv = ["solve", "--use-case", "uc1", "--device", "a71", "--slo",
            "max A; max TP; max L <= 10ms", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=_reject)
    assert out["designs"]["d0"]["optimality"] == "inf"


def test_profiles_show_json_is_strict_json(capsys):
    assert main(["profiles", "show", "s20fe", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=_reject)
    assert out["device"]["name"] == "s20fe"


def test_models_show_json_keeps_an_infinite_value_as_a_string(monkeypatch, capsys):
    """A record's non-finite number was printed as null: "inf" says what it was. (Built
    without validation: whatever the registry accepts, the printing must stay strict.)"""
    from workbench.host import registry

    variant = registry.VariantRecord.model_construct(precision="FP32", available=True,
                                                     metric=INF, convert_seconds=NAN)
    rec = registry.ModelRecord.model_construct(
        name="strictjson", task="t", arch="a", kind="keras", file="f", sha256="0",
        source="test", added="2024-01-01", input_shape=[1], input_dtype="float32",
        output_shape=[1], metric="accuracy", data=None, cited={}, citation=None,
        variants=[variant])
    monkeypatch.setattr(registry, "get", lambda name: rec)
    assert main(["models", "show", "strictjson", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=_reject)
    assert out["variants"][0]["metric"] == "inf" and out["variants"][0]["convert_seconds"] is None


def test_every_metric_name_is_known_to_the_round_trip():
    # The property test above covers the metrics an SLO may bound with a unit; the others
    # (NTT, STP, F) have no unit and print bare numbers.
    for m in ("NTT", "STP", "F"):
        assert m in METRICS
        slo = SLO((), (Constraint(m, ">=", 0.1 + 0.2),))
        assert SLO.parse(str(slo)) == slo


@pytest.mark.parametrize("number, read_as", [("41.670000000000000000000001", "41.67"),
                                             ("12345678901234567890123", "1.2345678901234568e+22"),
                                             ("1e-400", "0")])
def test_a_number_a_float_cannot_hold_is_refused_saying_what_it_would_be(number, read_as):
    text = f"max A; L <= {number}ms"
    with pytest.raises(SLOError, match="cannot be held exactly") as e:
        SLO.parse(text)
    assert f"read as {read_as}" in str(e.value) and _caret(e.value) == text.index(number)


@pytest.mark.parametrize("text", ["max A; L <= 41.67ms", "max A; L <= 1.50s", "max A; L <= 1e2",
                                  "max A; L <= 0.1us", "max A; MF <= 1234567.25MB"])
def test_numbers_a_float_holds_still_parse(text):
    assert SLO.parse(str(SLO.parse(text))) == SLO.parse(text)


@pytest.mark.parametrize("ctl", ["\x1b", "\x07", "\x9b", "\u202e", "\x00"])
def test_a_control_character_in_an_slo_is_refused_and_never_echoed_raw(ctl):
    text = f"max A; L <= 5ms{ctl}[2J"
    with pytest.raises(SLOError, match="control character") as e:
        SLO.parse(text)
    assert ctl not in str(e.value) and _caret(e.value) == text.index(ctl)
    assert SLO.parse("max A;\n\tmin L") == SLO.parse("max A; min L")  # whitespace is whitespace
