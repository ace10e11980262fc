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
    # Heavier models are slower on the same engine, by less than their 6.6x FLOPs on a GPU: each
    # kernel's fixed cost weighs more in a small model.
    lite4, lite0 = f("EfficientNet Lite4", "FP16", "GPU").L, f("EfficientNet Lite0", "FP16", "GPU").L
    assert 3 * lite0 < lite4 < 6.6 * lite0


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


@pytest.mark.parametrize("edit, where", [
    (lambda P: P.clear(), "model_version"),  # an empty object is not "the defaults"
    (lambda P: P.pop("spec_defaults"), "spec_defaults"),
    (lambda P: P["devices"].__setitem__("s20fe", "fast"), "devices.s20fe"),
    (lambda P: P["devices"]["s20fe"]["engines"]["GPU"].__setitem__("invoke_ms", "1"),
     "devices.s20fe.engines.GPU.invoke_ms"),
])
def test_an_edited_parameters_file_of_the_wrong_shape_is_one_line(tmp_path, capsys, edit, where):
    """The model reads every key: a missing or mistyped one is named (file and key path), not a
    KeyError from inside the model, and an empty file does not silently mean the defaults."""
    from workbench.cli import main

    params = pm.load_parameters()
    edit(params)
    f = tmp_path / "edited.json"
    f.write_text(json.dumps(params))
    assert main(["profiles", "model", "--device", "s20fe", "--use-case", "uc1",
                 "--parameters", str(f), "-o", str(tmp_path / "out.json")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"edited.json: {where}:" in err
    assert not (tmp_path / "out.json").exists()


def test_an_unedited_copy_or_a_device_left_out_still_models(tmp_path):
    params = pm.load_parameters()
    f = tmp_path / "copy.json"
    f.write_text(json.dumps(params))
    assert pm.build_profile("s20fe", use_cases=["uc1"], parameters=pm.load_parameters(f)) == \
        pm.build_profile("s20fe", use_cases=["uc1"])
    del params["devices"]["a71"]  # modelled from its spec alone, as any device
    f.write_text(json.dumps(params))
    assert pm.build_profile("a71", use_cases=["uc1"], parameters=pm.load_parameters(f)).configs


def test_every_parameter_group_has_a_source_note():
    params = json.loads((ROOT / "workbench/data/phones/model_parameters.json").read_text())
    for key, group in params.items():
        if isinstance(group, dict) and key != "devices":
            assert "source" in group, key
    for dev in params["devices"].values():
        for eng in dev["engines"].values():
            assert eng["source"]
    for name in pm.DEVICES:  # the phones' specs say where their numbers (DRAM too) come from
        spec = pm.paper_spec(name)
        assert "DRAM" in spec.note and spec.dram_gbps
        assert all(a.note for a in (spec.gpu, spec.npu, spec.dsp) if a is not None)


def test_unknown_device():
    with pytest.raises(InputError, match="unknown device.*'iphone'"):
        pm.build_profile("iphone")


PIXEL4 = {"name": "pixel4", "display_name": "Google Pixel 4", "soc": "Snapdragon 855",
          "cpu_clusters": [{"core": "Cortex-A76", "count": 1, "ghz": 2.84},
                           {"core": "Cortex-A76", "count": 3, "ghz": 2.42},
                           {"core": "Cortex-A55", "count": 4, "ghz": 1.78}],
          "gpu": {"name": "Adreno 640", "clock_mhz": 585, "fp32_gflops": 898.6},
          "ram_gb": 6, "ram_mhz": 2133}


def test_any_device_from_its_spec(tmp_path):
    """A device the repository has never seen, from its spec alone: modelled with the papers'
    phones' median calibration, and saying so."""
    f = tmp_path / "pixel4.json"
    f.write_text(json.dumps(PIXEL4))
    prof = pm.build_profile(pm.load_spec(f), use_cases=["uc1"])
    assert prof.device.name == "pixel4" and prof.device.gpu.fp32_gflops == 898.6
    assert any("NOT calibrated on this device" in n for n in prof.provenance.notes)
    assert [e.name for e in prof.engines] == ["CPU", "GPU"]  # no NPU in the spec: none modelled
    rows = {(c.model, c.precision, c.processor, c.threads, c.xnnpack): c for c in prof.configs}
    lite0 = lambda prec, proc="CPU", t=4: rows[("EfficientNet Lite0", prec, proc,  # noqa: E731
                                                 t if proc == "CPU" else None,
                                                 True if proc == "CPU" else None)]
    assert lite0("FFX8").L < lite0("FP32").L             # int8 kernels beat fp32 on the CPU
    assert lite0("FP32", t=4).L < lite0("FP32", t=1).L   # four big cores beat one
    assert lite0("FP16", "GPU").L < lite0("FP32").L       # an 0.9 TFLOPS GPU beats the CPU
    # The same silicon with a faster GPU clock: only the GPU rows move, and they get faster.
    fast = pm.build_profile(pm.load_spec(f).model_copy(update={"gpu": prof.device.gpu.model_copy(
        update={"fp32_gflops": 2 * 898.6})}), use_cases=["uc1"])
    for a, b in zip(prof.configs, fast.configs):
        assert (b.L < a.L) if a.processor == "GPU" else (b.L == a.L)


def test_a_papers_phone_given_as_a_spec_keeps_the_shape_of_its_profile():
    """The papers' phones are specs in the same form: given as a file (no calibration), the
    profile has the same rows; by name, the calibrated values (the committed profiles)."""
    for name in ("s20fe", "a71"):
        spec = pm.paper_spec(name)
        as_spec, by_name = (pm.build_profile(x, use_cases=["uc1", "uc3"]) for x in (spec, name))
        assert [c.id for c in as_spec.configs] == [c.id for c in by_name.configs]
        assert [e.name for e in as_spec.engines] == [e.name for e in by_name.engines]


@pytest.mark.parametrize("change, message", [
    ({"cpu_clusters": [{"core": "Cortex-A99", "count": 4, "ghz": 3.0}]},
     r"cpu_clusters\[0\]\.core.*unknown core type; the model knows .*Cortex-A76"),
    ({"gpu": {"name": "Adreno 640"}}, r"gpu\.fp32_gflops.*GPU is modelled from its throughput"),
    ({"ram_mhz": None}, r"dram_gbps.*needs dram_gbps or ram_mhz"),
    ({"governors": ["turbo"]}, r"governors.*unknown governor"),
])
def test_a_bad_spec_gets_one_clear_error(tmp_path, change, message):
    spec = {k: v for k, v in (PIXEL4 | change).items() if v is not None}
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(spec))
    with pytest.raises(InputError, match=message):
        pm.build_profile(pm.load_spec(f), use_cases=["uc1"])


def test_a_malformed_spec_file_names_the_file_and_field(tmp_path):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(PIXEL4 | {"cpu_clusters": [{"core": "Cortex-A76", "count": "four",
                                                         "ghz": 2.8}]}))
    with pytest.raises(InputError) as e:
        pm.load_spec(f)
    assert "bad.json" in str(e.value) and "cpu_clusters[0].count" in str(e.value)
    f.write_text("{not json")
    with pytest.raises(InputError, match="bad.json"):
        pm.load_spec(f)


def test_cpu_efficiency_is_per_operator_class():
    """Dense (GEMM-like) and depthwise multiply-adds run at their kernel library's efficiency:
    a family with more depthwise work reaches less of the peak, and gains more from XNNPACK
    (whose depthwise kernels are the better tuned); a family without depthwise layers reaches
    exactly the library's dense efficiency."""
    P = pm.load_parameters()
    arch = P["architectures"]
    eff = lambda fam, lib, prec="fp32": pm.kernel_efficiency(arch[fam], lib, prec, P)  # noqa: E731
    assert eff("ResNet", "builtin") == P["cpu"]["kernels"]["builtin"]["fp32"]["dense"]
    assert eff("MobileNetV1", "builtin") > eff("MobileNetV2", "builtin") > eff("EfficientNetLite", "builtin")
    gain = lambda fam: eff(fam, "xnnpack") / eff(fam, "builtin")  # noqa: E731
    assert gain("EfficientNetLite") > gain("MobileNetV1") > gain("ResNet")
    for prec in ("fp32", "int8"):
        assert 0 < eff("MobileNetV2", "builtin", prec) < eff("MobileNetV2", "xnnpack", prec) < 1
