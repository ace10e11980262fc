"""The phone model against held-out published latencies: every row is predicted from the spec
alone, the data says where each number comes from, and the summary is per engine."""

from workbench.profiles import phone_model as pm
from workbench.profiles import validation as val


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
    summary = {e.engine: e for e in val.error_by_engine(rows)}
    assert list(summary) == list(val.ENGINES)
    for engine, e in summary.items():
        errs = [abs(r.error_pct) for r in rows if r.engine == engine]
        assert e.n == len(errs) and e.max_abs_pct == max(errs)
        assert min(errs) <= e.median_abs_pct <= max(errs)
        assert e.within_25_pct == sum(x <= 25 for x in errs)


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
    for engine in val.ENGINES:
        modelled = [by[(m, engine)].modelled_ms for m in models]
        assert modelled == sorted(modelled), engine
