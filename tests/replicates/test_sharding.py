"""Random even-sized shards of a document collection; doc-id files; the union fallback."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.replicates.sharding import (
    assign_shards as shards,
)
from irmodels.replicates.sharding import (
    docids_from,
    read_docids,
    shard_sizes,
    shard_splits,
)

DOCS = [f"FT{i:05d}" for i in range(1003)]


def test_public_names() -> None:
    assert irm.replicates.assign_shards is shards
    assert irm.replicates.shard_splits is shard_splits


@pytest.mark.parametrize("n_shards", [1, 2, 3, 7, 10, 50, 1003])
def test_sizes_differ_by_at_most_one(n_shards: int) -> None:
    a = shards(DOCS, n_shards, seed=5)
    sizes = shard_sizes(a)
    assert sizes.index.tolist() == list(range(1, n_shards + 1))
    assert sizes.sum() == len(DOCS)
    assert sizes.max() - sizes.min() <= 1
    # the first N mod S shards hold the extra document
    q, r = divmod(len(DOCS), n_shards)
    assert sizes.tolist() == [q + 1] * r + [q] * (n_shards - r)


def test_shape_and_types() -> None:
    a = shards(DOCS, 4, seed=0)
    assert a.name == "shard" and a.index.name == "docid"
    assert a.dtype == np.int64
    assert a.index.tolist() == DOCS  # input order kept
    assert str(a.index.dtype) == "str"


def test_reproducible_and_seed_dependent() -> None:
    a = shards(DOCS, 5, seed=11)
    b = shards(DOCS, 5, seed=11)
    c = shards(DOCS, 5, seed=12)
    pd.testing.assert_series_equal(a, b)
    assert not a.equals(c)
    # pinned: the labels are a numpy shuffle of 1..S,1..S,... under default_rng(seed)
    labels = np.arange(len(DOCS)) % 5 + 1
    np.random.default_rng(np.random.SeedSequence(11)).shuffle(labels)
    assert a.to_numpy().tolist() == labels.tolist()
    # a SeedSequence seed is accepted and equals the integer seed
    pd.testing.assert_series_equal(shards(DOCS, 5, seed=np.random.SeedSequence(11)), a)


def test_ids_compared_as_strings_and_any_iterable() -> None:
    a = shards(range(10), 3, seed=2)
    b = shards(np.array([str(i) for i in range(10)]), 3, seed=2)
    c = shards(pd.Index([str(i) for i in range(10)]), 3, seed=2)
    assert a.equals(b) and b.equals(c)


def test_splits_are_independent() -> None:
    splits = shard_splits(DOCS, 4, n_splits=10, seed=3)
    assert len(splits) == 10
    for s in splits:
        assert shard_sizes(s).max() - shard_sizes(s).min() <= 1
    # split k is the k-th spawned child, whatever n_splits
    children = np.random.SeedSequence(3).spawn(10)
    for k in (0, 4, 9):
        pd.testing.assert_series_equal(splits[k], shards(DOCS, 4, seed=children[k]))
    pd.testing.assert_series_equal(shard_splits(DOCS, 4, n_splits=2, seed=3)[1], splits[1])
    # pairs of splits agree about "same shard" for two documents about as often as chance:
    # P(same shard) = 1/S = 0.25 for independent splits; identical splits would give 1.
    for i in range(9):
        x, y = splits[i].to_numpy(), splits[i + 1].to_numpy()
        assert (x == y).mean() == pytest.approx(0.25, abs=0.06)
    # no two splits are equal up to relabelling: the contingency tables are not permutations
    for i in range(9):
        tab = pd.crosstab(splits[i].to_numpy(), splits[i + 1].to_numpy())
        assert (tab.to_numpy() > 0).all()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_docs=st.integers(1, 300), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_property_even_partition(n_docs: int, data: st.DataObject, seed: int) -> None:
    n_shards = data.draw(st.integers(1, n_docs))
    docs = [f"d{i}" for i in range(n_docs)]
    a = shards(docs, n_shards, seed=seed)
    counts = np.bincount(a.to_numpy(), minlength=n_shards + 1)[1:]
    assert counts.min() >= 1 and counts.max() - counts.min() <= 1
    assert set(a.unique()) == set(range(1, n_shards + 1))
    # permuting the input list permutes nothing but the order of the labels' owners
    assert len(a) == n_docs and a.index.is_unique


@pytest.mark.parametrize("n_shards", [0, -2])
def test_too_few_shards(n_shards: int) -> None:
    with pytest.raises(DesignError, match="at least 1"):
        shards(DOCS, n_shards, seed=0)


def test_too_many_shards() -> None:
    with pytest.raises(DesignError, match=r"cannot split 3 document\(s\) into 4 shards.*at most 3"):
        shards(["a", "b", "c"], 4, seed=0)


@pytest.mark.parametrize("bad", [2.0, "2", True])
def test_n_shards_must_be_integer(bad: object) -> None:
    with pytest.raises(DesignError, match="integer"):
        shards(DOCS, bad, seed=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [-1, 1.5, "x", np.random.default_rng(0)])
def test_bad_seed(seed: object) -> None:
    with pytest.raises(irm.ArgumentError, match="seed must be"):
        shards(DOCS, 2, seed=seed)  # type: ignore[arg-type]


def test_seed_none_draws_fresh_entropy() -> None:
    a, b = shards(DOCS, 2, seed=None), shards(DOCS, 2, seed=None)
    assert sorted(a.value_counts()) == sorted(b.value_counts())  # even sizes either way


def test_bad_docids() -> None:
    with pytest.raises(DataFormatError, match="appear more than once.*'b'"):
        shards(["a", "b", "b", "c"], 2, seed=0)
    with pytest.raises(DataFormatError, match="single string"):
        shards("abc", 2, seed=0)
    with pytest.raises(DataFormatError, match="missing"):
        shards(["a", None, "c"], 2, seed=0)
    with pytest.raises(ArgumentError, match="n_splits"):
        shard_splits(DOCS, 2, n_splits=0, seed=0)


def test_docids_from_union_warns() -> None:
    runs = pd.DataFrame({"system": ["r"] * 3, "topic": ["1"] * 3, "docid": ["d10", "d2", "d3"],
                         "score": [3.0, 2.0, 1.0], "rank": [1, 2, 3]})
    qrels = pd.DataFrame({"topic": ["1", "1"], "docid": ["d3", "d7"], "rel": [1, 0]})
    with pytest.warns(DataQualityWarning, match=r"4 documents.*unjudged|no run retrieved") as rec:
        ids = docids_from(runs, qrels)
    assert ids.tolist() == ["d2", "d3", "d7", "d10"]
    assert rec[0].filename == __file__  # stacklevel points at the caller
    with pytest.raises(DataFormatError, match="'docid' column"):
        docids_from(runs.drop(columns="docid"), qrels)


def test_read_docids(tmp_path) -> None:
    p = tmp_path / "ids.txt"
    p.write_text("# comment\nLA010189-0001\n  FT911-3  \n\nFBIS3-1\n", encoding="utf-8")
    assert read_docids(p).tolist() == ["LA010189-0001", "FT911-3", "FBIS3-1"]


def test_read_docids_errors_name_the_line(tmp_path) -> None:
    p = tmp_path / "ids.txt"
    p.write_text("a\nb c\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as info:
        read_docids(p)
    assert info.value.line == 2 and "found 2 fields" in str(info.value)
    assert str(info.value).startswith(f"{p}, line 2: ")

    p.write_text("a\nb\n\na\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"line 4: document id 'a' is repeated \(first on line 1\)"):
        read_docids(p)

    p.write_text("# only a comment\n\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="no document ids"):
        read_docids(p)
    with pytest.raises(FileNotFoundError):
        read_docids(tmp_path / "absent.txt")
