"""``irmodels evaluate --measures bpref,... --judged-only --aggregate``."""

from __future__ import annotations

import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main


def test_trec_eval_all_line(tmp_path, capsys, shared_data):
    d = shared_data / "trec_eval"
    out = tmp_path / "all.csv"
    assert main(["evaluate", str(d / "results.test"), "--qrels", str(d / "qrels.test"),
                 "--measures", "map,bpref,gm_map,gm_bpref,infAP,iprec_at_recall_0.10,11pt_avg",
                 "--aggregate", "mean", "--out", str(out)]) == 0
    assert "wrote 7 mean scores (7 measure(s), 3 topics, 1 systems)" in capsys.readouterr().err
    f = pd.read_csv(out)
    assert f.columns.tolist() == ["measure", "system", "n_topics", "score"]
    got = dict(zip(f["measure"], f["score"].round(4)))
    # the 'all' lines of trec_eval's out.test.aq
    assert got == {"AP": 0.1785, "Bpref": 0.1981, "GMAP": 0.1051, "gm_bpref": 0.0083,
                   "infAP": 0.1785, "IPrec@0.1": 0.3885, "11pt_avg": 0.1962}


def test_gmean_and_judged_only(tmp_path, capsys, shared_data):
    d = shared_data / "trec_eval"
    assert main(["evaluate", str(d / "results.test"), "--qrels", str(d / "qrels.rel_level"),
                 "-m", "AP", "--judged-only", "--aggregate", "gmean", "--epsilon", "0.01"]) == 0
    f = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
    scores = irm.evaluate(irm.read_run(d / "results.test"), irm.read_qrels(d / "qrels.rel_level"),
                          ["AP(judged_only=True)"])
    want = irm.aggregate(scores, "gmean", epsilon=0.01)
    assert f["measure"].tolist() == ["AP(judged_only=True)"]
    assert f["score"].tolist() == pytest.approx(want["score"].tolist(), rel=1e-12)


@pytest.mark.parametrize("argv,message", [
    (["-m", "AP", "--epsilon", "0.1"], "--epsilon is the floor of --aggregate"),
    (["-m", "AP", "--aggregate", "gmean", "--epsilon", "-1"], "--epsilon must be a positive"),
    (["-m", "RBP_res(p=0.8)", "--judged-only"], "RBP_res"),
])
def test_usage_errors(argv, message, capsys, shared_data):
    d = shared_data / "trec_eval"
    code = main(["evaluate", str(d / "results.test"), "--qrels", str(d / "qrels.test"), *argv])
    assert code in (1, 2)
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
