"""The phone model against published latencies: every row is predicted from the spec alone, a
split fixed in the data calibrates on some rows and holds out the rest, the data says where each
number comes from, and the summary is per engine and precision."""

import dataclasses

import pytest

from workbench.profiles import phone_model as pm
from workbench.profiles import validation as val
from workbench.profiles.schema import Device


def test_every_held_out_row_is_predicted_from_a_spec_the_model_was_not_calibrated_on():
    d = val.data()
    assert set(d["devices"]).isdisjoint(pm.DEVICES)  # held out: none of the calibrated phones
    assert {r[-1] for r in d["rows"]} <= set(d["sources"])
    rows = val.held_out()
    assert len(rows) == len(d["rows"]) and {r.engine for r in rows} == set(val.ENGINES)
    for r in rows:
        assert r.modelled_ms > 0 and r.measured_ms > 0
        assert abs(r.error_pct - 100 * (r.modelled_ms / r.measured_ms - 1)) < 1e-9
        # Unstated kernels get the XNNPACK prediction beside the builtin one, never instead of it.
        assert (r.modelled_xnnpack_ms is not None) == (r.kernels == "unstated")


def test_error_by_engine_summarises_each_engine():
    rows = val.held_out()
    summary = {e.engine: e for e in val.error_by_engine(rows, split=None, calibrated=False)}
    assert list(summary) == list(val.ENGINES)
    for engine, e in summary.items():
        errs = [abs(r.error_pct) for r in rows if r.engine == engine]
        assert e.n == len(errs) and e.max_abs_pct == max(errs)
        assert min(errs) <= e.median_abs_pct <= max(errs)
        assert e.mape_pct == pytest.approx(sum(errs) / len(errs))
        assert e.within_25_pct == sum(x <= 25 for x in errs)
    # The default: held-out rows only, with the calibrated prediction where there is one.
    held = {e.engine: e for e in val.error_by_engine(rows)}
    for engine, e in held.items():
        sel = [r for r in rows if r.engine == engine and r.split == "held-out"]
        errs = [abs(r.calibrated_error_pct if r.calibrated_error_pct is not None else r.error_pct) for r in sel]
        assert e.n == len(sel) and e.max_abs_pct == max(errs)


def test_the_split_is_the_datas_and_no_held_out_row_enters_the_fit():
    rows = val.held_out()
    cal = [r for r in rows if r.split == "calibration"]
    assert {(r.device, r.model.split()[-1]) for r in cal} == {("pixel3", "128"), ("pixel3", "224")}
    assert all(r.model.startswith("MobileNet V1 ") for r in cal)
    assert {r.device for r in rows if r.split == "held-out"} == {"pixel3", "pixel4", "pixel3a", "pixel6",
                                                                 "pixel7-spec"}
    base = val.fit_calibration(rows)
    # Moving every held-out measurement by 3x changes nothing in the fit; moving a calibration row does.
    moved = [dataclasses.replace(r, measured_ms=3 * r.measured_ms) if r.split == "held-out" else r for r in rows]
    assert val.fit_calibration(moved) == base
    first = next(i for i, r in enumerate(rows) if r.split == "calibration" and r.engine == "CPU FP32")
    moved = list(rows)
    moved[first] = dataclasses.replace(rows[first], measured_ms=3 * rows[first].measured_ms)
    assert val.fit_calibration(moved).terms["CPU FP32"] != base.terms["CPU FP32"]
    for r in rows:  # calibrated = fixed + scale x spec-only, whatever the CPU kernels
        a, b = base.terms[val.BORROWS.get(r.engine, r.engine)]
        assert r.calibrated_ms == pytest.approx(a + b * r.modelled_ms)
    # Held-out rows are grouped by their distance from the calibration rows; the headline
    # (transfer) leaves out the interpolation rows (same phone and family, other sizes).
    assert {r.group for r in rows if r.split == "calibration"} == {"calibration"}
    interp = [r for r in rows if r.group == "interpolation"]
    assert interp and all(r.device == "pixel3" and r.model.startswith("MobileNet V1 ") for r in interp)
    assert {r.model for r in rows if r.group == "other family"} == {"MobileNet V2 1.0 224"}
    transfer = {e.engine: e.n for e in val.error_by_engine(rows, groups=val.TRANSFER)}
    assert transfer["CPU FP32"] == sum(r.engine == "CPU FP32" and r.group in val.TRANSFER for r in rows)


def test_the_packaged_calibration_is_the_fit_to_the_data():
    """model_parameters.json's public_calibration is what fitting the data's calibration rows gives
    today (edit the data, re-fit, or this fails)."""
    fit = val.calibration()
    packaged = pm.load_parameters()["public_calibration"]["terms"]
    for engine in val.ENGINES:
        if engine == "DSP int8":  # the packaged NNAPI int8 terms apply to DSP engines
            continue
        a, b = fit.terms[val.BORROWS.get(engine, engine)]
        assert packaged[engine] == pytest.approx([a, b], abs=1e-4), engine


def test_calibration_reaches_spec_only_phones_and_leaves_the_papers_phones_alone():
    P = pm.load_parameters()
    bare = dict(P)
    bare.pop("public_calibration")
    # A paper phone keeps its own calibration: its profile does not move.
    a = pm.build_profile("s20fe", use_cases=["uc1"], parameters=P)
    b = pm.build_profile("s20fe", use_cases=["uc1"], parameters=bare)
    assert [c.L for c in a.configs] == [c.L for c in b.configs]
    # The same phone from its spec: CPU rows take the CPU terms with either kernel library, so
    # XNNPACK keeps the advantage the spec gives it over the builtin kernels.
    spec = Device.model_validate(val.data()["devices"]["pixel4"])
    a = {c.id: c for c in pm.build_profile(spec, use_cases=["uc1"], parameters=P).configs}
    b = {c.id: c for c in pm.build_profile(spec, use_cases=["uc1"], parameters=bare).configs}
    fixed, scale = P["public_calibration"]["terms"]["CPU FP32"]
    cpu_fp32 = [k for k, c in a.items() if c.processor.startswith("CPU") and c.precision == "FP32"]
    assert {a[k].xnnpack for k in cpu_fp32} == {True, False}
    for k in cpu_fp32:
        assert a[k].L == pytest.approx(fixed + scale * b[k].L, rel=1e-3)
        if k.endswith(":xnn"):
            twin = k[: -len(":xnn")] + ":noxnn"
            assert (a[k].L < a[twin].L) == (b[k].L < b[twin].L)


def test_the_model_orders_engines_and_devices_as_the_measurements_do():
    """What the held-out data shows without any calibration: on the Pixel 4, FP16 on the GPU
    beats FP32 on the GPU, which beats FP32 on the CPU, for every EfficientNet-Lite; bigger
    models are slower on every engine."""
    rows = [r for r in val.held_out() if r.device == "pixel4" and r.model.startswith("EfficientNet")]
    by = {(r.model, r.engine): r for r in rows}
    models = sorted({r.model for r in rows})
    for m in models:
        for get in (lambda r: r.measured_ms, lambda r: r.modelled_ms):
            assert get(by[(m, "GPU FP16")]) < get(by[(m, "GPU FP32")]) < get(by[(m, "CPU FP32")])
    for engine in ("CPU FP32", "CPU int8", "GPU FP32", "GPU FP16"):  # the README's engines
        modelled = [by[(m, engine)].modelled_ms for m in models]
        assert modelled == sorted(modelled), engine
