"""Readers and writers against the trec_eval reference files and the public matrices."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import DataFormatError


@pytest.fixture(scope="module")
def trec(shared_data: Path) -> Path:
    return shared_data / "trec_eval"


# --- trec_eval -q output -------------------------------------------------------------------


def test_read_trec_eval_reference_file(trec: Path) -> None:
    per, summ = irm.read_trec_eval(trec / "out.test.aq", summary=True)
    assert list(per.columns) == ["measure", "topic", "system", "score"]
    assert per["score"].dtype == np.float64
    assert list(per["topic"].cat.categories) == ["301", "302", "303"]
    assert list(per["system"].cat.categories) == ["STANDARD"]
    # 387 lines: 3 topics x 95 numeric per-topic measures, 3 relstring lines, 99 "all" lines
    assert len(per) + len(summ) == 387
    assert len(per) == 3 * 95 == 3 * per["measure"].nunique()
    rel = summ[summ["measure"] == "relstring"]
    assert rel["topic"].tolist() == ["301", "302", "303"]
    assert rel["value"].tolist() == ["'0000011000'", "'1101110110'", "'0000000000'"]
    assert (summ["topic"] == "all").sum() == 99
    value = per.set_index(["measure", "topic"])["score"]
    assert value[("map", "301")] == 0.0324
    assert value[("num_ret", "301")] == 500.0
    assert value[("P_10", "301")] == 0.2
    assert value[("recip_rank", "301")] == 0.1667
    s = summ.set_index("measure")
    assert s.loc["runid", "value"] == "STANDARD" and np.isnan(s.loc["runid", "score"])
    assert s.loc["num_q", "score"] == 3.0
    assert s.loc["map", "score"] == 0.1785
    assert s.loc["utility", "score"] == -412.6667
    assert "gm_map" not in set(per["measure"].astype(str))
    # trec_eval's map is the mean of the per-topic APs (to the printed precision)
    assert value.loc["map"].mean() == pytest.approx(0.1785, abs=1e-4)
    # without summary=True only the per-topic frame comes back
    pd.testing.assert_frame_equal(irm.read_trec_eval(trec / "out.test.aq"), per)


def test_read_trec_eval_directory_and_names(trec: Path, tmp_path: Path) -> None:
    text = (trec / "out.test.aq").read_text()
    (tmp_path / "a.txt").write_text(text)
    (tmp_path / "b.txt").write_text(text.replace("STANDARD", "OTHER"))
    (tmp_path / ".hidden").write_text("junk")
    both = irm.read_trec_eval(tmp_path)
    assert list(both["system"].cat.categories) == ["OTHER", "STANDARD"]
    assert len(both) == 2 * 285
    # file stem when there is no runid line
    (tmp_path / "b.txt").write_text("".join(l + "\n" for l in text.splitlines() if "runid" not in l))
    assert set(irm.read_trec_eval(tmp_path)["system"].astype(str)) == {"STANDARD", "b"}
    # same runid in two files -> error naming both
    (tmp_path / "b.txt").write_text(text)
    with pytest.raises(DataFormatError, match="run 'STANDARD' is read from both .*a.txt and .*b.txt"):
        irm.read_trec_eval(tmp_path)
    with pytest.raises(DataFormatError, match="system='x' names one run but 2 files"):
        irm.read_trec_eval(tmp_path, system="x")
    one = irm.read_trec_eval(tmp_path / "a.txt", system="mine")
    assert list(one["system"].cat.categories) == ["mine"]


# --- runs ------------------------------------------------------------------------------------


def test_read_run_reference_file(trec: Path) -> None:
    run = irm.read_run(trec / "results.test")
    assert list(run.columns) == ["system", "topic", "docid", "score", "rank"]
    assert [str(t) for t in run.dtypes] == ["str", "str", "str", "float64", "int64"]
    assert run.shape == (1500, 5)
    assert run.groupby("topic").size().to_dict() == {"301": 500, "302": 500, "303": 500}
    first = run.iloc[0]
    assert (first["topic"], first["docid"], first["rank"], first["score"]) == (
        "301", "FR940202-2-00150", 104, 2.129133)
    assert set(run["system"]) == {"STANDARD"}
    # the reference file mixes tabs and spaces: the slow path gives the same frame
    from irmodels.data import _io_tables as rio

    data = (trec / "results.test").read_bytes()
    slow = rio._slow_table(data, "x", rio.RUN, ("topic", "docid"), "tag")
    fast = rio._fast_table(data, rio.RUN)
    pd.testing.assert_frame_equal(slow, fast)


def test_run_write_read_round_trip(trec: Path, tmp_path: Path) -> None:
    run = irm.read_run(trec / "results.test")
    out = irm.write_run(run, tmp_path / "run.txt")
    assert out == [tmp_path / "run.txt"]
    pd.testing.assert_frame_equal(irm.read_run(out[0]), run)
    # single-space layout takes the arrow fast path; same result
    from irmodels.data import _io_tables as rio

    assert rio._simple_layout(out[0].read_bytes()) == b" "


def test_write_run_directory_and_ranks(tmp_path: Path) -> None:
    runs = pd.DataFrame({
        "system": ["b", "b", "b", "a", "a"],
        "topic": ["1", "1", "1", "1", "2"],
        "docid": ["d1", "d2", "d3", "d1", "d1"],
        "score": [1.0, 2.0, 1.0, 0.5, 0.5],
    })
    files = irm.write_run(runs, tmp_path)
    assert sorted(f.name for f in files) == ["a", "b"]
    b = irm.read_run(tmp_path / "b")
    # rank = trec_eval order: score descending, ties by docid descending
    assert dict(zip(b["docid"], b["rank"])) == {"d2": 1, "d3": 2, "d1": 3}
    back = irm.read_runs(tmp_path)
    assert list(back["system"].unique()) == ["a", "b"]
    # one file with several systems: read back with tags='split'
    irm.write_run(runs, tmp_path / "all.txt")
    split = irm.read_run(tmp_path / "all.txt", tags="split")
    assert split["system"].tolist() == runs["system"].tolist()
    with pytest.raises(DataFormatError, match="whitespace"):
        irm.write_run(runs.assign(docid="d 1"), tmp_path / "bad.txt")
    with pytest.raises(DataFormatError, match="has no column 'score'"):
        irm.write_run(runs.drop(columns="score"), tmp_path / "bad.txt")


def test_read_runs_unique_names(trec: Path, tmp_path: Path) -> None:
    shutil.copy(trec / "results.test", tmp_path / "r1")
    shutil.copy(trec / "results.test", tmp_path / "r2")
    with pytest.raises(DataFormatError, match="run 'STANDARD' is in both .*r1 and .*r2.*system_from='file'"):
        irm.read_runs(tmp_path)
    runs = irm.read_runs(tmp_path, system_from="file")
    assert runs.groupby("system").size().to_dict() == {"r1": 1500, "r2": 1500}
    runs = irm.read_runs([tmp_path / "r2", tmp_path / "r1"], system_from="file")
    assert list(runs["system"].unique()) == ["r2", "r1"]
    with pytest.raises(DataFormatError, match="no run file given"):
        irm.read_runs([])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataFormatError, match="holds no run files"):
        irm.read_runs(empty)
    with pytest.raises(DataFormatError, match="found a directory"):
        irm.read_run(tmp_path)


def test_read_runs_of_full_depth(tmp_path: Path, rng: np.random.Generator) -> None:
    """4 runs x 50 topics x 1000 documents (200k lines) read back exactly (time: benchmarks)."""
    docs = np.array([f"DOC{i:07d}" for i in range(50_000)])
    topics = np.repeat([str(301 + t) for t in range(50)], 1000)
    written = {}
    for s in range(4):
        run = pd.DataFrame({"system": f"sys{s}", "topic": topics, "docid": rng.permutation(docs),
                            "score": rng.random(50_000), "rank": np.tile(np.arange(1, 1001), 50)})
        irm.write_run(run, tmp_path / f"sys{s}")
        written[f"sys{s}"] = run
    runs = irm.read_runs(tmp_path)
    assert runs.shape == (200_000, 5)
    for name, run in written.items():
        got = runs[runs["system"] == name]
        assert got["docid"].astype(str).tolist() == run["docid"].tolist()
        assert got["topic"].astype(str).tolist() == run["topic"].tolist()
        np.testing.assert_array_equal(got["rank"].to_numpy(), run["rank"].to_numpy())
        np.testing.assert_allclose(got["score"].to_numpy(), run["score"].to_numpy(), rtol=1e-12)


# --- qrels ---------------------------------------------------------------------------------------


def test_read_qrels_reference(trec: Path, tmp_path: Path) -> None:
    q = irm.read_qrels(trec / "qrels.rel_level")
    assert list(q.columns) == ["topic", "docid", "rel"]
    assert q["rel"].dtype == np.int64
    assert q["rel"].value_counts().sort_index().to_dict() == {-1: 304, 0: 2818, 1: 462, 2: 14,
                                                             3: 77, 4: 6}
    binary = irm.read_qrels(trec / "qrels.test")
    assert len(binary) == 3681
    # trec_eval's num_rel per topic (rel >= 1) matches the qrels
    per = irm.read_trec_eval(trec / "out.test.aq").set_index(["measure", "topic"])["score"]
    rel = binary[binary["rel"] >= 1].groupby("topic").size()
    assert rel.to_dict() == {t: int(per[("num_rel", t)]) for t in ["301", "302", "303"]}
    out = irm.write_qrels(q, tmp_path / "q.txt")
    pd.testing.assert_frame_equal(irm.read_qrels(out), q)
    with pytest.raises(DataFormatError, match="must hold integers"):
        irm.write_qrels(q.assign(rel=0.5), tmp_path / "bad.txt")


# --- matrices ------------------------------------------------------------------------------------


def test_read_matrix_public_files(shared_data: Path) -> None:
    d = shared_data / "ir-scores"
    ap = irm.read_matrix(d / "adhoc8_ap.csv", measure="AP", collection="adhoc8")
    assert list(ap.columns) == ["collection", "measure", "topic", "system", "score"]
    assert ap["topic"].nunique() == 50 and ap["system"].nunique() == 129
    assert list(ap["topic"].cat.categories[:3]) == ["1", "2", "3"]
    raw = pd.read_csv(d / "adhoc8_ap.csv")
    assert list(ap["system"].cat.categories) == list(raw.columns)
    np.testing.assert_array_equal(irm.to_wide(ap).to_numpy(), raw.to_numpy())
    rb = irm.read_matrix(d / "robust2004_ap.csv")
    assert rb["topic"].nunique() == 249 and rb["system"].nunique() == 110
    assert rb["topic"].cat.categories[0] == "301"
    assert "topic" not in set(rb["system"].astype(str))
    first = pd.read_csv(d / "robust2004_ap.csv", nrows=1)
    assert rb.iloc[0]["score"] == first.iloc[0]["sys1"]
    # topic_column=None treats the 'topic' column as a system
    with_col = irm.read_matrix(d / "robust2004_ap.csv", topic_column=None)
    assert with_col["system"].cat.categories[0] == "topic"
    assert irm.read_matrix(d / "robust2004_ap.csv", topic_column="topic").equals(rb)
    with pytest.raises(DataFormatError, match="topic_column 'qid' is not in the header"):
        irm.read_matrix(d / "robust2004_ap.csv", topic_column="qid")


def test_matrix_round_trip(shared_data: Path, tmp_path: Path) -> None:
    ap = irm.read_matrix(shared_data / "ir-scores" / "web2012_err20.csv", measure="ERR@20")
    ap = ap.drop(columns="measure")
    for name in ("m.csv", "m.tsv"):
        out = irm.write_matrix(ap, tmp_path / name)
        pd.testing.assert_frame_equal(irm.read_matrix(out), ap)
    assert "\t" in (tmp_path / "m.tsv").read_text().splitlines()[0]
    out = irm.write_matrix(ap, tmp_path / "n.csv", topic_column=False)
    assert out.read_text().startswith("sys1,")


# --- long frames -----------------------------------------------------------------------------


def _odd_order_frame() -> pd.DataFrame:
    wide = pd.DataFrame({"zeta": [0.1, 0.2, 0.3], "alpha": [0.4, 0.5, 0.6]},
                        index=pd.Index(["b10", "b2", "a"], name="topic"))
    return irm.from_wide(wide, measure="AP")


def test_frame_parquet_round_trip_keeps_level_order(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    f = _odd_order_frame()
    assert list(f["system"].cat.categories) == ["zeta", "alpha"]
    path = irm.write_frame(f, tmp_path / "f.parquet")
    back = irm.read_frame(path)
    pd.testing.assert_frame_equal(back, f)


def test_frame_csv_round_trip(tmp_path: Path) -> None:
    f = irm.frame(pd.DataFrame({
        "topic": ["10", "2", "NA", "10", "2", "NA"], "system": ["r", "r", "r", "s", "s", "s"],
        "shard": ["1", "1", "1", "2", "2", "2"], "score": [0.1, 1 / 3, 0.5, 0.7, 2 / 3, 1e-17]}))
    for name in ("f.csv", "f.tsv"):
        back = irm.read_frame(irm.write_frame(f, tmp_path / name))
        pd.testing.assert_frame_equal(back, f, check_exact=True)
    # CSV keeps values, not a non-natural level order (documented): natural order comes back
    odd = _odd_order_frame()
    back = irm.read_frame(irm.write_frame(odd, tmp_path / "odd.csv"))
    assert list(back["system"].cat.categories) == ["alpha", "zeta"]
    pd.testing.assert_frame_equal(
        back.sort_values(["topic", "system"]).reset_index(drop=True),
        irm.frame(odd.astype({"topic": str, "system": str, "measure": str}))
        .sort_values(["topic", "system"]).reset_index(drop=True),
    )


def test_frame_io_errors(tmp_path: Path) -> None:
    f = _odd_order_frame()
    with pytest.raises(DataFormatError, match="cannot tell the format .* '.xlsx'"):
        irm.write_frame(f, tmp_path / "f.xlsx")
    bad = tmp_path / "bad.csv"
    bad.write_text("topic,system,score\n1,a,0.5\n1,a,0.6\n")
    with pytest.raises(DataFormatError, match="bad.csv, line 3: 2 rows repeat"):
        irm.read_frame(bad)
    bad.write_text("topic,system,score\n1,a,\n")
    with pytest.raises(DataFormatError, match="missing"):
        irm.read_frame(bad)


@settings(max_examples=30, deadline=None)
@given(
    scores=st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
        min_size=1, max_size=30,
    ),
    seed=st.integers(0, 2**31 - 1),
)
def test_run_round_trip_property(tmp_path_factory, scores: list[float], seed: int) -> None:
    """write_run -> read_run is the identity on scores (full float precision) and names."""
    rng = np.random.default_rng(seed)
    n = len(scores)
    runs = pd.DataFrame({
        "system": "sys",
        "topic": rng.integers(1, 4, n).astype(str),
        "docid": [f"D{i}-{rng.integers(1000)}" for i in range(n)],
        "score": np.array(scores, dtype="float64"),
        "rank": rng.integers(1, 1000, n).astype("int64"),
    }).astype({"system": "str", "topic": "str", "docid": "str"})
    path = tmp_path_factory.mktemp("rt") / "run.txt"
    irm.write_run(runs, path)
    pd.testing.assert_frame_equal(irm.read_run(path), runs, check_exact=True)


_token = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,8}", fullmatch=True)


@st.composite
def _run_rows(draw):
    n = draw(st.integers(1, 12))
    topics = draw(st.lists(st.sampled_from(["301", "302", "10", "2"]), min_size=n, max_size=n))
    docids = draw(st.lists(_token, min_size=n, max_size=n, unique=True))
    scores = draw(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=n, max_size=n))
    ranks = draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n))
    return list(zip(topics, docids, ranks, scores))


@settings(max_examples=30, deadline=None)
@given(rows=_run_rows(), data=st.data())
def test_whitespace_layout_does_not_change_the_run(tmp_path_factory, rows, data) -> None:
    """Any mix of tolerated separators, line endings, BOM and blank lines reads the same rows,
    and the fast (C/arrow) and slow (line-by-line) parsers agree."""
    from irmodels.data import _io_tables as rio

    sep = st.sampled_from([" ", "\t", "  ", " \t ", "\t\t"])
    lines = []
    for topic, docid, rank, score in rows:
        fields = [topic, "Q0", docid, str(rank), repr(score), "tag"]
        lead = data.draw(st.sampled_from(["", " ", "\t"]))
        trail = data.draw(st.sampled_from(["", " ", "\t "]))
        text = lead + "".join(f + data.draw(sep) for f in fields[:-1]) + fields[-1] + trail
        lines.append(text)
        if data.draw(st.booleans()) and data.draw(st.booleans()):
            lines.append(data.draw(st.sampled_from(["", "  ", "\t"])))
    eol = data.draw(st.sampled_from(["\n", "\r\n"]))
    body = eol.join(lines) + data.draw(st.sampled_from(["", eol, eol + eol]))
    raw = (b"\xef\xbb\xbf" if data.draw(st.booleans()) else b"") + body.encode()
    path = tmp_path_factory.mktemp("ws") / "run.txt"
    path.write_bytes(raw)
    got = irm.read_run(path)
    assert got["docid"].tolist() == [r[1] for r in rows]
    assert got["topic"].tolist() == [r[0] for r in rows]
    assert got["rank"].tolist() == [r[2] for r in rows]
    assert got["score"].tolist() == [r[3] for r in rows]
    stripped = raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw
    slow = rio._slow_table(stripped, path, rio.RUN, ("topic", "docid"), "tag")
    fast = rio._fast_table(stripped, rio.RUN)
    assert fast is not None
    pd.testing.assert_frame_equal(fast, slow)


@settings(max_examples=30, deadline=None)
@given(rows=_run_rows(), data=st.data())
def test_a_broken_line_is_reported_at_its_number(tmp_path_factory, rows, data) -> None:
    """Damage one line of a valid run (drop a field, add one, spoil the score or the rank):
    the error names exactly that line, with blank lines counted."""
    lines = [f"{t} Q0 {d} {r} {s!r} tag" for t, d, r, s in rows]
    k = data.draw(st.integers(0, len(lines) - 1))
    fields = lines[k].split(" ")
    kind = data.draw(st.sampled_from(["drop", "extra", "score", "rank"]))
    if kind == "drop":
        del fields[data.draw(st.integers(0, 5))]
    elif kind == "extra":
        fields.append("x")
    elif kind == "score":
        fields[4] = data.draw(st.sampled_from(["abc", "nan", "1,5", "inf", "-"]))
    else:
        fields[3] = data.draw(st.sampled_from(["1.5", "one", "1e-3", "#", "0x10"]))
    lines[k] = " ".join(fields)
    blanks = data.draw(st.integers(0, 2))
    text = "\n" * blanks + "\n".join(lines) + "\n"
    path = tmp_path_factory.mktemp("bad") / "run.txt"
    path.write_text(text)
    with pytest.raises(DataFormatError) as info:
        irm.read_run(path)
    assert info.value.line == k + 1 + blanks
    assert f"run.txt, line {k + 1 + blanks}: " in str(info.value)


_NUMBER_CELLS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.from_regex(r"[+-]?(\d{1,5}\.?\d{0,5}|\.\d{1,5})([eE][+-]?\d{1,3})?", fullmatch=True),
)
_OTHER_CELLS = st.sampled_from(["NA", "nan", "", "None", "1e", "abc", "1_0", "inf", "0x1",
                                "1.2.3", "+", ".", "--1", "1 2"])


@settings(max_examples=60, deadline=None)
@given(cells=st.lists(st.lists(st.one_of(_NUMBER_CELLS, _NUMBER_CELLS, _OTHER_CELLS),
                               min_size=3, max_size=3), min_size=1, max_size=4),
       nan=st.sampled_from(["raise", "drop"]))
def test_property_read_matrix_cells_as_one_by_one(cells, nan):
    """Every cell is a number (bit for bit what float() gives), NaN for a missing cell, or
    the error naming the first bad cell, with its topic and system."""
    import math
    import re
    import tempfile

    from irmodels.data._lines import FLOAT, NA_TOKENS

    want, error = [], None
    for r, row in enumerate(cells):
        for c, cell in enumerate(row):
            cell = cell.strip()
            if cell in NA_TOKENS:
                if nan == "raise" and error is None:
                    error = f"missing score (cell {cell!r}) for topic {r + 1}, system s{c}"
                want.append(np.nan)
            elif FLOAT.fullmatch(cell) and math.isinf(float(cell)):
                if error is None:
                    error = f"cell {cell!r} for topic {r + 1}, system s{c} is beyond the range"
                want.append(None)
            elif FLOAT.fullmatch(cell):
                want.append(float(cell))
            elif cell.lstrip("+-").lower() in ("inf", "infinity"):
                if error is None:
                    error = f"cell {cell!r} for topic {r + 1}, system s{c} is an infinite value"
                want.append(None)
            else:
                if error is None:
                    error = f"cell {cell!r} for topic {r + 1}, system s{c} is not a number"
                want.append(None)
    if error is None and nan == "drop" and all(np.isnan(w) for w in want):
        error = "every score is missing (NaN, "  # nothing left to read: an error, not 0 rows
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv"
        path.write_text("topic,s0,s1,s2\n" + "".join(
            f"{r + 1}," + ",".join(row) + "\n" for r, row in enumerate(cells)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if error is not None:
                with pytest.raises(DataFormatError, match=re.escape(error)):
                    irm.read_matrix(path, nan=nan)
                return
            got = irm.read_matrix(path, nan=nan)
    kept = [w for w in want if not np.isnan(w)] if nan == "drop" else want
    assert np.array_equal(got["score"].to_numpy(), np.array(kept, dtype=float), equal_nan=True)


def test_read_matrix_of_missing_cells_only_is_an_error(tmp_path: Path) -> None:
    # found by the property test above: nan='drop' on a matrix of NA cells said "the data have no
    # rows (did a selection match nothing?...)"
    path = tmp_path / "m.csv"
    path.write_text("topic,s0,s1,s2\n1,NA,NA,NA\n2,,nan,NA\n")
    with pytest.raises(DataFormatError, match=r"every score is missing \(NaN, 6 row\(s\)\)"):
        irm.read_matrix(path, nan="drop")
    with pytest.raises(DataFormatError, match="every score is missing"):
        irm.frame(pd.DataFrame({"topic": ["1", "2"], "system": ["a", "a"],
                                "score": [np.nan, np.nan]}), nan="drop")
