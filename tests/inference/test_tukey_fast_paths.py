"""The fast paths of ptukey/qtukey/tukey_hsd equal their slow references exactly.

- ptukey with many distinct df values (per-pair Satterthwaite df) shares one wprob call per k
  between the groups: equal to evaluating each value alone;
- ptukey on more than 8,192 values runs block by block: equal to one unblocked pass;
- tukey_hsd's cached critical value equals qtukey; its pair labels equal the level names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.stats import studentized


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(1, 40),
    k=st.sampled_from([2, 3, 7, 40]),
    spread=st.sampled_from([1e-7, 1.0, 500.0]),
)
def test_ptukey_many_df_equals_one_value_at_a_time(seed: int, n: int, k: int,
                                                   spread: float) -> None:
    rng = np.random.default_rng(seed)
    q = np.abs(rng.normal(3.0, 2.0, n))
    df = np.abs(40.0 + rng.normal(0.0, spread, n)) + 2.0
    together = irm.ptukey(q, k, df, lower_tail=False)
    alone = np.array([irm.ptukey(q[i], k, df[i], lower_tail=False) for i in range(n)])
    assert np.array_equal(together, alone)
    p = rng.uniform(0.5, 0.99, n)
    assert np.array_equal(irm.qtukey(p, k, df),
                          np.array([irm.qtukey(p[i], k, df[i]) for i in range(n)]))


def test_ptukey_blocks_equal_one_pass(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    q = np.abs(rng.normal(3.0, 2.0, 3_000))
    one_pass = irm.ptukey(q, 12, 30.0, lower_tail=False)  # 3,000 < 8,192: not blocked
    monkeypatch.setattr(studentized, "_Q_BLOCK", 1_000)
    assert np.array_equal(irm.ptukey(q, 12, 30.0, lower_tail=False), one_pass)  # 3 blocks


def test_tukey_cached_critical_value_and_labels() -> None:
    means = pd.Series([0.31, 0.30, 0.25, 0.20], index=["d", "c", "b", "a"])
    for _ in range(2):  # the second call reads the cache
        hsd = irm.tukey_hsd(means, df_error=57, ms_error=0.01, n=20, alpha=0.05)
        assert hsd.critical_value == float(irm.qtukey(0.95, 4, 57))
    ia, ib = np.triu_indices(4, 1)
    assert hsd.pairs["a"].astype(str).tolist() == [means.index[i] for i in ia]
    assert hsd.pairs["b"].astype(str).tolist() == [means.index[i] for i in ib]
    assert list(hsd.pairs["a"].cat.categories) == ["d", "c", "b", "a"]
