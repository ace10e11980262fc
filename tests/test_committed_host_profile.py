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


@pytest.mark.parametrize("name", ["host.json", "host-memory.json", "host-real.json"])
def test_committed_measured_profiles_say_how_sure_their_values_are(name):
    path = HOST.parent / name
    if not path.exists():
        pytest.skip(f"no committed {name}")
    prof = load_profile(path)
    proportions = {t.name for t in prof.tasks
                   if t.metric in ("top1", "binary accuracy", "agreement with FP32 (%)")}
    timed = [c for c in prof.configs if not c.memory_mode]
    # Every LiteRT row's mean latency has its run count; every measured proportion its interval.
    assert timed and all(c.L_n and c.L_std is not None and c.L_half_width > 0 for c in timed)
    measured_a = [c for c in prof.configs if c.task in proportions]
    assert measured_a and all(c.A_n and c.A_lo <= c.A <= c.A_hi for c in measured_a)
    # The solver carries them through: d0's accuracy has a half-width.
    task = "fashion" if "fashion" in proportions else "h1"
    d0 = rass(DiscreteProblem(prof, "max A; max TP", tasks=[task])).d0
    assert d0.intervals.get("A", 0) > 0 and d0.intervals.get("TP", 0) > 0
