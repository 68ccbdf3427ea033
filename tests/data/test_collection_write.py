"""``irm.collection.write_runs``: the demo collection written topic by topic, never held."""

from __future__ import annotations

import filecmp

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.data import collection as coll
from irmodels.errors import ArgumentError

SIZES = [
    {"preset": "tiny", "seed": 3},
    {"preset": "small", "seed": 0},
    # three-digit system tags (sys001 ... sys101), depth below the pool depth of 100
    {"topics": 3, "systems": 101, "depth": 40, "n_docs": 2000, "seed": 11},
    # more topics than documents allow relevant sets for (the cap on relevant counts) and
    # a topic count with tiny topics (4% of 30)
    {"topics": 30, "systems": 5, "depth": 60, "n_docs": 1000, "seed": 2},
]


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("kw", SIZES, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items()))
def test_files_equal_generate_then_write(tmp_path, kw):
    """The same bytes as ``generate(...).write()``: the same random stream, drawn in order."""
    out = irm.collection.write_runs(tmp_path / "stream", **kw)
    col = irm.collection.generate(**kw)
    ref = col.write(tmp_path / "memory")
    names = _files(ref)
    assert _files(out) == names
    assert len(names) == 2 + len(col.systems)
    match, mismatch, errors = filecmp.cmpfiles(ref, out, names, shallow=False)
    assert mismatch == [] and errors == [] and len(match) == len(names)


def test_read_back_equals_generate_and_its_scores(tmp_path):
    kw = {"topics": 7, "systems": 13, "depth": 120, "n_docs": 5000, "seed": 9}
    out = irm.collection.write_runs(tmp_path, **kw)
    col = irm.collection.generate(**kw)
    runs = irm.read_runs(out / "runs")
    qrels = irm.read_qrels(out / "qrels.txt")
    pd.testing.assert_frame_equal(runs, col.runs)
    pd.testing.assert_frame_equal(qrels, col.qrels)
    # every ranking complete, the depth-100 pool judged
    assert len(runs) == 7 * 13 * 120
    top = runs[runs["rank"] <= 100]
    assert set(zip(top["topic"], top["docid"])) <= set(zip(qrels["topic"], qrels["docid"]))
    # the directory evaluated file by file on 2 processes = the collection in memory
    want = col.evaluate(["AP", "P@10"])
    got = irm.evaluate(out / "runs", qrels, ["AP", "P@10"], backend="processes", n_workers=2)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert 0.05 < want.loc[want["measure"] == "AP", "score"].mean() < 0.6


def test_seed_changes_the_collection(tmp_path):
    a = irm.collection.write_runs(tmp_path / "a", preset="tiny", seed=1)
    b = irm.collection.write_runs(tmp_path / "b", preset="tiny", seed=2)
    assert (a / "runs" / "sys01.txt").read_bytes() != (b / "runs" / "sys01.txt").read_bytes()
    assert (a / "qrels.txt").read_bytes() != (b / "qrels.txt").read_bytes()


def test_no_row_limit(tmp_path, monkeypatch):
    """generate() refuses more than MAX_ROWS ranked documents; write_runs holds one topic."""
    monkeypatch.setattr(coll, "MAX_ROWS", 100)
    with pytest.raises(ArgumentError, match="write_runs"):
        irm.collection.generate(preset="tiny")
    out = irm.collection.write_runs(tmp_path, preset="tiny")
    assert len(irm.read_runs(out / "runs")) == 5 * 4 * 50


def test_refuses_a_directory_with_runs(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "old.txt").write_text("1 Q0 D1 1 1.0 old\n")
    with pytest.raises(ArgumentError, match=r"already holds 1 files \(e\.g\. 'old\.txt'\)"):
        irm.collection.write_runs(tmp_path, preset="tiny")
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["old.txt"]
    assert not (tmp_path / "qrels.txt").exists()


@pytest.mark.parametrize(("kw", "match"), [
    ({"preset": "huge"}, "unknown preset 'huge'"),
    ({"preset": "tiny", "depth": 600}, "n_docs=2000 is too small for depth=600"),
    ({"preset": "tiny", "systems": 0}, "systems"),
    ({"preset": "tiny", "seed": -1}, "seed"),
])
def test_bad_arguments_write_nothing(tmp_path, kw, match):
    with pytest.raises(ArgumentError, match=match):
        irm.collection.write_runs(tmp_path / "out", **kw)
    assert not (tmp_path / "out").exists()


def test_python_lines_equal_arrow_lines():
    """The formatting without pyarrow gives the same bytes, negative scores included."""
    pytest.importorskip("pyarrow")
    model = coll._draw_model(np.random.default_rng(0), 3, 4, 5, 60)
    docs = np.array([[0, 7, 39, 12, 3]] * 4) + np.arange(4)[:, None]
    scores = np.array([[12.5, 2.000001, 0.25, -0.000125, -3.75]] * 4) - np.arange(4)[:, None]
    a_data, a_bounds = coll._TopicBlockWriter(model, arrow=True).lines(2, docs, scores)
    p_data, p_bounds = coll._TopicBlockWriter(model, arrow=False).lines(2, docs, scores)
    assert bytes(a_data) == p_data
    assert a_bounds.tolist() == p_bounds.tolist()
    first = p_data[p_bounds[0]: p_bounds[1]].decode().splitlines()
    assert first[0] == "3 Q0 D0000001 1 12.500000 sys01"
    assert first[3] == "3 Q0 D0000013 4 -0.000125 sys01"
    last = p_data[p_bounds[3]: p_bounds[4]].decode().splitlines()
    assert last[4] == "3 Q0 D0000007 5 -6.750000 sys04"
