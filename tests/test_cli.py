"""The `workbench profiles ...` commands: output, files written, and exit codes on bad input."""

import json
import subprocess
import sys

import pytest

from workbench.cli import main
from workbench.profiles import load_profile


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "profiles" in out and "report" in out


def test_model_writes_profiles_that_validate(tmp_path, capsys):
    assert main(["profiles", "model", "--device", "a71", "--use-case", "uc3", "--out-dir",
                 str(tmp_path), "--quiet"]) == 0
    prof = load_profile(tmp_path / "a71.json")
    assert {t.name for t in prof.tasks} == {"uc3-audio", "uc3-vision"}
    assert main(["profiles", "validate", str(tmp_path / "a71.json")]) == 0
    assert "ok:" in capsys.readouterr().out


def test_model_from_a_spec_writes_a_profile_and_refuses_bad_names(tmp_path, capsys):
    spec = {"name": "pixel4", "cpu_clusters": [{"core": "Cortex-A76", "count": 4, "ghz": 2.42}],
            "gpu": {"name": "Adreno 640", "fp32_gflops": 898.6}, "ram_mhz": 2133}
    f = tmp_path / "pixel4.json"
    f.write_text(json.dumps(spec))
    assert main(["profiles", "model", "--spec", str(f), "--use-case", "uc1", "--out-dir",
                 str(tmp_path / "out"), "--quiet"]) == 0
    prof = load_profile(tmp_path / "out" / "pixel4.json")
    assert prof.device.name == "pixel4" and {c.processor for c in prof.configs} == {"CPU", "GPU"}
    assert "not calibrated on this device" in capsys.readouterr().out
    # The name becomes the file name: a name that climbs out of the folder is refused.
    f.write_text(json.dumps(spec | {"name": "../escape"}))
    assert main(["profiles", "model", "--spec", str(f), "--out-dir", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "name" in err and "'../escape'" in err
    assert not (tmp_path / "escape.json").exists()
    # An unknown core type is one line that lists the known ones.
    f.write_text(json.dumps(spec | {"cpu_clusters": [{"core": "Cortex-A99", "count": 4, "ghz": 3}]}))
    assert main(["profiles", "model", "--spec", str(f), "-o", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Cortex-A99" in err and "Cortex-A55" in err
    assert str(f) in err  # the model's errors name the spec file too
    # A spec named as one of the papers' phones would replace its calibrated profile: refused
    # unless -o says where the spec-only profile goes.
    f.write_text(json.dumps(spec | {"name": "s20fe"}))
    assert main(["profiles", "model", "--spec", str(f), "--out-dir", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "papers' phones" in err and "'s20fe'" in err
    assert not (tmp_path / "out" / "s20fe.json").exists()
    # A clock in MHz, and an NPU without its throughput, are refused rather than modelled.
    for bad, where in (({"cpu_clusters": [{"core": "Cortex-A76", "count": 4, "ghz": 2420}]}, "ghz"),
                       ({"npu": {"name": "Hexagon 690"}}, "npu.int8_tops")):
        f.write_text(json.dumps(spec | bad))
        assert main(["profiles", "model", "--spec", str(f), "-o", str(tmp_path / "x.json")]) == 1
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and where in err, err


def test_list_and_show(tmp_path, capsys):
    main(["profiles", "model", "--device", "s20fe", "--use-case", "uc1", "--out-dir",
          str(tmp_path), "--quiet"])
    capsys.readouterr()
    assert main(["profiles", "list", "--dir", str(tmp_path)]) == 0
    assert "Samsung Galaxy S20 FE" in capsys.readouterr().out
    assert main(["profiles", "show", "s20fe", "--dir", str(tmp_path), "--processor", "GPU",
                 "--limit", "3"]) == 0
    out = capsys.readouterr().out
    assert "MODELLED, not measured" in out and "Exynos 990" in out
    assert "(first 3)" in out and ", GPU" in out
    assert main(["profiles", "show", str(tmp_path / "s20fe.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["device"]["name"] == "s20fe"


def test_one_bad_profile_does_not_hide_the_others_from_list(tmp_path, capsys):
    """`profiles list` is what one runs to see what is wrong: the good profiles are listed, each
    bad file is one error line after them, and the status says something was wrong."""
    main(["profiles", "model", "--device", "s20fe", "--use-case", "uc1", "--out-dir",
          str(tmp_path), "--quiet"])
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "folder.json").mkdir()
    capsys.readouterr()
    assert main(["profiles", "list", "--dir", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "Samsung Galaxy S20 FE" in out
    assert err.count("\n") == 2 and "broken.json" in err and "folder.json" in err


@pytest.mark.parametrize("flag, value", [("--task", "nope"), ("--processor", "TPU")])
def test_show_refuses_a_filter_the_profile_does_not_have(tmp_path, capsys, flag, value):
    """A typo in --task or --processor is named with what the profile has, not '0 configurations'
    (which reads as an empty profile)."""
    main(["profiles", "model", "--device", "s20fe", "--use-case", "uc1", "--out-dir",
          str(tmp_path), "--quiet"])
    capsys.readouterr()
    assert main(["profiles", "show", "s20fe", "--dir", str(tmp_path), flag, value]) == 1
    out, err = capsys.readouterr()
    assert out == "" and f"error: {flag}: not in the profile; it has " in err and value in err


def test_import_csv_and_log_into_one_profile(tmp_path, data_dir, capsys):
    out = tmp_path / "mine.json"
    assert main(["profiles", "import", str(data_dir / "s20fe_uc1_subset.csv"), "--device",
                 "mine", "-o", str(out)]) == 0
    assert main(["profiles", "import", str(data_dir / "benchmark_model_s20fe.log"),
                 "--into", str(out)]) == 0
    prof = load_profile(out)
    assert len(prof.configs) == 7 and prof.device.name == "mine"


def test_bad_input_exits_nonzero_with_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"device": {"name": "x"}, "source": "modelled", "provenance": {"method": "m"},'
                   ' "configs": [{"id": "a", "model": "m", "precision": "FP32", "processor": "CPU",'
                   ' "L": -2, "source": "modelled"}]}')
    assert main(["profiles", "validate", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert str(bad) in err and "configs[0].L" in err and "-2" in err

    csv = tmp_path / "t.csv"
    csv.write_text("config,model,precision,processor,speed\na,m,FP32,CPU,1\n")
    target = tmp_path / "out.json"
    assert main(["profiles", "import", str(csv), "-o", str(target)]) == 1
    assert "unknown column" in capsys.readouterr().err
    assert not target.exists()  # nothing half-written

    assert main(["profiles", "show", "no-such-device"]) == 1
    assert "no profile named 'no-such-device'" in capsys.readouterr().err


def test_console_script_runs(tmp_path):
    r = subprocess.run([sys.executable, "-m", "workbench", "profiles", "validate",
                        str(tmp_path / "missing.json")], capture_output=True, text=True)
    assert r.returncode == 1 and "no such profile file" in r.stderr


def test_a_narrower_model_run_does_not_quietly_replace_a_wider_profile(tmp_path, capsys):
    """`profiles model --use-case uc1` without -o would drop the profile's other use cases from
    its default file: refused, naming what would go; -o writes it elsewhere."""
    d = ["--out-dir", str(tmp_path), "--quiet"]
    assert main(["profiles", "model", "--device", "s20fe", *d]) == 0
    before = (tmp_path / "s20fe.json").read_bytes()
    assert main(["profiles", "model", "--device", "s20fe", "--use-case", "uc1", *d]) == 1
    err = capsys.readouterr().err
    assert "s20fe.json: would be replaced by a profile without uc2," in err
    assert (tmp_path / "s20fe.json").read_bytes() == before
    assert main(["profiles", "model", "--device", "s20fe", "--use-case", "uc1", "-o",
                 str(tmp_path / "uc1.json")]) == 0
    assert [t.name for t in load_profile(tmp_path / "uc1.json").tasks] == ["uc1"]
