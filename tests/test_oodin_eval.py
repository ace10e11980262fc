"""OODIn's evaluation (Figs 3-6) on the modelled phones: the design space OODIn tunes, its
baselines as section IV-A defines them, and the speed-ups beside the paper's."""

import pytest

from workbench import papers
from workbench.lab.experiments import oodin_eval as oe
from workbench.profiles import phone_model as pm


@pytest.fixture(scope="module")
def profs():
    return oe.profiles()


def test_oodin_profile_holds_table_ii_and_the_system_parameters(profs):
    s20 = profs["s20fe"]
    assert len(s20.tasks) == len(papers.paper("oodin")["models"]["rows"]) == 11
    cpu = [c for c in s20.configs if c.processor == "CPU"]
    assert {c.governor for c in cpu} == set(s20.device.governors)  # OODIn's g
    assert {c.threads for c in cpu} == set(range(1, 9))            # 1..N_cores
    # OODIn's INT8 is dynamic-range quantisation (section III-E).
    assert {c.precision for c in s20.configs if c.task.endswith("-int8")} == {"DR8"}
    assert all(c.source == "modelled" for c in s20.configs)
    # OODIn's r: each configuration at every recognition rate; a lower r serves frames faster
    # by the rate (TP / r) at proportionally less energy per frame, a recognition as slow.
    assert {c.recognition_rate for c in s20.configs} == set(pm.OODIN_RATES)
    by_id = {c.id: c for c in s20.configs}
    for c in cpu[:40]:
        if c.recognition_rate == 1.0:
            half = by_id[f"{c.id}:r0.5"]
            assert half.L == c.L and half.TP == pytest.approx(2 * c.TP, rel=1e-4)
            assert half.E == pytest.approx(c.E / 2, rel=1e-4)


def test_a_target_fps_uses_the_recognition_rate_where_no_engine_keeps_up(profs):
    """``target TP = 30`` (OODIn's "as close as possible to a target value"): a DNN no
    configuration runs at 30 inferences a second gets r < 1; every design is the closest to 30
    frames a second of its DNN's rows."""
    rows = oe.target_fps(profs, fps=30.0)
    assert len(rows) == 3 * 11
    slow = [r for r in rows if r.needs_lower_rate]
    assert slow and all(r.recognition_rate < 1 for r in slow)
    for r in rows:
        p = profs[r.device]
        tps = [c.TP for c in p.configs if c.task == r.dnn]
        assert abs(r.design_fps - 30) == pytest.approx(min(abs(t - 30) for t in tps), abs=1e-6)
    # The figures compare one inference per frame: no design of theirs has r < 1.
    assert all("r=" not in r.oodin for r in oe.fig3(profs) + oe.figs4_6(profs))


def test_oodin_is_never_slower_than_a_baseline(profs):
    rows = oe.fig3(profs) + oe.figs4_6(profs)
    assert all(r.speedup >= 1 - 1e-9 for r in rows if r.speedup is not None)
    # Android 6 has no NNAPI: the Xperia C5 has no oSQ-NNAPI design.
    c5 = [r for r in rows if r.device == "xperia-c5" and r.method == "oSQ-NNAPI"]
    assert c5 and all(r.outcome == "N/A" for r in c5)
    # MAW-D is optimised on the S20 FE, so Fig. 6 compares PAW-D only.
    assert {r.method for r in rows if r.figure == "Fig. 6"} == {"PAW-D"}


def test_summary_sits_beside_the_papers_numbers(profs):
    summary = oe.summary(oe.fig3(profs) + oe.figs4_6(profs))
    got = {(s.figure, s.method): s for s in summary}
    assert got[("Fig. 3", "oSQ-NNAPI")].paper_max == 93.46
    assert got[("Fig. 5", "MAW-D")].paper_geomean == 1.67
    for s in summary:
        if s.geomean is not None:
            assert 1 - 1e-9 <= s.geomean <= s.max


def test_a_spec_device_gets_an_oodin_profile_too(tmp_path):
    spec = pm.paper_spec("a71").model_copy(update={"name": "a71-copy"})
    prof = pm.build_oodin_profile(spec)
    assert prof.device.name == "a71-copy" and len(prof.tasks) == 11
