"""Reports and sweeps on the user's own work: `workbench report --profile P --task T` takes every
word from the profile, `workbench sweep --tasks` solves the profile's own tasks."""

import json
import shutil

import pandas as pd
import pytest
from conftest import ROOT, one_error_line

from workbench.cli import main
from workbench.lab.reports import designs
from workbench.lab.sweep import sweep, sweep_grid
from workbench.profiles.store import load_profile


@pytest.fixture
def own(tmp_path):
    """A measured profile of the repository's, under a name of the user's."""
    path = tmp_path / "my-phone.json"
    shutil.copy(ROOT / "profiles" / "host-real.json", path)
    return path


def test_a_sweep_solves_the_profiles_own_tasks(own, tmp_path):
    grid = sweep_grid(profiles=[str(own)], tasks=["fashion", "fashion,text-embedding"],
                      slos=["max A; L <= {20,40}ms"])
    assert len(grid) == 4 and {t.use_case for t in grid} == {None}
    df = sweep(grid)
    assert list(df["status"]) == ["ok"] * 4
    assert set(df["tasks"]) == {"fashion", "fashion,text-embedding"}
    multi = df[df["tasks"] == "fashion,text-embedding"]
    assert all(" + " in d for d in multi["d0"])  # one design per task
    # The use-case form still works, and says which tasks it solved.
    uc = sweep(sweep_grid(profiles=["s20fe"], use_cases=["uc1"]))
    assert uc["use_case"][0] == "uc1" and uc["tasks"][0]


@pytest.mark.parametrize("kwargs, where", [
    (dict(tasks=["nope"], slos=["max A"]), "tasks"),
    (dict(tasks=["fashion"]), "slo"),
    (dict(tasks=["fashion"], use_cases=["uc1"], slos=["max A"]), "use_cases"),
])
def test_a_sweep_of_own_tasks_refuses_what_it_cannot_solve(own, kwargs, where):
    from workbench.errors import InputError

    with pytest.raises(InputError) as e:
        sweep_grid(profiles=[str(own)], **kwargs)
    assert e.value.where == where


def test_sweep_cli_takes_tasks(own, tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["sweep", "--profiles", str(own), "--tasks", "fashion", "--slo",
                 "max A; min L", "--workers", "0", "--quiet", "-o", str(out)]) == 0
    assert pd.read_csv(out)["status"].tolist() == ["ok"]
    capsys.readouterr()
    assert main(["sweep", "--profiles", str(own), "--tasks", "fashion", "--workers", "0",
                 "-o", str(out)]) == 1
    assert "give --slo" in one_error_line(capsys)


def test_the_designs_report_words_come_from_the_profile(own):
    prof = load_profile(own)
    head = designs.header(prof, ["fashion"], "max A; min L")
    assert head.startswith(f"# Designs for fashion on {prof.device.display_name}")
    assert "MEASURED" in head and "UC1" not in head and "S20" not in head
    assert designs.check_tasks(prof, ["fashion"]) == ["fashion"]
    with pytest.raises(Exception, match="name one or more with --task"):
        designs.check_tasks(prof, [])


def test_report_profile_refuses_a_wrong_task_or_slo_in_one_line(own, home, capsys):
    assert main(["report", "--profile", str(own), "--task", "nope"]) == 1
    assert "not a task of the profile" in one_error_line(capsys, "--task")
    assert main(["report", "--task", "fashion"]) == 1
    assert "go with --profile" in one_error_line(capsys)


@pytest.mark.slow
@pytest.mark.notebook
def test_report_on_own_profile(own, home, tmp_path, capsys):
    out = tmp_path / "reports"
    assert main(["report", "--profile", str(own), "--task", "fashion", "--slo",
                 "max A; L <= 40ms", "--reports-dir", str(out), "--no-png", "--quiet"]) == 0
    folder = out / "designs-my-phone-fashion"
    metrics = json.loads((folder / "metrics.json").read_text())
    prof = load_profile(own)
    assert metrics["device"] == prof.device.display_name and metrics["tasks"] == ["fashion"]
    assert metrics["slo"] == "max A; L <= 40ms" and metrics["status"] == "ok"
    html = (folder / "designs-my-phone-fashion.html").read_text()
    assert "Designs for fashion on" in html and "UC1" not in html and "Galaxy" not in html


def test_a_report_folder_of_another_profile_is_not_overwritten(tmp_path):
    from workbench.errors import InputError

    folder = tmp_path / "designs-pk"
    folder.mkdir()
    (folder / "metrics.json").write_text(json.dumps({"profile": "/a/pk.json"}))
    designs.check_folder(folder, "/a/pk.json")  # the same profile's: replaced
    with pytest.raises(InputError, match="another profile"):
        designs.check_folder(folder, "/b/pk.json")
