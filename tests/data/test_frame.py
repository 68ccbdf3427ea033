"""The long-frame contract (irmodels/data/frame.py): construction, conversions, balance, filters."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.data.frame import (
    CANONICAL_ORDER,
    factor_columns,
    natural_key,
    require_columns,
)
from irmodels.errors import DataFormatError, DataQualityWarning, DesignError


def _grid(topics=("1", "2", "10"), systems=("a", "b"), seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    idx = pd.MultiIndex.from_product([topics, systems], names=["topic", "system"])
    df = idx.to_frame(index=False)
    df["score"] = rng.uniform(size=len(df))
    return df


# --- natural order ---------------------------------------------------------------------------


def test_natural_key_orders_numbers_numerically() -> None:
    values = ["run10", "run2", "run1", "Run3", "10", "9", "a10b2", "a10b10", "a9", ""]
    assert sorted(values, key=natural_key) == [
        "", "9", "10", "Run3", "a9", "a10b2", "a10b10", "run1", "run2", "run10"]
    assert natural_key(301) == natural_key("301")
    # equal numbers written differently still have one order, whatever the input order
    assert sorted(["00", "0", "x01", "x1"], key=natural_key) == ["0", "00", "x01", "x1"]
    assert sorted(["x1", "x01", "0", "00"], key=natural_key) == ["0", "00", "x01", "x1"]
    # non-decimal digit characters are text, not numbers
    assert sorted(["\u00b2", "2"], key=natural_key) == ["2", "\u00b2"]


# --- frame() ---------------------------------------------------------------------------------


def test_frame_renames_orders_and_types() -> None:
    raw = pd.DataFrame({
        "value": [0.5, 0.25, 0.75, 1.0], "run": ["r10", "r2", "r10", "r2"],
        "qid": [10, 10, 9, 9], "shard": [1, 1, 1, 1], "measure": "AP", "extra": 1,
    })
    f = irm.frame(raw, topic="qid", system="run", score="value")
    assert list(f.columns) == ["measure", "topic", "system", "shard", "score"]
    assert list(f["topic"].cat.categories) == ["9", "10"]
    assert list(f["system"].cat.categories) == ["r2", "r10"]
    assert list(f["shard"].cat.categories) == ["1"]
    assert f["score"].dtype == np.float64
    assert f["score"].tolist() == [0.5, 0.25, 0.75, 1.0]  # row order kept
    assert isinstance(f.index, pd.RangeIndex)
    assert factor_columns(f) == ["measure", "topic", "system", "shard"]
    assert tuple(c for c in CANONICAL_ORDER if c in f.columns) == tuple(f.columns)


def test_frame_named_optional_columns() -> None:
    raw = pd.DataFrame({"t": ["1", "1"], "s": ["x", "x"], "y": [1, 2], "rep": [1, 2],
                        "coll": ["c", "c"], "m": ["AP", "AP"], "part": ["p", "p"]})
    f = irm.frame(raw, topic="t", system="s", score="y", sample="rep", collection="coll",
                  measure="m", shard="part")
    assert list(f.columns) == ["collection", "measure", "topic", "system", "shard", "sample",
                               "score"]
    assert f["score"].tolist() == [1.0, 2.0]


def test_frame_keeps_categorical_order_and_drops_unused_levels() -> None:
    raw = _grid()
    raw["system"] = pd.Categorical(raw["system"], categories=["z", "b", "a"])
    f = irm.frame(raw)
    assert list(f["system"].cat.categories) == ["b", "a"]


def test_frame_nan_policy() -> None:
    raw = _grid()
    raw.loc[[1, 4], "score"] = np.nan
    with pytest.raises(DataFormatError, match=r"2 score\(s\) are missing \(NaN\), e\.g\. \(topic 1, system b\), \(topic 10, system a\).*nan='drop'"):
        irm.frame(raw)
    with pytest.warns(DataQualityWarning, match=r"dropped 2 row\(s\) with a missing score"):
        f = irm.frame(raw, nan="drop")
    assert len(f) == 4 and not f["score"].isna().any()


def test_frame_duplicates() -> None:
    raw = pd.concat([_grid(), _grid().iloc[[0]]], ignore_index=True)
    with pytest.raises(DataFormatError, match=r"2 rows repeat the same \(topic, system\) key, e\.g\. topic=1, system=a.*shard=\.\.\. or sample=\.\.\."):
        irm.frame(raw)
    assert len(irm.frame(raw, duplicates="allow")) == 7


@pytest.mark.parametrize(
    ("data", "kwargs", "message"),
    [
        ([1, 2], {}, "expected a pandas DataFrame, got list"),
        (pd.DataFrame({"topic": [1], "score": [1.0]}), {},
         r"data has no column 'system'; columns present: 'topic', 'score'"),
        (pd.DataFrame({"q": [1], "system": ["a"], "score": [1.0]}), {"topic": "qid"},
         r"no column 'qid'.*irm\.frame\(df, topic='qid'"),
        (pd.DataFrame([[1, "a", 1.0, 2.0]], columns=["topic", "system", "score", "score"]), {},
         "column 'score' appears more than once"),
        (pd.DataFrame({"topic": [1, None], "system": ["a", "a"], "score": [1.0, 2.0]}), {},
         r"column 'topic' \(topic\) has 1 missing value"),
        (pd.DataFrame({"topic": [1], "system": ["a"], "score": [True]}), {},
         "score column 'score' is boolean"),
        (pd.DataFrame({"topic": [1, 2], "system": ["a", "a"], "score": ["0.5", "high"]}), {},
         r"score column 'score' has non-numeric value 'high' \(row 1\)"),
        (pd.DataFrame({"topic": [1], "system": ["a"], "score": [np.inf]}), {},
         r"score column 'score' has 1 infinite value\(s\), the first inf \(row 0\)"),
        (pd.DataFrame({"topic": [], "system": [], "score": []}), {}, "the data have no rows"),
    ],
)
def test_frame_errors(data, kwargs, message) -> None:
    with pytest.raises(DataFormatError, match=message):
        irm.frame(data, **kwargs)


def test_frame_numeric_strings_are_scores() -> None:
    f = irm.frame(pd.DataFrame({"topic": [1, 2], "system": "a", "score": ["0.5", "1e-3"]}))
    assert f["score"].tolist() == [0.5, 0.001]


def test_require_columns() -> None:
    require_columns(pd.DataFrame({"a": [1]}), ["a"])
    with pytest.raises(DataFormatError, match="runs has no column 'b', 'c'; columns present: 'a'"):
        require_columns(pd.DataFrame({"a": [1]}), ["b", "c"], "runs")


# --- wide <-> long ---------------------------------------------------------------------------


def test_to_wide_and_from_wide_round_trip() -> None:
    f = irm.frame(_grid())
    w = irm.to_wide(f)
    assert list(w.index) == ["1", "2", "10"] and list(w.columns) == ["a", "b"]
    assert w.index.name == "topic" and w.columns.name == "system"
    back = irm.from_wide(w)
    pd.testing.assert_frame_equal(back, f)


def test_from_wide_options() -> None:
    w = pd.DataFrame({"qid": ["q2", "q1"], "zeta": [0.1, 0.2], "alpha": [0.3, 0.4]})
    f = irm.from_wide(w, topic_column="qid", measure="P@10", collection="c")
    assert list(f.columns) == ["collection", "measure", "topic", "system", "score"]
    # the matrix's own order is kept, not the natural one
    assert list(f["topic"].cat.categories) == ["q2", "q1"]
    assert list(f["system"].cat.categories) == ["zeta", "alpha"]
    assert f["score"].tolist() == [0.1, 0.3, 0.2, 0.4]
    plain = irm.from_wide(pd.DataFrame({"a": [0.1, 0.2, 0.3]}))
    assert list(plain["topic"].cat.categories) == ["1", "2", "3"]


def test_from_wide_errors_and_nan() -> None:
    with pytest.raises(DataFormatError, match=r"repeats topic id\(s\) \['t1'\]"):
        irm.from_wide(pd.DataFrame({"a": [1.0, 2.0]}, index=["t1", "t1"]))
    dup = pd.DataFrame([[1.0, 2.0]], columns=["a", "a"])
    with pytest.raises(DataFormatError, match=r"repeats system name\(s\) \['a'\]"):
        irm.from_wide(dup)
    with pytest.raises(DataFormatError, match="wide matrix has no column 'qid'"):
        irm.from_wide(pd.DataFrame({"a": [1.0]}), topic_column="qid")
    w = pd.DataFrame({"a": [0.1, np.nan], "b": [np.nan, np.nan]})
    with pytest.raises(DataFormatError, match="3 score"):
        irm.from_wide(w)
    with pytest.warns(DataQualityWarning):
        f = irm.from_wide(w, nan="drop")
    # a system with no score left disappears from the categories
    assert list(f["system"].cat.categories) == ["a"] and len(f) == 1


def test_from_wide_labels_equal_as_text() -> None:
    # 1 and "1" are different columns of a DataFrame but one system of a long frame
    with pytest.raises(DataFormatError, match=r"system names '1' and 1, which are the same as "
                                              r"text \('1'\); .* rename one of them"):
        irm.from_wide(pd.DataFrame([[0.1, np.nan]], columns=pd.Index(["1", 1], dtype=object)),
                      nan="drop")
    with pytest.raises(DataFormatError, match=r"topic ids 2.0 and '2.0'"):
        irm.from_wide(pd.DataFrame({"a": [0.1, 0.2]}, index=pd.Index([2.0, "2.0"], dtype=object)))


def test_from_wide_keeps_labels_that_end_in_a_nul() -> None:
    # a numpy string array drops trailing NULs: "a\x00" became "a" (or a missing system) and
    # the frame came back without a word; the label is refused like any control character
    for wide in (pd.DataFrame([[0.1, 0.2]], columns=["a\x00", "b"]),
                 pd.DataFrame([[0.1, 0.2]], columns=["a\x00", "a"]),
                 pd.DataFrame([[0.1, 0.2]], columns=["a\x00", 1], index=["t"])):
        with pytest.raises(DataFormatError, match=r"label 'a\\x00' with the control character U\+0000"):
            irm.from_wide(wide)
    with pytest.raises(DataFormatError, match=r"\(topic\) has the label 't\\x00'"):
        irm.from_wide(pd.DataFrame({"a": [0.1]}, index=["t\x00"]))


_LABELS = st.sampled_from(["1", 1, "01", "a", "b", "run10", "run2", "x y", "é", 2.0, "2.0"])


def _from_wide_reference(wide: pd.DataFrame, nan: str) -> pd.DataFrame:
    """from_wide by its definition: one row per cell, labels as text, frame(), then the
    matrix's order for the categories."""
    topics = [str(t) for t in wide.index]
    systems = [str(s) for s in wide.columns]
    rows = [(t, s, float(wide.iat[i, j])) for i, t in enumerate(topics)
            for j, s in enumerate(systems)]
    long = pd.DataFrame({"topic": pd.Series([r[0] for r in rows], dtype=object),
                         "system": pd.Series([r[1] for r in rows], dtype=object),
                         "score": [r[2] for r in rows]})
    out = irm.frame(long, nan=nan)
    out["topic"] = out["topic"].cat.set_categories(
        [t for t in topics if t in set(out["topic"].cat.categories)])
    out["system"] = out["system"].cat.set_categories(
        [s for s in systems if s in set(out["system"].cat.categories)])
    return out


@settings(max_examples=80, deadline=None)
@given(topics=st.lists(_LABELS, min_size=0, max_size=5, unique=True),
       systems=st.lists(_LABELS, min_size=0, max_size=5, unique=True),
       holes=st.lists(st.booleans(), min_size=25, max_size=25),
       nan=st.sampled_from(["raise", "drop"]))
def test_property_from_wide_equals_cell_by_cell(topics, systems, holes, nan) -> None:
    """from_wide (categorical codes, no string per cell) equals the cell-by-cell definition:
    the same frame, or the same error, for labels that collide as text (1 and "1"), missing
    scores, empty matrices."""
    rng = np.random.default_rng(len(topics) * 7 + len(systems))
    values = rng.uniform(size=(len(topics), len(systems)))
    values[np.array(holes[: values.size], dtype=bool).reshape(values.shape)] = np.nan
    wide = pd.DataFrame(values, index=pd.Index(topics, dtype=object),
                        columns=pd.Index(systems, dtype=object))

    def run(f):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataQualityWarning)
            try:
                return f(), None
            except DataFormatError as exc:
                return None, str(exc)

    got, got_error = run(lambda: irm.from_wide(wide, nan=nan))
    for labels in (topics, systems):
        texts = [str(v) for v in labels]
        if len(set(texts)) < len(texts):  # 1 and "1": refused before any cell is read
            assert got_error is not None and "which are the same as text" in got_error
            return
    want, want_error = run(lambda: _from_wide_reference(wide, nan))
    assert got_error == want_error
    if want is not None:
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        for col in ("topic", "system"):
            assert got[col].cat.categories.dtype == want[col].cat.categories.dtype


def test_to_wide_several_measures() -> None:
    f = pd.concat([irm.frame(_grid()).assign(measure="AP"),
                   irm.frame(_grid(seed=1)).assign(measure="P@10")], ignore_index=True)
    f = irm.frame(f)
    with pytest.raises(DesignError, match=r"several measure per \(topic, system\).*aggregate='mean'"):
        irm.to_wide(f)
    w = irm.to_wide(f, aggregate="mean")
    expected = (irm.to_wide(irm.frame(_grid())) + irm.to_wide(irm.frame(_grid(seed=1)))) / 2
    pd.testing.assert_frame_equal(w, expected)


def test_to_wide_unbalanced_has_nan() -> None:
    f = irm.frame(_grid().iloc[:-1])
    w = irm.to_wide(f)
    assert np.isnan(w.loc["10", "b"]) and w.notna().sum().sum() == 5


# --- balance ---------------------------------------------------------------------------------


def test_balance_balanced_with_replicates() -> None:
    g = pd.concat([_grid().assign(shard="1"), _grid(seed=2).assign(shard="2")])
    f = irm.frame(g)
    r = irm.balance(f)
    assert r.balanced and r.factors == ("topic", "system", "shard")
    assert r.levels == {"topic": 3, "system": 2, "shard": 2}
    assert r.replicates == 1 and r.n_cells == 12 and r.n_observed_cells == 12
    assert r.missing.empty and r.counts.empty
    assert str(r) == "balanced: 3 topics x 2 systems x 2 shards, 1 row(s) per cell"
    # over (topic, system) only, each cell holds the two shards
    r2 = irm.balance(f, ["topic", "system"])
    assert r2.balanced and r2.replicates == 2


def test_balance_reports_missing_and_uneven_cells() -> None:
    g = _grid()
    g = pd.concat([g.iloc[1:], g.iloc[[2]].assign(score=0.0)], ignore_index=True)
    f = irm.frame(g, duplicates="allow")
    r = irm.balance(f)
    assert not r.balanced and r.replicates is None
    assert r.n_cells == 6 and r.n_observed_cells == 5
    assert r.missing.to_dict("records") == [{"topic": "1", "system": "a"}]
    assert sorted(r.counts.tolist()) == [1, 1, 1, 1, 2]
    assert str(r) == ("unbalanced: 3 topics x 2 systems; 5 of 6 cells observed, 1 missing; "
                      "rows per observed cell range 1-2")


def test_balance_ignores_constant_measure_and_samples() -> None:
    f = irm.frame(pd.concat([_grid().assign(sample=s) for s in range(3)]).assign(measure="AP"))
    r = irm.balance(f)
    assert r.factors == ("topic", "system") and r.replicates == 3
    with pytest.raises(DataFormatError, match="no column 'shard'"):
        irm.balance(f, ["shard"])


# --- filter_systems --------------------------------------------------------------------------


def _five() -> pd.DataFrame:
    # system means: s1 0.1, s2 0.5, s3 0.3, s4 0.9, s10 0.7
    rows = [(t, s, m + d) for s, m in [("s1", 0.1), ("s2", 0.5), ("s3", 0.3), ("s4", 0.9),
                                       ("s10", 0.7)] for t, d in [("1", -0.05), ("2", 0.05)]]
    return irm.frame(pd.DataFrame(rows, columns=["topic", "system", "score"]))


def test_filter_systems() -> None:
    f = _five()
    def cats(d: pd.DataFrame) -> list[str]:
        return list(d["system"].cat.categories)

    assert cats(irm.filter_systems(f, min_mean=0.5)) == ["s2", "s4", "s10"]
    assert cats(irm.filter_systems(f, top_k=2)) == ["s4", "s10"]
    assert cats(irm.filter_systems(f, top_fraction=0.5)) == ["s4", "s10"]  # floor(2.5)
    assert cats(irm.filter_systems(f, top_fraction=0.6)) == ["s2", "s4", "s10"]  # 3 of 5
    assert cats(irm.filter_systems(f, top_fraction=1.0)) == cats(f)
    assert cats(irm.filter_systems(f, systems=["s3", "s1"])) == ["s1", "s3"]
    assert cats(irm.filter_systems(f, systems=["s1", "s3", "s4"], top_k=1)) == ["s4"]
    kept = irm.filter_systems(f, min_mean=0.6)
    assert len(kept) == 4 and kept["score"].tolist() == pytest.approx([0.85, 0.95, 0.65, 0.75])
    assert cats(f) == ["s1", "s2", "s3", "s4", "s10"]  # input untouched


def test_filter_systems_top_fraction_keeps_the_floor_and_at_least_one(shared_data) -> None:
    # the literature's pruning: the best 75% of the 110 Robust 2004 runs are 82 (ceil gave 83)
    robust = irm.read_matrix(shared_data / "ir-scores" / "robust2004_ap.csv", measure="AP")
    assert robust["system"].nunique() == 110
    top = irm.filter_systems(robust, top_fraction=0.75)
    assert top["system"].nunique() == 82
    means = robust.groupby("system", observed=True)["score"].mean()
    assert set(top["system"].cat.categories) == set(means.nlargest(82).index)
    f = _five()
    assert list(irm.filter_systems(f, top_fraction=0.1)["system"].cat.categories) == ["s4"]
    # 0.29 * 100 is 28.999... in floating point: still 29 systems
    rows = [("1", f"s{i}", i / 100) for i in range(100)]
    hundred = irm.frame(pd.DataFrame(rows, columns=["topic", "system", "score"]))
    assert irm.filter_systems(hundred, top_fraction=0.29)["system"].nunique() == 29


def test_filter_systems_accepts_a_plain_long_frame() -> None:
    # it raised AttributeError (.cat on a str column); it goes through irm.frame now
    rows = [(t, s, m + d) for s, m in [("s1", 0.1), ("s2", 0.5), ("s3", 0.3), ("s4", 0.9),
                                       ("s10", 0.7)] for t, d in [("1", -0.05), ("2", 0.05)]]
    plain = pd.DataFrame(rows, columns=["topic", "system", "score"])
    for kwargs in ({"top_k": 2}, {"top_fraction": 0.6}, {"min_mean": 0.4},
                   {"systems": ["s10", "s1"]}):
        got = irm.filter_systems(plain, **kwargs)
        want = irm.filter_systems(_five(), **kwargs)
        pd.testing.assert_frame_equal(got, want)
        assert isinstance(got["system"].dtype, pd.CategoricalDtype)
    assert list(plain["system"].unique()) == ["s1", "s2", "s3", "s4", "s10"]  # input untouched
    with pytest.raises(DataFormatError, match="missing"):  # irm.frame's checks apply
        irm.filter_systems(plain.assign(score=[np.nan] + [0.5] * 9), top_k=1)


def test_filter_systems_breaks_ties_by_natural_order() -> None:
    # equal means: the system first in natural order ("s2" before "s10") is ranked first,
    # whatever the row order or the sort algorithm
    rows = [("1", "s10", 0.5), ("1", "s2", 0.5), ("1", "s3", 0.1)]
    for order in (rows, rows[::-1]):
        plain = pd.DataFrame(order, columns=["topic", "system", "score"])
        assert list(irm.filter_systems(plain, top_k=1)["system"]) == ["s2"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"systems": ["s1", "nope"]}, r"unknown system\(s\) \['nope'\]; the data have 5 systems"),
        ({"top_fraction": 0}, r"top_fraction must be in \(0, 1\], got 0"),
        ({"top_fraction": 1.5}, r"top_fraction must be in \(0, 1\]"),
        ({"top_k": 0}, "top_k must be at least 1, got 0"),
        ({"min_mean": 2.0}, "no system is left after filtering"),
    ],
)
def test_filter_systems_errors(kwargs, message) -> None:
    with pytest.raises(DataFormatError, match=message):
        irm.filter_systems(_five(), **kwargs)


# --- properties ------------------------------------------------------------------------------


_labels = st.lists(st.from_regex(r"[a-z]{0,2}[0-9]{1,3}", fullmatch=True), min_size=1,
                   max_size=6, unique=True)


@settings(max_examples=40, deadline=None)
@given(topics=_labels, systems=_labels, seed=st.integers(0, 2**32 - 1))
def test_permuting_rows_gives_the_same_frame_after_sorting(topics, systems, seed) -> None:
    df = _grid(tuple(topics), tuple(systems), seed=seed % 1000)
    rng = np.random.default_rng(seed)
    shuffled = df.iloc[rng.permutation(len(df))].reset_index(drop=True)
    a, b = irm.frame(df), irm.frame(shuffled)
    for col in ("topic", "system"):
        assert list(a[col].cat.categories) == list(b[col].cat.categories)
        assert list(a[col].cat.categories) == sorted(a[col].cat.categories, key=natural_key)
    key = ["topic", "system"]
    pd.testing.assert_frame_equal(a.sort_values(key).reset_index(drop=True),
                                  b.sort_values(key).reset_index(drop=True))


@settings(max_examples=40, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 8), st.integers(1, 8)),
    seed=st.integers(0, 2**32 - 1),
    named_topics=st.booleans(),
)
def test_wide_long_wide_is_identity(shape, seed, named_topics) -> None:
    rng = np.random.default_rng(seed)
    t, s = shape
    topics = [f"q{i}" for i in rng.permutation(t)] if named_topics else None
    systems = [f"run{j}" for j in rng.permutation(s)]
    wide = pd.DataFrame(rng.uniform(size=shape), columns=systems,
                        index=pd.Index(topics, name="topic") if topics else None)
    long = irm.from_wide(wide)
    assert len(long) == t * s
    back = irm.to_wide(long)
    expected = wide.copy()
    if topics is None:
        expected.index = pd.Index([str(i) for i in range(1, t + 1)], name="topic")
    expected.columns = pd.Index(systems, name="system")
    pd.testing.assert_frame_equal(back, expected, check_exact=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert irm.balance(long).balanced


@settings(max_examples=60, deadline=None)
@given(codes=st.lists(st.integers(-1, 6), min_size=0, max_size=40),
       n_cats=st.integers(7, 9), reverse=st.booleans())
def test_categorical_factor_keeps_order_and_drops_unused(codes, n_cats, reverse):
    # the integer-code remap equals the definition: the present values, categories in the
    # input's order, unused ones dropped
    from irmodels.data.frame import _natural_categorical

    cats = [f"run{i}" for i in range(n_cats)][:: -1 if reverse else 1]
    values = pd.Series(pd.Categorical.from_codes(codes, categories=cats))
    got = _natural_categorical(values)
    present = set(values.dropna().unique())
    expected = pd.Categorical(values.astype(object),
                              categories=[c for c in values.cat.categories if c in present])
    assert list(got.categories) == list(expected.categories)
    assert got.categories.dtype == expected.categories.dtype
    np.testing.assert_array_equal(got.codes, expected.codes)
    assert not got.ordered
