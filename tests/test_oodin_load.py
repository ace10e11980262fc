"""OODIn Fig. 7 on this machine (``runtime.load_sweep``, benchmarks/bench_load.py): the static
design never moves, the load script slows the right cores in two steps, the ratios are the
paper's "up to" and geometric mean over the loaded factors, bad factors are refused in one line,
and the runtime's ``latency_scope="processor"`` flags only the engine that served slowly."""

import importlib.util
import json
import math
from pathlib import Path

import pytest
from conftest import make_profile

from workbench.errors import InputError
from workbench.lab.experiments import runtime as rx
from workbench.moo.problem import DiscreteProblem
from workbench.runtime import DeviceMonitor, DeviceState, RuntimeOptions
from workbench.runtime.policy import Choice

ROOT = Path(__file__).resolve().parents[1]
SLO = "max A; min L; max L <= 41.67ms"


def _rows():
    """One model on the host's three engines, CPU[0,1] best (as h1's VGG-FC DR8 is)."""
    return [dict(id=f"tiny-{p}", model="tiny", precision="FP32", processor=p, threads=1,
                 xnnpack=True, A=90.0, L=lat, L_max=2 * lat, MF=5.0, W=1e6, S=0.01)
            for p, lat in (("CPU[0,1]", 1.0), ("CPU[0]", 1.1), ("CPU[1]", 1.2))]


@pytest.fixture
def toy():
    return DiscreteProblem(make_profile(_rows(), cores=2), SLO)


# --- the static design -------------------------------------------------------------------------

def test_the_static_policy_keeps_its_design_whatever_the_flags():
    c = Choice("oodin:x", ("cfg",))
    pol = rx.StaticPolicy(c, "d0")
    for flags, memory in (({}, False), ({"CPU[0,1]": True}, False),
                          ({"CPU[0,1]": True, "CPU[0]": True, "CPU[1]": True}, True)):
        assert pol.decide(DeviceState(flags, memory), {"d0", "d1"}) is c
    # A design the runtime took out of service (a model fault) is not chosen again.
    assert pol.decide(DeviceState({}, False), {"d1"}) is None
    assert rx.StaticPolicy(c).decide(DeviceState({}, False), set()) is c


# --- the load script ---------------------------------------------------------------------------

def test_the_plan_follows_oodin_and_slows_the_cores_the_next_engine_does_not_use(toy):
    plan = rx.load_plan(toy)
    assert plan["engines"] == [["CPU[0,1]"], ["CPU[0]"], ["CPU[1]"]]
    s1, s2 = plan["steps"]
    # Step 1: the first engine loaded, the one OODIn moves to free (core 1 also loads CPU[1]).
    assert s1["cores"] == [1] and "CPU[0,1]" in s1["loaded"] and s1["free"] == ["CPU[0]"]
    # Step 2: the first engine still loaded and the second too; the third free.
    assert s2["cores"] == [0] and set(s2["loaded"]) == {"CPU[0,1]", "CPU[0]"}
    assert s2["free"] == ["CPU[1]"]
    assert [x["at"] for x in plan["steps"]] == list(rx.LOAD_STEPS)


def test_the_event_script_puts_the_load_on_the_right_cores(toy):
    plan = rx.load_plan(toy)
    got = [(e.at, str(e)) for e in rx.load_events(plan, 4, duration=10.0)]
    assert got == [(2.0, "slow:CPU[1]:4"), (6.0, "slow:CPU[0]:4"), (6.0, "slow:CPU[1]:1")]
    # What the runtime's injector does with it: the engine serving first stays slowed 4x.
    from workbench.runtime import EventInjector

    inj = EventInjector()
    speed = []
    for at in (2.0, 6.0):
        for e in rx.load_events(plan, 4, duration=10.0):
            if e.at == at:
                inj.apply(e)
        speed.append({p: inj.slowdown(set(c)) for p, c in
                      (("CPU[0,1]", (0, 1)), ("CPU[0]", (0,)), ("CPU[1]", (1,)))})
    assert speed == [{"CPU[0,1]": 4.0, "CPU[0]": 1.0, "CPU[1]": 4.0},
                     {"CPU[0,1]": 4.0, "CPU[0]": 4.0, "CPU[1]": 1.0}]


@pytest.mark.skipif(not (ROOT / "profiles" / "host.json").is_file(), reason="no host profile")
def test_on_the_host_profile_h1_moves_gpu_nnapi_cpu_as_core_sets():
    from workbench.profiles import load_profile

    pb = DiscreteProblem(load_profile(ROOT / "profiles" / "host.json"),
                         rx.SCENARIOS["single"]["slo"], tasks=["h1"])
    plan = rx.load_plan(pb)
    assert plan["engines"] == [["CPU[0,1]"], ["CPU[0]"], ["CPU[1]"]]
    assert [s["cores"] for s in plan["steps"]] == [[1], [0]]


@pytest.mark.parametrize("factors, says", [
    ((), "at least one load factor"),
    ((0.5,), "from 1 (idle)"),
    ((2, math.nan), "from 1 (idle)"),
    ((math.inf,), "from 1 (idle)"),
    ((2000,), "from 1 (idle)"),
    (("2",), "from 1 (idle)"),
    ((True,), "from 1 (idle)"),
    ((2, 2.0), "each load factor once"),
    (3, "must be a list of numbers"),
])
def test_bad_factors_are_refused_with_one_clear_line(factors, says):
    with pytest.raises(InputError) as e:
        rx.check_factors(factors)
    assert says in str(e.value) and "factors" in str(e.value) and "\n" not in str(e.value)


def test_a_sweep_refuses_bad_input_before_running(tmp_path):
    prof = make_profile(_rows(), cores=2)
    for kw, where in (({"factors": (0,)}, "factors"), ({"duration": 0}, "duration"),
                      ({"rate": math.nan}, "rate"), ({"start_with": "both"}, "start_with")):
        with pytest.raises(InputError, match=where):
            rx.load_sweep(prof, tmp_path, tasks=["t"], slo=SLO, **kw)


# --- the ratios --------------------------------------------------------------------------------

def test_up_to_and_the_geometric_mean_are_over_the_loaded_factors():
    got = rx.load_ratios({1.0: 1.4, 2.0: 1.0, 4.0: 2.0, 8.0: 4.0})
    assert got["ratio_max"] == 4.0  # factor 1's 1.4 is the control, not a reduction
    assert got["ratio_geomean"] == pytest.approx(2.0)  # (1 * 2 * 4) ** (1/3)
    assert rx.load_ratios({1.0: 1.1}) == {"ratio_max": None, "ratio_geomean": None}
    assert rx.load_ratios({2.0: None, 4.0: 3.0})["ratio_geomean"] == pytest.approx(3.0)


def _bench():
    spec = importlib.util.spec_from_file_location("bench_load",
                                                  ROOT / "benchmarks" / "bench_load.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(p90, left=True, switches=0, engines=("CPU[0,1]",)):
    return {"p90_ms": p90, "median_ms": p90 / 2, "n": 100, "invoke_p90_ms": p90 / 4,
            "invoke_median_ms": p90 / 8, "designs_visited": ["d0"],
            "engines_visited": list(engines), "switches": switches, "left_loaded": left,
            "steps": [{"delay_ms": 150.0 if switches else None}], "served": 100,
            "rejected": 0, "lost": 0}


def test_the_benchmark_takes_medians_of_paired_ratios_over_rounds():
    def sweep(ratios):
        rows = []
        for f, r in ratios.items():
            a, s = _run(1.0, left=f > 2), _run(r)
            rows.append({"factor": f, "adaptive": a, "static": s, "ratio_p90": r,
                         "ratio_median": r, "ratio_invoke_p90": 2 * r})
        return {"factors": list(ratios), "per_factor": rows}

    agg = _bench().aggregate([sweep({1.0: 1.0, 2.0: 1.0, 4.0: 2.0, 8.0: 3.0}),
                              sweep({1.0: 1.2, 2.0: 1.2, 4.0: 1.0, 8.0: 5.0}),
                              sweep({1.0: 0.9, 2.0: 1.1, 4.0: 1.5, 8.0: 4.0})])
    by = {r["factor"]: r for r in agg["per_factor"]}
    assert by[8.0]["ratio_p90"] == 4.0 and by[8.0]["ratios"] == [3.0, 5.0, 4.0]
    assert by[4.0]["ratio_p90"] == 1.5 and by[2.0]["ratio_p90"] == 1.1
    assert agg["ratio_max"] == 4.0 and agg["ratio_max_factor"] == 8.0
    assert agg["ratio_geomean"] == pytest.approx((1.1 * 1.5 * 4.0) ** (1 / 3))
    assert agg["ratio_idle"] == 1.0
    assert agg["invoke_ratio_max"] == 8.0
    # Only factors above the runtime's 2x threshold are required to move the design.
    assert agg["left_loaded_engine"] is True and agg["static_switches"] == 0
    assert by[1.0]["adaptive_left_loaded"] is None


# --- the runtime's engine-level latency flag -----------------------------------------------------

class _Spec:
    id = "m-CPU[0,1]"
    processor = "CPU[0,1]"
    expected = {"L": 1.0, "L_p99": 1.0}


class _Exec:
    spec, cores = _Spec(), frozenset({0, 1})


@pytest.mark.parametrize("scope, flagged", [("cores", ("CPU[0,1]", "CPU[0]", "CPU[1]")),
                                            ("processor", ("CPU[0,1]",))])
def test_a_slow_design_on_two_cores_flags_its_engine_alone_in_processor_scope(scope, flagged):
    opts = RuntimeOptions(raise_after=2, clear_after=2, calibration_periods=2,
                          memory_low_mb=0.0, latency_hold_s=0.5, load_threshold=1.01,
                          latency_scope=scope)
    mon = DeviceMonitor(["CPU[0,1]", "CPU[0]", "CPU[1]"], opts)
    active = {"t": _Exec()}

    def period(t, ms):
        return mon.read(t, active, {"t": [ms] * 5}).state

    for t in range(2):
        assert period(t, 1.0).flagged == ()
    period(2, 3.0)
    assert period(3, 3.0).flagged == flagged
    # The engine no longer serving: its flag clears after latency_hold_s, so it is tried again.
    mon.read(4, {"t": None}, {"t": []})
    assert mon.read(5, {"t": None}, {"t": []}).state.flagged == ()


def test_an_unknown_latency_scope_is_refused():
    with pytest.raises(InputError, match="latency_scope.*cores, processor"):
        RuntimeOptions(latency_scope="core")


# --- a short sweep, for real ---------------------------------------------------------------------

def test_a_short_sweep_moves_the_adaptive_run_and_never_the_static_one(tmp_path):
    """Two factors, 2 s runs of a ~1 ms LiteRT model (about 10 s in all)."""
    pytest.importorskip("ai_edge_litert")
    from test_throttle import _conv_model

    zoo = tmp_path / "zoo" / "t" / "tiny"
    zoo.mkdir(parents=True)
    (zoo / "FP32.tflite").write_bytes(_conv_model())
    (zoo / "record.json").write_text(json.dumps({"task": "t", "model": "tiny", "variants": [
        {"precision": "FP32", "available": True, "file": "FP32.tflite"}]}))
    out = rx.load_sweep(make_profile(_rows(), cores=2), tmp_path / "zoo", factors=(1, 8),
                        duration=2.0, rate=50, tasks=["t"], slo=SLO)
    assert out["factors"] == [1.0, 8.0] and out["static_design"] == "d0"
    idle, loaded = out["per_factor"]
    assert idle["order"] == ["adaptive", "static"] and loaded["order"] == ["static", "adaptive"]
    for row in (idle, loaded):
        st = row["static"]
        assert st["switches"] == 0 and st["designs_visited"] == ["d0"]
        assert st["engines_visited"] == ["CPU[0,1]"]
        for r in (row["adaptive"], st):
            assert r["lost"] == 0 and r["n"] > 0 and r["p90_ms"] > 0
    a = loaded["adaptive"]
    why = f"adaptive at 8x: {a['engines_visited']} {a['steps']}"
    # Loaded 8x, the adaptive run leaves the engine serving first for the free one (the
    # paper's GPU -> NNAPI), and the static design stays on it.
    assert a["steps"][0]["left"] and a["steps"][0]["to_engines"] == ["CPU[0]"], why
    assert a["engines_visited"][:2] == ["CPU[0,1]", "CPU[0]"], why
    assert not loaded["static"]["left_loaded"]
    assert loaded["static"]["invoke_median_ms"] > 4 * a["invoke_median_ms"]
    assert out["ratio_max"] == loaded["ratio_p90"]
