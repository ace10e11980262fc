"""Delen's logic on hand-built exit profiles: every criterion and operator, JSON round trip,
each policy's choice, the Pareto look-up, max-min shares on known cases, the limiter under a
burst (nothing lost)."""

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.multiexit.policies import (
    ExitProfile,
    ParetoPolicy,
    dynamic_exit,
    full,
    oracle,
    per_request,
    run_criteria,
    static_exit,
    threshold_exits,
)
from workbench.multiexit.sharing import (
    CrossAppAdapter,
    Tenant,
    TokenBucket,
    delen_shares,
    limit_trace,
    max_min_shares,
    redistribute,
)
from workbench.runtime import criteria as C

STATE = C.ExitState(response_time=25.0, confidence=0.6, accuracy=0.8, energy_used=120.0,
                    flops_used=2e9, exit_number=2)


@pytest.mark.parametrize("param, value", [
    ("response_time", 25.0), ("confidence", 0.6), ("accuracy", 0.8), ("energy_used", 120.0),
    ("flops_used", 2e9), ("exit_number", 2)])
def test_every_parameter_with_every_operator(param, value):
    below, above = value * 0.5, value * 1.5
    if param == "confidence":
        below, above = 0.3, 0.9
    if param == "exit_number":
        below, above = 1, 3
    for op, thr, want in [("<", above, True), ("<", below, False), (">", below, True),
                          (">", above, False), ("==", value, True), ("==", above, False)]:
        assert C.Criterion(param, op, thr).evaluate(STATE) is want, (param, op, thr)


def test_boolean_combinations_and_null():
    a, b = C.Criterion("response_time", ">", 20), C.Criterion("confidence", ">", 0.7)
    assert (a | b).evaluate(STATE) and not (a & b).evaluate(STATE)
    assert (~b).evaluate(STATE) and not (~a).evaluate(STATE)
    assert not C.Null().evaluate(STATE)
    assert C.combine_criteria("and", a, ~b, C.Criterion("exit_number", "==", 2)).evaluate(STATE)
    assert C.combine_criteria("not", a).evaluate(STATE) is False


def test_text_form_parses_units_precedence_and_round_trips():
    n = C.parse_criteria("(response_time > 20ms) || (confidence > 0.7)")
    assert n == C.Or(C.Criterion("response_time", ">", 20.0), C.Criterion("confidence", ">", 0.7))
    assert C.parse_criteria("energy_used > 0.1 J") == C.Criterion("energy_used", ">", 100.0)
    assert C.parse_criteria("flops_used < 2 G") == C.Criterion("flops_used", "<", 2e9)
    # && binds tighter than ||; ! tighter than &&; words work too.
    n = C.parse_criteria("confidence > 0.9 || exit_number == 2 && not response_time < 10")
    assert n == C.Or(C.Criterion("confidence", ">", 0.9),
                     C.And(C.Criterion("exit_number", "==", 2),
                           C.Not(C.Criterion("response_time", "<", 10))))
    assert C.parse_criteria(str(n)) == n
    assert C.parse_criteria("null") == C.Null()
    # A word operator right after a bare number is the operator, not the number's unit.
    assert C.parse_criteria("confidence > 0.9 and response_time < 5 ms") == C.And(
        C.Criterion("confidence", ">", 0.9), C.Criterion("response_time", "<", 5.0))
    assert C.parse_criteria("exit_number > 1 OR confidence > 0.5") == C.Or(
        C.Criterion("exit_number", ">", 1), C.Criterion("confidence", ">", 0.5))


def test_json_round_trip():
    n = C.parse_criteria("!(exit_number == 1) && (confidence > 0.5 || energy_used > 50)")
    text = C.dumps(n)
    assert C.loads(text) == n and json.loads(text)["and"][0] == {"not": {
        "param": "exit_number", "op": "==", "value": 1.0}}
    assert C.from_dict({"null": True}) == C.Null()


@pytest.mark.parametrize("text, msg", [
    ("latency > 3", "unknown parameter"), ("confidence > 1.5", "[0, 1]"),
    ("exit_number == 1.5", "whole exit number"), ("(confidence > 0.3", "missing '\\)'"),
    ("confidence >= 3", "unexpected character"), ("confidence > x", "expected a number"),
    ("response_time > 3 kg", "unknown unit"),
    ("", "empty"), ("confidence > 0.3 ||", "ends too early"), ("0.3 > confidence", "expected a")])
def test_bad_text_is_rejected_with_a_pointer(text, msg):
    with pytest.raises(C.CriteriaError, match=msg) as e:
        C.parse_criteria(text)
    assert "^" in str(e.value)


@pytest.mark.parametrize("data, where", [
    ({"param": "confidence", "op": ">"}, "criteria"),
    ({"or": [{"param": "confidence", "op": ">", "value": 0.5}]}, "criteria.or"),
    ({"and": [{"null": True}, {"param": "nope", "op": ">", "value": 1}]}, "criteria.and[1]"),
    ({"xor": []}, "criteria"), ({"param": "confidence", "op": "!=", "value": 0.5}, "criteria")])
def test_bad_json_names_the_node(data, where):
    with pytest.raises(C.CriteriaError) as e:
        C.from_dict(data)
    assert str(e.value).startswith(where)


def test_the_table_updates_at_run_time_and_keeps_the_old_criteria_on_error():
    t = C.CriteriaTable()
    assert not t.should_exit("cam", STATE)  # no criteria: full execution
    t.set("cam", "confidence > 0.5")
    assert t.should_exit("cam", STATE)
    t.set("cam", C.Criterion("confidence", ">", 0.9))
    assert not t.should_exit("cam", STATE)
    with pytest.raises(C.CriteriaError):
        t.set("cam", "confidence >> 1")
    assert t.get("cam") == C.Criterion("confidence", ">", 0.9)


# --- policies on a hand-built profile ---------------------------------------------------------

@pytest.fixture
def hand():
    """3 exits, 4 samples: sample k's confidences and correctness per exit."""
    conf = [[0.95, 0.97, 0.99],   # easy: right everywhere
            [0.40, 0.80, 0.90],   # right from exit 2
            [0.30, 0.50, 0.95],   # right only at exit 3
            [0.60, 0.60, 0.60]]   # never right
    correct = [[1, 1, 1], [0, 1, 1], [0, 0, 1], [0, 0, 0]]
    return ExitProfile(flops=[1e6, 2e6, 4e6], latency_ms=[2.0, 5.0, 10.0],
                       energy_mj=[10.0, 25.0, 60.0], confidence=conf, correct=correct)


def test_static_dynamic_oracle_full(hand):
    assert hand.accuracy.tolist() == [0.25, 0.5, 0.75]
    assert static_exit(hand, 0.5).exits.tolist() == [1] * 4        # first exit with error <= 0.5
    assert static_exit(hand, 0.1).exits.tolist() == [2] * 4        # none meets it: the last
    assert str(static_exit(hand, 0.5).criteria) == "(exit_number == 2)"
    assert dynamic_exit(hand, 6.0).exits.tolist() == [1] * 4       # deepest that fits 6 ms
    assert dynamic_exit(hand, 1.0).exits.tolist() == [0] * 4       # nothing fits: the first
    o = oracle(hand)
    assert o.exits.tolist() == [0, 1, 2, 0] and o.accuracy == 0.75
    f = full(hand)
    assert f.exits.tolist() == [2] * 4 and f.energy_mj == 60.0


def test_per_request_criteria_decide_after_each_exit(hand):
    o = per_request(hand, C.parse_criteria("confidence > 0.7"))
    assert o.exits.tolist() == [0, 1, 2, 2]
    o = per_request(hand, C.parse_criteria("confidence > 0.7 || response_time > 4"))
    assert o.exits.tolist() == [0, 1, 1, 1]
    assert per_request(hand, C.Null()).exits.tolist() == [2, 2, 2, 2]
    assert per_request(hand, C.parse_criteria("exit_number == 1")).exits.tolist() == [0] * 4
    assert o.distribution == (0.25, 0.75, 0.0)


def test_pareto_front_is_non_dominated_and_lookup_is_the_cheapest_meeting_the_target(hand):
    pp = ParetoPolicy.fit(hand, metric="energy", n=400)
    fc, fe = pp.front_cost, pp.front_error
    assert (np.diff(fc) >= 0).all() and (np.diff(fe) < 0).all()
    for i in range(len(pp.cost)):   # nothing sampled dominates a front point
        dominated = (pp.cost[i] <= fc) & (pp.error[i] <= fe) & ((pp.cost[i] < fc) |
                                                                 (pp.error[i] < fe))
        assert not dominated.any()
    for target in (0.3, 0.5, 0.76, 0.9):
        k = pp.lookup(target)
        ok = pp.error < target
        assert k is not None and pp.error[k] < target
        assert pp.cost[k] == pytest.approx(pp.cost[ok].min())
    assert pp.lookup(0.0) is None  # nothing is perfect here
    # What the runtime does with the looked-up criteria equals the vectorised outcome.
    k = pp.lookup(0.5)
    assert run_criteria(hand, pp.criteria(k)).exits.tolist() == pp.outcome(hand, k).exits.tolist()
    assert pp.lookup_budget(1e9) == pp.front[-1] and pp.lookup_budget(0.0) == pp.front[0]


def test_threshold_exits_vectorised_matches_the_definition(hand):
    T = np.array([[0.5, 0.5], [0.99, 0.0], [1.0, 1.0]])
    got = threshold_exits(hand, T)
    assert got.tolist() == [[0, 1, 2, 0], [1, 1, 1, 1], [2, 2, 2, 2]]


def test_bad_profiles_are_named():
    with pytest.raises(Exception, match="latency_ms"):
        ExitProfile(flops=[1, 2], latency_ms=[1], energy_mj=[1, 2], confidence=[[0.5, 0.5]],
                    correct=[[1, 1]])
    with pytest.raises(Exception, match="confidence"):
        ExitProfile(flops=[1, 2], latency_ms=[1, 2], energy_mj=[1, 2], confidence=[[0.5]],
                    correct=[[1, 1]])


# --- sharing ---------------------------------------------------------------------------------

def test_max_min_shares_on_known_cases():
    assert delen_shares([5, 10]) == pytest.approx([1 / 3, 2 / 3])          # Delen 4.2's example
    assert max_min_shares([1, 1, 1], [0.1, 0.5, 1.0]) == pytest.approx([0.1, 0.45, 0.45])
    assert max_min_shares([1, 2], [1.0, 1.0]) == pytest.approx([1 / 3, 2 / 3])
    assert max_min_shares([1, 1], [0.2, 0.3]) == pytest.approx([0.2, 0.3])  # under-loaded
    assert max_min_shares([1, 0], None) == pytest.approx([1.0, 0.0])
    # Demands from rate x latency: 10/s x 20 ms = 0.2 is all app 0 needs.
    assert delen_shares([10, 10], latency_ms=[20, 500]) == pytest.approx([0.2, 0.8])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(0.01, 10), st.floats(0, 2)), min_size=1, max_size=6))
def test_max_min_is_feasible_capped_and_fair(apps):
    w = np.array([a[0] for a in apps])
    d = np.array([a[1] for a in apps])
    s = max_min_shares(w, d)
    assert (s <= d + 1e-9).all() and s.sum() <= 1 + 1e-9
    if d.sum() >= 1:
        assert s.sum() == pytest.approx(1.0)       # work-conserving when demand exceeds supply
    unsated = s < d - 1e-9
    if unsated.sum() > 1:                          # the unsated share by weight
        ratio = s[unsated] / w[unsated]
        assert ratio.max() == pytest.approx(ratio.min(), rel=1e-6)


def test_redistribution_gives_unused_share_to_the_hungry():
    out = redistribute([0.5, 0.3, 0.2], [0.1, 0.3, 0.2], [1, 1, 2])
    assert out[0] == pytest.approx(0.1) and out.sum() == pytest.approx(1.0)
    assert out[2] - 0.2 == pytest.approx(2 * (out[1] - 0.3))


def test_cooperative_tenants_absorb_a_burst_non_cooperative_keep_their_share():
    mk = lambda coop: [Tenant("img1", 15, cooperative=coop), Tenant("img2", 15, cooperative=coop),  # noqa: E731
                       Tenant("audio", 5, cooperative=coop, to_criteria=lambda b: f"<= {b:.0f} ms")]
    calm = CrossAppAdapter(mk(False)).step()
    assert calm.shares["img1"] == pytest.approx(15 / 35)
    burst = {"img1": 30, "img2": 15, "audio": 5}
    local = CrossAppAdapter(mk(False)).step(burst)
    assert local.shares == pytest.approx(calm.shares)
    assert local.budget_ms["img1"] == pytest.approx(calm.budget_ms["img1"] / 2)  # halves its time
    coop = CrossAppAdapter(mk(True)).step(burst)
    assert coop.shares["img1"] > calm.shares["img1"] and coop.shares["img2"] < calm.shares["img2"]
    assert sum(coop.shares.values()) == pytest.approx(1.0)
    assert coop.criteria["audio"].endswith("ms")


def test_a_cooperative_tenant_with_a_quiet_window_keeps_its_share():
    """A window with no arrivals (a slow Poisson trace has many) does not take a cooperative
    tenant's share away, as in the runtime: the busy ones re-split only their own pool, and the
    quiet one's share is lent to them by work conservation."""
    tenants = [Tenant(n, r, cooperative=True) for n, r in (("img1", 15), ("img2", 15), ("audio", 5))]
    ad = CrossAppAdapter(tenants)
    quiet = ad.step({"img1": 30, "img2": 15, "audio": 0})
    assert quiet.shares["audio"] == pytest.approx(5 / 35)
    assert quiet.shares["img1"] == pytest.approx(30 / 35 * 2 / 3)
    assert sum(quiet.shares.values()) == pytest.approx(1.0)
    lent = ad.step({"img1": 30, "img2": 15, "audio": 0}, usage={"img1": 1.0, "audio": 0.0})
    assert lent.shares["audio"] == pytest.approx(0.0) and lent.shares["img1"] > quiet.shares["img1"]


@pytest.mark.parametrize("mode", ["delay", "drop"])
def test_the_limiter_under_a_burst_loses_nothing_and_respects_the_share(mode):
    rng = np.random.default_rng(3)
    arrivals = np.sort(np.concatenate([rng.uniform(0, 1, 50), rng.uniform(0.2, 0.3, 200)]))
    costs = rng.uniform(0.002, 0.02, len(arrivals))
    ds = limit_trace(arrivals, costs, 0.5, interval=0.5, mode=mode)
    assert len(ds) == len(arrivals)
    actions = [d.action for d in ds]
    assert set(actions) <= {"serve", "delay", "drop"}
    assert ("delay" in actions) == (mode == "delay") and ("drop" in actions) == (mode == "drop")
    run = [(d.start, c) for d, c in zip(ds, costs) if d.action != "drop"]
    assert all(d.start >= a - 1e-12 for d, a in zip(ds, arrivals))
    # In any window, admitted work <= share x window + the burst allowance.
    starts = np.array([r[0] for r in run])
    work = np.array([r[1] for r in run])
    for t0, t1 in itertools.combinations(np.linspace(0, starts.max() + 0.01, 25), 2):
        inside = (starts >= t0) & (starts < t1)
        assert work[inside].sum() <= 0.5 * (t1 - t0) + 0.5 * 0.5 + 0.02 + 1e-9


def test_the_bucket_is_checked_before_a_request_runs_and_charged_what_it_used():
    """The serving loop's use of the bucket: tokens refill to the burst, a request is charged
    what it really used (a debt delays the next), when() says when enough has accrued, and a new
    share shrinks the burst at once."""
    tb = TokenBucket(0.5, interval=0.2)  # 0.1 s of burst
    assert tb.tokens_at(10.0) == pytest.approx(0.1)
    tb.charge(0.15, 10.0)  # ran past what it had: debt
    assert tb.tokens_at(10.0) == pytest.approx(-0.05)
    assert tb.when(0.01, 10.0) == pytest.approx(10.0 + 0.06 / 0.5)
    assert tb.tokens_at(10.12) == pytest.approx(0.01)
    assert tb.when(0.01, 10.12) == pytest.approx(10.12)
    tb.set_share(0.1, 20.0)
    assert tb.capacity == pytest.approx(0.02) and tb.tokens_at(20.0) == pytest.approx(0.02)
    with pytest.raises(Exception, match="cost"):
        tb.charge(-1.0, 20.0)
    with pytest.raises(Exception, match="share"):
        tb.set_share(0.0, 20.0)


def test_a_tenant_held_back_by_its_limiter_keeps_its_share_and_gets_the_spare():
    # usage inf: the limiter held it back (more demand than its share); the idle one keeps what
    # it used and the rest goes to the hungry one.
    out = redistribute([0.5, 0.5], [0.05, float("inf")], [1, 1])
    assert out == pytest.approx([0.05, 0.95])
    # Nobody idle: nothing moves.
    assert redistribute([0.5, 0.5], [float("inf"), float("inf")], [1, 1]) == pytest.approx(
        [0.5, 0.5])


def test_limiter_rejects_bad_settings():
    with pytest.raises(Exception, match="share"):
        TokenBucket(1.5)
    with pytest.raises(Exception, match="mode"):
        TokenBucket(0.5, mode="queue")


def test_modelled_power_draws_idle_plus_busy_and_battery_life_follows_it():
    """Energy is modelled (no power counters here): a request's dynamic energy is its busy
    time at the busy power; a battery sees idle plus busy power at the utilisation, so halving
    the work does not halve the draw."""
    from workbench.lab.experiments import delen as dx
    from workbench.power import HOST_CORE, JETSON_NANO, PowerModel

    assert HOST_CORE.busy_mj(2.0) == pytest.approx(10.0)  # 2 ms at 5 W
    assert JETSON_NANO.average_w(0.0) == pytest.approx(5.0)
    assert JETSON_NANO.average_w(1.0) == pytest.approx(10.0)
    assert JETSON_NANO.battery_hours(60.0, 0.5) == pytest.approx(8.0)
    with pytest.raises(Exception, match="idle_w"):
        PowerModel("x", idle_w=-1.0, busy_w=1.0, source="")
    # Two apps; Pareto needs a third of Full's time per request.
    rows8 = [{"model": m, "policy": p, "latency_ms": ms, "energy_mj": ms * 5.0}
             for m in ("a", "b") for p, ms in (("full", 3.0), ("per-workload", 2.0),
                                                 ("Pareto frontier", 1.0))]
    r10 = {r["policy"]: r for r in dx.fig10(rows8, load=0.9)}
    assert r10["full"]["utilisation"] == pytest.approx(0.9)
    assert r10["Pareto frontier"]["utilisation"] == pytest.approx(0.3)
    assert r10["Pareto frontier"]["vs_full"] == pytest.approx((5 + 4.5) / (5 + 1.5))
    assert all(r["power_model"].startswith("modelled") for r in r10.values())


def _check_inputs(*, energy_falls: bool, img1_drop: float):
    """Minimal rows of every Delen figure for ``paper_checks``."""
    pol = lambda p, acc, thr, rt: {"policy": p, "rate": 100.0, "throughput": thr,  # noqa: E731
                                   "accuracy": acc, "response_ms": rt}
    e = [3.0, 2.0, 1.0] if energy_falls else [1.0, 2.0, 3.0]
    fig9 = [{"model": "m", "battery": b, "energy_mj": x} for b, x in zip(("high", "medium", "low"), e)]
    fig11 = [{"policy": p, "load": x, "accuracy": a} for x in (0.5, 1.0)
             for p, a in (("PF", 0.9), ("pW", 0.8), ("pW (exit==1)", 0.7))]
    fig13 = [{"policy": p, "load": 1.0, "usage": 0.4, "max_window_usage": 0.5, "bound": 0.55,
              "delayed": 3, "lost": 0} for p in ("pR (C>0.7)", "PF")]

    def sharing(mode, drop, share1):
        return [{"mode": mode, "phase": ph, "app": a, "share": share1 if (a, ph) == ("IMG1", "burst")
                 else 0.4, "accuracy": 0.9 - (drop if (a, ph) == ("IMG1", "burst") else 0.0)}
                for ph in ("before", "burst", "after") for a in ("IMG1", "IMG2", "AUDIO")]
    return dict(
        fig5={"vectors": 1000, "front": [0, 1, 2, 3], "metric": "energy"},
        fig7=[pol("pR (C>0.7)", 0.9, 60.0, 500.0), pol("PF", 0.85, 99.0, 8.0)],
        fig8_savings={"pf_vs_full_energy_saving_mean_pct": 30.0,
                      "pf_vs_pw_energy_saving_mean_pct": 10.0},
        fig9=fig9,
        fig10=[{"policy": "full", "vs_full": 1.0}, {"policy": "per-workload", "vs_full": 1.2},
               {"policy": "Pareto frontier", "vs_full": 1.4}],
        fig11=fig11, fig13=fig13, fig14=sharing("non-cooperative", img1_drop, 0.4),
        fig15=sharing("cooperative", img1_drop / 2, 0.6))


def test_paper_checks_put_each_figure_beside_the_paper_and_decide_nothing():
    """The report's table shows the paper and this run side by side; whether a claim holds is
    the ledger's to decide (workbench.lab.reproduction), never this table's."""
    from workbench.lab.experiments.delen import paper_checks

    ok = {c["figure"]: c for c in paper_checks(**_check_inputs(energy_falls=True, img1_drop=0.2))}
    assert all(set(c) == {"figure", "paper", "workbench"} for c in ok.values()), ok
    assert "1 of 1 apps" in ok["Fig. 9"]["workbench"]
    bad = {c["figure"]: c for c in paper_checks(**_check_inputs(energy_falls=False, img1_drop=0.0))}
    assert "0 of 1 apps" in bad["Fig. 9"]["workbench"]


def test_which_criterion_ended_a_request_is_counted_apart():
    """Delen Fig. 11's combined policy: a request is counted under confidence, response time,
    both, or neither, from the confidence and elapsed time it exited with; drops are left out."""
    from workbench.lab.experiments.delen import ended_by
    from workbench.multiexit.serve import Record

    def rec(conf, elapsed, action="serve"):
        return Record("a", 0.0, 0.0, 0.01, 0, True, 1.0, action, False, conf, elapsed)

    rs = [rec(0.9, 5.0), rec(0.9, 5.0), rec(0.5, 20.0), rec(0.9, 20.0), rec(0.5, 5.0),
          rec(0.99, 99.0, "drop")]
    got = ended_by(rs, response_ms=10.0, confidence=0.7)
    assert got == pytest.approx({"by_confidence": 0.4, "by_response_time": 0.2, "by_both": 0.2,
                                 "by_neither": 0.2})
    assert rs[0].service_ms == pytest.approx(10.0)


def test_overload_onset_is_the_first_load_a_policy_falls_behind():
    from workbench.lab.experiments.delen import overload_onset

    rows = [{"policy": p, "load": x, "kept_up": k} for x, ks in
            ((1.0, (1.0, 1.0)), (2.0, (0.9, 0.99)), (3.0, (0.5, 0.97)))
            for p, k in zip(("pR (C>0.7)", "PF"), ks)]
    got = overload_onset(rows)
    assert got["load"] == 2.0 and got["PF"] == 0.99 and got["pR (C>0.7)"] == 0.9
    assert overload_onset(rows, policy="PF")["load"] is None  # it kept up everywhere


def test_efficientnet_lite_exits_follow_its_stages():
    """Exits after the third and fifth stage and the last block, found from the blocks'
    widths: Lite0's 16 blocks and Lite2's 21 (its stages are wider and deeper)."""
    from workbench.multiexit.pretrained import lite_stages

    lite0 = [16, 24, 24, 40, 40, 80, 80, 80, 112, 112, 112, 192, 192, 192, 192, 320]
    lite2 = [16, 24, 24, 24, 48, 48, 48, 88, 88, 88, 88, 120, 120, 120, 120, 208, 208, 208, 208,
             208, 352]
    assert lite_stages(lite0) == ((0, 5), (5, 11), (11, 16))
    assert lite_stages(lite2) == ((0, 7), (7, 15), (15, 21))
    with pytest.raises(Exception, match="seven stages"):
        lite_stages([16, 24, 40])


class _FixedNet:
    """A one-exit net whose every request takes ``ms`` of (virtual) time: serve's clock then
    moves deterministically, so when a request starts is exact."""

    n_exits, threads = 1, 1

    def __init__(self, ms: float) -> None:
        self.ms = ms

    def run(self, x, should_exit, *, waited_ms=0.0, cap_ms=float("inf"), segment_ms=None):
        state = C.ExitState(waited_ms + self.ms, 0.9, 0.9, 0.0, 1.0, 1)
        return np.array([0.9, 0.1]), 0, state


def test_a_request_held_by_its_limiter_starts_when_a_share_update_lends_it_more():
    """A busy tenant's limiter holds a request whose tokens, at its own share (0.5), would come
    at 1.1 s; the update at 1.0 s lends it the idle tenant's share, so the tokens come at 1.05 s.
    The request must not sleep to 1.1 s on the old share's promise."""
    from workbench.multiexit.serve import App, serve
    from workbench.multiexit.sharing import CrossAppAdapter, Tenant

    x, y = np.zeros((1, 1)), np.zeros(1, int)
    apps = [App(n, _FixedNet(200.0), x, y, lambda r, b: C.parse_criteria("null"),
                segment_ms=[200.0]) for n in ("busy", "idle")]
    adapter = CrossAppAdapter([Tenant("busy", 1.0), Tenant("idle", 1.0)])
    res = serve(apps, {"busy": np.zeros(6)}, adapter=adapter, enforce_shares=True,
                limiter_interval=1.0, calibrate=False)
    starts = [r.start for r in res.records]
    # Bucket 0.5 s, each request needs 0.25 s and uses 0.2 s: 0, 0.2, 0.4, held to 0.7, then
    # held at 0.9 with 0.15 s of tokens; lent ~1.0 s/s from the update at 1.0 s: 1.05 s.
    assert starts[:4] == pytest.approx([0.0, 0.2, 0.4, 0.7])
    assert 1.0 <= starts[4] < 1.1 - 1e-6, starts


def test_paper_checks_say_n_a_for_a_phase_that_answered_nothing():
    """A short run can leave a sharing phase without answers or share samples (None): the table
    says n/a there instead of failing the report."""
    from workbench.lab.experiments.delen import paper_checks

    inputs = _check_inputs(energy_falls=True, img1_drop=0.2)
    for r in inputs["fig15"]:
        if (r["app"], r["phase"]) == ("IMG1", "burst"):
            r["share"] = r["accuracy"] = None
    for r in inputs["fig14"]:
        if r["app"] == "AUDIO":
            r["accuracy"] = None
    checks = {c["figure"]: c["workbench"] for c in paper_checks(**inputs)}
    assert "IMG1 share 0.40 -> n/a, accuracy 0.900 -> n/a" in checks["Fig. 15"]
    assert "the others move at most 0.000" in checks["Fig. 14"]
