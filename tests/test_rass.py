"""RASS: a hand-worked example, the paper's shapes, infeasibility, and properties checked
against a brute-force reference implementation on random tables (hypothesis)."""

import itertools
import math

import numpy as np
import pytest
from conftest import make_profile  # noqa: I001
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from workbench.moo.optimality import tie_key
from workbench.moo.problem import DiscreteProblem
from workbench.solvers.rass import rass

UC1_LIKE = "max A; max TP; max L <= 30ms"


def test_hand_worked_example(hand_profile):
    """Feasible a, b, c, d (e breaks max L). up = (75, 125); s_A = 2.5, s_TP = 29.092;
    d_max = sqrt(2^2 + (75/29.092)^2) = 3.2628; opt = c 1.631, d 1.627, a 1.499, b 1.266."""
    res = rass(DiscreteProblem(hand_profile, UC1_LIKE))
    assert res.status == "ok" and res.n_feasible == 4 and res.n_total == 5
    opt = {d.configs[0]: round(d.optimality, 3) for d in res.designs.values()}
    assert opt == {"c": 1.631, "d": 1.627, "a": 1.499}
    got = {role: d.configs[0] for role, d in res.designs.items()}
    # d0 = c on the GPU; d1 avoids the GPU -> d (NPU); d2 avoids both -> a (CPU).
    assert got == {"d0": "c", "d1": "d", "d2": "a", "dm": "a", "dw": "c", "dwm": "a"}
    assert res.triggers == ["GPU", "NPU", "CPU"]
    # d_w: a and c tie on W = 1e9; c wins on optimality. d_wm: C(c) = 1 + 0 > C(a) = 0 + 0.
    assert res.decide({}) == "d0"
    assert res.decide({"GPU": True}) == "d1"
    assert res.decide({"GPU": True, "NPU": True}) == "d2"
    assert res.decide({"GPU": True, "NPU": True, "CPU": True}) == "dw"
    assert res.decide({"GPU": True, "NPU": True, "CPU": True, "memory": True}) == "dwm"
    assert res.decide({"NPU": True, "memory": True}) == "dm"
    assert res.decide({"NPU": True}) == "d0"  # rules look only at flags, not at history


def test_policy_json_has_one_rule_per_flag_combination(hand_profile):
    res = rass(DiscreteProblem(hand_profile, UC1_LIKE))
    pol = res.to_dict()["policy"]
    assert len(pol) == 2 ** (len(res.triggers) + 1)
    keys = {tuple(sorted(r["when"].items())) for r in pol}
    assert len(keys) == len(pol)
    assert [r["design"] for r in res.policy_table()] == ["d0", "d1", "d2", "dw", "dwm", "dm"]


def test_infeasible_names_nearest_and_broken_constraints(hand_profile):
    res = rass(DiscreteProblem(hand_profile, "max A; max L <= 5ms; MF <= 25"))
    assert res.status == "infeasible" and res.designs == {}
    # a: L 12 (+7/5 = 1.4), MF ok -> 1.4; c: 0.8 + 1.0 = 1.8; d: 2.2 + 0.6; b: 4 + 0.2.
    assert [v.labels[0] for v in res.nearest[:4]] == ["m1 FP32, CPU_{4}", "m1 FP32, GPU",
                                                       "m2 FP32, NPU", "m2 FP32, CPU_{4}"]
    assert res.nearest[0].broken == {"max L <= 5ms": 7.0}
    assert res.nearest[0].distance == pytest.approx(1.4)
    assert all(set(v.broken) <= {"max L <= 5ms", "MF <= 25MB"} and v.broken for v in res.nearest)
    # distances are relative excesses, smallest first
    assert [v.distance for v in res.nearest] == sorted(v.distance for v in res.nearest)
    assert res.to_dict()["status"] == "infeasible"


def test_absent_memory_data_removes_dm_and_the_policy_says_so():
    prof = make_profile([dict(id="a", processor="CPU", A=1, TP=2, W=1e9),
                         dict(id="b", processor="GPU", A=2, TP=1, W=2e9)])
    res = rass(DiscreteProblem(prof, "max A; max TP"))
    assert "dm" not in res.designs and res.designs["dwm"].index == res.designs["dw"].index
    rule = next(r for r in res.policy if r.when["memory"] and not all(
        r.when[t] for t in res.triggers))
    assert rule.design is None and "no MF" in rule.note


def test_multi_dnn_trigger_is_the_heaviest_model():
    rows = [
        dict(id="v-dsp", task="vision", processor="DSP", L=10, A=80, W=2e9, MF=20),
        dict(id="v-gpu", task="vision", processor="GPU", L=12, A=80, W=2e9, MF=40),
        dict(id="v-cpu", task="vision", processor="CPU", threads=2, L=30, A=80, W=2e9, MF=15),
        dict(id="a-cpu", task="audio", processor="CPU", threads=2, L=5, A=0.4, W=1e8, MF=10),
    ]
    res = rass(DiscreteProblem(make_profile(rows, cores=8), "min L; max A",
                               tasks=["audio", "vision"]))
    assert res.triggers == ["DSP", "GPU", "CPU"]  # CARIn Table 8's shape
    assert res.designs["d0"].configs == ("a-cpu", "v-dsp")
    assert res.designs["d1"].configs == ("a-cpu", "v-gpu")
    assert res.designs["d2"].configs == ("a-cpu", "v-cpu")


# --- a brute-force reference, written from SPEC section 6 with plain Python loops -----------

def reference_rass(rows, limit):
    """rows: list of (A, TP, Lmax, W, MF, processor); SLO: max A; max TP; max L <= limit."""
    feas = [i for i, r in enumerate(rows) if r[2] <= limit]
    if not feas:
        return None
    F = [(rows[i][0], rows[i][1]) for i in feas]
    up = [max(f[k] for f in F) for k in range(2)]
    s = []
    for k in range(2):
        mean = sum(f[k] for f in F) / len(F)
        s.append(math.sqrt(sum((f[k] - mean) ** 2 for f in F) / len(F)))
    use = [k for k in range(2) if s[k] > 0]
    dmax = math.sqrt(sum(((max(f[k] for f in F) - min(f[k] for f in F)) / s[k]) ** 2 for k in use))
    opt = {}
    for i, f in zip(feas, F):
        d = math.sqrt(sum(((f[k] - up[k]) / s[k]) ** 2 for k in use))
        opt[i] = math.inf if d == 0 else dmax / d
    # Optimalities equal to TIE_BITS bits tie (the same score along another path).
    order = sorted(feas, key=lambda i: (-float(tie_key(np.array([opt[i]]))[0]), rows[i][3],
                                        rows[i][4], i))
    designs, trig = {}, []
    for k in range(3):
        cand = [i for i in order if rows[i][5] not in trig]
        if not cand:
            break
        designs[f"d{k}"] = cand[0]
        trig.append(rows[cand[0]][5])
    union = [i for i in order if rows[i][5] in trig]
    designs["dm"] = min(union, key=lambda i: (rows[i][4], order.index(i)))
    designs["dw"] = min(union, key=lambda i: (rows[i][3], order.index(i)))
    return designs, trig, opt, order


row_strategy = st.tuples(
    st.integers(60, 80).map(float),          # A
    st.integers(1, 50).map(float),           # TP
    st.integers(1, 60).map(float),           # max L
    st.integers(1, 5).map(lambda x: x * 1e9),  # W
    st.integers(5, 60).map(float),           # MF
    st.sampled_from(["CPU", "GPU", "NPU", "DSP"]),
)


def _profile(rows):
    return make_profile([dict(id=f"r{i}", processor=p, threads=1 if p == "CPU" else None,
                              A=a, TP=tp, L=lm / 2, L_max=lm, W=w, MF=mf)
                         for i, (a, tp, lm, w, mf, p) in enumerate(rows)], cores=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(row_strategy, min_size=1, max_size=25), limit=st.integers(5, 60))
def test_rass_agrees_with_the_brute_force_reference(rows, limit):
    res = rass(DiscreteProblem(_profile(rows), f"max A; max TP; max L <= {limit}"))
    ref = reference_rass(rows, limit)
    if ref is None:
        assert res.status == "infeasible" and res.nearest
        return
    designs, trig, opt, order = ref
    assert res.triggers == trig
    for role, i in designs.items():
        assert res.designs[role].index == i, role
    # the whole sorted space agrees, optimality included
    sorted_flat = DiscreteProblem(_profile(rows), f"max A; max TP; max L <= {limit}").ranking
    assert sorted_flat.index.tolist() == order
    assert np.allclose(sorted_flat.optimality, [opt[i] for i in order])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(row_strategy, min_size=1, max_size=25), limit=st.integers(5, 60))
def test_rass_properties(rows, limit):
    pr = DiscreteProblem(_profile(rows), f"max A; max TP; max L <= {limit}")
    res = rass(pr)
    if not res.ok:
        return
    F = pr.feasible.F
    d0 = np.array([res.d0.objectives["A"], res.d0.objectives["TP"]])
    # d0 is non-dominated in the feasible space (both objectives maximised)
    assert not np.any(np.all(F >= d0, axis=1) & np.any(F > d0, axis=1))
    # optimality >= 1 everywhere, and d0's is the largest
    opt = pr.ranking.optimality
    assert np.all(opt >= 1 - 1e-9)
    # (a tie to TIE_BITS bits: the same score along another path may be a bit lower)
    assert tie_key(np.array([res.d0.optimality]))[0] == tie_key(np.array([opt.max()]))[0]
    # d_k uses none of the trigger processors t_0..t_{k-1}
    for k in range(len(res.triggers)):
        assert not set(res.designs[f"d{k}"].processors) & set(res.triggers[:k])
    # the policy covers every combination of flags, once
    whens = [tuple(r.when[t] for t in res.triggers) + (r.when["memory"],) for r in res.policy]
    assert sorted(whens) == sorted(itertools.product((False, True),
                                                     repeat=len(res.triggers) + 1))
    assert all(r.design in res.designs for r in res.policy)


# --- multi-DNN: RASS's search against a loop over the product space -------------------------

def reference_search(pr):
    """SPEC 6 steps 4-6 by brute force over every combination, metrics from the problem."""
    feas = []
    for flat in range(pr.size):
        ev = pr.evaluate_flat(np.array([flat]))
        if np.all(ev.G <= 0):
            feas.append(flat)
    if not feas:
        return {}, [], []
    opt = {f: float(pr.optimality_of(np.array([f]))[0]) for f in feas}
    tot = {f: pr.metrics(np.array([f])) for f in feas}
    # Optimalities equal to TIE_BITS bits (the same score along another path) tie: W decides.
    order = sorted(feas, key=lambda f: (-float(tie_key(np.array([opt[f]]))[0]),
                                        float(tot[f]["W"][0]), float(tot[f]["MF"][0]), f))
    cfg = {f: pr.configs_of(f) for f in feas}
    trig, designs = [], {}
    for k in range(3):
        cand = [f for f in order if not {c.processor for c in cfg[f]} & set(trig)]
        if not cand:
            break
        designs[f"d{k}"] = cand[0]
        heaviest = max(cfg[cand[0]], key=lambda c: c.W)
        trig.append(heaviest.processor)
    maps = {tuple(c.processor for c in cfg[designs[d]]) for d in designs}
    union = [f for f in order if tuple(c.processor for c in cfg[f]) in maps]
    designs["dm"] = min(union, key=lambda f: (float(tot[f]["MF"][0]), order.index(f)))
    designs["dw"] = min(union, key=lambda f: (float(tot[f]["W"][0]), order.index(f)))
    return designs, trig, order


multi_row = st.tuples(st.integers(1, 40).map(float), st.integers(60, 80).map(float),
                      st.integers(1, 6).map(lambda x: x * 1e8), st.integers(5, 50).map(float),
                      st.sampled_from(["CPU", "GPU", "NPU", "DSP"]), st.sampled_from([1, 2, 4]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t1=st.lists(multi_row, min_size=1, max_size=6), t2=st.lists(multi_row, min_size=1,
                                                                   max_size=6),
       limit=st.integers(10, 80))
def test_multi_dnn_rass_agrees_with_a_loop_over_the_product(t1, t2, limit):
    rows = [dict(id=f"{t}{i}", task=t, processor=p, threads=th if p == "CPU" else None, L=L, A=A,
                 W=W + i, MF=MF)  # distinct W per row: "largest workload" is then unambiguous
            for t, tab in (("a", t1), ("b", t2)) for i, (L, A, W, MF, p, th) in enumerate(tab)]
    pr = DiscreteProblem(make_profile(rows, cores=4), f"min L; max A; L <= {limit}",
                         tasks=["a", "b"])
    res = rass(pr)
    ref = reference_search(pr)
    event("feasible" if ref[2] else "infeasible")
    if not ref[2]:
        assert res.status == "infeasible"
        return
    designs, trig, order = ref
    assert res.sorted_index.tolist() == order
    assert res.triggers == trig
    for role, f in designs.items():
        assert res.designs[role].index == f, role


def test_a_task_without_latencies_does_not_make_anothers_unknown():
    """Multi-DNN, an SLO that needs only a's latency: v's rows lack L. Under the contention
    model a's latency depends on v's only where they share an accelerator; elsewhere a's latency
    stays known and the problem is solved (an unknown L of v used to poison every combination)."""
    prof = make_profile([
        dict(id="v1", task="v", processor="GPU", A=70, W=1e9, MF=10),
        dict(id="v2", task="v", processor="CPU", threads=2, A=72, W=2e9, MF=10),
        dict(id="a1", task="a", processor="NPU", A=60, L=5, W=1e9, MF=10),
        dict(id="a2", task="a", processor="GPU", A=65, L=4, W=2e9, MF=10),
    ], tasks=["v", "a"])
    pr = DiscreteProblem(prof, "max A[v]; max A[a]; L[a] <= 50ms", tasks=["v", "a"])
    res = rass(pr)
    assert res.ok
    # a on the NPU never waits for v: its latency is known with any v row.
    ok = {tuple(d.configs) for d in res.designs.values()}
    assert ("v2", "a2") in ok or ("v1", "a1") in ok or ("v2", "a1") in ok
    G = pr.evaluate_flat(np.arange(pr.size)).G[:, 0]
    by = {tuple(c.id for c in pr.configs_of(i)): g for i, g in enumerate(G)}
    assert np.isfinite(by[("v1", "a1")]) and np.isfinite(by[("v2", "a2")])
    assert np.isnan(by[("v1", "a2")])  # a shares the GPU with v, whose latency is unknown


def test_a_combination_missing_an_objective_is_named_by_its_configs():
    """A model whose latency is unknown leaves its throughput under co-execution unknown: the
    error names the objective and the configurations, not an internal row number."""
    from workbench.errors import InputError

    rows = [dict(id="v0", task="a", processor="GPU", A=66.5, L=46.1, TP=21.7, MF=27.8, W=1e8),
            dict(id="w0", task="b", processor="CPU", threads=4, A=79.7, TP=277.4, MF=49.9, W=1e8),
            dict(id="w1", task="b", processor="CPU", threads=4, A=64.9, L=15.9, TP=62.1, MF=39.4,
                 W=1e8)]
    pr = DiscreteProblem(make_profile(rows), "max A; max TP", tasks=["a", "b"])
    with pytest.raises(InputError) as err:
        rass(pr)
    msg = str(err.value)
    assert "TP[b] unknown" in msg and "'v0 + w0'" in msg and "row" not in msg
