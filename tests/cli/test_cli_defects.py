"""Defects of the command line found by testing it from the outside, each pinned by a test:
every failure is one line and the documented exit status, outputs are never written through
the wrong kind of file, standard input is read as bytes, names typed wrong are usage errors."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels._safeio import atomic_dir, write_text
from irmodels.cli import main
from irmodels.errors import OutputExistsError


@pytest.fixture(autouse=True)
def _mirror(shared_data, monkeypatch):
    monkeypatch.setenv("IRM_DATA_MIRROR", str(shared_data / "ir-scores"))


@pytest.fixture
def wide(tmp_path: Path) -> Path:
    """A wide matrix: 12 topics x 4 systems (one with an underscore in its name)."""
    rng = np.random.default_rng(7)
    w = pd.DataFrame(rng.beta(2, 5, size=(12, 4)), columns=["run_a", "sys1", "sys2", "sys3"])
    w["sys3"] += 0.3
    path = tmp_path / "wide.csv"
    w.to_csv(path, index=False)
    return path


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    d = tmp_path / "demo"
    irm.collection.generate(preset="tiny", systems=3, seed=1).write(d)
    return d


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    return err


def _last_line(err: str) -> str:
    return err.strip().splitlines()[-1]


def _bytes_stdin(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8",
                                                      errors="surrogateescape"))


# ---------------------------------------------------------------- 1. outputs: links and FIFOs
def test_force_follows_a_symlink_to_a_regular_file(wide: Path, tmp_path: Path, capsys) -> None:
    real = tmp_path / "real.csv"
    real.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    assert main(["compare", str(wide), "--out", str(link)]) == 2  # exists: refused
    assert "already exists" in _err(capsys) and real.read_text() == "old\n"
    assert main(["compare", str(wide), "--out", str(link), "--force"]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link stays a link
    assert real.read_text().startswith("system,letter,measure")  # its target was replaced
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".irmodels")) == []


def test_fifo_and_link_to_fifo_refused_even_with_force(wide: Path, tmp_path: Path,
                                                       capsys) -> None:
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    link = tmp_path / "to_pipe.csv"
    link.symlink_to(fifo)
    for target in (fifo, link):
        for force in ([], ["--force"]):
            assert main(["pairwise", str(wide), "--out", str(target), *force]) == 2
            err = _err(capsys)
            line = _last_line(err)
            assert "named pipe (FIFO), not a regular file" in line
            assert ("a symbolic link to a named pipe" in line) == (target == link)
            assert str(target) in err
    assert fifo.exists() and not fifo.is_file() and link.is_symlink()


def test_safeio_api_refuses_special_files_and_follows_links(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputExistsError, match="not a regular file"):
        write_text(fifo, "x", force=True)
    real = tmp_path / "a.txt"
    real.write_text("one")
    (tmp_path / "l.txt").symlink_to(real)
    write_text(tmp_path / "l.txt", "two", force=True)
    assert (tmp_path / "l.txt").is_symlink() and real.read_text() == "two"
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "old").write_text("o")
    (tmp_path / "ld").symlink_to(tmp_path / "d")
    with atomic_dir(tmp_path / "ld", force=True) as tmp:
        (tmp / "new").write_text("n")
    assert (tmp_path / "ld").is_symlink() and sorted(os.listdir(tmp_path / "d")) == ["new"]


# ---------------------------------------------------------------- 2. standard input as bytes
LATIN1 = "s\xffs1,sys2\n0.1,0.2\n0.3,0.4\n0.2,0.5\n".encode("latin-1")
UTF16 = "topic,system,score\n1,a,0.1\n".encode("utf-16")


@pytest.mark.parametrize("data", [LATIN1, UTF16, b"\x16\x8f\xfe\x00junk\xff\n"],
                         ids=["latin1", "utf16", "binary"])
@pytest.mark.parametrize("argv", [
    ["anova", "-"], ["pairwise", "-"], ["power", "--data", "-"], ["gstudy", "-"],
])
def test_stdin_not_utf8_is_a_data_error(argv, data, monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _bytes_stdin(monkeypatch, data)
    assert main(argv) == 1
    line = _last_line(_err(capsys))
    assert line.startswith("irmodels: error: standard input, line 1:")
    assert "irmodels-stdin" not in line and "UTF-8" in line
    assert list(tmp_path.glob("irmodels-stdin-*")) == []  # the copy was removed


def test_stdin_not_utf8_report_and_standardize(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    fac = tmp_path / "fac.csv"
    fac.write_text("topic,mu,sigma\n1,0.1,0.1\n")
    for argv in (["report", "-", "--out", str(tmp_path / "rep")],
                 ["standardize", "apply", "-", "--factors", str(fac), "--out",
                  str(tmp_path / "z.csv")]):
        _bytes_stdin(monkeypatch, LATIN1)
        assert main(argv) == 1
        assert "standard input, line 1: the line is not UTF-8" in _last_line(_err(capsys))
    assert list(tmp_path.glob("irmodels-stdin-*")) == []
    assert not (tmp_path / "rep").exists() and not (tmp_path / "z.csv").exists()


def test_evaluate_stdin_errors_name_standard_input(demo, monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    qrels = str(demo / "qrels.txt")
    _bytes_stdin(monkeypatch, b"1 Q0 d\xff1 1 0.5 r\n")
    assert main(["evaluate", "-", "--qrels", qrels]) == 1
    line = _last_line(_err(capsys))
    assert line.startswith("irmodels: error: standard input, line 1:") and "UTF-8" in line
    _bytes_stdin(monkeypatch, b"1 Q0 d1 1 0.5 r\n1 Q0 d2 2 abc r\n")
    assert main(["evaluate", "-", "--qrels", qrels]) == 1
    line = _last_line(_err(capsys))
    assert "standard input, line 2" in line and "/stdin" not in line
    assert list((tmp_path / "t").iterdir()) == []
    # a good run on standard input still works, as text or bytes
    run = (demo / "runs").iterdir().__next__().read_bytes()
    _bytes_stdin(monkeypatch, run)
    assert main(["evaluate", "-", "--qrels", qrels, "-m", "AP"]) == 0
    assert capsys.readouterr().out.startswith("measure,topic,system,score")


# ---------------------------------------------------------------- 3. compare
def test_compare_latex_escapes_names_once(wide: Path, tmp_path: Path, capsys) -> None:
    assert main(["compare", str(wide), "--latex", "-"]) == 0
    tex = capsys.readouterr().out
    assert "run\\_a &" in tex and "textbackslash" not in tex
    if shutil.which("pdflatex") and shutil.which("pdftotext"):
        (tmp_path / "t.tex").write_text(tex)
        (tmp_path / "doc.tex").write_text("\\documentclass{article}\\usepackage{booktabs}"
                                          "\\begin{document}\\input{t.tex}\\end{document}\n")
        subprocess.run(["pdflatex", "-interaction=nonstopmode", "doc.tex"], cwd=tmp_path,
                       capture_output=True, check=True, timeout=120)
        text = subprocess.run(["pdftotext", "doc.pdf", "-"], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout
        assert "textbackslash" not in text and "run" in text


def test_compare_latex_to_stdout_and_out_file(wide: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "x.csv"
    assert main(["compare", str(wide), "--latex", "-", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("\\begin{table}")
    assert out.read_text().startswith("system,letter,measure") and "wrote" in captured.err


def test_compare_out_dash_is_standard_output(wide: Path, tmp_path: Path, monkeypatch,
                                             capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["compare", str(wide), "--out", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("system,letter,measure,mean")
    assert "Comparison of 4 systems" in captured.err and not (tmp_path / "-").exists()
    assert main(["compare", str(wide), "--out", "-", "--latex", "-"]) == 2
    assert "both write to standard output" in _err(capsys)


def test_compare_same_file_for_latex_and_out(wide: Path, tmp_path: Path, capsys) -> None:
    t = tmp_path / "T"
    assert main(["compare", str(wide), "--latex", str(t), "--out", str(t)]) == 2
    assert "name the same file" in _last_line(_err(capsys)) and not t.exists()


def test_compare_measures_on_data_without_measure_column(wide: Path, capsys) -> None:
    assert main(["compare", str(wide), "--measures", "XYZ"]) == 2
    line = _last_line(_err(capsys))
    assert "--measures XYZ: DATA has no measure column" in line


def test_compare_unknown_measure_and_digits(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(1)
    w = pd.DataFrame(rng.uniform(size=(8, 3)), columns=["a", "b", "c"])
    long = pd.concat([irm.from_wide(w).assign(measure="AP"),
                      irm.from_wide(w * 0.9).assign(measure="P@10")], ignore_index=True)
    path = tmp_path / "long.csv"
    long.to_csv(path, index=False)
    assert main(["compare", str(path), "--measures", "XYZ"]) == 2
    assert "--measures: measure(s) 'XYZ' not in DATA" in _last_line(_err(capsys))
    assert main(["compare", str(path), "--measures", "map"]) == 0  # an alias of AP
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(path), "--digits", "100"])
    assert exc.value.code == 2
    assert "argument --digits: expected a whole number from 0 to 17" in _err(capsys)


def test_standardize_fit_out_dash_is_standard_output(wide: Path, tmp_path: Path, monkeypatch,
                                                     capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["standardize", "fit", str(wide), "--out", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("# irmodels-standardizer") and "topic,mu,sigma" in captured.out
    assert "fitted 12 topic(s)" in captured.err and not (tmp_path / "-").exists()


# ---------------------------------------------------------------- 4. number options
@pytest.mark.parametrize("argv, option", [
    (["--n", "10.5", "--delta", "0.05", "--sigma", "0.1"], "--n"),
    (["--n", "1", "--delta", "0.05", "--sigma", "0.1"], "--n"),
    (["--delta", "0", "--sigma", "0.1"], "--delta"),
    (["--data", "adhoc3:AP", "--deltas", "nan"], "--deltas"),
    (["--data", "adhoc3:AP", "--deltas", "inf"], "--deltas"),
    (["--data", "adhoc3:AP", "--deltas", "0.01,0"], "--deltas"),
    (["--data", "adhoc3:AP", "--quantiles", "1.5"], "--quantiles"),
    (["--data", "adhoc3:AP", "--quantiles", "nan"], "--quantiles"),
])
def test_power_bad_numbers_are_usage_errors(argv, option, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["power", *argv])
    assert exc.value.code == 2
    assert f"argument {option}: expected" in _last_line(_err(capsys))


def test_power_below_alpha_is_a_usage_error(capsys) -> None:
    assert main(["power", "--delta", "0.05", "--sigma", "0.1", "--power", "0.04"]) == 2
    assert "--power 0.04 is not above --alpha 0.05" in _last_line(_err(capsys))
    assert main(["power", "--n", "20", "--delta", "0.05", "--sigma", "0.1"]) == 0
    assert "n_topics" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400"])
def test_undefined_must_be_finite(value, demo, capsys) -> None:
    assert main(["evaluate", str(demo / "runs"), "--qrels", str(demo / "qrels.txt"),
                 f"--undefined={value}"]) == 2
    assert "give a finite number" in _last_line(_err(capsys))
    assert main(["shards", "--demo", "--preset", "tiny", f"--undefined={value}", "--out",
                 str(demo / "study")]) == 2
    assert "give a finite number" in _last_line(_err(capsys))


# ---------------------------------------------------------------- 5. names typed wrong: 2
def test_unknown_names_exit_2(wide: Path, tmp_path: Path, capsys) -> None:
    cases = [
        (["anova", "adhoc8:XYZ"], "has no measure 'XYZ'"),
        (["anova", str(wide), "--dunnett", "nope"], "--dunnett: nope not in DATA"),
        (["compare", str(wide), "--baseline", "nope"], "--baseline: nope not in DATA"),
        (["compare", str(wide), "--systems", "nope", "sys1"], "--systems: nope not in DATA"),
        (["compare", str(wide), "--systems", "sys1"], "at least two runs"),
        (["topics", "--dataset", "adhocX"], "unknown collection 'adhocX'"),
        (["pairwise", str(wide), "--pairs", "sys1:nope"], "--pairs: nope not in DATA"),
        (["standardize", "fit", str(wide), "--out", str(tmp_path / "f.csv"), "--reference",
          "sys1,nope"], "--reference: nope not in DATA"),
        (["simulate", "documents", "--demo", "--preset", "tiny", "--measure", "XYZ", "--out",
          str(tmp_path / "sim")], "unknown measure 'XYZ'"),
        (["shards", "--demo", "--preset", "tiny", "--measure", "XYZ", "--out",
          str(tmp_path / "sh")], "unknown measure 'XYZ'"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert message in _last_line(_err(capsys)), argv
    assert not any(tmp_path.glob("sim*")) and not any(tmp_path.glob("sh*"))
    assert not (tmp_path / "f.csv").exists()


def test_pair_of_a_system_with_itself(wide: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["pairwise", str(wide), "--pairs", "sys1:sys1"])
    assert exc.value.code == 2
    assert "compares a system with itself" in _last_line(_err(capsys))


# ---------------------------------------------------------------- 6. --shards, directories
def test_evaluate_shards_file_problems(demo: Path, tmp_path: Path, capsys) -> None:
    base = ["evaluate", str(demo / "runs"), "--qrels", str(demo / "qrels.txt"), "-m", "AP",
            "--shards"]
    one = tmp_path / "one.txt"
    one.write_text("FR940202-2-00150\nFR940202-2-00151\n")
    assert main([*base, str(one)]) == 1
    line = _last_line(_err(capsys))
    assert f"{one}, line 1: cannot parse the shard assignment: expected two columns" in line
    assert "found 1 field" in line
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main([*base, str(empty)]) == 1
    assert f"{empty}: cannot parse the shard assignment: the file is empty" in _last_line(
        _err(capsys))
    latin = tmp_path / "latin.txt"
    latin.write_bytes(b"d1 0\nd2 s\xe9\n")
    assert main([*base, str(latin)]) == 1
    assert f"{latin}, line 2: cannot parse the shard assignment: the line is not UTF-8" in (
        _last_line(_err(capsys)))
    # a good assignment, with a header, by commas and by spaces
    docids = (demo / "docids.txt").read_text().split()
    for sep in (",", " "):
        good = tmp_path / "good.txt"
        good.write_text(f"docid{sep}shard\n" + "".join(f"{d}{sep}{i % 2}\n"
                                                       for i, d in enumerate(docids)))
        assert main([*base, str(good)]) == 0
        assert set(pd.read_csv(io.StringIO(capsys.readouterr().out))["shard"]) == {0, 1}


@pytest.mark.parametrize("option", ["--qrels", "--shards"])
def test_directory_given_for_an_input_file(option, demo: Path, tmp_path: Path, capsys) -> None:
    qrels = str(tmp_path) if option == "--qrels" else str(demo / "qrels.txt")
    argv = ["evaluate", str(demo / "runs"), "--qrels", qrels]
    if option == "--shards":
        argv += ["--shards", str(tmp_path)]
    assert main(argv) == 2
    assert f"{option} {tmp_path} is a directory" in _last_line(_err(capsys))


def test_factors_directory(wide: Path, tmp_path: Path, capsys) -> None:
    assert main(["standardize", "apply", str(wide), "--factors", str(tmp_path), "--out",
                 str(tmp_path / "z.csv")]) == 2
    assert f"--factors {tmp_path} is a directory" in _last_line(_err(capsys))


def test_trec_eval_output_saved_as_txt_is_read_as_trec_eval(tmp_path: Path, capsys) -> None:
    # a .txt used to be read as a wide matrix: "cell 'num_rel' ... is not a number"
    from irmodels.cli import main

    rng = np.random.default_rng(3)
    for run in ("a", "b", "c"):
        lines = []
        for topic in range(301, 306):
            lines.append(f"num_ret               \t{topic}\t500")
            lines.append(f"map                   \t{topic}\t{rng.uniform():.4f}")
        lines.append("map                   \tall\t0.3000")
        (tmp_path / f"{run}.txt").write_text("\n".join(lines) + "\n")
    rc = main(["anova", str(tmp_path), "--measure", "map"])
    out = capsys.readouterr().out
    assert rc == 0 and "N = 15" in out
    from irmodels.cli._common import load_data

    one = load_data(tmp_path / "b.txt", measure="map")
    assert len(one) == 5 and set(one["topic"].astype(str)) == {"301", "302", "303", "304", "305"}


def test_evaluate_shards_file_gets_the_checks_of_every_reader(demo: Path, tmp_path: Path,
                                                              capsys) -> None:
    # the shard assignment is read by the text-file layer of the readers (data/_lines.py): a
    # control character or an odd space in a doc id is refused with its line, not kept
    base = ["evaluate", str(demo / "runs"), "--qrels", str(demo / "qrels.txt"), "-m", "AP",
            "--shards"]
    for name, data, reason in (
        ("nul.txt", b"d1 0\nd\x002 1\n", "control character U+0000"),
        ("nbsp.txt", "d1 0\nd2\u00a01\n".encode(), "whitespace character U+00A0"),
        ("blank.txt", b"\n  \n", "only blank lines"),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        assert main([*base, str(path)]) == 1
        line = _last_line(_err(capsys))
        assert f"cannot parse the shard assignment: the line contains the {reason}" in line or (
            reason == "only blank lines" and "cannot parse the shard assignment: the file has "
            "only blank lines" in line), line
        if reason != "only blank lines":
            assert f"{path}, line 2: " in line
