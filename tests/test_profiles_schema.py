"""Schema round-trips and every class of bad input a user can hand the profile loader."""

import copy
import json
import os

import pytest

from workbench.errors import InputError
from workbench.profiles import Profile, load_profile, profile_from_dict, save_profile


def test_round_trip_preserves_every_field(minimal_profile, tmp_path):
    prof = profile_from_dict(minimal_profile)
    out = save_profile(prof, tmp_path / "p.json")
    again = load_profile(out)
    assert again == prof
    assert again.config("a").threads == 4 and again.config("a").xnnpack is True
    # Saving the loaded profile again gives the same bytes (stable, diff-friendly files).
    first = out.read_bytes()
    save_profile(again, out)
    assert out.read_bytes() == first


def test_columns_give_nan_for_missing_values(minimal_profile):
    prof = profile_from_dict(minimal_profile)
    cols = prof.columns("L", "L_max", task="cls")
    assert cols["L"].tolist() == [5.0, 4.0]
    assert cols["L_max"][0] == 7.0 and cols["L_max"][1] != cols["L_max"][1]  # NaN


def test_label_uses_carin_notation(minimal_profile):
    prof = profile_from_dict(minimal_profile)
    assert prof.config("a").label() == "net FP32, CPU_{4,T}"
    assert prof.config("b").label() == "net FP16, GPU"


def _error(data, write_json) -> InputError:
    path = write_json(data)
    with pytest.raises(InputError) as info:
        load_profile(path)
    assert str(path) in str(info.value)  # every error names the file
    return info.value


@pytest.mark.parametrize("mutate, where, value_text", [
    (lambda d: d["configs"][0].update(L=-1.0), "configs[0].L", "-1.0"),
    (lambda d: d["configs"][1].update(precision="INT4"), "configs[1].precision", "'INT4'"),
    (lambda d: d["configs"][0].update(processor="FPGA"), "configs[0].processor", "'FPGA'"),
    (lambda d: d["configs"][0].update(processor="DSP"), "configs[0].processor", "'DSP'"),
    (lambda d: d["configs"][1].update(id="a"), "configs[1].id", "'a'"),
    (lambda d: d["configs"][0].update(Lmean=5.0), "configs[0].Lmean", "5.0"),
    (lambda d: d["configs"][0].pop("model"), "configs[0].model", None),
    (lambda d: d["configs"][0].update(task="other"), "configs[0].task", "'other'"),
    (lambda d: d["configs"][0].update(L_min=9.0), "configs[0].L_min", None),
    (lambda d: d["device"].pop("name"), "device.name", None),
    (lambda d: d.update(source="guessed"), "source", "'guessed'"),
])
def test_bad_field_names_path_and_value(minimal_profile, write_json, mutate, where, value_text):
    data = copy.deepcopy(minimal_profile)
    mutate(data)
    err = _error(data, write_json)
    assert err.where == where
    if value_text is not None:
        assert f"(got {value_text})" in str(err)


@pytest.mark.parametrize("field, value", [("L", "nan"), ("L_p99", "inf"), ("MF", "-inf")])
def test_non_finite_values_are_rejected_with_their_path(minimal_profile, tmp_path, field, value):
    # json.dumps writes NaN/Infinity literally: the loader must refuse them, not keep them.
    data = copy.deepcopy(minimal_profile)
    data["configs"][1][field] = float(value)
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_profile(path)
    assert info.value.where == f"configs[1].{field}"
    assert str(path) in str(info.value) and value in str(info.value)


def test_coexecution_rows_are_checked(minimal_profile):
    data = copy.deepcopy(minimal_profile)
    data["coexecution"] = [{"configs": ["a", "b"], "L": [6.0, 5.0], "source": "measured"}]
    prof = profile_from_dict(data)
    assert prof.coexecution[0].L == [6.0, 5.0]
    data["coexecution"][0]["configs"] = ["a", "zz"]
    with pytest.raises(InputError) as info:
        profile_from_dict(data)
    assert info.value.where == "coexecution[0].configs" and info.value.value == "zz"
    data["coexecution"][0].update(configs=["a", "b"], L=[6.0])
    with pytest.raises(InputError, match="1 values for 2 configs"):
        profile_from_dict(data)


def test_engine_kind_must_match_its_name(minimal_profile):
    data = copy.deepcopy(minimal_profile)
    data["engines"][1]["kind"] = "NPU"
    with pytest.raises(InputError, match="engines\\[1\\].*kind 'NPU'"):
        profile_from_dict(data)


def test_cpu_core_set_processors(minimal_profile):
    data = copy.deepcopy(minimal_profile)
    data["engines"].append({"name": "CPU[0,1]", "kind": "CPU", "core_ids": [0, 1]})
    data["configs"][0]["processor"] = "CPU[0,1]"
    assert profile_from_dict(data).config("a").kind == "CPU"


def test_malformed_json_names_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"device": {"name": "x"},\n "source": }')
    with pytest.raises(InputError, match=r"broken\.json: malformed JSON: .* line 2"):
        load_profile(path)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no such profile file"):
        load_profile(tmp_path / "absent.json")


def test_top_level_must_be_an_object(write_json):
    with pytest.raises(InputError, match="must be a JSON object"):
        load_profile(write_json([1, 2]))


def test_failed_save_leaves_previous_file_intact(minimal_profile, tmp_path):
    path = tmp_path / "p.json"
    prof = profile_from_dict(minimal_profile)
    save_profile(prof, path)
    before = path.read_bytes()
    # Mutate into an invalid state behind validation's back (model_construct skips checks).
    bad = Profile.model_construct(**{**dict(prof), "configs": prof.configs + [prof.configs[0]]})
    with pytest.raises(InputError, match="duplicate config id"):
        save_profile(bad, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]  # no temporary left behind


def test_saved_file_is_readable_by_others(minimal_profile, tmp_path):
    path = save_profile(profile_from_dict(minimal_profile), tmp_path / "p.json")
    assert os.stat(path).st_mode & 0o044  # not the 0600 of a raw temporary file


@pytest.mark.parametrize("text, kind, cores", [
    ("CPU", "CPU", None), ("CPU[0,1]", "CPU", (0, 1)), ("GPU", "GPU", None), ("DSP", "DSP", None)])
def test_processor_ids_parse_in_one_place(text, kind, cores):
    from workbench import processors

    p = processors.parse(text)
    assert (p.kind, p.cores, str(p)) == (kind, cores, text)
    assert processors.cpu_set((0, 1)) == "CPU[0,1]"
    assert processors.parse("CPU[0,2]").core_mask() == 0b101
    assert processors.label("CPU", 4, True) == "CPU_{4,T}"


@pytest.mark.parametrize("bad", ["TPU", "CPU[]", "CPU[0", "cpu", "CPU[1,1]", "GPU[0]x"])
def test_a_bad_processor_id_says_what_one_looks_like(bad):
    from workbench import processors
    from workbench.errors import InputError

    with pytest.raises(InputError, match="CPU, GPU, NPU or DSP|listed twice") as e:
        processors.parse(bad)
    assert repr(bad) in str(e.value)


# --- one home for metrics: the schema, the SLO parser and the problem read workbench.metrics ---

_NEW_METRIC = r'''
import importlib.util, sys
import workbench

# A new metric is one row in workbench/metrics.py: add one (with two statistics, summable, in mJ)
# to the module's own text, before anything reads the table.
spec = importlib.util.find_spec("workbench.metrics")
src = open(spec.origin).read()
anchor = '    Metric("NTT",'
assert src.count(anchor) == 1, "the system metrics' first row moved: update this test's anchor"
row = ('    Metric("Q", "mJ", "a made-up metric", stats=("avg", "p99"), summable=True, '
       'units={"mj": 1.0, "j": 1000.0}),\n')
metrics = importlib.util.module_from_spec(spec)
sys.modules["workbench.metrics"] = workbench.metrics = metrics
exec(compile(src.replace(anchor, row + anchor), spec.origin, "exec"), metrics.__dict__)

from workbench.errors import InputError
from workbench.moo.problem import DiscreteProblem
from workbench.moo.slo import SLO
from workbench.profiles import profile_from_dict
from workbench.profiles.schema import Config

assert "Q" in metrics.COLUMNS and "Q_p99" in metrics.COLUMNS
assert {"Q", "Q_p99"} <= set(Config.model_fields)
rows = [{"id": f"{t}{i}", "task": t, "model": "m", "precision": "FP32", "processor": "CPU",
         "A": 70.0 + i, "L": 5.0 + i, "Q": 2.0 + i, "Q_p99": 3.0 + i, "source": "modelled"}
        for t in ("a", "b") for i in range(2)]
doc = {"device": {"name": "toy"}, "source": "modelled", "provenance": {"method": "test"},
       "configs": rows}
prof = profile_from_dict(doc)
assert prof.columns("Q_p99", task="a")["Q_p99"].tolist() == [3.0, 4.0]
rows[0]["Q"] = -1.0
try:
    profile_from_dict(doc)
    raise AssertionError("a negative Q was accepted")
except InputError as e:
    assert e.where == "configs[0].Q", e.where
rows[0]["Q"] = 2.0

slo = SLO.parse("min p99 Q[a]; max A; Q[total] <= 0.0055 J")
assert slo.constraints[0].value == 5.5 and str(slo) == "min p99 Q[a]; max A; Q[total] <= 5.5mJ"
p = DiscreteProblem(prof, slo, tasks=["a", "b"])
assert p.objective_names == ["p99 Q[a]", "A[a]", "A[b]"], p.objective_names
ev = p.evaluate_flat([0, 1, 2, 3])
assert ev.F[:, 0].tolist() == [3.0, 3.0, 4.0, 4.0]
assert ev.G[:, 0].tolist() == [-1.5, -0.5, -0.5, 0.5]
try:
    DiscreteProblem(prof, "min std Q", tasks=["a"])
    raise AssertionError("std Q was accepted")
except InputError as e:
    assert "available: avg, p99" in str(e), str(e)
print("ok")
'''


def test_a_new_metric_row_reaches_the_schema_the_slo_and_the_problem():
    """Adding a metric is one row in workbench.metrics: a hand-written list of names or
    statistics in the schema, the SLO parser or the problem would refuse the new one."""
    import subprocess
    import sys

    # A fresh interpreter: the row must be in the table before any module reads it.
    run = subprocess.run([sys.executable, "-c", _NEW_METRIC], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


def test_config_fields_are_the_metric_tables_columns():
    import ast
    import inspect

    from workbench.metrics import BY_NAME, COLUMNS, STAT_SUFFIX
    from workbench.moo import slo
    from workbench.profiles.schema import Config, config

    assert set(COLUMNS) <= set(Config.model_fields)
    assert Config.model_fields["L_p99"].description == f"p99 of the {BY_NAME['L'].description} (ms)"
    # The type checker's view of the columns names none the model lacks.
    tree = ast.parse(inspect.getsource(config))
    view = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
                and n.name == "_ConfigMetrics")
    names = [s.target.id for s in view.body if isinstance(s, ast.AnnAssign)
             and isinstance(s.target, ast.Name)]
    assert names and set(names) <= set(Config.model_fields)
    # Every statistic of the table parses in an SLO.
    for stat in STAT_SUFFIX:
        assert slo.SLO.parse(f"min {stat} L").objectives[0].stat == stat


def test_a_validator_s_own_error_names_the_value_once(tmp_path):
    """A check that raises InputError inside the schema (an unknown processor) already ends its
    text with the value; the profile's error says it once, from a JSON profile and a CSV."""
    from workbench.errors import InputError
    from workbench.profiles import load_profile
    from workbench.profiles.importers import import_csv

    src = tmp_path / "t.csv"
    src.write_text("config,model,precision,processor,L\na,m,FP32,TPU,1\n")
    with pytest.raises(InputError) as e:
        import_csv(src, device="d")
    assert str(e.value).count("TPU") == 1 and "line 2, column processor" in str(e.value)
    from conftest import ROOT

    prof = json.loads((ROOT / "profiles" / "s20fe.json").read_text())
    prof["configs"][3]["processor"] = "TPU"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(prof))
    with pytest.raises(InputError) as e:
        load_profile(bad)
    assert str(e.value).count("TPU") == 1 and "configs[3].processor" in str(e.value)
