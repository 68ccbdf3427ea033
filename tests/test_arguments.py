"""One validation, one error: every public function refuses a bad seed the same way
(``ArgumentError``, a ``ValueError``, from ``irmodels._validate``), whatever module it lives in."""

from __future__ import annotations

import warnings

import pytest

import irmodels as irm


@pytest.fixture(scope="module")
def inputs(shared_data):
    col = irm.collection.generate(preset="tiny", seed=0)
    import pandas as pd

    data = irm.from_wide(pd.read_csv(shared_data / "ir-scores" / "adhoc8_ap.csv"))
    small = irm.filter_systems(data, top_k=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.anova("MD1", small)
        mm = irm.mixed("score ~ system + (1|topic)", small)
    return col, small, fit, mm


CASES = {
    "collection.generate": lambda c, d, f, m, s: irm.collection.generate(preset="tiny", seed=s),
    "replicates.shards": lambda c, d, f, m, s: irm.replicates.assign_shards(c.docids, 2, seed=s),
    "replicates.shard_splits": lambda c, d, f, m, s: irm.replicates.shard_splits(c.docids, 2, 2,
                                                                                 seed=s),
    "replicates.document_samples": lambda c, d, f, m, s: irm.replicates.document_samples(
        c.runs, c.qrels, n_samples=2, seed=s),
    "studies.shard_study": lambda c, d, f, m, s: irm.studies.shards(c, n_shards=[2],
                                                                         n_splits=1, seed=s),
    "studies.topic_sets": lambda c, d, f, m, s: irm.studies.topic_sets(d, sizes=[5], n_samples=5,
                                                                       seed=s),
    "studies.bootstrap_effects": lambda c, d, f, m, s: irm.studies.bootstrap_effects(f, n_resamples=5,
                                                                                     seed=s),
    "studies.pooling_bias": lambda c, d, f, m, s: irm.studies.pooling_bias(
        c.runs, c.qrels, widths=[2], common_topics=[2], n_resamples=1, seed=s),
    "studies.document_samples.validate": lambda c, d, f, m, s:
        irm.studies.document_samples.validate(c.runs, c.qrels, n_samples=2, seed=s),
    "comparability": lambda c, d, f, m, s: irm.comparability(d, d, seed=s),
    "compare": lambda c, d, f, m, s: irm.compare(d, test="randomization", seed=s),
    "pairwise": lambda c, d, f, m, s: irm.pairwise(d, "randomization", seed=s),
    "MixedResult.confint": lambda c, d, f, m, s: m.confint(method="bootstrap", n_resamples=5, seed=s),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [-1, 1.5, "0"])
def test_bad_seed_is_one_error(inputs, name, seed):
    with pytest.raises(irm.ArgumentError, match=r"seed must be None or a whole number >= 0"):
        CASES[name](*inputs, seed)


# ------------------------------------------------ renamed parameters (issue 26): one release of shims

RENAMED = {
    "comparability(n_perm)": (lambda c, d, f, m, kw: irm.comparability(d, d, n_halvings=2, seed=1,
                                                                       **kw), "n_perm", 5),
    "bootstrap_effects(n_boot)": (lambda c, d, f, m, kw: irm.studies.bootstrap_effects(
        f, seed=1, **kw), "n_boot", 5),
    "MixedResult.confint(n_boot)": (lambda c, d, f, m, kw: m.confint(method="bootstrap", seed=1,
                                                                     **kw), "n_boot", 5),
}


def _same(a, b) -> bool:
    import pandas as pd

    if isinstance(a, pd.DataFrame):
        return a.equals(b)
    return a.to_frame().equals(b.to_frame())


@pytest.mark.parametrize("name", sorted(RENAMED))
def test_old_name_still_works_with_a_future_warning(inputs, name):
    call, old, value = RENAMED[name]
    new = call(*inputs, {"n_resamples": value})
    with pytest.warns(FutureWarning, match=rf"\({old}=\.\.\.\) is deprecated; use n_resamples="):
        again = call(*inputs, {old: value})
    assert _same(new, again)
    with pytest.raises(irm.ArgumentError, match=rf"got both {old}= and n_resamples="):
        call(*inputs, {old: value, "n_resamples": value + 1})
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_resampels'"):
        call(*inputs, {"n_resampels": value})
