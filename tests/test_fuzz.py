"""Fuzzing the input surfaces with hypothesis: SLO strings (random text and grammar-aware
mutations), profile JSON and CSV tables (byte mutations of real files). Every input either parses
or raises the workbench's one-line InputError: never another exception, never input dropped.

A fixed seed and a bounded budget in the default suite; ``-m slow`` runs a longer budget."""

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from workbench.errors import InputError
from workbench.metrics import BY_NAME
from workbench.moo.slo import SLOError, parse_slo
from workbench.profiles import load_profile
from workbench.profiles.importers import import_csv

ROOT = Path(__file__).resolve().parents[1]
QUICK = dict(max_examples=150, deadline=None, derandomize=True,
             suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
LONG = dict(QUICK, max_examples=3000)

# --- SLO strings --------------------------------------------------------------------------------

metric = st.sampled_from(["A", "L", "TP", "MF", "E", "S", "W", "L[t1]", "A[total]", "L[total]"])
stat = st.sampled_from(["", "avg ", "std ", "p99 ", "max ", "min "])
objective = st.builds(lambda s, st_, m: f"{s} {st_}{m}", st.sampled_from(["min", "max"]), stat,
                      metric)
#: (metric, unit) pairs that fit, from the metric table itself.
FITTING = [(m, u) for m in ("A", "L", "TP", "MF", "E", "S", "W", "L[t1]", "L[total]")
           for u in ["", *BY_NAME[m.split("[")[0]].units]]
number = st.one_of(st.integers(0, 10_000).map(str),
                   st.floats(0, 1e4, allow_nan=False).map(lambda f: f"{f:g}"))
constraint = st.builds(lambda st_, mu, op, v: f"{st_}{mu[0]} {op} {v}{mu[1]}", stat,
                       st.sampled_from(FITTING), st.sampled_from(["<=", ">="]), number)
valid_slo = st.lists(st.one_of(objective, constraint), min_size=1, max_size=5).map("; ".join)
#: Fragments a careless user types: none is part of the grammar, so none may be dropped.
JUNK = ["= 9ms", "=> 72", "==", "=", "!", "=<", "=40"]


def _parse(text):
    try:
        return parse_slo(text)
    except SLOError as e:
        assert "\n" in str(e) and "^" in str(e)  # the caret under the bad token
        return None


def _check_any_text(text):
    slo = _parse(text)
    if slo is not None:  # what parsed prints back as an SLO that parses to the same
        assert parse_slo(str(slo)) == slo


def _check_junk(text, junk, where):
    items = text.split("; ")
    k = where % len(items)
    items[k] = f"{items[k]} {junk}"
    with pytest.raises(SLOError):
        parse_slo("; ".join(items))


@seed(20261123)
@settings(**QUICK)
@given(st.text(max_size=60))
def test_any_text_is_an_slo_or_an_slo_error(text):
    _check_any_text(text)


@seed(20261123)
@settings(**QUICK)
@given(valid_slo)
def test_grammar_valid_slos_round_trip(text):
    assert _parse(text) is not None or "[total]" in text  # only A/L[total] may be refused


@seed(20261123)
@settings(**QUICK)
@given(valid_slo, st.sampled_from(JUNK), st.integers(0, 10))
def test_text_the_grammar_does_not_know_is_never_dropped(text, junk, where):
    """``"max A; min L = 9ms"`` used to be solved as ``max A; min L``."""
    _check_junk(text, junk, where)


@pytest.mark.slow
@seed(7)
@settings(**LONG)
@given(st.text(max_size=120), valid_slo, st.sampled_from(JUNK), st.integers(0, 10))
def test_slo_fuzz_long(text, valid, junk, where):
    _check_any_text(text)
    _check_junk(valid, junk, where)


# --- profile JSON and CSV byte mutations --------------------------------------------------------

CSV = (b"config,model,precision,processor,threads,L,L_min,L_max,A,MF\n"
       b"c1,m1,FP32,CPU[0],1,5.0,4.0,6.0,70.1,12\nc2,m1,FFX8,CPU[0,1],2,2.5,2,3,69.0,6\n")


def _small_profile() -> bytes:
    """The committed host profile cut to four rows (a real file, small enough to mutate)."""
    d = json.loads((ROOT / "profiles" / "host.json").read_text())
    d["configs"] = d["configs"][:4]
    d["coexecution"] = []
    return json.dumps(d, indent=1).encode()


SMALL_PROFILE = _small_profile()


def mutations(base: bytes):
    """Byte flips, insertions and cuts at random places of a real file."""
    edit = st.tuples(st.sampled_from(["flip", "insert", "delete", "cut"]),
                     st.integers(0, len(base) - 1), st.binary(min_size=1, max_size=4))
    return st.lists(edit, min_size=1, max_size=4).map(lambda eds: _apply(base, eds))


def _apply(data: bytes, edits) -> bytes:
    b = bytearray(data)
    for kind, pos, chunk in edits:
        pos %= max(len(b), 1)
        if kind == "flip" and b:
            b[pos] ^= chunk[0] or 1
        elif kind == "insert":
            b[pos:pos] = chunk
        elif kind == "delete":
            del b[pos:pos + len(chunk)]
        else:
            del b[pos:]
    return bytes(b)


def _load_or_input_error(load, path, data):
    path.write_bytes(data)
    try:
        load(path)
    except InputError as e:
        assert str(e) and len(str(e).splitlines()) == 1 and path.name in str(e)


@seed(20261123)
@settings(**QUICK)
@given(mutations(SMALL_PROFILE))
def test_mutated_profiles_load_or_give_one_line(tmp_path, data):
    _load_or_input_error(load_profile, tmp_path / "p.json", data)


@seed(20261123)
@settings(**QUICK)
@given(mutations(CSV))
def test_mutated_csv_tables_import_or_give_one_line(tmp_path, data):
    _load_or_input_error(import_csv, tmp_path / "t.csv", data)


@pytest.mark.slow
@seed(11)
@settings(**LONG)
@given(mutations(SMALL_PROFILE), mutations(CSV))
def test_byte_fuzz_long(tmp_path, profile, table):
    _load_or_input_error(load_profile, tmp_path / "p.json", profile)
    _load_or_input_error(import_csv, tmp_path / "t.csv", table)
