"""profiles/host.json, measured on this machine and committed, validates and solves."""

from pathlib import Path

import pytest

from workbench.moo.problem import DiscreteProblem
from workbench.profiles import load_profile
from workbench.solvers import rass

HOST = Path(__file__).resolve().parents[1] / "profiles" / "host.json"


@pytest.mark.skipif(not HOST.exists(), reason="no committed host profile")
def test_committed_host_profile_validates_and_solves():
    prof = load_profile(HOST)
    assert prof.source == "measured" and prof.provenance.host.get("cpu")
    tasks = {c.task for c in prof.configs}
    assert {"h1", "h2", "h3-audio", "h3-vision", "h4-parity", "h4-value", "h4-group"} <= tasks
    assert prof.coexecution  # h3 and h4 were measured running together
    res = rass(DiscreteProblem(prof, "max A; max TP; max L <= 20ms", tasks=["h1"]))
    assert res.ok and res.d0.optimality >= 1
    multi = DiscreteProblem(prof, "min L; max A", tasks=["h4-parity", "h4-value", "h4-group"])
    assert rass(multi).ok
