"""The document-sample simulator: exactness of the scoring chain, score models, zeros, seeds.

Statistical checks use seeded generators, so they are deterministic; their thresholds are
z-scores of 4 (a false alarm probability of 6e-5 had the seed been drawn at random).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning
from irmodels.replicates.documents import (
    ScoreModel,
    fit_score_model,
    measure_from_ranks,
    sample_record,
    simulate_relevant_ranks,
)

MEASURES = ["AP", "P@10", "RR", "Rprec", "nDCG@10", "RBP(p=0.8)"]


def _ap_by_sorting(rel: np.ndarray, nonrel: np.ndarray, n_rel: int) -> float:
    """Ground truth written independently: sort the scores, walk the ranking."""
    scores = np.concatenate([rel, nonrel])
    is_rel = np.concatenate([np.ones(len(rel), bool), np.zeros(len(nonrel), bool)])
    order = np.argsort(-scores, kind="stable")
    hits = 0
    total = 0.0
    for rank, i in enumerate(order, start=1):
        if is_rel[i]:
            hits += 1
            total += hits / rank
    return total / n_rel


def test_chain_matches_monte_carlo_ground_truth_for_known_distributions() -> None:
    # relevant ~ N(1.5, 1), non-relevant ~ N(0, 1): the simulator's score models are the truth
    rel_model = ScoreModel("gmm", weights=np.array([1.0]), means=np.array([1.5]), sds=np.array([1.0]))
    non_model = ScoreModel("gmm", weights=np.array([1.0]), means=np.array([0.0]), sds=np.array([1.0]))
    n, r, R = 200, 12, 20
    truth_rng = np.random.default_rng(11)
    truth = np.array(
        [
            _ap_by_sorting(truth_rng.normal(1.5, 1, r), truth_rng.normal(0, 1, n - r), R)
            for _ in range(4000)
        ]
    )
    r_s = np.full(20000, r)
    ranks = simulate_relevant_ranks(rel_model, non_model, r_s, n, np.random.default_rng(12))
    sim = measure_from_ranks(ranks, np.full(len(r_s), R), "AP")
    se = np.sqrt(truth.var() / len(truth) + sim.var() / len(sim))
    assert abs(sim.mean() - truth.mean()) < 4 * se
    # the spread matches too (SE of an SD ~ sd / sqrt(2n))
    se_sd = np.sqrt(truth.var() / (2 * len(truth)) + sim.var() / (2 * len(sim)))
    assert abs(sim.std() - truth.std()) < 4 * se_sd
    # deciles of the two distributions agree
    qs = np.linspace(0.1, 0.9, 9)
    assert np.max(np.abs(np.quantile(sim, qs) - np.quantile(truth, qs))) < 0.01


@pytest.mark.parametrize("model", ["bootstrap", "kde", "gmg"])
def test_chain_equals_explicit_rankings_in_distribution(model: str) -> None:
    rng = np.random.default_rng(5)
    # rounded scores: the bootstrap sees many ties between the classes
    rel = np.round(rng.normal(2.0, 1.0, 25), 1)
    non = np.round(rng.gamma(2.0, 0.8, 475), 1)
    rm, _ = fit_score_model(rel, model, "relevant", rng)
    nm, _ = fit_score_model(non, model, "nonrelevant", rng)
    r_s = np.maximum(rng.poisson(25, 12000), 1)
    chain = simulate_relevant_ranks(rm, nm, r_s, 500, np.random.default_rng(6))
    exact = simulate_relevant_ranks(rm, nm, r_s[:2500], 500, np.random.default_rng(7), exact_rankings=True)
    for m in MEASURES:
        a = measure_from_ranks(chain, r_s + 4, m)
        b = measure_from_ranks(exact, r_s[:2500] + 4, m)
        se = np.sqrt(a.var() / len(a) + b.var() / len(b))
        assert abs(a.mean() - b.mean()) <= 4 * se + 1e-12, m


def test_ranks_are_increasing_and_padded() -> None:
    rng = np.random.default_rng(3)
    rm, _ = fit_score_model(rng.normal(1, 1, 10), "kde", "relevant")
    nm, _ = fit_score_model(rng.normal(0, 1, 90), "kde", "nonrelevant")
    r_s = np.array([1, 5, 10, 3])
    ranks = simulate_relevant_ranks(rm, nm, r_s, 100, rng)
    assert ranks.shape == (4, 10)
    for row, k in zip(ranks, r_s):
        real = row[:k]
        assert np.all(np.diff(real) > 0) and real[0] >= 1 and real[-1] <= 100
        assert np.all(np.isinf(row[k:]))


def _toy_runs(rng: np.random.Generator, n_topics: int = 4, n_systems: int = 3, depth: int = 60):
    rows, qrows = [], []
    for t in range(1, n_topics + 1):
        rel_docs = [f"t{t}-r{i}" for i in range(12)]
        qrows += [(str(t), d, 1) for d in rel_docs] + [(str(t), f"t{t}-j{i}", 0) for i in range(5)]
        pool = rel_docs + [f"t{t}-n{i}" for i in range(200)]
        for s in range(n_systems):
            docs = rng.choice(pool, size=depth, replace=False)
            skill = 1.0 + s
            scores = np.array([rng.normal(skill if d in rel_docs else 0, 1) for d in docs])
            rows += [(f"sys{s}", str(t), d, float(x), 0) for d, x in zip(docs, scores)]
    runs = pd.DataFrame(rows, columns=["system", "topic", "docid", "score", "rank"])
    qrels = pd.DataFrame(qrows, columns=["topic", "docid", "rel"])
    return runs, qrels


def test_measure_from_ranks_equals_evaluate_on_an_explicit_ranking(rng: np.random.Generator) -> None:
    runs, qrels = _toy_runs(rng)
    measures = ["AP", "P@10", "RR", "Rprec", "nDCG@10", "RBP(p=0.8)"]
    ev = irm.evaluate(runs, qrels, measures=measures)
    rel_set = set(qrels.loc[qrels["rel"] > 0, "docid"])
    for (system, topic), g in runs.groupby(["system", "topic"]):
        g = g.sort_values(["score", "docid"], ascending=[False, False])
        ranks = np.flatnonzero(g["docid"].isin(rel_set).to_numpy()) + 1.0
        n_rel = int(((qrels["topic"] == topic) & (qrels["rel"] > 0)).sum())
        for m in measures:
            got = measure_from_ranks(ranks[None, :], np.array([n_rel]), m)[0]
            want = ev.loc[(ev["system"] == system) & (ev["topic"] == topic) & (ev["measure"] == m), "score"]
            assert got == pytest.approx(float(want.iloc[0]), abs=1e-12), (system, topic, m)


def test_document_samples_frame_record_and_reproducibility(rng: np.random.Generator) -> None:
    runs, qrels = _toy_runs(rng)
    a = irm.replicates.document_samples(runs, qrels, n_samples=5, seed=42, model="kde")
    b = irm.replicates.document_samples(runs, qrels, n_samples=5, seed=42, model="kde")
    c = irm.replicates.document_samples(runs, qrels, n_samples=5, seed=43, model="kde")
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["score"], c["score"])
    assert list(a.columns) == ["measure", "topic", "system", "sample", "score"]
    assert len(a) == 4 * 3 * 5
    rec = sample_record(a)
    json.dumps(a.attrs)  # JSON-able: the frame concatenates and writes to Parquet
    assert len(pd.concat([a, b])) == 2 * len(a)
    assert set(rec.columns) >= {"topic", "system", "n_ret", "r", "R", "zero_draws", "degenerate"}
    assert (rec["R"] == 12).all() and (rec["n_ret"] == 60).all()


def test_seeds_do_not_depend_on_the_backend(rng: np.random.Generator) -> None:
    runs, qrels = _toy_runs(rng, n_topics=3, n_systems=2)
    serial = irm.replicates.document_samples(runs, qrels, n_samples=4, seed=1)
    procs = irm.replicates.document_samples(runs, qrels, n_samples=4, seed=1, backend="processes",
                                            n_workers=2)
    pd.testing.assert_frame_equal(serial, procs)


def _keyed(frame: pd.DataFrame) -> pd.Series:
    """The scores indexed by (topic, system, sample) as text, in a fixed order."""
    keys = [frame[c].astype(str) for c in ("topic", "system", "sample")]
    return pd.Series(frame["score"].to_numpy(), index=pd.MultiIndex.from_arrays(keys)).sort_index()


@pytest.mark.parametrize("model", ["bootstrap", "kde"])
def test_a_selection_gets_the_values_of_the_full_simulation(model: str) -> None:
    """Each (topic, run)'s stream is keyed by its natural-order positions among all the runs'
    topics and systems, so systems= and topics= keep the values of the full simulation."""
    coll = irm.collection.generate(preset="small", seed=1)
    with pytest.warns(DataQualityWarning):
        full = _keyed(irm.replicates.document_samples(coll.runs, coll.qrels, n_samples=5,
                                                      seed=4, model=model))
    for sel in ({"systems": ["sys03", "sys07"]}, {"systems": ["sys12", "sys02"]},
                {"topics": ["2", "10", "17"]},
                {"systems": ["sys07", "sys11"], "topics": ["3", "15"]}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataQualityWarning)
            sub = _keyed(irm.replicates.document_samples(coll.runs, coll.qrels, n_samples=5,
                                                         seed=4, model=model, **sel))
        want = full.loc[sub.index]
        assert len(sub) == 5 * len(sel.get("systems", range(12))) * len(sel.get("topics",
                                                                                range(20)))
        np.testing.assert_array_equal(sub.to_numpy(), want.to_numpy(), err_msg=str(sel))


def test_renaming_that_keeps_the_natural_order_keeps_the_values() -> None:
    coll = irm.collection.generate(preset="small", seed=1)
    runs = coll.runs
    renamed = runs.assign(system=runs["system"].astype(str).str.replace(r"^sys0*", "sys",
                                                                         regex=True))
    assert set(renamed["system"]) == {f"sys{i}" for i in range(1, 13)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)
        a = irm.replicates.document_samples(runs, coll.qrels, n_samples=4, seed=2)
        b = irm.replicates.document_samples(renamed, coll.qrels, n_samples=4, seed=2)
        # categorical labels with unused categories take no position either
        cat = renamed.assign(system=pd.Categorical(renamed["system"],
                                                   categories=["sys0", *sorted(set(renamed["system"]))]))
        c = irm.replicates.document_samples(cat, coll.qrels, n_samples=4, seed=2)
    assert len(a) == len(b) == len(c) == 20 * 12 * 4
    a_renamed = _keyed(a.assign(system=a["system"].astype(str).str.replace(r"^sys0*", "sys",
                                                                            regex=True)))
    pd.testing.assert_series_equal(a_renamed, _keyed(b))
    pd.testing.assert_series_equal(_keyed(c), _keyed(b))


def test_seed_none_gives_fresh_streams_that_still_differ_by_pair() -> None:
    runs, qrels = _toy_runs(np.random.default_rng(5), n_topics=2, n_systems=2)
    a = irm.replicates.document_samples(runs, qrels, n_samples=6, seed=None, model="kde")
    b = irm.replicates.document_samples(runs, qrels, n_samples=6, seed=None, model="kde")
    assert not np.array_equal(a["score"].to_numpy(), b["score"].to_numpy())
    # fresh entropy is drawn once: the pairs still get distinct streams (spawn keys)
    per_pair = a.groupby(["topic", "system"], observed=True)["score"].apply(tuple)
    assert per_pair.nunique() == len(per_pair) == 4


def _single_relevant_run() -> tuple[pd.DataFrame, pd.DataFrame]:
    docs = [f"d{i}" for i in range(30)]
    runs = pd.DataFrame({"system": "s", "topic": "1", "docid": docs,
                         "score": np.linspace(3, 0, 30), "rank": range(1, 31)})
    qrels = pd.DataFrame({"topic": ["1", "1"], "docid": ["d3", "x"], "rel": [1, 1]})
    return runs, qrels


def test_zero_draw_policies() -> None:
    runs, qrels = _single_relevant_run()  # r = 1: P(r_s = 0) = exp(-1) = 0.37
    redraw = irm.replicates.document_samples(runs, qrels, n_samples=400, seed=3, zeros="redraw")
    keep = irm.replicates.document_samples(runs, qrels, n_samples=400, seed=3, zeros="keep")
    skip = irm.replicates.document_samples(runs, qrels, n_samples=400, seed=3, zeros="skip")
    rec = sample_record(keep).iloc[0]
    assert 0.30 < rec["zero_draws"] / 400 < 0.44
    assert (redraw["score"] > 0).all()
    assert int((keep["score"] == 0).sum()) == rec["zero_draws"]
    assert len(skip) == 400 - sample_record(skip).iloc[0]["skipped"]
    assert (skip["score"] > 0).all()


def test_degenerate_pairs_are_recorded_and_warned() -> None:
    runs, qrels = _single_relevant_run()
    qrels = pd.DataFrame({"topic": ["1"], "docid": ["zzz"], "rel": [1]})  # nothing retrieved is relevant
    with pytest.warns(DataQualityWarning, match="never vary"):
        out = irm.replicates.document_samples(runs, qrels, n_samples=5, seed=0)
    assert bool(sample_record(out)["degenerate"].iloc[0])
    assert (out["score"] == 0).all()


def test_bad_arguments() -> None:
    runs, qrels = _single_relevant_run()
    with pytest.raises(DataFormatError, match="unknown score model"):
        irm.replicates.document_samples(runs, qrels, model="normal")
    with pytest.raises(DataFormatError, match="unknown measure 'ERR@20'"):
        irm.replicates.document_samples(runs, qrels, measure="ERR@20")
    with pytest.raises(DataFormatError, match="not supported by the simulator"):
        irm.replicates.document_samples(runs, qrels, measure="num_ret")
    with pytest.raises(ArgumentError, match="n_samples"):
        irm.replicates.document_samples(runs, qrels, n_samples=0)
    with pytest.raises(ArgumentError, match="zeros"):
        irm.replicates.document_samples(runs, qrels, zeros="drop")  # type: ignore[arg-type]
    with pytest.raises(DataFormatError, match="runs has no column 'score'"):
        irm.replicates.document_samples(runs.drop(columns="score"), qrels)


def test_gmg_chooses_components_by_bic() -> None:
    rng = np.random.default_rng(8)
    bimodal = np.concatenate([rng.normal(0, 0.3, 150), rng.normal(5, 0.3, 150)])
    m, note = fit_score_model(bimodal, "gmg", "relevant", rng)
    assert m.kind == "gmm" and note is None
    assert len(m.weights) >= 2
    assert sorted(np.round(m.means[m.weights > 0.2], 0)) == [0.0, 5.0]
    unimodal = rng.normal(2, 1, 200)
    m1, _ = fit_score_model(unimodal, "gmg", "relevant", rng)
    assert len(m1.weights) == 1
    few, note = fit_score_model(np.array([1.0, 2.0]), "gmg", "relevant", rng)
    assert few.kind == "kde" and "fewer than 3" in note
    g, _ = fit_score_model(rng.gamma(3.0, 2.0, 2000) + 10, "gmg", "nonrelevant", rng)
    assert g.kind == "gamma"
    # the fitted Gamma reproduces the mean of the scores
    assert g.loc + g.shape * g.scale == pytest.approx(16.0, rel=0.03)


# --------------------------------------------------------------------------------------------
# the fast score-model fits equal the reference computations


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 3), n_samples=st.integers(1, 12))
def test_property_batched_em_equals_one_sample_em(seed: int, k: int, n_samples: int) -> None:
    from irmodels.replicates._reference import em_one_sample
    from irmodels.replicates._score_models import fit_gmm_batch

    rng = np.random.default_rng(seed)
    xs = []
    for _ in range(n_samples):
        n = int(rng.integers(3 * k, 120))
        a = int(rng.integers(0, n))
        x = np.concatenate([rng.normal(0, 1, a), rng.normal(rng.uniform(1, 6), 0.5, n - a)])
        xs.append(np.round(x, int(rng.integers(1, 4))))  # ties, as scores have
    for x, (w, mu, sd, ll) in zip(xs, fit_gmm_batch(xs, k)):
        rw, rmu, rsd, rll = em_one_sample(x, k)
        np.testing.assert_allclose(mu, rmu, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(sd, rsd, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(w, rw, rtol=1e-8, atol=1e-9)
        assert ll == pytest.approx(rll, rel=1e-10)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 1500),
       dist=st.sampled_from(["normal", "gamma", "rounded", "t3"]))
def test_property_kde_survival_function_equals_the_exact_sum(seed: int, n: int, dist: str) -> None:
    from irmodels.replicates._score_models import kde_model, kde_sf

    rng = np.random.default_rng(seed)
    x = {"normal": lambda: rng.normal(5, 2, n), "gamma": lambda: rng.gamma(1.5, 2.0, n),
         "rounded": lambda: np.round(rng.normal(0, 1, n), 1),
         "t3": lambda: rng.standard_t(3, n)}[dist]()
    m = kde_model(x)
    h = m.scale
    q = np.concatenate([np.linspace(x.min() - 12 * h, x.max() + 12 * h, 500), x[:300],
                        rng.choice(x, 300) + h * rng.normal(size=300)])
    # linear binning at 0.01 bandwidths: at most 3e-6 (see kde_model)
    np.testing.assert_allclose(m.sf(q), kde_sf(q, x, h), rtol=0, atol=3e-6)


def test_gmg_batch_fits_equal_one_at_a_time_fits() -> None:
    from irmodels.replicates.documents import fit_score_models

    rng = np.random.default_rng(12)
    xs = [rng.normal(0, 1, 2), np.full(5, 1.0), rng.normal(0, 1, 40),
          np.concatenate([rng.normal(0, 0.3, 60), rng.normal(4, 0.3, 60)]), rng.normal(3, 2, 7)]
    batch = fit_score_models(xs, "gmg", "relevant")
    for x, (m, note) in zip(xs, batch):
        one, one_note = fit_score_model(x, "gmg", "relevant")
        assert (m.kind, note) == (one.kind, one_note)
        if m.kind == "gmm":
            np.testing.assert_array_equal(m.means, one.means)
    assert [m.kind for m, _ in batch] == ["kde", "kde", "gmm", "gmm", "gmm"]
    assert len(batch[3][0].weights) >= 2


@settings(max_examples=80, deadline=None)
@given(n_groups=st.integers(1, 6), size=st.integers(0, 12), seed=st.integers(0, 10_000),
       presorted=st.booleans(), ties=st.booleans())
def test_trec_order_equals_the_stable_sort(n_groups, size, seed, presorted, ties):
    # the shortcut for rankings already contiguous and in order gives the lexsort's permutation
    from irmodels.replicates.documents import _trec_order

    rng = np.random.default_rng(seed)
    n = n_groups * size
    group = rng.integers(0, n_groups, n)
    score = rng.integers(0, 3, n).astype(float) if ties else rng.random(n)
    doc = rng.integers(0, 5 if ties else 10_000, n)
    if presorted:  # rankings contiguous and ordered, the rankings themselves in shuffled order
        o = np.lexsort((-doc, -score, group))
        group, score, doc = group[o], score[o], doc[o]
        perm = rng.permutation(n_groups)
        o = np.argsort(perm[group], kind="stable")
        group, score, doc = group[o], score[o], doc[o]
    np.testing.assert_array_equal(_trec_order(group, score, doc),
                                  np.lexsort((-doc, -score, group)))
