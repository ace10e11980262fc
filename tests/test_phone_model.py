"""The analytical phone model: determinism, honesty labels, physics sanity, and CARIn Table 7."""

import json
from pathlib import Path

import pytest

from workbench import papers
from workbench.errors import InputError
from workbench.profiles import phone_model as pm

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def s20():
    return pm.build_profile("s20fe")


def test_regeneration_is_byte_identical(tmp_path):
    a = pm.regenerate(tmp_path / "a", devices=["s20fe", "a71"])
    b = pm.regenerate(tmp_path / "b", devices=["s20fe", "a71"])
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


@pytest.mark.parametrize("device", pm.DEVICES)
def test_committed_profiles_match_the_model(device, tmp_path):
    """profiles/*.json are what `workbench profiles model` writes today (no stale files)."""
    fresh = pm.regenerate(tmp_path, devices=[device])[0]
    committed = ROOT / "profiles" / f"{device}.json"
    assert committed.read_bytes() == fresh.read_bytes(), (
        f"{committed} is stale: run `workbench profiles model`")


@pytest.mark.parametrize("device", pm.DEVICES)
def test_every_row_says_it_is_modelled(device):
    prof = pm.build_profile(device)
    assert prof.source == "modelled"
    assert {c.source for c in prof.configs} == {"modelled"}
    assert any("MODELLED, not measured" in n for n in prof.provenance.notes)
    assert "CARIn" in prof.provenance.citation


def test_engines_follow_the_papers(s20):
    assert [e.name for e in s20.engines] == ["CPU", "GPU", "NPU"]
    a71 = pm.build_profile("a71", use_cases=["uc1"])
    assert [e.name for e in a71.engines] == ["CPU", "GPU", "NPU", "DSP"]  # CARIn 6.3
    c5 = pm.build_profile("xperia-c5", use_cases=["uc1"])
    assert [e.name for e in c5.engines] == ["CPU", "GPU"]  # Android 6: no NNAPI
    # The DSP and the HTA run integer models only; nobody runs DR8's hybrid kernels but the CPU.
    assert {c.precision for c in a71.configs if c.processor == "DSP"} == {"FX8", "FFX8"}
    assert {c.processor for c in s20.configs if c.precision == "DR8"} == {"CPU"}


def test_missing_variants_are_not_invented(s20):
    # MobileViT has no quantised variants ('-' in CARIn Table 2).
    assert {c.precision for c in s20.configs if c.model.startswith("MobileViT")} == {"FP32", "FP16"}
    # CPU space = 4 thread counts x XNNPACK on/off (CARIn 6.4).
    lite0 = [c for c in s20.configs if c.task == "uc1" and c.model == "EfficientNet Lite0"
             and c.precision == "FFX8" and c.processor == "CPU"]
    assert sorted((c.threads, c.xnnpack) for c in lite0) == sorted(
        (t, x) for t in (1, 2, 4, 8) for x in (True, False))


def _get(prof, task, model, precision, processor, threads=None, xnnpack=None):
    (c,) = [c for c in prof.configs if c.task == task and c.model == model
            and c.precision == precision and c.processor == processor and c.threads == threads
            and c.xnnpack == xnnpack]
    return c


def test_physics_sanity(s20):
    f = lambda *a, **k: _get(s20, "uc1", *a, **k)  # noqa: E731
    # XNNPACK speeds the CPU up; int8 beats fp32 on cores with dot-product instructions.
    assert f("MobileNet V2 1.0", "FP32", "CPU", 4, True).L < f("MobileNet V2 1.0", "FP32", "CPU", 4, False).L
    assert f("MobileNet V2 1.0", "FFX8", "CPU", 4, True).L < f("MobileNet V2 1.0", "FP32", "CPU", 4, True).L
    # More big-core threads help; the LITTLE cores add jitter.
    one, four = f("EfficientNet Lite0", "FFX8", "CPU", 1, True), f("EfficientNet Lite0", "FFX8", "CPU", 4, True)
    eight = f("EfficientNet Lite0", "FFX8", "CPU", 8, True)
    assert four.L < one.L / 2
    assert eight.L_std / eight.L > four.L_std / four.L
    # Sizes: FP16 halves and 8-bit quarters the FP32 file (CARIn 6.1).
    s32, s16, s8 = (f("MobileNet V2 1.4", p, "CPU", 1, False).S for p in ("FP32", "FP16", "FX8"))
    assert s16 == pytest.approx(s32 / 2, rel=1e-3) and s8 == pytest.approx(s32 / 4, rel=1e-3)
    # FP16 runs on the CPU dequantised to FP32: more memory than FP32 itself.
    assert f("MobileNet V2 1.4", "FP16", "CPU", 1, False).MF > f("MobileNet V2 1.4", "FP32", "CPU", 1, False).MF
    # Latency statistics are ordered and energy is power x time.
    for c in s20.configs:
        assert c.L_min <= c.L_p50 <= c.L <= c.L_p90 <= c.L_p99 <= c.L_max
        assert c.E > 0 and c.TP == pytest.approx(1000 * c.batch / c.L, rel=1e-3)
    # Heavier models are slower on the same engine.
    assert f("EfficientNet Lite4", "FP16", "GPU").L > 5 * f("EfficientNet Lite0", "FP16", "GPU").L


def test_uc4_rows_are_batched():
    prof = pm.build_profile("pixel7", use_cases=["uc4"])
    age = prof.task("uc4-age")
    assert age.metric == "MAE" and age.higher_is_better is False and age.batch == 4
    assert {c.batch for c in prof.configs} == {4}


def test_d0_memory_close_to_carin_text(s20):
    # CARIn 7.2.1: d0 (EfficientNet Lite0 FFX8, CPU_{4,T}) has a 16 MB memory footprint.
    d0 = _get(s20, "uc1", "EfficientNet Lite0", "FFX8", "CPU", 4, True)
    assert 14 <= d0.MF <= 18


def _table7_designs(prof):
    """RASS on UC1 (max A, max TP, max L <= 41.67 ms) over the modelled profile."""
    from workbench.moo.problem import DiscreteProblem
    from workbench.solvers import rass

    res = rass(DiscreteProblem(prof, "max A; max TP; max L <= 41.67ms", tasks=["uc1"]))
    return {role: prof.config(d.configs[0]) for role, d in res.designs.items()}


def test_reproduces_carin_table7_processor_designs(s20):
    """d0, d1, d2 and d_w of CARIn Table 7 (UC1 on S20 FE) come out of the modelled profile.

    d_m (and so d_wm) does not: see the README's calibration section.
    """
    got = _table7_designs(s20)
    table7 = {r["design"]: r for r in papers.paper("carin")["designs"][0]["rows"]}
    for name in ("d0", "d1", "d2", "dw"):
        want = table7[name]["configs"][0]
        c = got[name]
        assert (c.model, c.precision, c.processor) == (
            want["model"], want["precision"], want["processor"]), name
        assert c.threads == want.get("threads") and c.xnnpack == want.get("xnnpack"), name
    paper_dm = table7["dm"]["configs"][0]
    assert (got["dm"].model, got["dm"].precision) != (paper_dm["model"], paper_dm["precision"])


def test_edited_parameters_change_the_profile(tmp_path):
    params = pm.load_parameters()
    params["devices"]["s20fe"]["engines"]["GPU"]["invoke_ms"] += 10
    slow = pm.build_profile("s20fe", use_cases=["uc1"], parameters=params)
    base = pm.build_profile("s20fe", use_cases=["uc1"])
    gpu = lambda p: [c.L for c in p.configs if c.processor == "GPU"]  # noqa: E731
    assert all(a == pytest.approx(b + 10, rel=0.01) for a, b in zip(gpu(slow), gpu(base)))
    assert slow.provenance.notes != base.provenance.notes  # the parameter digest changes


def test_every_parameter_group_has_a_source_note():
    params = json.loads((ROOT / "workbench/data/phones/model_parameters.json").read_text())
    for key, group in params.items():
        if isinstance(group, dict) and key != "devices":
            assert "source" in group, key
    for dev in params["devices"].values():
        assert "dram_source" in dev
        for eng in dev["engines"].values():
            assert eng["source"]


def test_unknown_device():
    with pytest.raises(InputError, match="unknown device.*'iphone'"):
        pm.build_profile("iphone")
