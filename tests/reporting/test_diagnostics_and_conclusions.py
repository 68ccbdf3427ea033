"""Residual diagnostics (checked against their textbook formulas) and the Conclusions paragraph."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import irmodels as irm
from irmodels.errors import DesignError
from irmodels.inference.diagnostics import residual_diagnostics


@pytest.fixture(scope="module")
def adhoc8():
    return irm.datasets.load("adhoc8", "AP")


@pytest.fixture(scope="module")
def fit(adhoc8):
    return irm.anova("MD1", adhoc8)


def test_tests_match_their_formulas(fit):
    d = residual_diagnostics(fit)
    r, f = fit.residuals(), fit.fitted()
    n = r.size
    # Jarque-Bera: n/6 (S^2 + (K - 3)^2 / 4) with the biased moments
    s, k = stats.skew(r), stats.kurtosis(r)
    assert d.tests.loc["Jarque-Bera", "statistic"] == pytest.approx(n / 6 * (s**2 + k**2 / 4), rel=1e-10)
    # Breusch-Pagan (Koenker's studentized form): n R^2 of e^2 regressed on the fitted values
    e2 = r**2
    r2 = np.corrcoef(e2, f)[0, 1] ** 2
    assert d.tests.loc["Breusch-Pagan", "statistic"] == pytest.approx(n * r2, rel=1e-8)
    assert d.tests.loc["Breusch-Pagan", "p"] == pytest.approx(stats.chi2.sf(n * r2, 1), rel=1e-6)
    assert d.tests.loc["Shapiro-Wilk", "statistic"] == pytest.approx(stats.shapiro(r).statistic)
    # per-topic residual SD
    by_topic = pd.Series(r).groupby(fit.data["topic"].to_numpy()).std()
    np.testing.assert_allclose(d.topic_sd.sort_index().to_numpy(), by_topic.sort_index().to_numpy())
    assert d.interaction_in_residual
    assert "not normal" in d.text() and "spread changes" in d.text()


def test_normal_residuals_are_called_normal_and_saturated_fits_refused():
    rng = np.random.default_rng(3)
    topic = rng.normal(0, 1, (40, 1))
    w = pd.DataFrame(topic + np.arange(6) * 0.1 + rng.normal(0, 0.3, (40, 6)),
                     columns=[f"s{i}" for i in range(6)])
    d = residual_diagnostics(irm.anova("MD1", irm.from_wide(w)))
    assert d.tests.loc["Shapiro-Wilk", "p"] > 0.05
    assert "compatible with a normal distribution" in d.text()
    fig = d.plot()
    assert [ax.get_title() for ax in fig.axes] == [
        "Normal QQ plot", "Residuals vs fitted", "Per-topic residual spread"]

    class Saturated:  # the fit vocabulary's members that residual_diagnostics reads
        data = pd.DataFrame({"topic": list("abcdeabcde")})

        def residuals(self) -> np.ndarray:
            return np.zeros(10)

        def fitted(self) -> np.ndarray:
            return np.ones(10)

    with pytest.raises(DesignError, match="saturated"):
        residual_diagnostics(Saturated())


def test_conclusions_say_the_results_in_words(adhoc8, fit):
    rep = irm.build_report(adhoc8)
    text = rep.conclusions()
    share = fit.variance_components()["share"]
    assert f"topic {100 * share['topic']:.0f}%" in text
    assert f"system {100 * share['system']:.0f}%" in text
    assert f"{100 * share['Residual']:.0f}% is residual" in text
    tk = fit.tukey()
    # R (tests/reference/tukey.json): top group of 7 on TREC-8 AP
    assert f"{len(tk.top_group) - 1} of the {tk.k - 1} other systems are not significantly" in text
    assert "6 of the 128 other systems" in text
    g = irm.gstudy(fit)
    er = float(g.dstudy([50]).iloc[0]["Erho2"])
    assert f"E\u03c1\u00b2 = {er:.3f}" in text
    assert "Conclusions" in rep.to_html() and text.split(".")[0] in rep.to_markdown()
