"""``irmodels evaluate`` and ``irmodels demo`` through ``irmodels.cli.main``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main


def test_demo_writes_collection_and_scores(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--preset", "tiny", "--seed", "3",
                 "--measures", "AP,P@10,RBP(p=0.8)"]) == 0
    err = capsys.readouterr().err
    assert "5 topics x 4 systems" in err and "scores.csv" in err
    assert sorted(p.name for p in out.iterdir()) == ["docids.txt", "qrels.txt", "runs", "scores.csv"]
    assert len(list((out / "runs").iterdir())) == 4
    scores = pd.read_csv(out / "scores.csv", dtype={"topic": str})
    assert list(scores.columns) == ["measure", "topic", "system", "score"]
    assert list(pd.unique(scores["measure"])) == ["AP", "P@10", "RBP(p=0.8)"]
    col = irm.collection.generate(preset="tiny", seed=3)
    ref = col.evaluate(["AP", "P@10", "RBP(p=0.8)"])
    np.testing.assert_allclose(scores["score"].to_numpy(), ref["score"].to_numpy(), atol=1e-15)


def test_evaluate_directory_and_files(tmp_path, capsys, shared_data):
    d = shared_data / "trec_eval"
    out = tmp_path / "s.csv"
    assert main(["evaluate", str(d / "results.test"), "--qrels", str(d / "qrels.test"),
                 "--measure", "AP", "--measure", "P@10,ndcg_cut_10", "--out", str(out)]) == 0
    assert "wrote 9 scores" in capsys.readouterr().err
    f = pd.read_csv(out, dtype={"topic": str})
    got = {(m, t): round(v, 4) for m, t, v in f[["measure", "topic", "score"]].itertuples(index=False)}
    # trec_eval -q values of out.test.aq
    assert got[("AP", "301")] == 0.0324 and got[("AP", "302")] == 0.4175
    assert got[("P@10", "302")] == 0.7 and got[("nDCG@10", "301")] == 0.1518
    # a directory of runs, parquet output
    demo = tmp_path / "demo"
    irm.collection.generate(preset="tiny", seed=1).write(demo)
    pq = tmp_path / "s.parquet"
    assert main(["evaluate", str(demo / "runs"), "--qrels", str(demo / "qrels.txt"),
                 "-m", "AP", "--out", str(pq)]) == 0
    back = irm.read_frame(pq)
    assert len(back) == 5 * 4 and list(back.columns) == ["measure", "topic", "system", "score"]


def test_evaluate_with_shards(tmp_path, capsys):
    demo = tmp_path / "demo"
    col = irm.collection.generate(preset="tiny", seed=1)
    col.write(demo)
    shard_file = tmp_path / "shards.csv"
    pd.DataFrame({"docid": col.docids, "shard": [f"s{i % 3}" for i in range(len(col.docids))]}) \
        .to_csv(shard_file, index=False)
    out = tmp_path / "sh.csv"
    code = main(["evaluate", str(demo / "runs"), "--qrels", str(demo / "qrels.txt"), "-m", "AP",
                 "--shards", str(shard_file), "--undefined", "missing", "--out", str(out)])
    assert code == 0
    f = pd.read_csv(out, dtype={"topic": str})
    assert list(f.columns) == ["measure", "topic", "system", "shard", "score"]
    assert set(f["shard"]) <= {"s0", "s1", "s2"}


@pytest.mark.parametrize("argv,message", [
    (["evaluate", "nope.run", "--qrels", "q.txt", "-m", "AP"], "does not exist"),
    (["evaluate", "RUN", "--qrels", "QRELS", "-m", "nDGC@10"], "unknown measure 'nDGC@10'"),
    (["evaluate", "RUN", "--qrels", "QRELS", "-m", "AP", "--undefined", "zero"], "not a policy"),
    (["demo", "--out", "OUTFILE", "--preset", "tiny"], "not a directory"),
    (["demo", "--out", "DIR", "--preset", "tiny", "--measures", "AP,foo"], "unknown measure"),
])
def test_errors_exit_2_without_traceback(argv, message, tmp_path, capsys, shared_data):
    d = shared_data / "trec_eval"
    outfile = tmp_path / "file.txt"
    outfile.write_text("x")
    subst = {"RUN": str(d / "results.test"), "QRELS": str(d / "qrels.test"),
             "OUTFILE": str(outfile), "DIR": str(tmp_path / "d")}
    argv = [subst.get(a, a) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("irmodels: error:") and message in err
    assert "Traceback" not in err


def test_evaluate_bad_run_file_is_reported_with_line(tmp_path, capsys, shared_data):
    bad = tmp_path / "bad.run"
    bad.write_text("301 Q0 d1 1 0.5 r\n301 Q0 d2 2 notanumber r\n")
    code = main(["evaluate", str(bad), "--qrels", str(shared_data / "trec_eval" / "qrels.test"),
                 "-m", "AP"])
    err = capsys.readouterr().err
    assert code == 1 and "bad.run, line 2" in err and "Traceback" not in err


def test_help_reads_well(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = capsys.readouterr().out
    assert "--qrels" in text and "--measure" in text and "trec_eval" in text
