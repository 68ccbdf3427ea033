"""DATA everywhere: registry dataset names, standard input, --systems on every analysis command."""

from __future__ import annotations

import io

import pytest

from irmodels.cli import main


@pytest.fixture(autouse=True)
def _mirror(shared_data, monkeypatch):
    monkeypatch.setenv("IRM_DATA_MIRROR", str(shared_data / "ir-scores"))


def test_dataset_name_as_data(capsys):
    assert main(["gstudy", "adhoc3:AP"]) == 0
    out = capsys.readouterr().out
    assert "40 systems x 50 topics" in out


def test_standard_input_as_data(shared_data, monkeypatch, capsys):
    text = (shared_data / "ir-scores" / "adhoc3_ap.csv").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["anova", "-", "--systems", "sys1,sys2,sys3"]) == 0
    out = capsys.readouterr().out
    # 3 systems -> system df 2; 50 topics -> topic df 49; residual df 98
    assert "Residual" in out and " 98" in out


def test_trec_eval_text_on_standard_input(monkeypatch, capsys):
    run = "map\t1\t0.1\nmap\t2\t0.2\nmap\t3\t0.35\nrunid\tall\ta\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(run + run.replace("\ta\n", "\tb\n")))
    assert main(["pairwise", "-"]) == 1  # two runs in one stream: refused, in the CLI's terms
    err = capsys.readouterr().err
    assert "standard input, line 5" in err and "/tmp" not in err and "Traceback" not in err


@pytest.mark.parametrize("command", [
    ["anova"], ["gstudy"], ["pairwise"], ["mixed", "--formula", "score ~ system + (1|topic)"],
])
def test_systems_selects_runs_on_every_analysis_command(command, capsys):
    assert main([command[0], "adhoc3:AP", "--systems", "sys1", "sys2", "sys3", *command[1:]]) == 0
    out = capsys.readouterr().out
    assert "sys4" not in out
    assert main([command[0], "adhoc3:AP", "--systems", "sys1", "nope", *command[1:]]) == 2
    err = capsys.readouterr().err
    assert "--systems: nope not in DATA" in err and "Traceback" not in err


def test_power_and_report_accept_dataset_and_systems(tmp_path, capsys):
    assert main(["power", "--data", "adhoc3:AP", "--systems", "sys1,sys2,sys3"]) == 0
    assert "3 system pairs" in capsys.readouterr().out
    assert main(["report", "adhoc3:AP", "--systems", "sys1", "sys2", "sys3", "sys4",
                 "--out", str(tmp_path / "r")]) == 0
    captured = capsys.readouterr()
    assert "6 pairs" in captured.out and "irmodels report:" in captured.err  # progress on stderr


def test_unknown_dataset_and_empty_stdin(monkeypatch, capsys):
    assert main(["anova", "nosuch:AP"]) == 2  # a name typed wrong: a usage error
    assert "neither a file nor a registry dataset" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["anova", "-"]) == 1
    assert "standard input is empty" in capsys.readouterr().err


def test_dash_for_standard_output_and_labelled_diff(capsys):
    assert main(["pairwise", "adhoc3:AP", "--systems", "sys1,sys2,sys3", "--out", "-"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[0].startswith("a,b,diff") and len(lines) == 4  # CSV only on stdout
    assert "diff (first - second)" in captured.err and "3 pairs" in captured.err
    import pandas as pd

    pairs = pd.read_csv(io.StringIO(captured.out))
    data = __import__("irmodels").datasets.load("adhoc3", "AP")
    means = data.groupby("system", observed=True)["score"].mean()
    row = pairs.iloc[0]
    assert abs(row["diff"] - (means[row["a"]] - means[row["b"]])) < 1e-12  # first minus second


def test_evaluate_reads_a_run_on_standard_input(tmp_path, monkeypatch, capsys):
    (tmp_path / "q").write_text("1 0 d1 1\n1 0 d2 0\n2 0 d3 1\n")
    run = "1 Q0 d2 1 2.0 r\n1 Q0 d1 2 1.0 r\n2 Q0 d3 1 5.0 r\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(run))
    assert main(["evaluate", "-", "--qrels", str(tmp_path / "q"), "--measure", "AP",
                 "--out", "-"]) == 0
    out = capsys.readouterr().out
    assert "AP,1," in out and "0.5" in out and "AP,2," in out


def test_shards_warning_speaks_of_the_files_written(tmp_path, capsys):
    out = tmp_path / "sh"
    assert main(["shards", "--demo", "--preset", "tiny", "--n-shards", "10", "--n-splits", "1",
                 "--models", "MD1,MD6", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"the column n_undefined of {out}/runs.csv" in err and ".runs[" not in err


def test_topics_takes_systems_and_a_dataset_name(tmp_path, capsys):
    assert main(["topics", "adhoc3:AP", "--systems", "sys1,sys2,sys3,sys4", "--sizes", "5",
                 "--n-samples", "20", "--out", str(tmp_path / "t")]) == 0
    assert "50 topics x 4 systems" in capsys.readouterr().out


def test_shards_takes_systems(tmp_path, capsys):
    out = tmp_path / "sh"
    assert main(["shards", "--demo", "--preset", "tiny", "--n-shards", "2", "--n-splits", "1",
                 "--models", "MD1,MD6", "--systems", "sys01,sys02,sys03", "--out", str(out)]) == 0
    import pandas as pd

    runs = pd.read_csv(out / "runs.csv")
    assert set(runs["n_systems"]) == {3}
