"""Inputs of the studies and replicates: model-based SEs, missing Tukey results, degenerate
topic-set studies, and bad runs, qrels and arguments refused with clear irmodels errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main
from irmodels.errors import (
    ArgumentError,
    DataFormatError,
    DataQualityWarning,
    DesignError,
    IRModelsWarning,
    UndefinedValueWarning,
)


@pytest.fixture(scope="module")
def tiny():
    return irm.collection.generate(preset="tiny", seed=0)


def _wide(a, systems=None) -> pd.DataFrame:
    a = np.asarray(a, dtype=float)
    df = pd.DataFrame(a, index=[f"t{i}" for i in range(a.shape[0])],
                      columns=systems or [f"s{j}" for j in range(a.shape[1])])
    return irm.from_wide(df)


# ---- bootstrap_effects: se_model is the fit's own SE of each least-squares mean


def test_bootstrap_se_model_unbalanced_is_each_ls_mean_own_se() -> None:
    f = _wide(np.random.default_rng(1).random((6, 4)))
    f = f[~((f.system == "s0") & f.topic.isin(["t0", "t1", "t2"]))]  # s0 on 3 of 6 topics
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        fit = irm.anova("MD1", f)
        boot = irm.studies.bootstrap_effects(fit, n_resamples=2, seed=1)
    exact = np.sqrt(np.diag(fit.marginal_means_cov("system").to_numpy()))
    np.testing.assert_allclose(boot.effects["se_model"].to_numpy(), exact, rtol=1e-12)
    se = boot.effects["se_model"]
    assert se["s0"] > 1.4 * se["s1"]  # half the topics: a larger SE, not one common value
    assert se["s1"] == pytest.approx(se["s2"])


def test_bootstrap_se_model_balanced_is_sqrt_mse_over_n() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        fit = irm.anova("MD1", _wide(np.random.default_rng(2).random((5, 3))))
    boot = irm.studies.bootstrap_effects(fit, n_resamples=2, seed=0)
    np.testing.assert_allclose(boot.effects["se_model"].to_numpy(),
                               np.full(3, math.sqrt(fit.ms_error / 5)), rtol=1e-12)
    np.testing.assert_allclose(
        boot.effects["se_model"].to_numpy(),
        np.sqrt(np.diag(fit.marginal_means_cov("system").to_numpy())), rtol=1e-10)


# ---- shard study: splits without a Tukey result (undefined="missing")


@pytest.fixture(scope="module")
def missing_study(tiny):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        return irm.studies.shards(tiny, n_shards=[3, 5], n_splits=3, undefined="missing",
                                  seed=1, models=["MD1", "MD3", "MD6"])


def test_shards_missing_summary_table_leaves_out_splits_without_tukey(missing_study) -> None:
    runs = missing_study.runs
    md6 = runs[runs["model"] == "MD6"]
    s3 = md6[md6["n_shards"] == 3]
    assert s3["n_significant"].isna().tolist() == [True, True, False]
    assert md6[md6["n_shards"] == 5]["n_significant"].isna().all()
    tab = missing_study.summary_table("MD6")
    # S = 3: one split with a Tukey result, averaged alone; omega2 over all three splits
    row = tab.loc[3]
    assert row["n_splits"] == 3
    assert row["tau"] == pytest.approx(float(s3["tau"].iloc[2]))
    assert math.isnan(row["tau_lower"]) and math.isnan(row["tau_upper"])  # one tau: no CI
    assert row["ci_width"] == pytest.approx(float(s3["ci_width"].iloc[2]))
    assert row["n_significant"] == float(s3["n_significant"].iloc[2])
    assert row["top_group"] == float(s3["top_group"].iloc[2])
    assert row["omega2_system"] == pytest.approx(float(s3["omega2_system"].mean()))
    # S = 5: no Tukey result at all
    row = tab.loc[5]
    assert row[["tau", "ci_width", "n_significant", "top_group"]].isna().all()
    assert row["sig_all_splits"] == 0 and row["frac_sig_all_splits"] == 0.0
    assert row["omega2_system"] == pytest.approx(
        float(md6[md6["n_shards"] == 5]["omega2_system"].mean()))
    # a shard model with every Tukey result is unchanged (plain means)
    md3 = runs[(runs["model"] == "MD3") & (runs["n_shards"] == 3)]
    assert missing_study.summary_table("MD3").loc[3, "n_significant"] == pytest.approx(
        float(md3["n_significant"].astype(float).mean()))


def test_shards_missing_summary_latex_section(missing_study) -> None:
    text = missing_study.summary()
    assert "MD6 per number of shards" in text
    assert r"\toprule" in missing_study.to_latex()
    sec = missing_study.to_section()
    assert sec.title == "Shard study" and "MD6 per number of shards" in sec.html
    assert missing_study.by_model(3).loc["MD6", "omega2_system"] == pytest.approx(
        float(missing_study.runs.query("model == 'MD6' and n_shards == 3")["omega2_system"]
              .mean()))


def test_cli_shards_undefined_missing(tmp_path, capsys) -> None:
    out = tmp_path / "study"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        code = main(["shards", "--demo", "--preset", "tiny", "--n-shards", "5", "--n-splits",
                     "1", "--models", "MD1,MD6", "--undefined", "missing", "--seed", "1",
                     "--out", str(out), "--no-progress"])
    assert code == 0
    assert "MD6 per number of shards" in capsys.readouterr().out
    summary = pd.read_csv(out / "summary.csv", index_col=0)
    assert summary.loc[5, "n_splits"] == 1 and np.isnan(summary.loc[5, "n_significant"])
    assert (out / "tables.tex").stat().st_size > 0 and (out / "report.html").exists()


# ---- topic_sets: degenerate rankings and bad settings


def _no_numpy_warnings(record) -> list:
    return [w for w in record if not issubclass(w.category, IRModelsWarning)]


@pytest.mark.parametrize("scale", [1.0, 0.0])  # identical systems; an all-zero measure
def test_topic_sets_identical_systems_give_nan_rank_agreement(scale) -> None:
    a = np.array([0.1, 0.5, 0.3, 0.2, 0.7, 0.4]) * scale
    f = _wide(np.column_stack([a, a, a]))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        st = irm.studies.topic_sets(f, sizes=[2], n_samples=5, test=["t", "tukey"])
    assert not _no_numpy_warnings(record)
    dq = [w for w in record if issubclass(w.category, DataQualityWarning)]
    assert len(dq) == 1 and "Kendall's tau is undefined" in str(dq[0].message)
    ra = st.rank_agreement.iloc[0]
    assert ra["size"] == 2
    assert ra[["tau_mean", "tau_sd", "tau_lower", "tau_upper", "share_tau_0_9"]].isna().all()
    assert st.taus["tau"].isna().all()
    assert (st.discriminative_power["fraction_significant"] == 0).all()


def test_topic_sets_partly_tied_systems_do_not_warn() -> None:
    rng = np.random.default_rng(0)
    a = rng.random((6, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st = irm.studies.topic_sets(_wide(np.column_stack([a[:, 0], a[:, 0], a[:, 1]])),
                                    sizes=[2], n_samples=5, test="t")
    assert np.isfinite(st.rank_agreement["tau_mean"]).all()


def test_topic_sets_bad_bin_width_scores_topics_alpha() -> None:
    f = _wide(np.random.default_rng(0).random((6, 3)))
    with pytest.raises(DesignError, match=r"bin_width=1e-300 cuts .* more than 1,000,000 bins"):
        irm.studies.topic_sets(f, sizes=[2], n_samples=1, bin_width=1e-300)
    with pytest.raises(ArgumentError, match="bin_width must be a finite number"):
        irm.studies.topic_sets(f, sizes=[2], n_samples=1, bin_width=float("nan"))
    with pytest.raises(ArgumentError, match="bin_width must be > 0"):
        irm.studies.topic_sets(f, sizes=[2], n_samples=1, bin_width=0)
    for bad in (np.nan, np.inf):
        g = f.assign(score=f["score"].where(f.index != 4, bad))
        with pytest.raises(DataFormatError,
                           match=r"finite score in every .* 1 score\(s\) are missing or "
                                 r"infinite, e.g. (nan|inf) for topic 't1', system 's1'"):
            irm.studies.topic_sets(g, sizes=[2], n_samples=1)
    one = _wide(np.random.default_rng(0).random((1, 3)))
    with pytest.raises(DesignError, match="has 1 topic\\(s\\), it needs at least 2"):
        irm.studies.topic_sets(one, sizes=[2], method="bootstrap", n_samples=5, test="t")
    with pytest.raises(ArgumentError, match="alpha must be in \\(0, 1\\)"):
        irm.studies.topic_sets(f, sizes=[2], n_samples=1, alpha=1.5)
    a32 = irm.studies.topic_sets(f, sizes=[2], n_samples=3, alpha=np.float32(0.05), test="t")
    a64 = irm.studies.topic_sets(f, sizes=[2], n_samples=3, alpha=0.05, test="t")
    pd.testing.assert_frame_equal(a32.agreement, a64.agreement)
    assert a32.alpha == pytest.approx(0.05)
    # bin_width as a numpy float works too, and a coarse one is fine
    st = irm.studies.topic_sets(f, sizes=[2], n_samples=3, bin_width=np.float64(0.5), test="t")
    assert st.swap_rates["diff_bin"].isin([0.0, 0.5]).all()


# ---- document_samples: scores, relevance, counts


def test_document_samples_refuses_non_finite_scores(tiny) -> None:
    runs = tiny.runs.copy()
    top = runs.index[(runs.system == "sys01") & (runs.topic == "1")][0]
    for bad in (np.nan, np.inf):
        runs.loc[top, "score"] = bad
        for model in ("bootstrap", "kde", "gmg"):
            with pytest.raises(DataFormatError,
                               match="run column 'score' has 1 missing, non-numeric or infinite"):
                irm.replicates.document_samples(runs, tiny.qrels, model=model, n_samples=2,
                                                seed=1, systems=["sys01"], topics=["1"])


def test_document_samples_no_relevant_document_is_a_design_error(tiny) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning before the error
        with pytest.raises(DesignError, match=r"no topic of the runs has a relevant document "
                                              r"\(rel >= relevance_level = 5\).*highest grade "
                                              r"in the qrels is 2"):
            irm.replicates.document_samples(tiny.runs, tiny.qrels, n_samples=2, seed=1,
                                            relevance_level=5)
        with pytest.raises(DesignError, match="highest grade in the qrels is 0"):
            irm.replicates.document_samples(tiny.runs, tiny.qrels.assign(rel=0), n_samples=2,
                                            seed=1)


@pytest.mark.parametrize("kw, match", [
    ({"n_samples": 2.5}, "n_samples must be a whole number >= 1; got 2.5"),
    ({"n_samples": "3"}, "n_samples must be a whole number >= 1; got '3'"),
    ({"n_samples": None}, "n_samples must be a whole number >= 1; got None"),
    ({"n_samples": True}, "n_samples must be a whole number >= 1; got True"),
    ({"depth": 0}, "depth must be a whole number >= 1; got 0"),
    ({"depth": -5}, "depth must be a whole number >= 1; got -5"),
    ({"depth": 2.5}, "depth must be a whole number >= 1; got 2.5"),
    ({"relevance_level": 0}, "relevance_level must be a whole number >= 1; got 0"),
])
def test_document_samples_bad_counts(tiny, kw, match) -> None:
    args = {"n_samples": 2, **kw}
    with pytest.raises(ArgumentError, match=match):
        irm.replicates.document_samples(tiny.runs, tiny.qrels, seed=1, **args)


def test_document_samples_numpy_counts_accepted(tiny) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        a = irm.replicates.document_samples(tiny.runs, tiny.qrels, n_samples=np.int64(2),
                                            depth=np.int32(50), seed=1, systems=["sys01"])
        b = irm.replicates.document_samples(tiny.runs, tiny.qrels, n_samples=2, depth=50,
                                            seed=1, systems=["sys01"])
    pd.testing.assert_frame_equal(a, b)
    assert a["sample"].nunique() == 2


# ---- pooling_bias: what irm.evaluate refuses, whole-number widths


def test_pooling_refuses_nan_scores_and_duplicate_documents(tiny) -> None:
    P = irm.studies.pooling_bias
    rn = tiny.runs.copy()
    rn.loc[rn.index[0], "score"] = np.nan
    with pytest.raises(DataFormatError, match="run column 'score' has 1 missing"):
        P(rn, tiny.qrels, widths=[1], common_topics=[2], n_resamples=1)
    rd = pd.concat([tiny.runs, tiny.runs.iloc[:3]])
    with pytest.raises(DataFormatError, match="3 document\\(s\\) appear twice in one ranking"):
        P(rd, tiny.qrels, widths=[1], common_topics=[2], n_resamples=1)
    with pytest.raises(DataFormatError, match="integer relevance grades"):
        P(tiny.runs, tiny.qrels.assign(rel=0.5), widths=[1], common_topics=[2], n_resamples=1)


@pytest.mark.parametrize("kw, match", [
    ({"widths": [1.9], "common_topics": [2]}, r"widths must be .*whole numbers; got \[1.9\]"),
    ({"widths": [1.5]}, r"widths must be .*whole numbers; got \[1.5\]"),  # not "10 common"
    ({"widths": [1], "common_topics": [2.5]},
     r"common_topics must be .*whole numbers; got \[2.5\]"),
    ({"widths": "2", "common_topics": [2]}, "widths must be a list of whole numbers"),
    ({"widths": [], "common_topics": [2]}, "widths must be a non-empty list"),
])
def test_pooling_widths_must_be_whole_numbers(tiny, kw, match) -> None:
    with pytest.raises(ArgumentError, match=match):
        irm.studies.pooling_bias(tiny.runs, tiny.qrels, n_resamples=1, **kw)


def test_pooling_numpy_widths_and_repeats_accepted(tiny) -> None:
    st = irm.studies.pooling_bias(tiny.runs, tiny.qrels, widths=[np.int64(1), 1],
                                  common_topics=np.int64(2), n_resamples=1, seed=1)
    assert st.widths == (1,) and st.common_topics == (2,)
    assert st.to_frame()["width"].tolist() == [1, 1]


# ---- assign_shards


@pytest.mark.parametrize("docids, match", [
    (5, "docids must be a sequence of document ids .*got int 5"),
    (2.5, "docids must be a sequence of document ids .*got float 2.5"),
    (pd.DataFrame({"docid": ["a", "b"]}), "docids is a DataFrame; pass its column"),
])
def test_assign_shards_first_argument(docids, match) -> None:
    with pytest.raises(DataFormatError, match=match):
        irm.replicates.assign_shards(docids, 2, seed=0)
    a = irm.replicates.assign_shards(iter(["a", "b", "c"]), 2, seed=0)
    assert sorted(a.tolist()) == [1, 1, 2]


def test_grades_are_read_as_evaluate_reads_them(tiny) -> None:
    # string grades passed the check and then crashed comparing str with int; fractional grades
    # were accepted by document_samples (evaluate refuses them)
    as_text = tiny.qrels.assign(rel=tiny.qrels["rel"].astype(str))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        a = irm.replicates.document_samples(tiny.runs, as_text, n_samples=2, seed=1,
                                            systems=["sys01"])
        b = irm.replicates.document_samples(tiny.runs, tiny.qrels, n_samples=2, seed=1,
                                            systems=["sys01"])
        pd.testing.assert_frame_equal(a, b)
        P = irm.studies.pooling_bias
        pd.testing.assert_frame_equal(
            P(tiny.runs, as_text, widths=[1], common_topics=[2], n_resamples=1, seed=0).table,
            P(tiny.runs, tiny.qrels, widths=[1], common_topics=[2], n_resamples=1, seed=0).table)
    with pytest.raises(DataFormatError, match="integer relevance grades"):
        irm.replicates.document_samples(tiny.runs, tiny.qrels.assign(rel=tiny.qrels["rel"] + 0.5),
                                        n_samples=2, seed=1)
