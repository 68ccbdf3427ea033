"""The shape of DATA files on the command line: a long frame keeps its other columns for a
formula, ``--topic``/``--system``/``--score`` name the columns of a long frame with other
names, and a file whose columns do not fit says which reader or option to use (issue 25,
item 6). Errors are one line without a traceback, with the documented exit status."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main
from irmodels.cli._sniff import data_kind, long_guess

USER = ["--topic", "qid", "--system", "run", "--score", "map"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, object]:
    """The same scores as a canonical long frame with a covariate, a long frame with other
    names (CSV and TSV), a wide matrix (CSV and parquet), and the canonical frame itself."""
    d = tmp_path_factory.mktemp("shapes")
    rng = np.random.default_rng(5)
    rows = []
    for t in range(1, 11):
        for s, shift in (("bm25", 0.0), ("dense", 0.08), ("rm3", 0.03)):
            rows.append((t, s, round(float(np.clip(rng.beta(2, 5) + shift, 0, 1)), 4),
                         int(rng.integers(1, 9))))
    canon = pd.DataFrame(rows, columns=["topic", "system", "score", "qlen"])
    canon.to_csv(d / "long.csv", index=False)
    user = canon.rename(columns={"topic": "qid", "system": "run", "score": "map"})
    user.to_csv(d / "user.csv", index=False)
    user.to_csv(d / "user.tsv", index=False, sep="\t")
    user.to_parquet(d / "user.parquet", index=False)
    wide = canon.pivot(index="topic", columns="system", values="score")
    wide.to_csv(d / "wide.csv")
    wide.reset_index().to_parquet(d / "wide.parquet", index=False)
    return {"dir": d, "canon": canon}


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def _one_line_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("irmodels: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_formula_keeps_the_files_other_columns(files, capsys) -> None:
    d = files["dir"]
    status, out, err = _run(capsys, "anova", d / "long.csv", "--formula",
                            "score ~ system + qlen")
    assert status == 0, err
    expected = irm.anova("score ~ system + qlen", files["canon"])
    assert f"{expected.table.loc['qlen', 'SS']:.4f}" in out
    assert out.splitlines()[0].startswith("ANOVA: score ~ system + qlen")
    status, out, err = _run(capsys, "mixed", d / "long.csv", "--formula",
                            "score ~ system + qlen + (1|topic)")
    assert status == 0, err
    assert "qlen" in out


@pytest.mark.parametrize("name", ["user.csv", "user.tsv", "user.parquet"])
def test_user_column_names_give_the_canonical_table(files, capsys, name) -> None:
    d = files["dir"]
    status, canon_out, _ = _run(capsys, "anova", d / "long.csv", "--formula",
                                "score ~ topic + system + qlen")
    status, out, err = _run(capsys, "anova", d / name, *USER, "--formula",
                            "map ~ qid + run + qlen")
    assert status == 0, err
    # the same numbers, the user's names for the factors
    canon_rows, user_rows = _table_rows(canon_out), _table_rows(out)
    assert [r[1:] for r in canon_rows] == [r[1:] for r in user_rows] and len(user_rows) == 4
    assert [r[0] for r in user_rows] == ["qid", "run", "qlen", "Residual"]
    # a preset model is written in the user's names; the formula may use either name
    status, out, err = _run(capsys, "anova", d / name, *USER)
    assert status == 0 and out.splitlines()[0].startswith("ANOVA: map ~ qid + run"), err
    status, out2, err = _run(capsys, "anova", d / name, *USER, "--formula",
                             "score ~ topic + system")
    assert status == 0, err
    assert [r[1:] for r in _table_rows(out2)] == [r[1:] for r in _table_rows(out)]
    assert [r[0] for r in _table_rows(out2)] == ["topic", "system", "Residual"]


def _table_rows(out: str) -> list[list[str]]:
    """The rows of the ANOVA table in a summary (after its header line)."""
    lines = out.splitlines()
    start = lines.index("Analysis of variance") + 2
    rows = []
    for ln in lines[start:]:
        if not ln.strip():
            break
        rows.append(ln.split())
    return rows


def test_other_commands_name_the_users_columns(files, capsys) -> None:
    d = files["dir"]
    status, out, err = _run(capsys, "gstudy", d / "user.csv", *USER)
    assert status == 0, err
    g = irm.gstudy(files["canon"][["topic", "system", "score"]])
    lines = out.splitlines()
    assert "(run x qid)" in lines[0]
    start = lines.index("Variance components") + 2
    comp = {ln.split()[0]: ln.split()[1] for ln in lines[start:start + 3]}
    assert set(comp) == {"run", "qid", "Residual"}
    assert float(comp["qid"]) == pytest.approx(g.components.loc["topic", "variance"], abs=5e-5)
    status, out, err = _run(capsys, "compare", d / "user.csv", *USER)
    assert status == 0, err
    assert " on map:" in out.splitlines()[0] and out.splitlines()[3].split() == ["run"]
    status, out, err = _run(capsys, "pairwise", d / "user.csv", *USER)
    assert status == 0, err
    expected = irm.pairwise(files["canon"][["topic", "system", "score"]])
    assert f"{expected.table['statistic'].iloc[0]:.4g}"[:5] in out


def test_long_file_with_other_names_is_not_read_as_a_matrix(files, capsys) -> None:
    d = files["dir"]
    for argv in (("anova", d / "user.csv"), ("pairwise", d / "user.tsv"),
                 ("gstudy", d / "user.csv")):
        status, _, err = _run(capsys, *argv)
        line = _one_line_error(err)
        assert status == 1
        assert "looks like a long frame" in line
        assert "--topic qid --system run --score map" in line
        assert "is not a number" not in line
    assert long_guess(d / "user.csv") == {"topic": "qid", "system": "run", "score": "map"}
    assert long_guess(d / "wide.csv") is None
    assert data_kind(d / "user.csv", {"qid", "run", "map"}) == "frame"
    assert data_kind(d / "user.csv") == "matrix"


def test_misspelt_column_option_says_did_you_mean(files, capsys) -> None:
    d = files["dir"]
    status, _, err = _run(capsys, "anova", d / "user.csv", "--topic", "qid", "--system",
                          "rn", "--score", "map")
    line = _one_line_error(err)
    assert status == 1
    assert "no column 'rn' (did you mean 'run'?)" in line and "--system run" in line
    status, _, err = _run(capsys, "pairwise", d / "user.parquet", "--topic", "qid",
                          "--system", "run", "--score", "mAP")
    line = _one_line_error(err)
    assert status == 1 and "no column 'mAP' (did you mean 'map'?)" in line


def test_column_options_on_a_wide_matrix_or_a_dataset_are_usage_errors(files, capsys) -> None:
    d = files["dir"]
    status, _, err = _run(capsys, "pairwise", d / "wide.csv", "--system", "run")
    line = _one_line_error(err)
    assert status == 2 and "is a wide matrix" in line and "leave them out" in line
    status, _, err = _run(capsys, "anova", "adhoc3:AP", "--system", "run")
    assert status == 2 and "registry dataset" in _one_line_error(err)


def test_wide_matrix_where_a_long_frame_is_expected(files, capsys) -> None:
    d = files["dir"]
    # a formula naming a column a matrix cannot have: the matrix's columns are said
    status, _, err = _run(capsys, "anova", d / "wide.csv", "--formula", "map ~ system")
    assert status == 2
    assert err.startswith("irmodels: error: unknown column 'map'")
    assert "is a wide matrix" in err.splitlines()[0] and "Traceback" not in err
    # a matrix saved as parquet (read as a long frame): says it looks like a matrix
    status, _, err = _run(capsys, "gstudy", d / "wide.parquet")
    line = _one_line_error(err)
    assert status == 1 and "looks like a wide matrix" in line and "irm.from_wide" not in line
    # the matrix itself still reads, through the pandas-free path too
    status, out, err = _run(capsys, "anova", d / "wide.csv")
    assert status == 0 and out.startswith("ANOVA: score ~ topic + system"), err


def test_python_readers_take_the_names(files) -> None:
    d = files["dir"]
    got = irm.read_frame(d / "user.csv", topic="qid", system="run", score="map")
    pd.testing.assert_frame_equal(got, irm.read_frame(d / "long.csv"))
    with pytest.raises(irm.DataFormatError, match=r"no column 'topic' \(did you mean 'qid'"):
        irm.read_frame(d / "user.csv")
    with pytest.raises(irm.DataFormatError, match="irm.from_wide"):
        irm.pairwise(pd.read_csv(d / "wide.csv"))
