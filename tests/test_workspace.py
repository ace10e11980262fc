"""Where files live: WORKBENCH_HOME, else the checkout; names find the committed profiles too."""

from pathlib import Path

import pytest

from workbench import workspace
from workbench.errors import InputError
from workbench.lab.reports import default_reports_dir
from workbench.profiles import list_profiles, load_profile, resolve_profile, save_profile

ROOT = Path(__file__).resolve().parents[1]


def test_workbench_home_decides_where_everything_goes(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    assert workspace.home() == tmp_path.resolve()
    assert workspace.zoo_dir(quick=True) == tmp_path.resolve() / "datasets" / "zoo-quick"
    assert default_reports_dir() == tmp_path.resolve() / "reports"
    assert default_reports_dir(quick=True).is_relative_to(workspace.scratch_dir())


def test_without_it_a_checkout_is_its_own_workspace(monkeypatch):
    monkeypatch.delenv("WORKBENCH_HOME", raising=False)
    assert workspace.checkout() == ROOT and workspace.home() == ROOT


def test_names_look_in_the_workspace_first_then_the_committed_profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    assert resolve_profile("s20fe") == ROOT / "profiles" / "s20fe.json"
    mine = load_profile("s20fe")
    save_profile(mine, workspace.profiles_dir() / "s20fe.json")  # a user's own copy wins
    assert resolve_profile("s20fe") == workspace.profiles_dir() / "s20fe.json"
    names = [p.stem for p in list_profiles()]
    assert names.count("s20fe") == 1 and "host" in names
    with pytest.raises(InputError, match="no profile named 'nope'.*s20fe"):
        resolve_profile("nope")
