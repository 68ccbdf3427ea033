"""The document-sample study: validation, the four tests against nlme, agreement, plots, CLI.

The mixed-model p-values are checked against ``tests/reference/document_samples.json``
(``document_samples.R``: nlme's ``lme`` with and without ``varIdent(form = ~1|topic*system)``,
and lmerTest for the Satterthwaite df) on the simulated samples of
``tests/reference/data/document_samples.csv`` (``make_document_samples_data.py``).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import irmodels as irm
from irmodels.cli import main
from irmodels.errors import DataFormatError, DataQualityWarning
from irmodels.formula.spec import DEFAULT_EPSILON, apply_transform
from irmodels.studies import document_samples as ds

REF = Path(__file__).resolve().parents[1] / "reference"
FIXTURE = json.loads((REF / "document_samples.json").read_text())
TOL = FIXTURE["tolerance"]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


@pytest.fixture(scope="module")
def reference_samples() -> pd.DataFrame:
    """The simulated samples R fitted, as compare_tests takes them (``score`` = AP)."""
    d = pd.read_csv(REF / "data" / "document_samples.csv", dtype={"topic": str, "system": str})
    return d


@pytest.fixture(scope="module")
def small_collection() -> irm.collection.DemoCollection:
    return irm.collection.generate(preset="small", seed=1)


@pytest.fixture(scope="module")
def nlme_comparison(reference_samples: pd.DataFrame, small_collection) -> pd.DataFrame:
    samples = irm.frame(reference_samples.assign(measure="AP")[["measure", "topic", "system",
                                                                 "sample", "score"]])
    pairs = [(p["a"], p["b"]) for p in FIXTURE["pairs"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        return ds.compare_tests(small_collection.runs, small_collection.qrels, pairs=pairs,
                                samples=samples)


def test_homoscedastic_model_equals_t_on_means_when_balanced(nlme_comparison: pd.DataFrame) -> None:
    # balanced pairs (no topic excluded): REML = ANOVA estimates, t and df of the paired t-test
    # on the per-topic means; the pair that lost topic 15 in the mixed models differs
    full = nlme_comparison["excluded_topics"] == ""
    assert full.sum() == 3
    np.testing.assert_allclose(nlme_comparison.loc[full, "p_mixed"],
                               nlme_comparison.loc[full, "p_t_means"], rtol=1e-9)
    lost = nlme_comparison.loc[~full].iloc[0]
    assert abs(lost["p_mixed"] - lost["p_t_means"]) > 0.1


def test_fixture_response_is_the_one_compare_tests_builds(reference_samples: pd.DataFrame) -> None:
    # R fits the CSV's y; compare_tests rebuilds y from score: the same doubles up to the last
    # bits numpy's log may differ in between versions (numpy 1.26 vs 2.x: 6e-14 absolute)
    y = apply_transform(reference_samples["score"].to_numpy(), "logit", DEFAULT_EPSILON)
    np.testing.assert_allclose(y, reference_samples["y"].to_numpy(), rtol=1e-13, atol=1e-13)
    assert FIXTURE["packages"]["nlme"] and FIXTURE["R"].startswith("R version")


@pytest.mark.parametrize("i", range(len(FIXTURE["pairs"])))
def test_mixed_p_values_equal_nlme(nlme_comparison: pd.DataFrame, i: int) -> None:
    ref = FIXTURE["pairs"][i]
    row = nlme_comparison.iloc[i]
    assert (row["a"], row["b"]) == (ref["a"], ref["b"])
    # excluded topics: those where a system's simulated values never vary (R applies the rule too)
    assert row["excluded_topics"] == ",".join(ref["excluded_topics"])
    assert row["n_topics"] == ref["n_topics"]
    # nlme's containment df is n_topics - 1 for this design
    assert ref["homo"]["df"] == ref["hetero"]["df"] == ref["n_topics"] - 1
    # homoscedastic: a closed-form REML optimum, equal to nlme's to ~1e-10
    assert _rel(row["p_mixed"], ref["homo"]["p"]) < TOL["homo"]
    # heteroscedastic: a flat surface; nlme stops ~1e-8 below our logLik (see the R script)
    assert _rel(row["p_mixed_hetero"], ref["hetero"]["p"]) < TOL["hetero"]
    assert _rel(row["lrt_statistic"], ref["anova"]["statistic"]) < TOL["lrt_statistic"]
    assert _rel(row["lrt_p"], ref["anova"]["p"]) < TOL["lrt_p"]
    assert row["lrt_df"] == ref["anova"]["df"] == 2 * ref["n_topics"] - 1


@pytest.mark.parametrize("i", range(len(FIXTURE["pairs"])))
def test_mixed_fits_equal_nlme(reference_samples: pd.DataFrame, i: int) -> None:
    ref = FIXTURE["pairs"][i]
    d = reference_samples.loc[reference_samples["system"].isin([ref["a"], ref["b"]])
                              & ~reference_samples["topic"].isin(ref["excluded_topics"])]
    d = d.assign(system=pd.Categorical(d["system"], categories=[ref["a"], ref["b"]]))
    assert len(d) == ref["n_obs"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        homo = irm.mixed("y ~ system + (1|topic) + (1|topic:system)", d)
        hetero = irm.mixed("y ~ system + (1|topic) + (1|topic:system)", d, residual="topic:system")
    for fit, key, tol in ((homo, "homo", TOL["homo"]), (hetero, "hetero", TOL["hetero"])):
        r = ref[key]
        assert _rel(fit.loglik, r["logLik"]) < TOL["loglik"]
        assert fit.loglik >= r["logLik"] - 1e-9  # never a worse optimum than nlme's
        assert fit.n_params == r["npar"]
        assert fit.fixed_estimates.index[1] == r["name"]
        assert _rel(float(fit.fixed_estimates.iloc[1]), r["estimate"]) < tol
        assert _rel(float(np.sqrt(fit.vcov.iloc[1, 1])), r["se"]) < tol


def test_satterthwaite_df_option(reference_samples: pd.DataFrame, small_collection) -> None:
    ref = FIXTURE["pairs"][0]
    samples = irm.frame(reference_samples.assign(measure="AP")[["measure", "topic", "system",
                                                                 "sample", "score"]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        res = ds.compare_tests(small_collection.runs, small_collection.qrels,
                               pairs=[(ref["a"], ref["b"])], samples=samples, df="satterthwaite")
    row = res.iloc[0]
    # homoscedastic, balanced: lmerTest's Satterthwaite df is 19.000004, p equal to ~1e-7
    assert _rel(row["p_mixed"], ref["satterthwaite_homo"]["p"]) < 1e-6
    # heteroscedastic: Satterthwaite df (irm.mixed's fixed table) differ from n_topics - 1
    d = reference_samples.loc[reference_samples["system"].isin([ref["a"], ref["b"]])]
    d = d.assign(system=pd.Categorical(d["system"], categories=[ref["a"], ref["b"]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.mixed("y ~ system + (1|topic) + (1|topic:system)", d, residual="topic:system")
    fixed = fit.fixed.iloc[1]
    # the same model fitted twice from differently ordered rows: equal to the optimiser's
    # stopping tolerance (7e-12 relative with the newest releases, 1e-8 with scipy 1.15.0's
    # L-BFGS-B on the minimum versions)
    assert row["p_mixed_hetero"] == pytest.approx(float(fixed["p"]), rel=5e-8)
    assert fixed["df"] == pytest.approx(16.7095, abs=1e-3)  # not 19
    assert row["p_mixed_hetero"] > ref["hetero"]["p"] * 1.01  # fewer df, larger p
    # and the containment p is t on n_topics - 1 df
    p_cont = 2 * stats.t.sf(abs(float(fixed["t"])), ref["n_topics"] - 1)
    assert _rel(p_cont, ref["hetero"]["p"]) < TOL["hetero"]
    with pytest.raises(DataFormatError, match="df must be"):
        ds.compare_tests(small_collection.runs, small_collection.qrels, samples=samples,
                         df="kenward")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# validate, sd_correlation, agreement on small hand-made or tiny data
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny() -> irm.collection.DemoCollection:
    return irm.collection.generate(preset="tiny", seed=1)


@pytest.fixture(scope="module")
def tiny_validation(tiny) -> pd.DataFrame:
    return ds.validate(tiny.runs, tiny.qrels, n_samples=200, seed=3)


def test_validate_columns_and_z(tiny, tiny_validation: pd.DataFrame) -> None:
    v = tiny_validation
    assert list(v.columns) == ["topic", "system", "observed", "sim_mean", "sim_sd", "z",
                               "within_1sd", "within_2sd", "degenerate"]
    assert len(v) == len(tiny.topics) * len(tiny.systems)
    # observed = logit of the measure computed by irm.evaluate on the runs
    obs = irm.evaluate(tiny.runs, tiny.qrels, measures=["AP"])
    o = obs.assign(topic=obs["topic"].astype(str), system=obs["system"].astype(str))
    m = v.merge(o[["topic", "system", "score"]], on=["topic", "system"])
    np.testing.assert_allclose(m["observed"], apply_transform(m["score"].to_numpy(), "logit"),
                               rtol=0, atol=1e-12)
    # sim_mean and sim_sd: the mean and SD (ddof 1) of the simulated logits
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        sims = irm.replicates.document_samples(tiny.runs, tiny.qrels, n_samples=200, seed=3)
    y = sims.assign(y=apply_transform(sims["score"].to_numpy(), "logit"))
    agg = y.groupby(["topic", "system"], observed=True)["y"].agg(["mean", "std"]).reset_index()
    agg = agg.assign(topic=agg["topic"].astype(str), system=agg["system"].astype(str))
    m = v.merge(agg, on=["topic", "system"])
    np.testing.assert_allclose(m["sim_mean"], m["mean"], rtol=1e-12)
    np.testing.assert_allclose(m["sim_sd"], m["std"], rtol=1e-12)
    ok = ~v["degenerate"]
    np.testing.assert_allclose(v.loc[ok, "z"],
                               (v.loc[ok, "observed"] - v.loc[ok, "sim_mean"]) / v.loc[ok, "sim_sd"])
    assert (v["within_1sd"] == (v["z"].abs() <= 1)).all()
    assert (v["within_2sd"] == (v["z"].abs() <= 2)).all()


def test_validate_degenerate_rows() -> None:
    # a run that retrieves no relevant document simulates AP = 0 every time: z is NaN
    runs = pd.DataFrame({"system": ["a"] * 4 + ["b"] * 4, "topic": ["1"] * 8,
                         "docid": ["d1", "d2", "d3", "d4"] * 2,
                         "score": [4.0, 3.0, 2.0, 1.0, 1.0, 2.0, 3.0, 4.0], "rank": [1, 2, 3, 4] * 2})
    runs.loc[runs["system"] == "b", "docid"] = ["x1", "x2", "x3", "x4"]
    qrels = pd.DataFrame({"topic": ["1", "1"], "docid": ["d1", "d3"], "rel": [1, 1]})
    v = ds.validate(runs, qrels, n_samples=30, seed=1)
    b = v.loc[v["system"] == "b"].iloc[0]
    assert bool(b["degenerate"]) and np.isnan(b["z"]) and b["sim_sd"] == 0
    assert not b["within_1sd"] and not b["within_2sd"]
    assert b["observed"] == pytest.approx(np.log(1e-3 / (1 - 1e-3)))
    a = v.loc[v["system"] == "a"].iloc[0]
    assert not a["degenerate"] and np.isfinite(a["z"])


def test_validate_bootstrap_sanity_on_the_small_demo() -> None:
    # Were the observed value one more draw from a normal simulated distribution, 95% would lie
    # within 2 SD and the median |z| would be 0.67. The bootstrap resamples the observed scores,
    # so the simulated distribution is centred near the observed value: it must do at least as
    # well as a fresh draw (>= 95% within 2 SD) and sit much nearer the centre. Measured on this
    # seed (C = 200, 240 pairs): 100% within 1 SD, median |z| = 0.075, 90th percentile 0.19,
    # max 0.83. A simulator whose mean or spread were off by a factor of two would fail.
    coll = irm.collection.generate(preset="small", seed=2)
    v = ds.validate(coll.runs, coll.qrels, n_samples=200, seed=5)
    ok = v.loc[~v["degenerate"]]
    assert float(ok["within_2sd"].mean()) >= 0.95
    assert float(ok["within_1sd"].mean()) >= 0.9
    assert float(ok["z"].abs().median()) < 0.25
    assert v["degenerate"].sum() <= 0.05 * len(v)


def test_sd_correlation_is_pearson_across_topics(tiny_validation: pd.DataFrame) -> None:
    c = ds.sd_correlation(tiny_validation)
    wide = tiny_validation.pivot(index="topic", columns="system", values="sim_sd")
    s = list(c.columns)
    assert c.shape == (len(s), len(s))
    r = stats.pearsonr(wide[s[0]], wide[s[1]]).statistic
    assert c.loc[s[0], s[1]] == pytest.approx(r, rel=1e-12)
    np.testing.assert_allclose(np.diag(c), 1.0)


def test_agreement_hand_made() -> None:
    r = pd.DataFrame({
        "p_t_observed": [0.001, 0.001, 0.2, 0.2, 0.2, 0.04, np.nan],
        "p_t_means": [0.01, 0.3, 0.01, 0.5, 0.6, 0.049, 0.01],
        "p_mixed": [np.nan] * 7,  # not run: no table
        "p_mixed_hetero": [0.05, 0.001, 0.2, 0.001, 0.9, 0.03, 0.02],
    })
    t = ds.agreement(r)
    assert set(t) == {"p_t_means", "p_mixed_hetero"}
    m = t["p_t_means"]
    assert list(m.columns) == ["reference sig", "reference not sig"]
    # pairs 0 and 5 both sig; pair 1 only reference; pair 2 only the test; 3, 4 neither; 6 NaN
    assert m.to_numpy().tolist() == [[2, 1], [1, 2]]
    h = t["p_mixed_hetero"]  # 0.05 is not < 0.05
    assert h.to_numpy().tolist() == [[2, 1], [1, 2]]
    assert h.to_numpy().sum() == 6
    t01 = ds.agreement(r, alpha=0.1)["p_t_means"]
    assert t01.to_numpy().tolist() == [[2, 1], [1, 2]]
    with pytest.raises(DataFormatError):
        ds.agreement(r, reference="p_nope")
    # the result's methods: the same tables, options keyword-only (issue 26 item 5)
    res = ds.DocumentSampleTests(table=r)
    assert res.agreement(alpha=0.1)["p_t_means"].equals(t01)
    assert res.significance(alpha=0.1).loc["p_t_means", "significant"] == pytest.approx(4 / 7)
    with pytest.raises(TypeError, match="positional argument"):
        res.significance(0.1)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional argument"):
        res.agreement(0.1)  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------
# compare_tests on tiny data
# ---------------------------------------------------------------------------------------------
def _tiny_samples(tiny) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        return irm.replicates.document_samples(tiny.runs, tiny.qrels, n_samples=4, seed=2)


def test_compare_tests_t_tests_only(tiny) -> None:
    samples = _tiny_samples(tiny)
    res = ds.compare_tests(tiny.runs, tiny.qrels, samples=samples, mixed_models=False)
    k = len(tiny.systems)
    assert len(res) == k * (k - 1) // 2
    assert list(res.columns) == ["a", "b", "diff", "p_t_observed", "p_t_means", "p_mixed",
                                 "p_mixed_hetero", "lrt_statistic", "lrt_df", "lrt_p",
                                 "n_topics", "excluded_topics", "failure"]
    assert res["p_mixed"].isna().all() and res["lrt_p"].isna().all()
    # (a) by hand: paired t on observed logit(AP)
    obs = irm.evaluate(tiny.runs, tiny.qrels, measures=["AP"])
    w = obs.pivot_table(index="topic", columns="system", values="score", observed=True)
    w = pd.DataFrame(apply_transform(w.to_numpy(), "logit"), index=w.index,
                     columns=[str(c) for c in w.columns])
    row = res.iloc[0]
    t = stats.ttest_rel(w[row["a"]], w[row["b"]])
    assert row["p_t_observed"] == pytest.approx(t.pvalue, rel=1e-10)
    assert row["diff"] == pytest.approx(float((w[row["a"]] - w[row["b"]]).mean()), rel=1e-12)
    # (b) by hand: paired t on per-topic means of the samples
    y = samples.assign(y=apply_transform(samples["score"].to_numpy(), "logit"))
    mw = y.pivot_table(index="topic", columns="system", values="y", aggfunc="mean", observed=True)
    mw.columns = [str(c) for c in mw.columns]
    tb = stats.ttest_rel(mw[row["a"]], mw[row["b"]])
    assert row["p_t_means"] == pytest.approx(tb.pvalue, rel=1e-10)
    pd.testing.assert_frame_equal(res.samples, samples)


@pytest.fixture(scope="module")
def tiny_forced(tiny) -> tuple[pd.DataFrame, pd.DataFrame, str, str]:
    """Tiny samples with one (topic, system) stratum made constant, and compare_tests on them."""
    s = _tiny_samples(tiny).copy()
    t0, s0 = str(s["topic"].cat.categories[0]), str(s["system"].cat.categories[0])
    mask = (s["topic"].astype(str) == t0) & (s["system"].astype(str) == s0)
    s.loc[mask, "score"] = 0.25
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ds.compare_tests(tiny.runs, tiny.qrels, samples=s)
    return s, res, t0, s0


def test_compare_tests_mixed_reports_and_excludes_degenerate_topics(tiny, tiny_forced) -> None:
    s, res, t0, s0 = tiny_forced
    # expected exclusions, computed here: strata whose simulated logit(AP) never varies
    y = s.assign(y=apply_transform(s["score"].to_numpy(), "logit"),
                 topic=s["topic"].astype(str), system=s["system"].astype(str))
    sd = y.groupby(["topic", "system"])["y"].std()
    flat = sd[~(sd > 0)].index
    assert (t0, s0) in flat
    n_t = len(tiny.topics)
    for _, row in res.iterrows():
        excl = sorted({t for t, sy in flat if sy in (row["a"], row["b"])}, key=int)
        assert row["excluded_topics"] == ",".join(excl)
        assert row["n_topics"] == n_t - len(excl)
        if s0 in (row["a"], row["b"]):
            assert t0 in row["excluded_topics"].split(",")
    assert res[["p_mixed", "p_mixed_hetero", "lrt_p"]].notna().all().all()
    assert ((res["p_mixed"] > 0) & (res["p_mixed"] <= 1)).all()
    assert (res["lrt_df"] == 2 * res["n_topics"] - 1).all()
    # the excluded topics really are out: (c) for a pair with s0 equals a fit without them
    row = res.loc[(res["a"] == s0) | (res["b"] == s0)].iloc[0]
    excl = row["excluded_topics"].split(",")
    d = y.loc[y["system"].isin([row["a"], row["b"]]) & ~y["topic"].isin(excl)]
    d = d.assign(system=pd.Categorical(d["system"], categories=[row["a"], row["b"]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = irm.mixed("y ~ system + (1|topic) + (1|topic:system)", d)
    t = float(fit.fixed_estimates.iloc[1] / np.sqrt(fit.vcov.iloc[1, 1]))
    assert row["p_mixed"] == pytest.approx(2 * stats.t.sf(abs(t), row["n_topics"] - 1), rel=1e-10)


def test_plots_return_figures(tiny_forced, tiny_validation: pd.DataFrame) -> None:
    import matplotlib.pyplot as plt

    res = tiny_forced[1]
    systems = list(tiny_validation["system"].unique()[:2])
    figs = [ds.plot_validation(tiny_validation, systems), ds.plot_pvalues(res),
            ds.plot_power_curve(res)]
    for fig in figs:
        assert isinstance(fig, matplotlib.figure.Figure)
    assert len(figs[0].axes) == 2
    assert len(figs[1].axes) == 3  # (b), (c), (d) against (a)
    assert len(figs[2].axes[0].get_lines()) == 5  # four tests and the alpha line
    for fig in figs:
        plt.close(fig)
    with pytest.raises(DataFormatError, match="not in the validation table"):
        ds.plot_validation(tiny_validation, ["nope"])


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------
def test_cli_simulate_documents_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sim"
    code = main(["simulate", "documents", "--demo", "--preset", "tiny", "--n-samples", "4",
                 "--compare", "--out", str(out)])
    assert code == 0
    for name in ("samples.csv", "record.csv", "tests.csv", "agreement.csv"):
        assert (out / name).is_file(), name
    samples = pd.read_csv(out / "samples.csv")
    assert list(samples.columns) == ["measure", "topic", "system", "sample", "score"]
    assert sorted(samples["sample"].unique()) == [1, 2, 3, 4]
    tests = pd.read_csv(out / "tests.csv")
    assert len(tests) == 6 and tests["p_mixed"].notna().all()
    text = capsys.readouterr().out
    assert "vs p_t_observed" in text


def test_cli_simulate_documents_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "documents", "--demo", "--preset", "tiny", "--n-samples", "0",
                 "--out", str(tmp_path / "x")])
    assert code == 2
    err = capsys.readouterr().err
    assert "n_samples must be at least 1" in err and "Traceback" not in err
    assert main(["simulate", "documents", "--demo", "--preset", "tiny", "--systems", "1",
                 "--out", str(tmp_path / "y")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_compare_tests_on_processes_equals_serial(tiny, tiny_forced) -> None:
    s, serial, _, _ = tiny_forced
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        procs = ds.compare_tests(tiny.runs, tiny.qrels, samples=s, backend="processes",
                                 n_workers=2)
    a = serial.to_frame() if hasattr(serial, "to_frame") else serial
    b = procs.to_frame() if hasattr(procs, "to_frame") else procs
    pd.testing.assert_frame_equal(a, b)


def test_compare_tests_on_selected_systems_equals_the_full_comparison(small_collection) -> None:
    """systems= and pairs= simulate the same samples for a pair as the full comparison (each
    (topic, run)'s random stream is keyed by its natural-order positions among all the runs')."""
    runs, qrels = small_collection.runs, small_collection.qrels
    kw = dict(n_samples=5, seed=4, mixed_models=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = ds.compare_tests(runs, qrels, **kw).table.set_index(["a", "b"])
        sub = ds.compare_tests(runs, qrels, systems=["sys03", "sys07"], **kw).table
        pair = ds.compare_tests(runs, qrels, pairs=[("sys03", "sys07")], **kw).table
    assert len(sub) == len(pair) == 1
    for res in (sub, pair):
        row = res.set_index(["a", "b"]).loc[("sys03", "sys07")]
        for col in ("diff", "p_t_observed", "p_t_means"):
            assert row[col] == full.loc[("sys03", "sys07"), col], col


def test_cli_simulate_takes_system_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--systems names runs as on every other command (a single number N keeps meaning the
    first N runs)."""
    assert main(["simulate", "documents", "--demo", "--preset", "tiny", "--systems", "sys01,sys03",
                 "--n-samples", "2", "--out", str(tmp_path / "s")]) == 0
    samples = pd.read_csv(tmp_path / "s" / "samples.csv")
    assert sorted(samples["system"].astype(str).unique()) == ["sys01", "sys03"]
    assert main(["simulate", "documents", "--demo", "--preset", "tiny", "--systems", "sys01",
                 "nope", "--out", str(tmp_path / "t")]) == 2
    assert "nope" in capsys.readouterr().err
