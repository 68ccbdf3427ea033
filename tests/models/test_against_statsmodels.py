"""irmodels against statsmodels, the generic Python implementation a user would otherwise reach for.

- ANOVA: ``ols`` + ``anova_lm`` give the same sums of squares, df, F and p as ``irm.anova`` on a
  balanced MD1 (type I) and on an unbalanced design (types II and III with sum-to-zero contrasts).
- Mixed models: ``MixedLM`` with topic groups fits the random-topic model; its REML estimates of the
  fixed effects, their standard errors, the variance components and the restricted log-likelihood
  equal those of ``irm.mixed("score ~ system + (1|topic)")`` (both maximise the same REML criterion;
  the tolerances are those of two optimisers stopping near the same optimum).

What differs (docs/anova.md, docs/mixed.md): statsmodels evaluates formula strings with patsy and
builds a dense design, so its unbalanced ANOVA and its MixedLM are much slower (benchmarks/), and
MixedLM has no crossed random effects, no Satterthwaite degrees of freedom and no varIdent strata.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import irmodels as irm

smf = pytest.importorskip("statsmodels.formula.api")
from statsmodels.stats.anova import anova_lm  # noqa: E402


@pytest.fixture(scope="module")
def small(shared_data) -> pd.DataFrame:
    wide = pd.read_csv(shared_data / "ir-scores" / "adhoc8_ap.csv")
    data = irm.from_wide(wide)
    keep = list(data["system"].cat.categories[:12])
    return irm.frame(data[data["system"].isin(keep)].reset_index(drop=True))


def _plain(data: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"topic": data["topic"].astype(str).to_numpy(),
                         "system": data["system"].astype(str).to_numpy(),
                         "score": data["score"].to_numpy(float)})


def test_balanced_md1_equals_ols_anova_lm(small) -> None:
    fit = irm.anova("MD1", small)
    sm = anova_lm(smf.ols("score ~ C(topic) + C(system)", _plain(small)).fit(), typ=1)
    for ours, theirs in [("topic", "C(topic)"), ("system", "C(system)"), ("Residual", "Residual")]:
        assert fit.table.loc[ours, "SS"] == pytest.approx(sm.loc[theirs, "sum_sq"], rel=1e-10)
        assert fit.table.loc[ours, "df"] == sm.loc[theirs, "df"]
    for ours, theirs in [("topic", "C(topic)"), ("system", "C(system)")]:
        assert fit.table.loc[ours, "F"] == pytest.approx(sm.loc[theirs, "F"], rel=1e-10)
        assert fit.table.loc[ours, "p"] == pytest.approx(sm.loc[theirs, "PR(>F)"], rel=1e-8,
                                                         abs=1e-300)


@pytest.mark.parametrize("ss_type", [2, 3])
def test_unbalanced_equals_ols_anova_lm(small, ss_type: int) -> None:
    rng = np.random.default_rng(3)
    data = irm.frame(small.drop(index=rng.choice(len(small), 40, replace=False))
                     .reset_index(drop=True))
    with pytest.warns(irm.UnbalancedDesignWarning, match="40 empty cell"):
        fit = irm.anova("MD1", data, ss_type=ss_type)
    formula = "score ~ C(topic, Sum) + C(system, Sum)"
    sm = anova_lm(smf.ols(formula, _plain(data)).fit(), typ=ss_type)
    for ours, theirs in [("topic", "C(topic, Sum)"), ("system", "C(system, Sum)"),
                         ("Residual", "Residual")]:
        assert fit.table.loc[ours, "SS"] == pytest.approx(sm.loc[theirs, "sum_sq"], rel=1e-9)
        assert fit.table.loc[ours, "df"] == sm.loc[theirs, "df"]
    assert fit.table.loc["system", "F"] == pytest.approx(sm.loc["C(system, Sum)", "F"], rel=1e-9)


def test_random_topic_model_equals_mixedlm(small) -> None:
    ours = irm.mixed("score ~ system + (1|topic)", small)
    plain = _plain(small)
    md = smf.mixedlm("score ~ C(system)", plain, groups=plain["topic"])
    theirs = md.fit(reml=True)
    # fixed effects: treatment coding with the first system as reference in both; statsmodels
    # names them C(system)[T.run2] and sorts levels as strings, irmodels systemrun2 in natural order
    names = {f"C(system)[T.{s}]": f"system{s}" for s in plain["system"].unique()}
    names["Intercept"] = "(Intercept)"
    fe = theirs.fe_params.rename(index=names)
    se = theirs.bse_fe.rename(index=names)
    assert set(fe.index) == set(ours.fixed.index)
    np.testing.assert_allclose(ours.fixed["estimate"].to_numpy(), fe[ours.fixed.index].to_numpy(),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ours.fixed["se"].to_numpy(), se[ours.fixed.index].to_numpy(),
                               rtol=1e-4)
    vc = ours.variance_components()
    assert vc.loc["topic", "variance"] == pytest.approx(float(theirs.cov_re.iloc[0, 0]), rel=1e-4)
    assert vc.loc["Residual", "variance"] == pytest.approx(theirs.scale, rel=1e-6)
    assert ours.loglik == pytest.approx(theirs.llf, rel=1e-8)
