"""irm.studies.bootstrap_anova: topic bootstrap of MD1's studentized range."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DesignError
from irmodels.inference.studentized import qtukey
from irmodels.studies.anova_bootstrap import PAIR_COLUMNS


def _frame(X: np.ndarray, prefix: str = "t") -> pd.DataFrame:
    w = pd.DataFrame(X, columns=[f"s{i:02d}" for i in range(X.shape[1])],
                     index=[f"{prefix}{k:03d}" for k in range(X.shape[0])])
    return irm.from_wide(w)


def test_tukey_columns_are_md1_tukey() -> None:
    ap = irm.datasets.load("adhoc3", "AP")
    r = irm.studies.bootstrap_anova(ap, n_resamples=200, seed=2)
    fit = irm.anova("MD1", ap)
    tk = fit.tukey()
    assert r.ms_error == pytest.approx(fit.ms_error, rel=1e-10)
    assert r.tukey_critical_value == pytest.approx(tk.critical_value, rel=1e-12)
    assert list(r.pairs["a"].astype(str)) == list(tk.pairs["a"].astype(str))
    assert list(r.pairs["b"].astype(str)) == list(tk.pairs["b"].astype(str))
    assert np.allclose(r.pairs["diff"], tk.pairs["diff"], rtol=1e-10, atol=1e-14)
    assert np.allclose(r.pairs["q"], tk.pairs["q"], rtol=1e-10)
    assert np.allclose(r.pairs["tukey_p_adj"], tk.pairs["p_adj"], rtol=1e-10, atol=1e-14)
    assert (r.pairs["tukey_reject"].to_numpy() == tk.pairs["reject"].to_numpy()).all()
    a = r.agreement
    assert a["both"] + a["bootstrap_only"] + a["tukey_only"] + a["neither"] == 780
    assert a["agree"] == a["both"] + a["neither"]
    assert list(r.pairs.columns) == list(PAIR_COLUMNS)


def test_statistics_by_refitting_md1_on_each_resample() -> None:
    rng = np.random.default_rng(3)
    T, S, B, seed = 9, 4, 12, 5
    X = rng.beta(2, 5, (T, 1)) + np.linspace(0, 0.1, S) + rng.normal(0, 0.05, (T, S))
    r = irm.studies.bootstrap_anova(_frame(X), n_resamples=B, seed=seed)
    m = X.mean(axis=0)
    idx = np.random.default_rng(seed).integers(0, T, size=(B, T))
    for b in range(B):
        # repeated topics are separate rows of the resampled design
        fit = irm.anova("MD1", _frame(X[idx[b]], prefix="r"))
        d = fit.marginal_means("system").to_numpy() - m
        q = (d.max() - d.min()) / math.sqrt(fit.ms_error / T)
        assert r.statistics[b] == pytest.approx(q, rel=1e-9)
    srt = np.sort(r.statistics)
    assert r.critical_value == srt[math.ceil(0.95 * B) - 1]
    p = [(r.statistics >= q * (1 - 1e-12)).mean() for q in r.pairs["q"]]
    assert np.allclose(r.pairs["p_adj"], p)
    assert (r.pairs["reject"] == (r.pairs["q"] > r.critical_value)).all()


def test_critical_value_converges_to_tukey_on_normal_data() -> None:
    rng = np.random.default_rng(5)
    T, S = 400, 8
    X = (rng.normal(size=(T, 1)) * 0.5 + np.linspace(0, 0.3, S)
         + rng.normal(size=(T, S)) * 0.2)
    r = irm.studies.bootstrap_anova(_frame(X), n_resamples=3000, seed=3)
    df = (T - 1) * (S - 1)
    # Monte Carlo SD of a 95% quantile of 3000 draws: about 0.03 here
    assert r.critical_value == pytest.approx(r.tukey_critical_value, abs=0.15)
    for p in (0.5, 0.9):
        assert np.quantile(r.statistics, p) == pytest.approx(qtukey(p, S, df), abs=0.1)
    a = r.agreement
    assert a["agree"] >= a["n_pairs"] - 2


def test_seeded_and_user_columns() -> None:
    ap = irm.datasets.load("adhoc3", "AP")
    a = irm.studies.bootstrap_anova(ap, n_resamples=100, seed=4)
    b = irm.studies.bootstrap_anova(ap, n_resamples=100, seed=4)
    c = irm.studies.bootstrap_anova(ap, n_resamples=100, seed=5)
    assert np.array_equal(a.statistics, b.statistics)
    assert not np.array_equal(a.statistics, c.statistics)
    raw = ap.rename(columns={"topic": "qid", "system": "run", "score": "map"})
    u = irm.studies.bootstrap_anova(raw, n_resamples=100, seed=4, topic="qid", system="run",
                                    score="map")
    assert np.array_equal(u.statistics, a.statistics)


def test_refusals() -> None:
    ap = irm.datasets.load("adhoc3", "AP")
    with pytest.raises((DesignError, DataFormatError)):
        irm.studies.bootstrap_anova(ap.iloc[1:], n_resamples=50)
    X = np.add.outer(np.arange(5.0), np.arange(3.0))  # additive: no residual
    with pytest.raises(DesignError, match="no residual variation"):
        irm.studies.bootstrap_anova(_frame(X), n_resamples=50)
    with pytest.raises(ArgumentError, match="n_resamples must be a whole number >= 2; got 1"):
        irm.studies.bootstrap_anova(ap, n_resamples=1)
