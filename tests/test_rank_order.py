"""RASS picks its designs without sorting the feasible space: the order it reads must be the one
a full three-key sort gives (optimality descending, then lower W, lower MF, lower position)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.moo.optimality import best_of, rank_order

# Few distinct values, so that ties (the case the shortcut must get right) are common; NaN (no
# optimality) goes last in both.
values = st.lists(st.tuples(st.sampled_from([0.5, 1.0, 2.0, np.inf, np.nan]),
                            st.sampled_from([1.0, 2.0, np.inf]),
                            st.sampled_from([3.0, 4.0, np.inf]), st.booleans()),
                  min_size=1, max_size=40)


def _lexsort(opt, W, MF):
    return np.lexsort((np.arange(len(opt)), MF, W, -opt))


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
