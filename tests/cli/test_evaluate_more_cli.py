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


def test_aggregate_command_on_trec_eval_output(tmp_path, capsys, shared_data):
    """trec_eval -q prints 4 decimals per topic; their geometric means are its gm_map and
    gm_bpref lines (0.1051, 0.0083)."""
    d = shared_data / "trec_eval"
    for measure, want in (("map", 0.1051), ("bpref", 0.0083)):
        assert main(["aggregate", str(d / "out.test.aq"), "--measure", measure,
                     "--how", "gmean"]) == 0
        f = pd.read_csv(pd.io.common.StringIO(capsys.readouterr().out))
        assert f.columns.tolist() == ["measure", "system", "n_topics", "score"]
        assert round(f["score"][0], 4) == want and f["n_topics"][0] == 3
    out = tmp_path / "m.parquet"
    assert main(["aggregate", "adhoc8:AP", "--how", "median", "--systems", "run95", "run83",
                 "--out", str(out)]) == 0
    assert "wrote the median scores of 2 system(s) (2 rows)" in capsys.readouterr().err
    got = pd.read_parquet(out)
    ap = irm.datasets.load("adhoc8", "AP")
    want = ap[ap["system"].isin(["run83", "run95"])].groupby("system", observed=True)["score"]
    assert got["score"].tolist() == pytest.approx(want.median().tolist(), abs=1e-15)


def test_aggregate_command_refusals(capsys, shared_data):
    d = shared_data / "trec_eval"
    assert main(["aggregate", str(d / "out.test.aq"), "--how", "gmean"]) == 1
    assert "measure 'utility'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["aggregate", "adhoc8:AP", "--epsilon", "0"])
    assert exc.value.code == 2
