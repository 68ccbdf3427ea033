"""Paired t power and topic-set size against R (tests/reference/power.R -> power.json)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DesignError

P = irm.power
ALT = {"two.sided": "two-sided", "one.sided": "greater"}


@pytest.fixture(scope="module")
def ref(reference_dir):
    return json.loads((reference_dir / "power.json").read_text())


@pytest.fixture(scope="module")
def adhoc8(shared_data):
    return irm.from_wide(pd.read_csv(shared_data / "ir-scores" / "adhoc8_ap.csv"))


def test_power_against_r(ref):
    for row in ref["power"]:
        got = P.paired_t(n=row["n"], delta=row["delta"], sigma=row["sd"], alpha=row["alpha"],
                         alternative=ALT[row["alternative"]]).power
        assert got == pytest.approx(row["power"], abs=1e-10), row


@pytest.mark.parametrize("what,col", [("n", "n"), ("delta", "delta"), ("sd", "sigma")])
def test_solve_against_r(ref, what, col):
    for row in ref[what]:
        kw = {"n": row.get("n"), "delta": row.get("delta"), "sigma": row.get("sd"),
              "power": row["power"]}
        kw[col] = None
        r = P.paired_t(**kw, alpha=row["alpha"], alternative=ALT[row["alternative"]])
        assert r.solved_for == col
        assert getattr(r, col) == pytest.approx(row[what], abs=1e-6), row
        if col == "n":
            assert r.n_topics == math.ceil(row["n"])


def test_less_mirrors_greater():
    g = P.paired_t(n=30, delta=0.04, sigma=0.1, alternative="greater").power
    l_ = P.paired_t(n=30, delta=-0.04, sigma=0.1, alternative="less").power
    assert g == pytest.approx(l_, abs=1e-14)
    d = P.paired_t(n=30, sigma=0.1, power=0.8, alternative="less").delta
    assert d == pytest.approx(-P.paired_t(n=30, sigma=0.1, power=0.8, alternative="greater").delta)


def test_normal_method_closed_form():
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    r = P.paired_t(delta=0.05, sigma=0.1, power=0.8, method="normal")
    assert r.n == pytest.approx((z * 0.1 / 0.05) ** 2, rel=1e-14)
    assert r.n_topics == 32
    p = P.paired_t(n=r.n, delta=0.05, sigma=0.1, method="normal").power
    assert p == pytest.approx(0.8, abs=1e-12)
    # the exact test needs a few more topics than the large-sample answer
    assert P.paired_t(delta=0.05, sigma=0.1, power=0.8).n > r.n


@settings(max_examples=40, deadline=None)
@given(
    n=st.floats(3, 500), delta=st.floats(0.005, 0.3), sigma=st.floats(0.02, 0.4),
    alt=st.sampled_from(["two-sided", "greater"]), method=st.sampled_from(["exact", "normal"]),
)
def test_round_trip(n, delta, sigma, alt, method):
    p = P.paired_t(n=n, delta=delta, sigma=sigma, alternative=alt, method=method).power
    if not 0.06 < p < 0.999:
        return
    kw = dict(alternative=alt, method=method)
    assert P.paired_t(delta=delta, sigma=sigma, power=p, **kw).n == pytest.approx(n, rel=1e-6)
    assert P.paired_t(n=n, sigma=sigma, power=p, **kw).delta == pytest.approx(delta, rel=1e-6)
    assert P.paired_t(n=n, delta=delta, power=p, **kw).sigma == pytest.approx(sigma, rel=1e-6)
    # power grows with n
    assert P.paired_t(n=n + 5, delta=delta, sigma=sigma, **kw).power >= p


def test_errors():
    with pytest.raises(DesignError, match="exactly one"):
        P.paired_t(n=10, delta=0.1, sigma=0.1, power=0.8)
    with pytest.raises(DesignError, match="exactly one"):
        P.paired_t(n=10)
    with pytest.raises(DesignError, match="n must exceed 1"):
        P.paired_t(n=1, delta=0.1, sigma=0.1)
    with pytest.raises(DesignError, match="sigma must be positive"):
        P.paired_t(n=10, delta=0.1, sigma=0)
    with pytest.raises(DesignError, match="not above"):
        P.paired_t(delta=0.1, sigma=0.1, power=0.04)
    with pytest.raises(ArgumentError, match="alternative"):
        P.paired_t(n=10, delta=0.1, sigma=0.1, alternative="two.sided")
    with pytest.raises(DesignError, match="delta is 0"):
        P.paired_t(delta=0, sigma=0.1, power=0.8)


def test_anova_power_against_r(ref):
    for row in ref["anova"]:
        got = P.oneway_power(row["m"], row["n"], row["minD"], row["sigma"], alpha=row["alpha"])
        assert got == pytest.approx(row["power"], abs=1e-9), row


def test_anova_topics_is_smallest():
    n = P.oneway_topics(10, 0.1, 0.2, power=0.8)
    assert P.oneway_power(10, n, 0.1, 0.2) >= 0.8 > P.oneway_power(10, n - 1, 0.1, 0.2)
    with pytest.raises(DesignError, match="do not reach"):
        P.oneway_topics(10, 1e-5, 0.2, max_topics=1000)


def test_ci_width():
    # E[s] = c4 sigma: check c4 against a direct numerical expectation of the chi distribution
    n, sigma = 20, 0.1
    es = stats.chi(n - 1).mean() / math.sqrt(n - 1) * sigma
    w = P.ci_half_width(n, sigma)
    assert w == pytest.approx(stats.t.ppf(0.975, n - 1) * es / math.sqrt(n), rel=1e-12)
    k = P.ci_width_topics(0.02, 0.1)
    assert P.ci_half_width(k, 0.1) <= 0.02 < P.ci_half_width(k - 1, 0.1)
    # close to the normal approximation (z sigma / W)^2 = 96.04
    assert 96 <= k <= 100


def test_pair_sd_matches_direct(adhoc8):
    pairs = P.pair_sd(adhoc8)
    wide = irm.to_wide(adhoc8)
    assert len(pairs) == 129 * 128 // 2
    for k in [0, 17, 4000, 8255]:
        a, b = pairs.loc[k, "a"], pairs.loc[k, "b"]
        d = wide[a] - wide[b]
        assert pairs.loc[k, "sd"] == pytest.approx(d.std(ddof=1), rel=1e-9)
        assert pairs.loc[k, "diff"] == pytest.approx(d.mean(), rel=1e-9, abs=1e-15)


def test_topics_table(adhoc8):
    t = P.topics_table(adhoc8, deltas=[0.02, 0.05], powers=[0.8, 0.9], quantiles=(0.5, 0.95))
    sd = P.pair_sd(adhoc8)["sd"]
    assert t.sigmas.loc[0.5, "sigma"] == pytest.approx(sd.median())
    assert t.sigmas.loc[0.95, "sigma"] == pytest.approx(np.quantile(sd, 0.95))
    assert list(t.required.columns) == ["quantile", "sigma", "delta", "power", "n", "n_topics"]
    assert list(t.detectable.columns) == ["quantile", "sigma", "power", "n", "delta"]
    assert len(t.required) == 8 and len(t.detectable) == 4
    for row in t.required.itertuples():
        r = P.paired_t(delta=row.delta, sigma=row.sigma, power=row.power)
        assert row.n == pytest.approx(r.n) and row.n_topics == r.n_topics
    for row in t.detectable.itertuples():
        assert row.n == 50
        assert P.paired_t(n=50, delta=row.delta, sigma=row.sigma).power == pytest.approx(row.power)
    assert "Topics required" in t.summary()


def test_simulation_agrees_with_exact_formula(adhoc8, rng):
    """Rejection rates on resampled real topics match the noncentral-t power within 3 SE.

    The formula assumes normal differences; real AP differences are often heavy-tailed, which
    lowers the power at 50 topics (documented in docs/power.md). The check uses a pair of
    TREC-8 runs with a median SD whose differences are close to normal (smallest
    |skewness| + |excess kurtosis| among pairs between the 40th and 60th SD percentiles).
    """
    from scipy import stats as st_

    pairs = P.pair_sd(adhoc8)
    w = irm.to_wide(adhoc8).to_numpy()
    i, j = np.triu_indices(w.shape[1], 1)
    d = w[:, i] - w[:, j]
    shape = np.abs(st_.skew(d, axis=0)) + np.abs(st_.kurtosis(d, axis=0))
    lo, hi = pairs["sd"].quantile([0.4, 0.6])
    shape[~pairs["sd"].between(lo, hi).to_numpy()] = np.inf
    k = int(np.argmin(shape))
    a, b = pairs.loc[k, "a"], pairs.loc[k, "b"]
    sim = P.simulate_paired_t(adhoc8, a, b, 50, deltas=[0.0, 0.02, 0.04, 0.06], n_trials=4000,
                              rng=rng)
    assert list(sim.columns) == ["delta", "n", "sigma", "trials", "rejections", "rate", "se",
                                 "power_exact", "power_normal"]
    for row in sim.itertuples():
        se = math.sqrt(row.power_exact * (1 - row.power_exact) / row.trials)
        assert abs(row.rate - row.power_exact) <= 3 * se, row
    assert sim["power_exact"].iloc[0] == pytest.approx(0.05, abs=1e-12)


def test_simulation_errors(adhoc8):
    with pytest.raises(DataFormatError, match="unknown system"):
        P.simulate_paired_t(adhoc8, "nope", "x", 10)


@pytest.mark.r
@pytest.mark.skipif(__import__("shutil").which("Rscript") is None, reason="Rscript not installed")
def test_live_against_r(rng):
    """Random designs off the fixture grid, solved by R's power.t.test live."""
    import subprocess

    n = [int(v) for v in rng.integers(3, 300, 6)]
    delta = [float(v) for v in rng.uniform(0.005, 0.2, 6)]
    sd = [float(v) for v in rng.uniform(0.05, 0.3, 6)]
    expr = "; ".join(
        f"cat(sprintf('%.17g', c(power.t.test(n={a}, delta={b!r}, sd={c!r}, type='paired', "
        f"strict=TRUE)$power, power.t.test(n={a}, sd={c!r}, power=0.8, type='paired', "
        "strict=TRUE, tol=1e-12)$delta)), '\\n')"
        for a, b, c in zip(n, delta, sd)
    )
    out = subprocess.run(["Rscript", "-e", expr], capture_output=True, text=True, check=True)
    lines = [list(map(float, line.split())) for line in out.stdout.strip().splitlines()]
    for (p_r, d_r), a, b, c in zip(lines, n, delta, sd):
        assert P.paired_t(n=int(a), delta=b, sigma=c).power == pytest.approx(p_r, abs=1e-9)
        assert P.paired_t(n=int(a), sigma=c, power=0.8).delta == pytest.approx(d_r, abs=1e-6)


def test_pair_sd_of_a_constant_shift_is_zero_and_topics_table_says_why():
    """b = a + 0.1 on every topic: the differences vary only in the last bits. Through the
    covariances the SD came out near 5e-9 and topics_table failed with a message about power;
    the SD of the differences is 0 and the table refuses, naming the pair."""
    rng = np.random.default_rng(7)
    a = rng.random(30)
    wide = pd.DataFrame({"a": a, "b": a + 0.1, "c": rng.random(30)})
    sd = irm.power.pair_sd(irm.from_wide(wide)).set_index(["a", "b"])["sd"]
    assert sd.loc[("a", "b")] == 0.0
    assert sd.loc[("a", "c")] == pytest.approx(np.std(a - wide["c"], ddof=1), rel=1e-14)
    with pytest.raises(irm.DesignError, match="differ by the same amount on every topic, e.g. a and b"):
        irm.power.topics_table(irm.from_wide(wide), quantiles=[0.0, 0.5])


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, (8, 4), elements=st.floats(0, 1, allow_nan=False)))
# subnormal scores: the SD is 2.2e-311 / sqrt(8) (np.std of the raw values loses it)
@example(np.array([[2.22507386e-311, 0.0, 0.0, 0.0]] + [[0.0] * 4] * 7))
def test_pair_sd_equals_the_sd_of_the_differences(values):
    got = irm.power.pair_sd(irm.from_wide(pd.DataFrame(values, columns=list("pqrs"))))
    top = max(float(np.max(np.abs(values))), 0.0)
    scale = 1000 * np.finfo(float).eps * top
    for row in got.itertuples():
        d = values[:, "pqrs".index(row.a)] - values[:, "pqrs".index(row.b)]
        # the reference SD on the differences divided by the largest score (scale-equivariant;
        # squares of subnormal scores underflow)
        want = float(np.std(d / top, ddof=1)) * top if top > 0 else 0.0
        assert row.sd == (0.0 if want <= scale else pytest.approx(want, rel=1e-12, abs=1e-15))
