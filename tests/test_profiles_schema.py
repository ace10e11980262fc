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
