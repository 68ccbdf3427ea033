"""``irmodels gstudy``, ``irmodels power`` and ``irmodels standardize`` through cli.main."""

from __future__ import annotations

import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main
from irmodels.data.standardize import Standardizer, read_zscores


@pytest.fixture(scope="module")
def adhoc3_csv(shared_data):
    return str(shared_data / "ir-scores" / "adhoc3_ap.csv")


def test_gstudy(adhoc3_csv, capsys, shared_data):
    assert main(["gstudy", adhoc3_csv, "--topics", "25,50", "--target", "0.9"]) == 0
    out = capsys.readouterr().out
    g = irm.gstudy(irm.read_matrix(adhoc3_csv))
    assert "40 systems x 50 topics" in out
    assert f"{g.components.loc['system', 'variance']:.4f}" in out
    line = next(x for x in out.splitlines() if x.startswith("Erho2 "))
    assert int(line.split()[1]) == g.topics_needed(0.9)


def test_gstudy_long_frame_with_shards(reference_dir, capsys):
    assert main(["gstudy", str(reference_dir / "gtheory_shards.csv"), "--shards", "1,4"]) == 0
    out = capsys.readouterr().out
    assert "x 4 shards" in out and "topic:shard" in out


def test_gstudy_errors(tmp_path, capsys, adhoc3_csv):
    assert main(["gstudy", str(tmp_path / "missing.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["gstudy", adhoc3_csv, "--topics", "ten"])
    assert e.value.code == 2
    long = tmp_path / "two.csv"
    f = irm.read_matrix(adhoc3_csv)
    both = pd.concat([f.assign(measure="AP"), f.assign(measure="P10")])
    both[["measure", "topic", "system", "score"]].to_csv(long, index=False)
    assert main(["gstudy", str(long)]) == 1
    err = capsys.readouterr().err
    assert "--measure" in err and "Traceback" not in err
    assert main(["gstudy", str(long), "--measure", "P10"]) == 0


def test_power_solves_each(capsys):
    assert main(["power", "--delta", "0.05", "--sigma", "0.1", "--power", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "34 topics" in out and "33.3671" in out
    assert main(["power", "--n", "50", "--delta", "0.05", "--sigma", "0.1"]) == 0
    assert "0.933898" in capsys.readouterr().out
    assert main(["power", "--n", "50", "--sigma", "0.1"]) == 0  # power defaults to 0.8
    out = capsys.readouterr().out
    assert "solved for delta" in out and "0.040418" in out


def test_power_table(adhoc3_csv, capsys):
    assert main(["power", "--data", adhoc3_csv, "--deltas", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "780 system pairs" in out and "Detectable difference" in out


def test_power_errors(capsys, adhoc3_csv):
    assert main(["power", "--n", "50"]) == 2
    err = capsys.readouterr().err
    assert "exactly one" in err and "Traceback" not in err
    assert main(["power", "--data", adhoc3_csv, "--n", "10"]) == 2
    assert "drop --n" in capsys.readouterr().err


def test_standardize_fit_apply(tmp_path, adhoc3_csv, capsys):
    factors = tmp_path / "f.csv"
    assert main(["standardize", "fit", adhoc3_csv, "--out", str(factors), "--top", "10",
                 "--method", "z"]) == 0
    out_file = tmp_path / "out.csv"
    assert main(["standardize", "apply", adhoc3_csv, "--factors", str(factors),
                 "--out", str(out_file)]) == 0
    got = irm.read_frame(out_file)
    data = irm.read_matrix(adhoc3_csv)
    expect = Standardizer("z").fit(data, reference=10).transform(data)
    assert got["score"].to_numpy() == pytest.approx(expect["score"].to_numpy(), rel=1e-12)
    assert "wrote" in capsys.readouterr().out


def test_standardize_zscores(tmp_path, adhoc3_csv):
    z = tmp_path / "zscores"
    assert main(["standardize", "fit", adhoc3_csv, "--out", str(z), "--zscores",
                 "--measure", "map"]) == 0
    assert list(read_zscores(z)) == ["map"]
    out_file = tmp_path / "out.csv"
    assert main(["standardize", "apply", adhoc3_csv, "--factors", str(z), "--out", str(out_file),
                 "--method", "normal"]) == 0
    data = irm.read_matrix(adhoc3_csv)
    expect = Standardizer("normal").fit_transform(data)
    assert irm.read_frame(out_file)["score"].to_numpy() == pytest.approx(
        expect["score"].to_numpy(), rel=1e-12)


def test_standardize_errors(tmp_path, adhoc3_csv, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("not factors\n")
    assert main(["standardize", "apply", adhoc3_csv, "--factors", str(bad),
                 "--out", str(tmp_path / "o.csv")]) == 1
    err = capsys.readouterr().err
    assert "4 fields" in err and "Traceback" not in err
    assert main(["standardize", "fit", adhoc3_csv, "--out", str(tmp_path / "f.csv"),
                 "--reference", "nosuch"]) == 2  # a name typed on the command line: usage
    assert "--reference: nosuch not in DATA" in capsys.readouterr().err
    assert main(["standardize"]) == 2


def test_standardize_trec_eval_output_with_zscores(tmp_path, shared_data):
    """trec_eval -q output + its zscores file -> the Z values trec_eval prints with -Z."""
    d = shared_data / "trec_eval"
    out_file = tmp_path / "z.csv"
    assert main(["standardize", "apply", str(d / "out.test.aq"), "--factors",
                 str(d / "zscores_file"), "--out", str(out_file)]) == 0
    got = irm.read_frame(out_file)
    assert got["measure"].nunique() == 95 and len(got) == 95 * 3
    printed = {}
    for line in (d / "out.test.aqZ").read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in ("Zmap", "ZP_10", "Zndcg") and parts[1] != "all":
            printed[(parts[0][1:], parts[1])] = float(parts[2])
    z = read_zscores(d / "zscores_file")
    for row in got.itertuples():
        key = (str(row.measure), str(row.topic))
        if key in printed:
            sd = z[key[0]].loc[key[1], "sigma"]
            assert abs(row.score - printed[key]) <= 0.5e-4 + 0.5e-4 / sd
    # and back: fit factors on several measures, write them as a zscores file
    zs = tmp_path / "zs"
    assert main(["standardize", "fit", str(out_file), "--out", str(zs), "--zscores"]) == 0
    assert len(read_zscores(zs)) == 95
