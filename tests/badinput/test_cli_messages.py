"""The command line speaks its own language: messages name its options (never a Python
argument it does not have), data errors name the file and line, a missing path is a usage error
(exit status 2) and an :class:`irmodels.errors.MissingFileError` in the API, and tables that
cannot be shown are replaced by a sentence."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

import irmodels as irm
from irmodels.cli import main
from irmodels.errors import (
    DataFormatError,
    DataQualityWarning,
    IRModelsError,
    MissingFileError,
    NegativeVarianceWarning,
)

PYTHON_HINTS = ("nan='drop'", "method='", "virtual=True", "ddof=0", "Drop it from the model",
                "irm.frame(")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return status, out, err


def _no_python_hint(text: str) -> None:
    for hint in PYTHON_HINTS:
        assert hint not in text, (hint, text)


def _wide(path: Path, n_topics: int = 20, n_systems: int = 5, seed: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    lines = ["topic," + ",".join(f"s{j}" for j in range(n_systems))]
    for i in range(n_topics):
        lines.append(f"t{i}," + ",".join(f"{v:.4f}" for v in rng.random(n_systems)))
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- 1. hints in the command's terms


def test_nan_in_long_csv_says_what_to_do_on_the_command_line(tmp_path, capsys):
    data = tmp_path / "nan_cell.csv"
    data.write_text("topic,system,score\nt1,a,0.1\nt1,b,\nt2,a,0.3\nt2,b,0.4\n")
    status, _, err = _run(capsys, "anova", data)
    assert status == 1
    _no_python_hint(err)
    assert "line 3:" in err and "delete those rows from the file" in err
    assert len(err.strip().splitlines()) == 1


def test_nan_in_matrix_says_what_to_do_on_the_command_line(tmp_path, capsys):
    data = tmp_path / "m.csv"
    data.write_text("topic,a,b\nt1,0.1,\nt2,0.2,0.3\n")
    status, _, err = _run(capsys, "pairwise", data)
    assert status == 1
    _no_python_hint(err)
    assert "line 2:" in err and "fill it in" in err


def test_topics_sizes_hint_names_the_method_option(tmp_path, capsys):
    status, _, err = _run(capsys, "topics", _wide(tmp_path / "good.csv"), "--sizes", "15")
    assert status == 1
    _no_python_hint(err)
    assert "--method subsample / bootstrap" in err


def test_standardize_single_reference_one_warning_in_cli_terms(tmp_path, capsys):
    data = _wide(tmp_path / "one_system.csv", n_topics=10, n_systems=1)
    status, out, err = _run(capsys, "standardize", "fit", data, "--out", tmp_path / "z.json")
    assert status == 0
    _no_python_hint(err)
    assert "warning" not in out  # messages on stderr only
    warned = [line for line in err.splitlines() if "warning" in line]
    assert len(warned) == 1, err
    assert "--virtual" in warned[0] and "--ddof 0" in warned[0]


def test_standardize_constant_topic_warned_once_on_stderr(tmp_path, capsys):
    data = tmp_path / "const.csv"
    data.write_text("topic,a,b,c\nt1,0.1,0.1,0.1\nt2,0.2,0.3,0.4\n")
    status, out, err = _run(capsys, "standardize", "fit", data, "--out", tmp_path / "z.json")
    assert status == 0
    assert "warning" not in out
    assert "1 topic(s) have sigma = 0" in err and "--virtual avoids it" in err


def test_compare_one_topic_needs_two_topics(tmp_path, capsys):
    data = tmp_path / "one_topic.csv"
    data.write_text("topic,a,b,c\nt1,0.1,0.2,0.3\n")
    status, _, err = _run(capsys, "compare", data)
    assert status == 1
    _no_python_hint(err)
    assert "needs at least two topics" in err


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    d = tmp_path / "demo"
    irm.collection.generate(preset="tiny", seed=2).write(d)
    return d


def test_shards_one_run_needs_two_systems(demo, tmp_path, capsys):
    run = min((demo / "runs").iterdir())
    status, _, err = _run(capsys, "shards", "--runs", run, "--qrels", demo / "qrels.txt",
                          "--n-shards", "2", "--n-splits", "2", "--out", tmp_path / "s")
    assert status == 1
    _no_python_hint(err)
    assert "needs at least two runs" in err
    assert not (tmp_path / "s").exists()


def test_shards_one_judged_topic_needs_two_topics(demo, tmp_path, capsys):
    qrels = tmp_path / "q1.txt"
    lines = (demo / "qrels.txt").read_text().splitlines()
    first = lines[0].split()[0]
    qrels.write_text("\n".join(x for x in lines if x.split()[0] == first) + "\n")
    status, _, err = _run(capsys, "shards", "--runs", demo / "runs", "--qrels", qrels,
                          "--n-shards", "2", "--n-splits", "2", "--out", tmp_path / "s")
    assert status == 1
    _no_python_hint(err)
    assert "needs at least two topics" in err


def test_hints_rewrite_only_to_options_the_command_has():
    from irmodels.cli._hints import cli_message

    mixed = {"method": ("--method", ("REML", "ML"), False)}
    assert cli_message("fit them with method='ML'.", mixed) == "fit them with --method ML."
    # a value the option does not take, or an option the command lacks: left as it is
    assert cli_message("use method='bootstrap'.", mixed) == "use method='bootstrap'."
    assert cli_message("or ddof=0.", {}) == "or ddof=0."
    assert (cli_message("pass aggregate='mean' to average them", {"average": ("--average", None, True)})
            == "add --average to average them")
    one = ("factor 'system' has 1 level(s) (a); a factor needs at least two levels to be "
           "tested. Drop it from the model.")
    assert "needs at least two systems" in cli_message(one, {})
    assert cli_message(one, {"model": ("--model", None, False)}) == one


# ---- 2. exit statuses and error types


def test_unknown_dataset_name_is_a_usage_error(capsys):
    status, _, err = _run(capsys, "anova", "nope:AP")
    assert status == 2
    assert "neither a file nor a registry dataset" in err


def test_missing_file_error_is_both_kinds():
    assert issubclass(MissingFileError, IRModelsError)
    assert issubclass(MissingFileError, FileNotFoundError)
    assert irm.MissingFileError is MissingFileError
    err = MissingFileError(path="x.csv", suggestion="did you mean 'y.csv'?")
    assert err.errno == 2 and err.filename == "x.csv" and str(err).startswith("x.csv: ")
    assert err.reason == "no such file or directory" and err.path == "x.csv"
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is MissingFileError and str(again) == str(err)
    assert (again.path, again.suggestion, again.errno) == ("x.csv", err.suggestion, 2)
    # Dask (distributed) installs tblib's exception pickling: a worker's error must still
    # come back (a class built on both ValueError and OSError could not be rebuilt there)
    tblib = pytest.importorskip("tblib.pickling_support")
    tblib.install(err)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is MissingFileError and str(again) == str(err)


@pytest.mark.parametrize("reader", [irm.read_frame, irm.read_matrix, irm.read_run,
                                    irm.read_qrels, irm.read_trec_eval])
def test_readers_raise_missing_file_error(tmp_path, reader):
    path = tmp_path / "nonexist.csv"
    with pytest.raises(MissingFileError) as info:
        reader(path)
    assert isinstance(info.value, IRModelsError) and isinstance(info.value, FileNotFoundError)
    assert info.value.path == str(path) and str(path) in str(info.value)
    assert "does not exist" in str(info.value)


def test_missing_file_names_a_near_miss(tmp_path, capsys):
    _wide(tmp_path / "scores.csv")
    with pytest.raises(FileNotFoundError, match="did you mean .*scores.csv"):
        irm.read_frame(tmp_path / "scroes.csv")
    status, _, err = _run(capsys, "anova", tmp_path / "scores.cvs")
    assert status == 2
    assert "no such file" in err and "did you mean" in err and "scores.csv" in err


# ---- 3. reader messages


def test_read_frame_of_a_directory(tmp_path):
    (tmp_path / "adir").mkdir()
    with pytest.raises(DataFormatError, match="found a directory"):
        irm.read_frame(tmp_path / "adir")


@pytest.mark.parametrize("header", ["topic,system,score", "score,topic,system",
                                    "measure,topic,system,score"])
def test_read_matrix_of_a_long_frame_says_read_frame(tmp_path, header):
    path = tmp_path / "long.csv"
    cols = header.split(",")
    row = {"topic": "t0", "system": "a", "score": "0.5", "measure": "AP"}
    path.write_text(header + "\n" + ",".join(row[c] for c in cols) + "\n")
    with pytest.raises(DataFormatError, match="irm.read_frame") as info:
        irm.read_matrix(path)
    assert info.value.line == 1 and "long frame" in str(info.value)


@pytest.mark.parametrize("cell", ["inf", "-inf", "Infinity"])
def test_read_matrix_infinite_cell(tmp_path, cell):
    path = tmp_path / "m.csv"
    path.write_text(f"topic,a,b\nt1,0.1,0.2\nt2,0.3,{cell}\n")
    with pytest.raises(DataFormatError, match="infinite value") as info:
        irm.read_matrix(path)
    assert info.value.line == 3 and "system b" in str(info.value)


def test_read_frame_nan_and_duplicate_name_the_line(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("topic,system,score\n\nt1,a,0.1\nt1,b,0.2\n\nt2,a,\nt2,b,0.4\n")
    with pytest.raises(DataFormatError, match="missing") as info:
        irm.read_frame(path)
    assert info.value.line == 6
    path.write_text("topic,system,score\n\nt1,a,0.1\nt1,b,0.2\n\nt2,a,0.3\nt1,a,0.4\n")
    with pytest.raises(DataFormatError, match="repeat") as info:
        irm.read_frame(path)
    assert info.value.line == 7 and "line 3" in str(info.value)


def test_cli_duplicate_names_the_line_in_cli_terms(tmp_path, capsys):
    path = tmp_path / "f.csv"
    path.write_text("topic,system,score\nt1,a,0.1\nt1,b,0.2\nt1,a,0.4\n")
    status, _, err = _run(capsys, "anova", path)
    assert status == 1
    assert "line 4:" in err and "shard=..." not in err


# ---- 4. cosmetic


def test_topics_identical_systems_prints_a_sentence(tmp_path, capsys):
    rng = np.random.default_rng(2)
    values = rng.random(20)
    path = tmp_path / "two_identical.csv"
    path.write_text("topic,a,b\n" + "".join(f"t{i},{v:.4f},{v:.4f}\n"
                                              for i, v in enumerate(values)))
    status, out, _ = _run(capsys, "topics", path, "--n-samples", "20")
    assert status == 0
    assert "Empty DataFrame" not in out and "Columns: []" not in out
    assert "no pair of systems differs" in out


def test_compare_shows_no_omega_warning_and_each_warning_once(demo, capsys):
    args = (demo / "runs", "--qrels", demo / "qrels.txt", "--measures", "AP", "nDCG@10", "P@10")
    scores = irm.evaluate(irm.read_runs(demo / "runs"), irm.read_qrels(demo / "qrels.txt"),
                          ["AP", "nDCG@10", "P@10"])
    with warnings.catch_warnings(record=True) as caught:  # the API warns, once per measure
        warnings.simplefilter("always")
        irm.compare(scores)
    assert sum(issubclass(w.category, NegativeVarianceWarning) for w in caught) >= 2
    with warnings.catch_warnings():  # a library's own deprecations (pandas, on the minimum
        warnings.simplefilter("ignore", DeprecationWarning)  # versions) are not the CLI's
        status, _, err = _run(capsys, "compare", *args)
    assert status == 0
    assert "omega" not in err
    lines = [line for line in err.splitlines() if "warning" in line]
    assert len(lines) == len(set(lines))


def test_compare_warnings_shown_once_each(capsys):
    from irmodels.cli.compare import _show_warnings

    def record(text, category):
        return warnings.WarningMessage(text, category, "f.py", 1)

    caught = [record("some topics tie", DataQualityWarning),
              record("some topics tie", DataQualityWarning),
              record("partial omega squared is negative (F < 1) for system; shown as 0 (see "
                     "AnovaResult.omega2_clipped).", NegativeVarianceWarning)]
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        _show_warnings(caught)
    assert [str(w.message) for w in shown] == ["some topics tie"]
