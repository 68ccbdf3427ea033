"""The synthetic demo collection: reproducibility, contract, and TREC-like structure."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.data.collection import PRESETS, DemoCollection
from irmodels.errors import UndefinedValueWarning


@pytest.fixture(scope="module")
def trec8_20():
    """The trec8 preset (50 topics, depth 1000, 100k documents) with 20 systems, for speed.

    Relevant counts are drawn before anything that depends on the number of systems, so they
    are those of the full preset.
    """
    return irm.collection.generate(systems=20, seed=0)


@pytest.fixture(scope="module")
def small():
    return irm.collection.generate(preset="small", seed=0)


def test_reproducible_and_seed_dependent():
    a = irm.collection.generate(preset="tiny", seed=5)
    b = irm.collection.generate(preset="tiny", seed=5)
    c = irm.collection.generate(preset="tiny", seed=6)
    pd.testing.assert_frame_equal(a.runs, b.runs)
    pd.testing.assert_frame_equal(a.qrels, b.qrels)
    np.testing.assert_array_equal(a.docids, b.docids)
    assert not a.runs["score"].equals(c.runs["score"])


def test_contract_columns_and_types(small):
    col = small
    assert isinstance(col, DemoCollection)
    assert list(col.runs.columns) == ["system", "topic", "docid", "score", "rank"]
    assert list(col.qrels.columns) == ["topic", "docid", "rel"]
    for c in ("system", "topic", "docid"):
        assert pd.api.types.is_string_dtype(col.runs[c].dtype)
    assert col.runs["score"].dtype == np.float64 and col.runs["rank"].dtype == np.int64
    assert col.qrels["rel"].dtype == np.int64
    assert set(col.qrels["rel"].unique()) == {0, 1, 2}
    assert col.topics == tuple(str(i) for i in range(1, 21))
    assert len(col.systems) == 12 and col.systems[0] == "sys01"
    assert len(col.docids) == PRESETS["small"]["n_docs"] and col.depth == 200
    # depth per (system, topic), ranks 1..depth, no duplicate documents in a ranking
    sizes = col.runs.groupby(["system", "topic"]).size()
    assert len(sizes) == 12 * 20 and (sizes == 200).all()
    assert not col.runs.duplicated(["system", "topic", "docid"]).any()
    assert not col.qrels.duplicated(["topic", "docid"]).any()
    assert set(col.runs["docid"]).issubset(set(col.docids))


def test_runs_are_in_trec_eval_order(small):
    r = small.runs
    # the generator writes rankings in trec_eval order (score desc, ties by docid desc) with
    # ranks 1..depth
    same = (r["system"].shift() == r["system"]) & (r["topic"].shift() == r["topic"])
    prev_score, prev_doc = r["score"].shift(), r["docid"].shift()
    ok = (r["score"] < prev_score) | ((r["score"] == prev_score) & (r["docid"] < prev_doc))
    assert ok[same].all()
    assert (r.loc[same, "rank"].to_numpy() == r["rank"].shift()[same].to_numpy() + 1).all()
    assert (r.loc[~same, "rank"] == 1).all()


def test_pool_judged_and_relevant_retrieved(small):
    col = small
    top = col.runs[col.runs["rank"] <= 100]
    judged = set(zip(col.qrels["topic"], col.qrels["docid"]))
    assert set(zip(top["topic"], top["docid"])) <= judged  # the depth-100 pool is judged


def test_relevant_counts_spread_like_ad_hoc_collections(trec8_20):
    n_rel = trec8_20.qrels[trec8_20.qrels["rel"] > 0].groupby("topic").size()
    assert len(n_rel) == 50
    assert (n_rel < 5).sum() >= 2  # a few topics with under 5 relevant documents
    assert 50 <= n_rel.median() <= 100
    assert n_rel.max() >= 300  # a long tail to several hundred
    assert n_rel.quantile(0.9) > 3 * n_rel.median() / 2


def test_ap_matrix_looks_like_trec8(trec8_20):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        f = trec8_20.evaluate(["AP", "P@10"])
    ap = irm.to_wide(f[f["measure"] == "AP"].drop(columns="measure"))
    assert ap.shape == (50, 20)
    mean = ap.to_numpy().mean()
    assert 0.1 <= mean <= 0.35
    sys_means = ap.mean(axis=0)
    topic_means = ap.mean(axis=1)
    assert sys_means.max() - sys_means.min() > 0.15  # systems of clearly different quality
    assert sys_means.nunique() == 20
    assert topic_means.std() > sys_means.std()  # the topic effect is larger
    # latent skill is recovered by the system means (rank correlation)
    skill = trec8_20.latent.groupby("system")["skill"].first()
    rho = pd.Series(sys_means).rank().corr(skill.loc[sys_means.index].rank())
    assert rho > 0.8


def test_presets_and_overrides():
    tiny = irm.collection.generate(preset="tiny")
    assert (len(tiny.topics), len(tiny.systems), tiny.depth) == (5, 4, 50)
    custom = irm.collection.generate(7, 3, preset="tiny", depth=20, n_docs=500)
    assert (len(custom.topics), len(custom.systems), custom.depth, len(custom.docids)) == \
        (7, 3, 20, 500)
    assert len(custom.runs) == 7 * 3 * 20
    assert "7 topics x 3 systems" in repr(custom)


@pytest.mark.parametrize("kwargs,match", [
    ({"preset": "trec9"}, "unknown preset"),
    ({"topics": 0, "preset": "tiny"}, "topics must be a whole number >= 1"),
    ({"systems": 2.5, "preset": "tiny"}, "systems must be"),
    ({"preset": "tiny", "n_docs": 100}, "too small for depth"),
    ({"preset": "tiny", "seed": -1}, "seed must be"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(irm.ArgumentError, match=match):
        irm.collection.generate(**kwargs)


def test_write_round_trip(tmp_path):
    col = irm.collection.generate(preset="tiny", seed=2)
    out = col.write(tmp_path / "demo")
    assert (out / "docids.txt").read_text().split() == list(col.docids)
    runs = irm.read_runs(out / "runs")
    qrels = irm.read_qrels(out / "qrels.txt")
    assert len(runs) == len(col.runs) and len(qrels) == len(col.qrels)
    a = col.evaluate(["AP", "nDCG@10", "P@5"])
    b = irm.evaluate(runs, qrels, ["AP", "nDCG@10", "P@5"])
    np.testing.assert_array_equal(a["score"].to_numpy(), b["score"].to_numpy())
    merged = runs.merge(col.runs, on=["system", "topic", "docid"], suffixes=("_f", "_m"))
    assert len(merged) == len(col.runs)
    assert (merged["score_f"] == merged["score_m"]).all()  # 6 decimals round-trip exactly
    assert (merged["rank_f"] == merged["rank_m"]).all()


def test_collection_is_accepted_by_evaluate():
    col = irm.collection.generate(preset="tiny", seed=4)
    a = irm.evaluate(col, col.qrels, ["AP"])
    b = col.evaluate("AP")
    pd.testing.assert_frame_equal(a, b)
    shards = {d: str(i % 2) for i, d in enumerate(col.docids)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedValueWarning)
        s = col.evaluate("AP", shards=shards)
    assert set(s["shard"].astype(str)) == {"0", "1"}
    assert len(s) == 2 * len(a)


def test_same_seed_same_collection_on_every_numpy() -> None:
    """The tiny demo collection for seed 0, byte for byte (runs written with 6 decimals, qrels).

    The fingerprint was recorded with numpy 2.4 and checked on numpy 1.26 (`make test-min`):
    generation must not depend on an order numpy leaves unspecified (``np.argpartition``)."""
    import hashlib

    c = irm.collection.generate(preset="tiny", seed=0)
    h = hashlib.sha256()
    h.update(c.runs.to_csv(index=False, float_format="%.6f").encode())
    h.update(c.qrels.to_csv(index=False).encode())
    assert h.hexdigest() == "bd52a139f00b71ce0c0624b63eca58491c56c8c167c3b601599ce6c84eb66ce3"


def test_a_collection_too_large_for_memory_is_refused_before_any_work():
    # 1e11 ranked documents would exhaust memory after minutes; refused at once, with the sizes
    from irmodels.data.collection import MAX_ROWS

    with pytest.raises(irm.ArgumentError, match=r"1,000,000 topics x 100 systems x depth 1,000"):
        irm.collection.generate(topics=1_000_000)
    # just over the limit (1,000 rows more) is refused too
    with pytest.raises(irm.ArgumentError, match="limit of 100,000,000"):
        irm.collection.generate(topics=MAX_ROWS // 1000 + 1, systems=1000, depth=1)
