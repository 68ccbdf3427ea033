"""Coverage is ``level=`` (issue 26, house rule): GStudy.dstudy / topics_needed / plot and
irm.design.sigma_upper took ``alpha=`` (one minus the coverage). The old spelling still works
for one release with a FutureWarning naming ``level``; both spellings give the same numbers,
bit for bit, and the default is the former ``alpha=0.05`` exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.stats.gtheory import alpha_of_level

W = pd.DataFrame({"a": [.2, .4, .5, .3, .6, .1], "b": [.3, .5, .7, .3, .8, .2],
                  "c": [.1, .2, .5, .1, .4, .3], "d": [.4, .4, .8, .5, .7, .6]})
PAIRS = [(0.05, 0.95), (0.1, 0.9), (0.2, 0.8), (0.01, 0.99), (0.025, 0.975), (0.3, 0.7)]


@pytest.fixture(scope="module")
def g():
    return irm.gstudy(irm.from_wide(W))


def test_alpha_of_level_gives_the_written_alpha():
    for alpha, level in PAIRS:
        assert alpha_of_level(level) == alpha
    assert 1 - 0.95 != 0.05  # why the rounding: the float difference is not the alpha
    for d in range(1, 5):  # every alpha of up to 4 decimals comes back through its level
        a = np.arange(1, 10**d) / 10**d
        assert all(alpha_of_level(1 - x) == x for x in a)
    a = np.arange(100, 10**6) / 10**6  # and of 6 decimals from 1e-4 up
    assert all(alpha_of_level(1 - x) == x for x in a[::7])
    assert alpha_of_level(1 - 1e-6) != 1e-6  # below: 1 - alpha keeps too few of its digits


@pytest.mark.parametrize(("alpha", "level"), PAIRS)
@pytest.mark.parametrize("sided", ["two", "lower", "upper"])
def test_dstudy_and_topics_needed_old_and_new_spellings_agree(g, alpha, level, sided):
    new = g.dstudy([3, 10, 50], level=level, sided=sided)
    with pytest.warns(FutureWarning, match=r"GStudy.dstudy\(alpha=...\) is deprecated; use "
                                           r"level=..."):
        old = g.dstudy([3, 10, 50], alpha=alpha, sided=sided)
    pd.testing.assert_frame_equal(new, old, rtol=0, atol=0)
    assert new["Erho2_lower"].notna().all()
    got = g.topics_needed(0.9, level=level, sided=sided)
    with pytest.warns(FutureWarning, match="use level="):
        was = g.topics_needed(0.9, alpha=alpha, sided=sided)
    pd.testing.assert_series_equal(got, was)


def test_defaults_are_the_former_alpha_005(g):
    with pytest.warns(FutureWarning):
        old = g.dstudy([5, 20], alpha=0.05)
    pd.testing.assert_frame_equal(g.dstudy([5, 20]), old, rtol=0, atol=0)
    point = g.topics_needed(0.95)  # no level: the point answer only
    assert isinstance(point, int) and point == g.topics_needed(0.95, level=0.95)["topics"]
    with pytest.warns(FutureWarning):
        assert irm.design.sigma_upper(0.1, 10) == irm.design.sigma_upper(0.1, 10, alpha=0.05)


@pytest.mark.parametrize(("alpha", "level"), PAIRS)
def test_sigma_upper_old_and_new_spellings_agree(alpha, level):
    with pytest.warns(FutureWarning, match=r"irm.design.sigma_upper\(alpha=...\) is deprecated"):
        old = irm.design.sigma_upper(0.13, 17, alpha=alpha)
    assert irm.design.sigma_upper(0.13, 17, level=level) == old


def test_plot_old_and_new_spellings_agree(g):
    new = g.plot([1, 5, 10], level=0.8)
    with pytest.warns(FutureWarning, match=r"GStudy.plot\(alpha=...\)"):
        old = g.plot([1, 5, 10], alpha=0.2)
    bands = [np.asarray(c.get_paths()[0].vertices) for c in new.axes[0].collections]
    assert len(bands) == 2
    for a, b in zip(bands, [np.asarray(c.get_paths()[0].vertices)
                            for c in old.axes[0].collections]):
        np.testing.assert_array_equal(a, b)
    assert not g.plot([1, 5, 10], level=None).axes[0].collections  # no bands


def test_both_spellings_or_bad_values_are_refused(g):
    with pytest.raises(irm.ArgumentError, match="got both alpha= and level="):
        g.dstudy(level=0.9, alpha=0.1)
    with pytest.raises(irm.ArgumentError, match="got both alpha= and level="):
        irm.design.sigma_upper(0.1, 10, level=0.9, alpha=0.1)
    with pytest.raises(irm.ArgumentError, match="level must be"):
        irm.design.sigma_upper(0.1, 10, level=1.0)
    with pytest.raises(irm.ArgumentError, match="level must be"):
        g.plot(level=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'levle'"):
        g.dstudy(levle=0.9)
