"""RASS picks its designs without sorting the feasible space: the order it reads must be the one
a full three-key sort gives (optimality descending, then lower W, lower MF, lower position)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.moo.optimality import best_of, rank_order, tie_key

# Few distinct values, so that ties (the case the shortcut must get right) are common; NaN (no
# optimality) goes last in both.
values = st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0, np.inf, np.nan]),
                            st.sampled_from([1.0, 2.0, np.inf]),
                            st.sampled_from([3.0, 4.0, np.inf]), st.booleans()),
                  min_size=1, max_size=40)


def _lexsort(opt, W, MF):
    return np.lexsort((np.arange(len(opt)), MF, W, -tie_key(opt)))


@settings(max_examples=300, deadline=None)
@given(values)
def test_rank_order_is_the_full_sort(rows):
    opt, W, MF, _ = (np.array(c, dtype=float) for c in zip(*rows))
    assert rank_order(opt, W, MF).tolist() == _lexsort(opt, W, MF).tolist()


@settings(max_examples=300, deadline=None)
@given(values)
def test_best_of_a_subset_is_its_first_in_the_full_sort(rows):
    opt, W, MF, keep = (np.array(c) for c in zip(*rows))
    opt, W, MF, keep = opt.astype(float), W.astype(float), MF.astype(float), keep.astype(bool)
    order = [i for i in _lexsort(opt, W, MF) if keep[i]]
    assert best_of(opt, keep, W, MF) == (order[0] if order else None)
    assert best_of(opt, None, W, MF) == _lexsort(opt, W, MF)[0]


def test_optimalities_equal_but_for_rounding_tie():
    """sqrt(2) computed along two paths differs in its last bit: still a tie, so lower W wins
    (a design with the same score and half the workload was passed over)."""
    a = np.sqrt(np.float64(2.0))
    b = np.nextafter(a, 0.0)   # the same score, one bit lower
    opt, W, MF = np.array([b, a, 1.0]), np.array([1e8, 2e8, 1e8]), np.array([10.0, 20.0, 10.0])
    assert best_of(opt, None, W, MF) == 0 and rank_order(opt, W, MF).tolist() == [0, 1, 2]
    assert best_of(np.array([1.0, 1.0 + 1e-9]), None, np.array([1.0, 2.0])) == 1  # a real gap


def test_an_objective_constant_but_for_rounding_does_not_rank():
    """System throughput of two models on their own processors is 2/1.08 for every combination;
    computed per combination it differs in the last bits. Scaled by that spread, the rounding
    error outweighed accuracy; now the objective counts as not varying, as the docs say."""
    import workbench as wb

    p = wb.load_profile("xperia-c5")
    rows = {"uc1": [c.id for c in p.configs if c.task == "uc1" and c.processor == "CPU"],
            "uc2": [c.id for c in p.configs if c.task == "uc2" and c.processor == "GPU"]}
    prob = wb.DiscreteProblem(p, "max STP; max A", tasks=["uc1", "uc2"], rows=rows)
    stp = prob.feasible.F[:, 0]
    assert stp.min() != stp.max() and np.isclose(stp.min(), stp.max(), rtol=1e-14)
    with_stp, without = wb.rass(prob), wb.rass(prob.variant(slo="max A"))
    assert with_stp.d0.labels == without.d0.labels
