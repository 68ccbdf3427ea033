"""The toy model of FittedModel (tests/models/test_fitted_model.py) gets bootstrap_effects from
the fit vocabulary: the closed form on a balanced design needs nothing else; a design that
needs refits is refused until the model implements refit (``_refit_to``), and then works."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from test_fitted_model import OneWay

import irmodels as irm


def _scores(drop: tuple[int, ...] = ()) -> pd.DataFrame:
    rng = np.random.default_rng(26)
    d = pd.MultiIndex.from_product([[f"t{i}" for i in range(12)], ["base", "a", "b", "c"]],
                                   names=["topic", "system"]).to_frame(index=False)
    effect = d["system"].map({"base": 0.0, "a": 0.01, "b": 0.06, "c": 0.08}).to_numpy()
    d["score"] = 0.3 + effect + rng.normal(0, 0.05, len(d))
    return d.drop(index=list(drop)).reset_index(drop=True)


class RefittableOneWay(OneWay):
    def _refit_to(self, data: pd.DataFrame) -> RefittableOneWay:
        return RefittableOneWay(data)


def _boot(fit, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)  # irm.anova: unbalanced
        if isinstance(fit, pd.DataFrame):
            fit = irm.anova("score ~ system", fit)
        return irm.studies.bootstrap_effects(fit, n_resamples=60, seed=8, **kw)


def test_toy_model_gets_the_closed_form_bootstrap():
    d = _scores()
    toy, ref = _boot(OneWay(d)), _boot(d)
    assert toy.kind == "residual"
    np.testing.assert_array_equal(toy.replicates.to_numpy(), ref.replicates.to_numpy())
    pd.testing.assert_frame_equal(toy.effects, ref.effects, rtol=1e-12)


def test_toy_model_without_refit_is_refused_where_refits_are_needed():
    toy = OneWay(_scores(drop=(0, 5)))
    with pytest.raises(irm.DesignError, match=r"OneWay does not implement refit\(\)"):
        _boot(toy)
    with pytest.raises(irm.DesignError, match=r"OneWay does not implement refit\(\)"):
        toy.refit(toy.data["score"].to_numpy())


def test_toy_model_with_refit_gets_the_refit_bootstrap():
    d = _scores(drop=(0, 5))
    toy = _boot(RefittableOneWay(d))
    ref = _boot(d)  # one-way LS means are the level means
    np.testing.assert_allclose(toy.replicates.to_numpy(), ref.replicates.to_numpy(),
                               rtol=1e-12, atol=1e-14)
    balanced = _boot(RefittableOneWay(_scores()), _refit=True)
    np.testing.assert_allclose(balanced.replicates.to_numpy(),
                               _boot(OneWay(_scores())).replicates.to_numpy(),
                               rtol=1e-12, atol=1e-14)


def test_bootstrap_refuses_link_and_slope_models():
    d = _scores()
    d["rel"] = np.random.default_rng(1).binomial(10, 0.4, len(d))
    d["x"] = np.tile(np.arange(4.0), 12)
    glm = irm.anova("rel ~ system + topic", d, family="binomial", trials=10)
    with pytest.raises(irm.DesignError, match=r"a link function \(logit\)"):
        irm.studies.bootstrap_effects(glm, n_resamples=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)
        slopes = irm.mixed("score ~ system + (1 + x | topic)", d)
    with pytest.raises(irm.DesignError, match="random slopes"):
        irm.studies.bootstrap_effects(slopes, n_resamples=10)
