"""The shard study: fast sharded evaluation == irm.evaluate; every record recomputed by hand."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import irmodels as irm
from irmodels.data.measures import parse_measure, undefined_cells
from irmodels.errors import (
    ArgumentError,
    DataFormatError,
    DataQualityWarning,
    DesignError,
    IRModelsWarning,
    UndefinedValueWarning,
)
from irmodels.replicates.sharding import shard_labels
from irmodels.studies import _sharded, shard_study
from irmodels.studies._sharded import evaluate_assignment, fast_measure, prepare
from irmodels.studies.shard_study import (
    BY_MODEL_COLUMNS,
    RUN_COLUMNS,
    SUMMARY_COLUMNS,
    ShardStudy,
)


def toy_collection(seed: int = 3, n_docs: int = 500, topics: int = 6, systems: int = 5,
                   depth: int = 40, ties: bool = False, ragged: str = "no"):
    """Runs and qrels with topics of few relevant documents (so shards can be undefined).

    ``ragged``: ``"no"`` (every ranking ``depth`` long), ``"some"`` (lengths from depth / 2 to
    depth: the fast path pads them into a block) or ``"very"`` (one ranking of ``depth``, the
    others of 1-3 documents: too ragged to pad, one flat sort).
    """
    rng = np.random.default_rng(seed)
    docs = np.array([f"d{i}" for i in range(n_docs)])
    qrows, rrows = [], []
    for t in range(topics):
        judged = rng.choice(n_docs, 60, replace=False)
        n_rel = int(rng.integers(2, 12))
        # grades 0, 1, 2 and a few negative ("pooled, not judged") entries
        grades = [int(rng.integers(1, 3)) if i < n_rel else (-1 if i > 56 else 0)
                  for i in range(len(judged))]
        qrows += [(str(t + 1), docs[d], g) for d, g in zip(judged, grades)]
        rel = judged[:n_rel]
        for j in range(systems):
            k = int(rng.integers(1, n_rel + 1))
            others = rng.choice(np.setdiff1d(np.arange(n_docs), rel), depth - k, replace=False)
            picked = np.concatenate([rng.choice(rel, k, replace=False), others])
            score = rng.random(depth) + (np.arange(depth) < k) * 0.15 * j
            if ties:
                score = np.round(score, 1)
            keep = depth
            if ragged == "some":
                keep = int(rng.integers(depth // 2, depth + 1))
            elif ragged == "very" and (t, j) != (0, 0):
                keep = int(rng.integers(1, 4))
            picked, score = picked[:keep], score[:keep]
            rrows += [(f"run{j + 1}", str(t + 1), docs[d], float(v))
                      for d, v in zip(picked, score)]
    # a topic the qrels do not know: trec_eval ignores it
    rrows += [("run1", "99", docs[0], 1.0)]
    runs = pd.DataFrame(rrows, columns=["system", "topic", "docid", "score"])
    qrels = pd.DataFrame(qrows, columns=["topic", "docid", "rel"])
    return runs, qrels, docs


@pytest.fixture(scope="module")
def toy():
    return toy_collection()


@pytest.fixture(scope="module")
def study(toy) -> ShardStudy:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        return irm.studies.shards(toy, n_shards=[2, 3, 5], n_splits=3, seed=11)


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    key = ["topic", "system", "shard"]
    out = df.assign(**{c: df[c].astype(str) for c in key})
    return out.sort_values(key).reset_index(drop=True)


def _pairs(study: ShardStudy, key: tuple[str, int, int]) -> frozenset[tuple[str, str]]:
    """The significant pairs of one fit: kept as bits over the pairs (i < j) of sorted names."""
    levels = sorted(str(x) for x in study.reference.index)
    i, j = np.triu_indices(len(levels), 1)
    bits = np.unpackbits(study._sig[key], count=len(i)).astype(bool)
    return frozenset((levels[a], levels[b]) for a, b in zip(i[bits], j[bits]))


# --------------------------------------------------------------------------------------------
# the fast sharded evaluation equals irm.evaluate


@pytest.mark.parametrize("ragged", ["no", "some", "very"])
@pytest.mark.parametrize("measure", ["AP", "P@5", "RR", "GMAP", "R@5", "Rprec", "RBP(0.8)"])
@pytest.mark.parametrize("undefined", [0.0, 0.37, "drop", "missing"])
def test_fast_path_equals_evaluate(measure: str, undefined: float | str, ragged: str) -> None:
    runs, qrels, docs = toy_collection(seed=5, ties=True, ragged=ragged)
    prep = prepare(runs, qrels, pd.Index(docs), measure)
    # the three layouts: one block as it is, a padded block, one flat sort
    assert (prep.width > 0, prep.slot is not None) == {
        "no": (True, False), "some": (True, True), "very": (False, False)}[ragged]
    for n_shards, seed in ((1, 0), (3, 1), (8, 2)):
        labels = shard_labels(len(docs), n_shards, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedValueWarning)
            try:
                ref = irm.evaluate(runs, qrels, [measure], undefined=undefined,
                                   shards=pd.Series(labels, index=docs))
            except DataFormatError as exc:  # every topic dropped: both refuse
                assert undefined == "drop" and "every cell was dropped" in str(exc)
                with pytest.raises(DataFormatError, match="every cell was dropped"):
                    evaluate_assignment(prep, labels, n_shards, undefined)
                continue
        got, undef = evaluate_assignment(prep, labels, n_shards, undefined)
        r, g = _sorted(ref), _sorted(got)
        assert len(r) == len(g)
        assert (r[["topic", "system", "shard"]].to_numpy() == g[["topic", "system", "shard"]]
                .to_numpy()).all()
        np.testing.assert_allclose(g["score"], r["score"], rtol=0, atol=1e-12)
        ru = undefined_cells(ref)
        assert sorted(zip(ru["topic"].astype(str), ru["shard"].astype(str))) == \
            sorted(zip(undef["topic"], undef["shard"]))
        assert list(got.columns) == ["measure", "topic", "system", "shard", "score"]


@pytest.mark.parametrize("presorted", [False, True])
def test_fast_path_whole_collection_equals_plain_evaluate(toy, presorted: bool) -> None:
    runs, qrels, docs = toy
    if presorted:  # already in trec_eval order: the encoding skips its sort
        runs = runs.assign(_n=runs["system"].str[3:].astype(int),
                           _t=runs["topic"].astype(int))
        runs = runs.sort_values(["_n", "_t", "score", "docid"],
                                ascending=[True, True, False, False]).drop(columns=["_n", "_t"])
    prep = prepare(runs, qrels, pd.Index(docs), "AP")
    got, _ = evaluate_assignment(prep, np.ones(len(docs), dtype=np.int64), 1, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        ref = irm.evaluate(runs, qrels, ["AP"])
    key = ["topic", "system"]
    r = ref.assign(**{c: ref[c].astype(str) for c in key}).sort_values(key)
    g = got.assign(**{c: got[c].astype(str) for c in key}).sort_values(key)
    assert r[key].to_numpy().tolist() == g[key].to_numpy().tolist()
    assert g["shard"].astype(str).eq("1").all()
    np.testing.assert_allclose(g["score"].to_numpy(), r["score"].to_numpy(), atol=1e-12)


def test_fast_measure_names() -> None:
    assert fast_measure("AP") == parse_measure("AP")
    assert fast_measure("P_10") == parse_measure("P@10")
    assert fast_measure("RR") == parse_measure("RR")
    assert fast_measure("nDCG@10") is None
    with pytest.raises(DataFormatError, match="no fast sharded path"):
        prepare(pd.DataFrame(), pd.DataFrame(), pd.Index([]), "nDCG@10")


def test_documents_missing_from_the_list(toy) -> None:
    runs, qrels, docs = toy
    with pytest.raises(DataFormatError, match="not in the document list"):
        prepare(runs, qrels, pd.Index(docs[:100]), "AP")


# --------------------------------------------------------------------------------------------
# encoding the runs in parts (threads) gives the encoding of the whole, array for array


def _assert_same_preparation(a, b) -> None:
    for name in a.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert x is not None and y is not None, name
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert np.array_equal(x, y), name
        else:
            assert x == y, name


def _reordered(runs: pd.DataFrame, order: str, seed: int) -> pd.DataFrame:
    """The toy runs in one of the row orders a runs frame comes in."""
    rng = np.random.default_rng(seed)
    if order == "trec":  # trec_eval's order already: the parts keep their rows
        n = runs["system"].str[3:].astype(int)
        t = pd.to_numeric(runs["topic"])
        return (runs.assign(_n=n, _t=t)
                .sort_values(["_n", "_t", "score", "docid"],
                             ascending=[True, True, False, False])
                .drop(columns=["_n", "_t"]).reset_index(drop=True))
    if order == "systems shuffled":  # each ranking contiguous, systems in no order
        systems = runs["system"].unique()
        rank = dict(zip(rng.permutation(systems), range(len(systems))))
        return runs.iloc[np.argsort(runs["system"].map(rank).to_numpy(), kind="stable")]
    if order == "rows shuffled":  # rankings interleaved: one part
        return runs.iloc[rng.permutation(len(runs))]
    return runs  # as generated: each ranking contiguous, scores in no order (parts resort)


@settings(max_examples=25, deadline=None,  # the patched constant is the same for every example
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), threads=st.integers(2, 5),
       order=st.sampled_from(["generated", "trec", "systems shuffled", "rows shuffled"]),
       ragged=st.sampled_from(["no", "some", "very"]))
def test_prepare_in_parts_equals_one_part(monkeypatch, seed: int, threads: int, order: str,
                                          ragged: str) -> None:
    monkeypatch.setattr(_sharded, "MIN_PART_ROWS", 1)  # split even a toy collection
    runs, qrels, docs = toy_collection(seed=seed, n_docs=150, topics=4, systems=6, depth=40,
                                       ties=True, ragged=ragged)
    runs = _reordered(runs, order, seed)
    one = prepare(runs, qrels, pd.Index(docs), "AP")
    # a toy is cut into parts whatever its order (interleaved rows are found by the merge)
    assert len(_sharded._ranking_cuts(runs, threads)) > 2
    _assert_same_preparation(one, prepare(runs, qrels, pd.Index(docs), "AP", threads=threads))


@pytest.mark.parametrize("ragged", ["no", "very"])
def test_interleaved_or_short_rankings_are_one_part(monkeypatch, ragged: str) -> None:
    monkeypatch.setattr(_sharded, "MIN_PART_ROWS", 1)
    runs, qrels, docs = toy_collection(seed=8, n_docs=500, topics=6 if ragged == "no" else 25,
                                       systems=12 if ragged == "no" else 60, depth=40,
                                       ragged=ragged)
    assert len(runs) >= 2 * 1024  # a window of at least 1,024 rows after the cut
    shuffled = _reordered(runs, "rows shuffled", 8)
    assert _sharded._ranking_cuts(shuffled, 2) == [0, len(runs)]
    # rankings of 40 rows are cut; rankings of 1-3 rows look interleaved: one part
    assert (len(_sharded._ranking_cuts(runs, 2)) > 2) == (ragged == "no")
    for frame in (runs, shuffled):
        _assert_same_preparation(prepare(frame, qrels, pd.Index(docs), "AP"),
                                 prepare(frame, qrels, pd.Index(docs), "AP", threads=2))


def test_prepare_in_parts_when_a_part_fails_or_shares_a_ranking(monkeypatch, toy) -> None:
    monkeypatch.setattr(_sharded, "MIN_PART_ROWS", 1)
    runs, qrels, docs = toy
    index = pd.Index(docs)
    # a second half of topics the qrels do not know: that part alone is refused, the whole is
    # not (trec_eval skips those topics)
    unknown = runs.assign(topic="99", system=runs["system"] + "x")
    both = pd.concat([runs, unknown], ignore_index=True)
    assert _sharded._ranking_cuts(both, 2)[1] == len(runs)
    with pytest.raises(DataFormatError, match="no topic of the runs"):
        prepare(unknown, qrels, index, "AP")
    _assert_same_preparation(prepare(both, qrels, index, "AP"),
                             prepare(both, qrels, index, "AP", threads=2))
    # one ranking in both parts: encoded again as one (where its rows are brought together)
    first = runs.index[(runs["system"] == "run1") & (runs["topic"] == "1")]
    split = pd.concat([runs.drop(first[:5]), runs.loc[first[:5]]], ignore_index=True)
    assert 40 < _sharded._ranking_cuts(split, 2)[1] < len(split) - 5
    _assert_same_preparation(prepare(split, qrels, index, "AP"),
                             prepare(split, qrels, index, "AP", threads=2))
    # errors read as one encoding's: counts over all the runs, the first case found
    judged = set(qrels["docid"])
    head, tail = runs["docid"].iloc[:100], runs["docid"].iloc[-100:-1]
    unjudged = [next(d for d in head if d not in judged),
                next(d for d in tail if d not in judged and d not in set(head))]
    bad_index = pd.Index([d for d in docs if d not in unjudged])
    assert len(bad_index) == len(docs) - 2  # retrieved in the first part and in the last
    with pytest.raises(DataFormatError, match="retrieved document") as whole:
        prepare(runs, qrels, bad_index, "AP")
    with pytest.raises(DataFormatError) as parts:
        prepare(runs, qrels, bad_index, "AP", threads=3)
    assert str(parts.value) == str(whole.value)
    at = [10, len(runs) - 30]  # a document twice within its ranking, in two parts
    dup = pd.concat([runs.iloc[:at[0]], runs.iloc[[at[0]]], runs.iloc[at[0]:at[1]],
                     runs.iloc[[at[1]]], runs.iloc[at[1]:]], ignore_index=True)
    with pytest.raises(DataFormatError, match="2 document.s. appear twice") as whole:
        prepare(dup, qrels, index, "AP")
    with pytest.raises(DataFormatError) as parts:
        prepare(dup, qrels, index, "AP", threads=3)
    assert str(parts.value) == str(whole.value)


def test_processes_study_encodes_in_threads_and_equals_serial(monkeypatch, toy) -> None:
    calls = []
    real = _sharded.prepare

    def spy(*args, **kwargs):
        calls.append(kwargs.get("threads", 1))
        return real(*args, **kwargs)

    monkeypatch.setattr(shard_study, "prepare", spy)  # where the study looks it up
    monkeypatch.setattr(_sharded, "MIN_PART_ROWS", 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        kw = {"n_shards": [2, 4], "n_splits": 2, "seed": 5, "models": ["MD1", "MD6"]}
        serial = irm.studies.shards(toy, **kw)
        procs = irm.studies.shards(toy, backend="processes", n_workers=3, **kw)
    assert calls == [1, 3]
    pd.testing.assert_frame_equal(serial.runs, procs.runs, check_exact=True)


# --------------------------------------------------------------------------------------------
# the records, recomputed from the public pieces


def test_runs_table_shape(study: ShardStudy) -> None:
    runs = study.runs
    assert tuple(runs.columns) == RUN_COLUMNS
    assert len(runs) == 1 + 3 * 3 * 5
    md1 = runs[runs["model"] == "MD1"]
    assert len(md1) == 1 and md1["n_shards"].iloc[0] == 1
    assert md1["tau"].iloc[0] == pytest.approx(1.0, abs=1e-12)
    assert runs.groupby("model").size().to_dict() == {"MD1": 1, "MD2": 9, "MD3": 9,
                                                     "MD4": 9, "MD5": 9, "MD6": 9}
    assert (runs["n_significant"] + runs["n_not_significant"]).eq(10).all()
    assert runs["n_systems"].eq(5).all() and runs["n_topics"].eq(6).all()


@pytest.mark.parametrize("n_shards,split", [(3, 2), (5, 0)])
def test_record_matches_a_direct_fit(toy, study: ShardStudy, n_shards: int, split: int) -> None:
    runs, qrels, docs = toy
    child = np.random.SeedSequence(11, spawn_key=(n_shards,)).spawn(3)[split]
    assignment = irm.replicates.assign_shards(docs, n_shards, seed=child)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        data = irm.evaluate(runs, qrels, ["AP"], shards=assignment, undefined=0.0)
        whole = irm.evaluate(runs, qrels, ["AP"])
        ref_means = irm.anova("MD1", whole).marginal_means("system")
        for model in ("MD2", "MD3", "MD4", "MD5", "MD6"):
            fit = irm.anova(model, data)
            hsd = fit.tukey("system")
            rec = study.runs.query("model == @model and n_shards == @n_shards and split == @split")
            assert len(rec) == 1
            rec = rec.iloc[0]
            assert rec["omega2_system"] == pytest.approx(fit.table.loc["system", "omega2_partial"],
                                                         rel=1e-12, abs=1e-15)
            assert rec["F_system"] == pytest.approx(fit.table.loc["system", "F"], rel=1e-12)
            assert rec["ms_error"] == pytest.approx(fit.ms_error, rel=1e-12)
            assert rec["df_error"] == fit.df_resid
            assert rec["n_significant"] == hsd.n_significant
            assert rec["top_group"] == len(hsd.top_group)
            # the width from its definition: Q(alpha; R, df_e) * sqrt(MS_e / (T*S))
            q = float(irm.qtukey(0.95, 5, fit.df_resid))
            width = q * math.sqrt(fit.ms_error / (6 * n_shards))
            assert rec["ci_width"] == pytest.approx(width, rel=1e-6)
            tau = stats.kendalltau(fit.marginal_means("system").reindex(ref_means.index),
                                   ref_means).statistic
            assert rec["tau"] == pytest.approx(tau, abs=1e-12)
            assert rec["n_undefined"] == len(undefined_cells(data))
            assert _pairs(study, (model, n_shards, split)) == {
                tuple(sorted((a, b))) for a, b, r in
                hsd.pairs[["a", "b", "reject"]].itertuples(index=False) if r}


def test_summary_from_runs(study: ShardStudy) -> None:
    summ = study.summary_table()
    assert tuple(summ.columns) == SUMMARY_COLUMNS
    assert list(summ.index) == [2, 3, 5]
    md6 = study.runs[study.runs["model"] == "MD6"]
    for s in (2, 3, 5):
        g = md6[md6["n_shards"] == s]
        tau = g["tau"].to_numpy()
        half = stats.t.ppf(0.975, 2) * tau.std(ddof=1) / math.sqrt(3)
        assert summ.loc[s, "tau"] == pytest.approx(tau.mean(), abs=1e-14)
        assert summ.loc[s, "tau_lower"] == pytest.approx(max(tau.mean() - half, -1), abs=1e-12)
        assert summ.loc[s, "tau_upper"] == pytest.approx(min(tau.mean() + half, 1), abs=1e-12)
        assert summ.loc[s, "ci_width"] == pytest.approx(g["ci_width"].mean(), rel=1e-14)
        assert summ.loc[s, "n_significant"] == pytest.approx(g["n_significant"].mean())
        sets = [_pairs(study, ("MD6", s, k)) for k in range(3)]
        in_all = frozenset.intersection(*sets)
        assert summ.loc[s, "sig_all_splits"] == len(in_all)
        assert summ.loc[s, "frac_sig_all_splits"] == pytest.approx(len(in_all) / 10)
        pairs = study.significant_pairs("MD6", s)
        assert set(zip(pairs.loc[pairs["all_splits"], "a"], pairs.loc[pairs["all_splits"], "b"])) \
            == set(in_all)
        assert pairs["n_splits"].sum() == sum(len(x) for x in sets)


def test_by_model_changes(study: ShardStudy) -> None:
    table = study.by_model(3)
    assert tuple(table.columns) == BY_MODEL_COLUMNS
    assert list(table.index) == ["MD1", "MD2", "MD3", "MD4", "MD5", "MD6"]
    runs = study.runs
    md4 = runs[(runs["model"] == "MD4") & (runs["n_shards"] == 3)]
    md3 = runs[(runs["model"] == "MD3") & (runs["n_shards"] == 3)]
    assert table.loc["MD4", "ci_width"] == pytest.approx(md4["ci_width"].mean())
    expected = 100 * (md4["ci_width"].mean() - md3["ci_width"].mean()) / md3["ci_width"].mean()
    assert table.loc["MD4", "ci_width_change"] == pytest.approx(expected, rel=1e-12)
    assert table.loc["MD1", "omega2_system"] == runs.loc[runs["model"] == "MD1",
                                                        "omega2_system"].iloc[0]
    assert table.iloc[0][[c for c in table.columns if c.endswith("_change")]].isna().all()
    assert list(study.by_model().index) == list(table.index)  # default S = 5


def test_undefined_constant_does_not_change_md6(toy) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        a = irm.studies.shards(toy, n_shards=[4], n_splits=2, seed=3, undefined=0.0)
        b = irm.studies.shards(toy, n_shards=[4], n_splits=2, seed=3, undefined=0.6)
    assert a.runs["n_undefined"].sum() > 0
    ra = a.runs.set_index(["model", "n_shards", "split"]).sort_index()
    rb = b.runs.set_index(["model", "n_shards", "split"]).sort_index()
    md6 = ("MD6", 4)
    for col in ("F_system", "omega2_system", "ms_error", "ci_width"):
        np.testing.assert_allclose(ra.loc[md6, col], rb.loc[md6, col], rtol=1e-9)
    for col in ("n_significant", "top_group"):
        assert ra.loc[md6, col].tolist() == rb.loc[md6, col].tolist()
    assert _pairs(a, ("MD6", 4, 1)) == _pairs(b, ("MD6", 4, 1))
    # MD2-MD5: the rankings (mean differences) are free of x, so tau is too
    shard = ra.loc[ra.index.get_level_values("model") != "MD1"]
    np.testing.assert_allclose(shard["tau"], rb.loc[shard.index, "tau"], atol=1e-12)
    assert not np.allclose(ra.loc[("MD2", 4), "ms_error"], rb.loc[("MD2", 4), "ms_error"])


def test_backends_give_identical_studies(toy, study: ShardStudy) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        procs = irm.studies.shards(toy, n_shards=[3, 5], n_splits=2, seed=11,
                                   models=["MD1", "MD3", "MD6"], backend="processes",
                                   n_workers=2)
        serial = irm.studies.shards(toy, n_shards=[3, 5], n_splits=2, seed=11,
                                    models=["MD1", "MD3", "MD6"])
    pd.testing.assert_frame_equal(serial.runs, procs.runs)
    assert serial._sig.keys() == procs._sig.keys()
    assert all(_pairs(serial, k) == _pairs(procs, k) for k in serial._sig)
    # a unit does not depend on the other S or splits in the study: S = 3 splits 0-1 are the
    # same here as in the larger study
    sub = study.runs.query("n_shards == 3 and split < 2 and model in ['MD3', 'MD6']")
    sub = sub.reset_index(drop=True)
    pd.testing.assert_frame_equal(
        serial.runs.query("n_shards == 3").reset_index(drop=True), sub)


def test_slow_path_measure(toy) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        st = irm.studies.shards(toy, n_shards=[2], n_splits=1, models=["MD1", "MD6"],
                                measure="nDCG@10", seed=0)
        runs, qrels, docs = toy
        child = np.random.SeedSequence(0, spawn_key=(2,)).spawn(1)[0]
        data = irm.evaluate(runs, qrels, ["nDCG@10"],
                            shards=irm.replicates.assign_shards(docs, 2, seed=child))
        fit = irm.anova("MD6", data)
    rec = st.runs[st.runs["model"] == "MD6"].iloc[0]
    assert st.measure == "nDCG@10"
    assert rec["omega2_system"] == pytest.approx(fit.table.loc["system", "omega2_partial"])


def test_undefined_warning_is_issued_once(toy) -> None:
    with pytest.warns(UndefinedValueWarning, match=r"\(topic, shard\) cells.*replaced by 0") as rec:
        irm.studies.shards(toy, n_shards=[5], n_splits=2, models=["MD6"], seed=0)
    assert len([w for w in rec if issubclass(w.category, UndefinedValueWarning)]) == 1
    assert rec[0].filename == __file__


def test_drop_policy_runs(toy) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        st = irm.studies.shards(toy, n_shards=[2], n_splits=3, models=["MD1", "MD6"],
                                undefined="drop", seed=0)
    md6 = st.runs[st.runs["model"] == "MD6"]
    assert ((6 - md6["n_topics"]) > 0).to_numpy().tolist() == (md6["n_undefined"] > 0).tolist()
    assert (md6["n_topics"] >= 2).all()


def test_docids_from_union_when_missing(toy) -> None:
    runs, qrels, _ = toy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        with pytest.warns(DataQualityWarning, match="unjudged|no run retrieved"):
            st = irm.studies.shards((runs, qrels), n_shards=[2], n_splits=1, models=["MD6"])
    assert len(st.runs) == 1


# --------------------------------------------------------------------------------------------
# display, plot, report


def test_display(study: ShardStudy) -> None:
    text = str(study)
    assert text.startswith("Shard study: AP, S in {2, 3, 5}, 3 split(s) each")
    assert "MD6 per number of shards" in text
    tex = study.to_latex(caption="Shards", label="tab:shards")
    assert r"\toprule" in tex and r"\label{tab:shards}" in tex and "significant" in tex
    assert "<table" in study._repr_html_()
    assert repr(study) == ("<ShardStudy measure='AP', n_shards=(2, 3, 5), n_splits=3, "
                           "models=('MD1', 'MD2', 'MD3', 'MD4', 'MD5', 'MD6'), fits=46>")


def test_plot_intervals(study: ShardStudy) -> None:
    fig = study.plot_intervals(3, split=1)
    axes = fig.get_axes()
    assert len(axes) == 6
    # the error bars of MD6 have the study's half width
    half = study.runs.query("model == 'MD6' and n_shards == 3 and split == 1")["ci_width"].iloc[0]
    assert "Tukey interval width" in axes[-1].get_title()
    assert f"{half:.4f}" in axes[-1].get_title()
    with pytest.raises(DesignError, match="split must be"):
        study.plot_intervals(3, split=3)
    with pytest.raises(DesignError, match="no S = 7"):
        study.plot_intervals(7)


def test_report_section(study: ShardStudy) -> None:
    report = pytest.importorskip("irmodels.reporting.report")
    section = study.to_section()
    assert isinstance(section, report.Section)
    assert section.title == "Shard study"
    assert "data:image/png;base64" in section.html and "<table" in section.html
    assert "MD6 per number of shards" in section.markdown
    assert r"\begin{tabular}" in section.latex


# --------------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"n_shards": [1, 2]}, "integers >= 2"),
        ({"n_shards": []}, "non-empty"),
        ({"n_shards": [2, 2]}, "repeats"),
        ({"n_shards": [501]}, "cannot split 500 documents into 501"),
        ({"n_splits": 0}, "n_splits must be a positive integer"),
        ({"models": ["MD7"]}, "unknown model 'MD7'"),
        ({"alpha": 1.5}, r"alpha must be in \(0, 1\)"),
    ],
)
def test_bad_arguments(toy, kwargs: dict, match: str) -> None:
    # a bad value (ArgumentError) vs. a design the collection cannot support (DesignError)
    error = ArgumentError if {"alpha", "n_splits"} & set(kwargs) else DesignError
    with pytest.raises(error, match=match):
        irm.studies.shards(toy, **kwargs)


@pytest.mark.parametrize("n_workers", [0, -2, 1.5, "2", True])
def test_bad_worker_count_fails_before_the_encoding(monkeypatch, toy, n_workers) -> None:
    def not_called(*args, **kwargs):
        raise AssertionError("the runs were encoded before n_workers was checked")

    monkeypatch.setattr(_sharded, "prepare", not_called)
    with pytest.raises(irm.parallel.ParallelError, match="n_workers must be a positive integer"):
        irm.studies.shards(toy, backend="processes", n_workers=n_workers)


def test_bad_collection() -> None:
    with pytest.raises(DataFormatError, match=r"\.runs, \.qrels and \.docids"):
        irm.studies.shards("trec8")
    with pytest.raises(DataFormatError, match="no column 'rel'"):
        irm.studies.shards((pd.DataFrame({"system": [], "topic": [], "docid": [], "score": []}),
                            pd.DataFrame({"topic": [], "docid": []}), ["a"]))


def test_bad_queries(study: ShardStudy) -> None:
    with pytest.raises(DesignError, match="no S = 4"):
        study.by_model(4)
    with pytest.raises(DesignError, match="did not fit"):
        study.summary_table("MD7")
    with pytest.raises(DesignError, match="whole collection only"):
        study.summary_table("MD1")


def test_missing_policy_uses_least_squares(toy) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        st = irm.studies.shards(toy, n_shards=[4], n_splits=1, models=["MD1", "MD2", "MD6"],
                                undefined="missing", seed=3)
        runs, qrels, docs = toy
        child = np.random.SeedSequence(3, spawn_key=(4,)).spawn(1)[0]
        data = irm.evaluate(runs, qrels, ["AP"], undefined="missing",
                            shards=irm.replicates.assign_shards(docs, 4, seed=child))
        fit = irm.anova("MD6", data)
    assert not fit.balanced
    rec = st.runs[st.runs["model"] == "MD6"].iloc[0]
    assert rec["n_undefined"] > 0
    assert rec["F_system"] == pytest.approx(fit.table.loc["system", "F"], rel=1e-9)
    assert rec["df_error"] == fit.df_resid


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_shards=st.integers(1, 12),
       undefined=st.sampled_from([0.0, 0.25, "drop", "missing"]),
       measure=st.sampled_from(["AP", "P@3", "RR", "GMAP", "AP@5", "R@3", "Rprec",
                                "RBP(0.5)", "num_rel_ret"]),
       ragged=st.sampled_from(["no", "some", "very"]))
def test_property_fast_path_equals_evaluate(seed: int, n_shards: int, undefined: object,
                                            measure: str, ragged: str) -> None:
    runs, qrels, docs = toy_collection(seed=seed % 1000, n_docs=120, topics=3, systems=3,
                                       depth=15, ties=True, ragged=ragged)
    labels = shard_labels(len(docs), n_shards, seed)
    prep = prepare(runs, qrels, pd.Index(docs), measure)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        try:
            ref = irm.evaluate(runs, qrels, [measure], undefined=undefined,
                               shards=pd.Series(labels, index=docs))
        except DataFormatError:
            with pytest.raises(DataFormatError):
                evaluate_assignment(prep, labels, n_shards, undefined)
            return
    got, _ = evaluate_assignment(prep, labels, n_shards, undefined)
    r, g = _sorted(ref), _sorted(got)
    assert r[["topic", "system", "shard"]].to_numpy().tolist() == \
        g[["topic", "system", "shard"]].to_numpy().tolist()
    np.testing.assert_allclose(g["score"], r["score"], rtol=0, atol=1e-12)
