"""bootstrap_effects through the fit vocabulary (issue 26): the replicates are refitted by
``fit.refit`` and the kind of bootstrap read from the spec, not from the fit's class.

The replicates must be bit-identical to those of the code that chose ``irm.anova`` or
``irm.mixed`` by the fit's class: ``bootstrap_refit_expected.npz`` holds the replicates that
code gave (irmodels at commit 7670ba1, OPENBLAS_NUM_THREADS=1, the newest numpy and scipy) on the
five cases below. They were bit-identical there; the declared minimum versions (``make test-min``)
round the unbalanced least squares and the ML optimiser differently in the last digits (up to
5e-11 relative), so the check is 1e-9 relative: a refit through another model, data or seed moves
replicates by orders of magnitude more.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import irmodels as irm

EXPECTED = Path(__file__).with_name("bootstrap_refit_expected.npz")
RUNS = ["run1", "run2", "run3", "run4"]


@pytest.fixture(scope="module")
def adhoc8():
    return irm.datasets.load("adhoc8", "AP")


def _sub(data, systems, drop=()):
    s = data[data["system"].isin(systems)].copy()
    s["system"] = s["system"].cat.remove_unused_categories()
    return s.reset_index(drop=True).drop(index=list(drop))


CASES = {
    "anova_closed": (lambda d: irm.anova("MD1", _sub(d, RUNS)), dict(n_resamples=60, seed=2)),
    "anova_unbalanced": (lambda d: irm.anova("MD1", _sub(d, RUNS, [0, 4, 9])),
                         dict(n_resamples=60, seed=3)),
    "anova_forced_refit": (lambda d: irm.anova("MD1", _sub(d, RUNS[:3])),
                           dict(n_resamples=55, seed=4, _refit=True)),
    "mixed_balanced": (lambda d: irm.mixed("score ~ system + (1|topic)", _sub(d, RUNS)),
                       dict(n_resamples=60, seed=5)),
    "mixed_unbalanced_ml": (lambda d: irm.mixed("score ~ system + (1|topic)",
                                                _sub(d, RUNS[:3], [1, 5]), method="ML"),
                            dict(n_resamples=52, seed=6)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_replicates_are_those_of_the_class_dispatch(adhoc8, case):
    make, kw = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", irm.IRModelsWarning)  # unbalanced designs say so
        boot = irm.studies.bootstrap_effects(make(adhoc8), **kw)
    expected = np.load(EXPECTED)[case]
    np.testing.assert_allclose(boot.replicates.to_numpy(), expected, rtol=1e-9, atol=0)
    assert boot.kind == ("parametric" if case.startswith("mixed") else "residual")
