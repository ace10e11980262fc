"""Bundles and the switching policy without running models: round trip, tampering, bad
manifests, the policy on every flag combination, fallback, hysteresis, event parsing."""

import itertools
import json
import math

import pytest
from conftest import make_profile

from workbench.bundling import make_bundle, storage
from workbench.errors import InputError
from workbench.moo.problem import DiscreteProblem
from workbench.runtime import BundleError, DeviceState, SwitchingPolicy, load_bundle, parse_events
from workbench.runtime.monitor import Debounce
from workbench.solvers import rass

SLO = "max A; min L; avg L <= 100ms"


@pytest.fixture
def cpu_problem():
    """Three core sets of a 2-core CPU, two models, three precisions: RASS finds d0..d2, dm, dw."""
    rows = []
    for proc, speed in (("CPU[0,1]", 1.0), ("CPU[0]", 1.6), ("CPU[1]", 1.7)):
        for model, acc, lat, mf, w in (("big", 90, 20, 40, 4e9), ("small", 80, 8, 10, 1e9)):
            for prec, da, dl, dm in (("FP32", 0, 1.0, 1.0), ("FP16", -0.1, 0.9, 0.6),
                                     ("FFX8", -1.0, 0.5, 0.3)):
                rows.append(dict(id=f"{model}-{prec}-{proc}", model=model, precision=prec,
                                 processor=proc, threads=1, xnnpack=True, A=acc + da,
                                 L=lat * dl * speed, MF=mf * dm, W=w, S=mf * dm / 4))
    prof = make_profile(rows, cores=2)
    return DiscreteProblem(prof, SLO)


@pytest.fixture
def fake_zoo(tmp_path, cpu_problem):
    """A zoo folder laid out like datasets/zoo, with stand-in bytes for the model files."""
    root = tmp_path / "zoo"
    models = {}
    for c in cpu_problem.tasks[0].configs:
        models.setdefault((c.task, c.model), set()).add(c.precision)
    for (task, model), precs in models.items():
        d = root / task / model
        d.mkdir(parents=True)
        variants = []
        for p in sorted(precs):
            (d / f"{p}.tflite").write_bytes(f"{model}-{p}".encode() * 100)
            variants.append({"precision": p, "available": True, "file": f"{p}.tflite"})
        (d / "record.json").write_text(json.dumps({"task": task, "model": model,
                                                   "variants": variants}))
    return root


@pytest.fixture
def bundle_dir(tmp_path, cpu_problem, fake_zoo):
    res = rass(cpu_problem)
    make_bundle(res, cpu_problem, tmp_path / "b", models=fake_zoo)
    return tmp_path / "b", res


def test_bundle_round_trip_keeps_designs_policy_and_only_needed_files(bundle_dir, cpu_problem):
    path, res = bundle_dir
    b = load_bundle(path)
    assert set(b.designs) == set(res.designs) and b.problems == {}
    for role, d in res.designs.items():
        assert b.designs[role].configs == d.configs
        for cid in d.configs:
            exp = b.configs[cid].expected
            row = cpu_problem.profile.config(cid)
            assert exp["L"] == row.L and exp["MF"] == row.MF and exp["A"] == row.A
    assert b.triggers == res.triggers and b.policy_vector == res.policy_vector
    needed = {b.configs[c].file for d in res.designs.values() for c in d.configs}
    on_disk = {str(p.relative_to(path)) for p in path.rglob("*.tflite")}
    assert on_disk == needed and len(needed) < 6  # 6 = every candidate model file
    st = b.manifest["storage"]
    assert st["n_all_models"] == 6 and st["n_design_models"] == len(needed)
    assert st["reduction"] == pytest.approx(storage(res, cpu_problem).reduction, rel=1e-3)
    assert st["reduction"] > 1


def test_bundle_refuses_to_overwrite_and_is_replaced_whole(bundle_dir, cpu_problem, fake_zoo):
    path, res = bundle_dir
    with pytest.raises(InputError, match="already exists"):
        make_bundle(res, cpu_problem, path, models=fake_zoo)
    m = make_bundle(res, cpu_problem, path, models=fake_zoo, include="all", overwrite=True)
    assert len(m["configs"]) == len(cpu_problem.tasks[0].configs)
    assert sorted(p.name for p in path.parent.iterdir()) == ["b", "zoo"]  # no temporaries left


def test_bundle_names_the_configuration_without_a_model_file(tmp_path, cpu_problem):
    with pytest.raises(InputError, match="no model file") as e:
        make_bundle(rass(cpu_problem), cpu_problem, tmp_path / "b", models=tmp_path / "empty")
    assert "configs[" in str(e.value)
    assert not (tmp_path / "b").exists()


def test_a_tampered_or_missing_model_removes_only_the_designs_that_need_it(bundle_dir):
    path, res = bundle_dir
    b = load_bundle(path)
    d1_file = b.configs[b.designs["d1"].configs[0]].file
    (path / d1_file).write_bytes(b"tampered")
    b = load_bundle(path)
    users = {r for r, d in b.designs.items() if b.configs[d.configs[0]].file == d1_file}
    assert set(b.problems) == users and "d1" in users
    assert all("checksum mismatch" in why for why in b.problems.values())
    assert set(b.usable) == set(res.designs) - users
    (path / d1_file).unlink()
    assert all("missing" in why for why in load_bundle(path).problems.values())


def test_a_bundle_with_no_intact_design_is_rejected(bundle_dir):
    path, _ = bundle_dir
    for f in path.rglob("*.tflite"):
        f.write_bytes(b"x")
    with pytest.raises(BundleError, match="no usable design"):
        load_bundle(path)


@pytest.mark.parametrize("edit, where", [
    (lambda m: m.update(format="other"), "format"),
    (lambda m: m.update(version=99), "version"),
    (lambda m: m.update(policy_vector=m["policy_vector"][:3]), "policy_vector"),
    (lambda m: m["policy_vector"].__setitem__(0, "d9"), "policy_vector[0]"),
    (lambda m: m["designs"]["d0"]["configs"].__setitem__(0, "nope"), "designs['d0'].configs[0]"),
    (lambda m: next(iter(m["configs"].values())).update(file="../../etc/passwd"), ".file"),
    (lambda m: next(iter(m["configs"].values())).update(threads="two"), ".threads"),
    (lambda m: next(iter(m["configs"].values())).update(processor="CPU[0"), ".processor"),
    (lambda m: m.pop("tasks"), "tasks"),
    # Every field's type, named by its JSON path (not a traceback, not a silent coercion).
    (lambda m: next(iter(m["configs"].values()))["expected"].update(L="fast"), ".expected.L"),
    (lambda m: next(iter(m["configs"].values()))["expected"].update(L=True), ".expected.L"),
    (lambda m: next(iter(m["configs"].values())).update(expected=[1]), ".expected"),
    (lambda m: next(iter(m["configs"].values())).update(threads=100000), ".threads"),
    (lambda m: next(iter(m["configs"].values())).update(threads=True), ".threads"),
    (lambda m: next(iter(m["configs"].values())).update(batch=10 ** 9), ".batch"),
    (lambda m: m["designs"]["d0"].update(labels=5), "designs['d0'].labels"),
    (lambda m: m["designs"]["d0"].update(labels=[1]), "designs['d0'].labels[0]"),
    (lambda m: m["designs"]["d0"].update(optimality="best"), "designs['d0'].optimality"),
    (lambda m: m["designs"]["d0"].update(trigger=[0]), "designs['d0'].trigger"),
    (lambda m: m["designs"]["d0"]["configs"].__setitem__(0, ["x"]), "designs['d0'].configs[0]"),
    (lambda m: m.update(fallback="d0"), "fallback"),
    (lambda m: m.update(fallback=[7]), "fallback[0]"),
    (lambda m: m["policy_vector"].__setitem__(0, ["d0"]), "policy_vector[0]"),
    (lambda m: m.update(triggers=[5]), "triggers[0]"),
    (lambda m: m["models"].update({"x.tflite": []}), "models['x.tflite']"),
    # Found by the attack (benchmarks/bench_attack.py): accepted before, each now named.
    (lambda m: next(iter(m["configs"].values()))["expected"].update(L=None), ".expected.L"),
    (lambda m: next(iter(m["configs"].values()))["expected"].update(Lat=3.0), ".expected"),
    (lambda m: m["tasks"][0].update(batch=-1), "tasks[0].batch"),
    (lambda m: next(iter(m["models"].values())).update(sha256="zz"), ".sha256"),
    (lambda m: next(iter(m["models"].values())).update(bytes=-1), ".bytes"),
])
def test_a_bad_manifest_names_the_field(bundle_dir, edit, where):
    path, _ = bundle_dir
    m = json.loads((path / "manifest.json").read_text())
    edit(m)
    (path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(BundleError) as e:
        load_bundle(path)
    assert where in str(e.value) and "manifest.json" in str(e.value)


def test_designs_on_cores_this_machine_lacks_are_removed_before_running(bundle_dir):
    """CPU[7] on a 2-core machine crashed `run`; CPU[0,7] ran but its monitor failed."""
    path, res = bundle_dir
    m = json.loads((path / "manifest.json").read_text())
    d0 = m["designs"]["d0"]["configs"][0]
    m["configs"][d0]["processor"] = "CPU[0,4095]"
    (path / "manifest.json").write_text(json.dumps(m))
    b = load_bundle(path)
    gone = {r for r, d in b.designs.items() if d0 in d.configs}
    assert set(b.problems) == gone and "lacks" in b.problems["d0"]
    for c in m["configs"].values():
        c["processor"] = "CPU[4095]"
    (path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(BundleError, match="no usable design.*lacks"):
        load_bundle(path)


def test_not_a_bundle(tmp_path):
    with pytest.raises(BundleError, match="no manifest.json"):
        load_bundle(tmp_path)
    (tmp_path / "manifest.json").write_text("{oops")
    with pytest.raises(BundleError, match="malformed JSON"):
        load_bundle(tmp_path)


def test_the_policy_matches_rass_on_every_flag_combination(bundle_dir):
    path, res = bundle_dir
    b = load_bundle(path)
    pol = SwitchingPolicy(b)
    procs = sorted({c.processor for c in b.configs.values()})
    assert len(res.triggers) == 3
    for bits in range(1 << (len(procs) + 1)):
        flags = {p: bool(bits >> k & 1) for k, p in enumerate(procs)}
        state = DeviceState(flags, bool(bits >> len(procs) & 1))
        want = res.decide({**flags, "memory": state.memory})
        assert pol.decide(state, set(b.designs)).name == want


def test_the_policy_falls_back_to_the_best_design_avoiding_flagged_processors(bundle_dir):
    path, res = bundle_dir
    b = load_bundle(path)
    pol = SwitchingPolicy(b)
    t0 = res.triggers[0]
    state = DeviceState({t0: True}, False)
    assert pol.decide(state, set(b.designs)).name == "d1"
    usable = set(b.designs) - {"d1"}
    got = pol.decide(state, usable)
    assert got.name in usable
    assert t0 not in {b.configs[c].processor for c in got.configs}
    # Nothing avoids the flag: still some usable design rather than none.
    assert pol.decide(state, {"d0"}).name == "d0"
    assert pol.decide(state, set()) is None


def test_debounce_needs_consecutive_readings_and_ignores_gaps():
    d = Debounce(raise_after=3, clear_after=2)
    seq = [True, True, False, True, True, None, math.nan, True, False, True, False, False]
    out = [d.update(x) for x in seq]
    # One-off spikes and NaN/None never flip it; three in a row raise, two in a row clear.
    assert out == [False, False, False, False, False, False, False, True, True, True, True, False]


@pytest.mark.parametrize("flips", list(itertools.product([True, False], repeat=6)))
def test_isolated_spikes_never_raise_a_flag(flips):
    d = Debounce(raise_after=3, clear_after=3)
    # Spikes separated by a normal reading: never three positives in a row.
    seq = [x for f in flips for x in (f, False)]
    assert not any(d.update(x) for x in seq)


def test_events_parse_and_bad_items_name_themselves():
    ev = parse_events("8:memory:64, 2:stress:0+1, 6:unstress, 4:slow:CPU[0,1]:3, 9:flag:GPU")
    assert [e.at for e in ev] == [2, 4, 6, 8, 9]
    assert ev[1].args == ("CPU[0,1]", "3")
    for bad, msg in [("x:stress:0", "time"), ("1:boom", "unknown event"), ("1:stress", "takes 1"),
                     ("1:slow:CPU[0]:0.5", "factor"), ("1:flag:TPU", "processor"),
                     ("1:memory:lots", "megabytes"), ("1:memory:\u00b2", "megabytes"),
                     ("1:memory:99999999999", "megabytes"), ("1:memory:0", "megabytes"),
                     ("1:slow:CPU[0]:inf", "factor"), ("1:slow:CPU[0]:nan", "factor"),
                     ("nan:flag:CPU[0]", "finite"), ("inf:unstress", "finite"),
                     ("1:stress:4096", "this machine has cores"),
                     ("1:slow:CPU[4095]:2", "this machine has cores")]:
        with pytest.raises(InputError, match=msg) as e:
            parse_events(bad)
        assert "--inject item" in str(e.value)


def test_runtime_options_validate_and_name_the_bad_field():
    from workbench.runtime import RuntimeOptions

    o = RuntimeOptions().with_overrides(preload="none", batch_wait_ms=50)
    assert (o.preload, o.batch_wait_ms, o.period_s) == ("none", 50, 0.05)
    for bad, where in [({"preload": "some"}, "preload"), ({"period_s": 0}, "period_s"),
                       ({"raise_after": 0}, "raise_after"), ({"max_queue": 2.5}, "max_queue"),
                       ({"batch_wait_ms": -1}, "batch_wait_ms"), ({"perod_s": 1}, "perod_s"),
                       ({"period_s": float("inf")}, "period_s"),
                       ({"period_s": float("nan")}, "period_s"),
                       ({"memory_low_mb": -5.0}, "memory_low_mb"),
                       ({"slow_factor": "2"}, "slow_factor"), ({"period_s": 61.0}, "period_s"),
                       ({"memory_low_mb": 1e15}, "memory_low_mb")]:
        with pytest.raises(InputError) as e:
            RuntimeOptions().with_overrides(**bad)
        assert e.value.where == where


def test_the_injector_slows_the_named_cores_and_forces_flags():
    from workbench.runtime import EventInjector

    inj = EventInjector()
    for e in parse_events("1:slow:CPU[0]:3, 2:flag:GPU, 3:memflag"):
        inj.apply(e)
    assert inj.slowdown({0}) == 3.0 and inj.slowdown({0, 1}) == 3.0
    assert inj.slowdown({1}) == 1.0 and inj.slowdown(set()) == 1.0
    assert inj.forced == {"GPU": True} and inj.forced_memory
    for e in parse_events("1:unslow, 2:unflag:GPU, 3:unmemflag"):
        inj.apply(e)
    assert (inj.slowdown({0}), inj.forced, inj.forced_memory) == (1.0, {}, False)


class _Spec:
    id = "m-FP32-CPU[0]"
    expected = {"L": 1.0, "L_p99": 1.5}


class _Exec:
    spec, cores = _Spec(), frozenset({0})


def test_the_device_monitor_calibrates_then_flags_slow_cores_with_hysteresis():
    from workbench.runtime import DeviceMonitor, RuntimeOptions

    opts = RuntimeOptions(raise_after=2, clear_after=2, calibration_periods=3,
                          memory_low_mb=0.0, latency_hold_s=100.0,
                          load_threshold=1.01)  # other processes never flag a core here
    mon = DeviceMonitor(["CPU[0]", "CPU[1]", "GPU"], opts)
    active = {"t": _Exec()}

    def period(t, ms):
        return mon.read(t, active, {"t": [ms] * 5}).state

    # Calibration: the reference is the median of three periods, never below the profile's p99.
    for t in range(3):
        assert not period(t, 1.0).processors["CPU[0]"]
    assert mon.reference_ms(_Spec.id) == 1.5
    # Twice the reference is not enough (slow_factor 2 means "more than twice").
    assert not period(3, 3.0).processors["CPU[0]"]
    assert not period(4, 3.5).processors["CPU[0]"]  # one slow period: not yet
    s = period(5, 3.5)
    assert s.processors["CPU[0]"] and not s.processors["CPU[1]"] and not s.processors["GPU"]
    assert s.flagged == ("CPU[0]",)
    # A forced flag and forced memory issue come through as they are.
    r = mon.read(6, active, {"t": []}, forced={"GPU": True}, forced_memory=True)
    assert r.state.processors["GPU"] and r.state.memory and r.latency_ms == {"t": None}


def test_a_run_reports_request_latency_percentiles_and_slo_violations():
    """The run's summary, as `workbench run` prints it and `--json` returns it: per task the
    answered requests' latency p50/p95/p99 (submission to answer) and how many came later than
    the latency bound the bundle's SLO names (a bound on one task applies to that task only)."""
    from workbench.runtime.run import RunResult, slo_latency_bounds

    assert slo_latency_bounds("max A; max TP; max L <= 41.67ms", ["uc1"]) == {"uc1": 41.67}
    assert slo_latency_bounds("max A; L[a] <= 0.5s; L[b]<=20", ["a", "b"]) == {"a": 500.0,
                                                                              "b": 20.0}
    assert slo_latency_bounds("min L; max A; MF <= 90MB", ["a"]) == {}  # no bound on L
    assert slo_latency_bounds("max A; LP <= 3", ["a"]) == {}              # another metric
    # A bound on std L or min L is no request's; what is not a number is left out.
    assert slo_latency_bounds("min L; min std L; max A; L <= 100ms; std L <= 10ms",
                              ["a"]) == {"a": 100.0}
    assert slo_latency_bounds("min L <= 3ms; L <= .; L <= 1.2.3ms", ["a"]) == {}
    assert slo_latency_bounds("max A; p99 L <= 30ms", ["a"]) == {"a": 30.0}
    res = RunResult({"submitted": 101, "served": 100, "rejected": 1}, 0,
                    {"switches": [{}, {}]}, [], {"faults": []},
                    {"a": [float(v) for v in range(1, 101)], "b": []}, {"a": 90.0})
    r = res.requests()
    assert r["a"]["n"] == 100 and r["a"]["p50_ms"] == pytest.approx(50.5)
    assert r["a"]["p99_ms"] == pytest.approx(99.01) and r["a"]["over_slo"] == 10
    assert r["b"] == {"n": 0}
    rep = res.report()
    assert rep["switches"] == 2 and rep["lost"] == 0 and rep["requests"] == r
