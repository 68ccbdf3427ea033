"""Functions that take a plain DataFrame (not through irm.frame) refuse NaN and infinite
scores, repeated rows and degenerate data with an irmodels error, never a silent number."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main
from irmodels.errors import DataFormatError, DataQualityWarning, DesignError

NAN_MSG = r"1 score\(s\) are missing \(NaN\), e\.g\. \(topic 2, system b\)\. Drop or impute"
INF_MSG = r"score column 'score' has 1 infinite value\(s\), the first (-)?inf \(row 4, topic 2, system b\)"


def _df() -> pd.DataFrame:
    """10 topics x systems a, b, c, a plain DataFrame (row 4 is topic 2, system b)."""
    rng = np.random.default_rng(0)
    return pd.DataFrame({"topic": [str(t) for t in range(1, 11) for _ in "abc"],
                         "system": [s for _ in range(10) for s in "abc"],
                         "score": rng.uniform(0.05, 0.95, 30)})


def _bad(value: float) -> pd.DataFrame:
    d = _df()
    d.loc[4, "score"] = value
    return d


BAD = [pytest.param(np.nan, NAN_MSG, id="nan"), pytest.param(np.inf, INF_MSG, id="inf"),
       pytest.param(-np.inf, INF_MSG, id="-inf")]


# ------------------------------------------------------------------------------ pairwise
@pytest.mark.parametrize("value, msg", BAD)
@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization"])
def test_pairwise_refuses_nan_inf(value, msg, test):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy warning on the way
        with pytest.raises(DataFormatError, match=msg):
            irm.pairwise(_bad(value), test, n_resamples=50)


def test_pairwise_nan_message_is_compares():
    """The same words as irm.compare (which goes through irm.frame)."""
    with pytest.raises(DataFormatError) as a:
        irm.pairwise(_bad(np.nan), "t")
    with pytest.raises(DataFormatError) as b:
        irm.compare(_bad(np.nan), test="t")
    common = "1 score(s) are missing (NaN), e.g. (topic 2, system b). Drop or impute them first"
    assert str(a.value).startswith(common) and str(b.value).startswith(common)


# --------------------------------------------------------------------------- variability
@pytest.mark.parametrize("value, msg", BAD)
@pytest.mark.parametrize("call", [
    lambda d: irm.variability.variability(d),
    lambda d: irm.variability.variability(d, transform=None),
    lambda d: irm.variability.tie_breaking(d),
    lambda d: irm.variability.compare(d, "a", "b", transform="z"),
    lambda d: irm.variability.error_rate(d, n_trials=3),
], ids=["variability", "variability-raw", "tie_breaking", "compare", "error_rate"])
def test_variability_refuses_nan_inf(value, msg, call):
    with pytest.raises(DataFormatError, match=msg):
        call(_bad(value))


@pytest.mark.parametrize("name, call", [
    ("variability", lambda d: irm.variability.variability(d)),
    ("tie_breaking", lambda d: irm.variability.tie_breaking(d)),
    ("compare", lambda d: irm.variability.compare(d, "a", "b")),
    ("error_rate", lambda d: irm.variability.error_rate(d, n_trials=3)),
])
def test_variability_duplicates_name_the_function(name, call):
    d = pd.concat([_df(), _df().iloc[[4]]], ignore_index=True)
    with pytest.raises(DesignError, match=rf"^irm\.variability\.{name} needs one score per "
                                          r"\(topic, system\); topic 2, system b has 2"):
        call(d)


def test_pairwise_duplicates_message_unchanged():
    d = pd.concat([_df(), _df().iloc[[4]]], ignore_index=True)
    with pytest.raises(DesignError, match=r"^pairwise tests need one score per \(topic, system\)"):
        irm.pairwise(d, "t")


# ------------------------------------------------------------------------ standardization
@pytest.mark.parametrize("value, msg", BAD)
@pytest.mark.parametrize("method", ["normal", "ecdf"])
def test_standardizer_fit_refuses_nan_inf(value, msg, method):
    with pytest.raises(DataFormatError, match=r"^Standardizer\.fit: " + msg):
        irm.Standardizer(method).fit(_bad(value))
    with pytest.raises(DataFormatError, match=r"^Standardizer\.fit: " + msg):
        irm.Standardizer(method).fit(_bad(value), reference=2)


@pytest.mark.parametrize("value, msg", BAD)
def test_standardizer_transform_refuses_nan_inf(value, msg):
    s = irm.Standardizer().fit(_df())
    with pytest.raises(DataFormatError, match=r"^Standardizer\.transform: " + msg):
        s.transform(_bad(value))
    with pytest.raises(DataFormatError, match=r"^Standardizer\.diagnostics: " + msg):
        s.diagnostics(_bad(value))


def test_standardizer_transform_unknown_topic_keeps_its_behaviour():
    s = irm.Standardizer().fit(_df())
    new = pd.DataFrame({"topic": ["1", "99"], "system": ["x", "x"], "score": [0.5, np.nan]})
    # a topic the fit never saw: refused as before (before the NaN is looked at) ...
    with pytest.raises(DataFormatError, match=r"1 topic key\(s\) have no factors, e\.g\. 99"):
        s.transform(new)
    # ... or dropped with unknown="drop": its NaN goes with it
    with pytest.warns(DataQualityWarning, match="dropped 1 row"):
        out = s.transform(new, unknown="drop")
    assert out["topic"].tolist() == ["1"] and np.isfinite(out["score"]).all()
    # a NaN on a known topic is refused even with unknown="drop"
    new.loc[1, "topic"] = "2"
    with pytest.raises(DataFormatError, match=r"Standardizer\.transform: 1 score\(s\) are missing"):
        s.transform(new, unknown="drop")


# -------------------------------------------------------------------- rank similarity
@pytest.mark.parametrize("value, msg", BAD)
@pytest.mark.parametrize("func", [irm.kendall_tau, irm.tau_ap, irm.rbo], ids=lambda f: f.__name__)
def test_rank_similarity_refuses_nan_inf_in_a_frame(value, msg, func):
    with pytest.raises(DataFormatError, match=r"^a: " + msg):
        func(_bad(value), _df())
    with pytest.raises(DataFormatError, match=r"^b: " + msg):
        func(_df(), _bad(value))


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_rank_similarity_refuses_inf_in_scores(value):
    good = pd.Series({"a": 0.3, "b": 0.2, "c": 0.1})
    with pytest.raises(DataFormatError, match=r"^b has infinite scores for \['b'\]"):
        irm.kendall_tau(good, pd.Series({"a": 0.3, "b": value, "c": 0.1}))
    with pytest.raises(DataFormatError, match=r"^a has infinite scores for \['c'\]"):
        irm.rbo({"a": 0.3, "b": 0.2, "c": value}, good)


# ------------------------------------------------------------------------ comparability
@pytest.mark.parametrize("value, msg", BAD)
def test_comparability_refuses_nan_inf_before_kappa(value, msg):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not the "no spread" warning
        with pytest.raises(DataFormatError, match=r"^collection b: comparability: " + msg):
            irm.comparability(_df(), _bad(value), n_resamples=10, n_halvings=5)


# ---------------------------------------------------------------------------------- power
@pytest.mark.parametrize("value, msg", BAD)
def test_topics_table_refuses_nan_inf(value, msg):
    with pytest.raises(DataFormatError, match=msg):
        irm.power.topics_table(_bad(value))
    with pytest.raises(DataFormatError, match=msg):
        irm.power.pair_sd(_bad(value))


def _identical() -> pd.DataFrame:
    d = _df()
    d.loc[d["system"] == "b", "score"] = d.loc[d["system"] == "a", "score"].to_numpy()
    return d


SD0 = (r"the per-topic differences between systems have SD 0 at quantile {q} \({k} of {n} "
       r"system pair\(s\) differ by the same amount on every topic, e\.g\. a and b: identical "
       r"systems or constant scores\), so no topic-set size can be computed")


def test_topics_table_identical_systems():
    two = _identical()
    two = two[two["system"] != "c"]
    with pytest.raises(DesignError, match=SD0.format(q="0.5", k=1, n=1)):
        irm.power.topics_table(two)
    with pytest.raises(DesignError, match=SD0.format(q="0", k=1, n=3)):
        irm.power.topics_table(_identical(), quantiles=[0.0, 0.5])
    # the other quantiles of the same data still work
    assert irm.power.topics_table(_identical(), quantiles=[0.5]).required["n_topics"].min() > 2


def test_topics_table_constant_scores():
    with pytest.raises(DesignError, match=SD0.format(q="0.5", k=3, n=3)):
        irm.power.topics_table(_df().assign(score=0.25))


def test_power_command_identical_systems(tmp_path, capsys):
    two = _identical()
    path = tmp_path / "same.csv"
    two[two["system"] != "c"].to_csv(path, index=False)
    assert main(["power", "--data", str(path)]) == 1
    err = capsys.readouterr().err
    assert "per-topic differences between systems have SD 0" in err
    assert "sigma must be positive" not in err and "Traceback" not in err


# ---------------------------------------------------------------------------------- anova
DUP = pd.DataFrame({"topic": ["1", "1", "2", "2", "2"], "system": ["a", "b", "a", "b", "b"],
                    "score": [.1, .2, .3, .4, .4]})


def test_anova_warns_about_rows_nothing_tells_apart():
    with pytest.warns(DataQualityWarning,
                      match=r"^irm\.anova: 2 rows repeat the same \(topic, system\) key, e\.g\. "
                            r"topic=2, system=b, and no other column tells them apart \(exact "
                            r"copies: the same score too\); they are fitted as replicates"):
        irm.anova("MD1", DUP)


def test_anova_warns_about_unnamed_replicates_with_other_scores():
    d = DUP.assign(score=[.1, .2, .3, .4, .5])
    with pytest.warns(DataQualityWarning, match=r"topic=2, system=b, and no other column tells "
                                                r"them apart; they are fitted"):
        irm.anova("MD1", d)


@pytest.mark.parametrize("column", ["shard", "replicate"])
def test_anova_replicates_told_apart_are_not_warned_about(column):
    d = DUP.assign(**{column: ["1", "1", "1", "1", "2"]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = irm.anova("MD1", d)
    assert not [w for w in caught if "repeat the same" in str(w.message)]
    assert fit.n_obs == 5


def test_anova_duplicate_shard_rows_are_warned_about():
    rng = np.random.default_rng(2)
    d = pd.DataFrame({"topic": np.repeat(["1", "2", "3"], 4), "system": np.tile(["a", "a", "b", "b"], 3),
                      "shard": np.tile(["1", "2"], 6), "score": rng.uniform(size=12)})
    d = pd.concat([d, d.iloc[[5]]], ignore_index=True)
    with pytest.warns(DataQualityWarning, match=r"2 rows repeat the same \(topic, system, shard\) "
                                                r"key, e\.g\. topic=2, system=a, shard=2"):
        irm.anova("MD1", d)


# --------------------------------------------------------------------------- the helpers
def test_check_finite_scores_without_labels_and_nullable():
    from irmodels.data.frame import check_finite_scores

    check_finite_scores(pd.DataFrame({"score": pd.array([0.5, 0.1], dtype="Float64")}))
    with pytest.raises(DataFormatError, match=r"^x: 1 score\(s\) are missing \(NaN\)\. Drop"):
        check_finite_scores(pd.DataFrame({"score": pd.array([0.5, None], dtype="Float64")}), "x")
    with pytest.raises(DataFormatError, match=r"^score column 'score' has 1 infinite value\(s\), "
                                              r"the first inf \(row 1\); scores must be finite"):
        check_finite_scores(pd.DataFrame({"score": [0.5, np.inf]}))


def test_check_distinct_rows_fast_path_equals_pandas():
    from irmodels.data._frame_checks import _duplicated_rows, check_distinct_rows

    rng = np.random.default_rng(5)
    d = irm.frame(pd.DataFrame({"topic": rng.integers(0, 6, 200), "system": rng.integers(0, 4, 200),
                                "shard": rng.integers(0, 5, 200), "score": rng.uniform(size=200)}),
                  duplicates="allow")
    for key in (["topic", "system", "shard"], ["topic", "system"], ["topic"]):
        np.testing.assert_array_equal(_duplicated_rows(d, key),
                                      d.duplicated(key, keep=False).to_numpy())
    with pytest.raises(DataFormatError, match=r"^f: \d+ rows repeat the same \(topic, system, "
                                              r"shard\) key"):
        check_distinct_rows(d, "f")
