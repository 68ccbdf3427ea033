"""``irmodels anova MATRIX.csv`` answered without pandas (irmodels/cli/_anova_fast.py) prints
what the long-frame path prints, character for character, and hands everything else to it.

The reference is ``irm.anova("MD1", irm.read_matrix(path), alpha=...).summary(digits)``: the
long frame, the closed-form fit, the pandas table and its rendering.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.cli import _anova_fast, main

SCORES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ir-scores"
MATRICES = sorted(SCORES.glob("*.csv")) if SCORES.is_dir() else []


def _full(path: Path, alpha: float = 0.05, digits: int = 4) -> str | None:
    """The long-frame summary, or None when it raises or warns."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return irm.anova("MD1", irm.read_matrix(path), alpha=alpha).summary(digits)
        except (irm.IRModelsError, Warning):
            return None


def _write(path: Path, values: np.ndarray, *, topics: list[str] | None = None,
           systems: list[str] | None = None, sep: str = ",") -> Path:
    t, s = values.shape
    systems = systems or [f"run{j}" for j in range(s)]
    topics = topics or [str(401 + i) for i in range(t)]
    lines = [sep.join(["topic", *systems])]
    lines += [sep.join([topics[i], *(repr(float(v)) for v in values[i])]) for i in range(t)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.skipif(not MATRICES, reason="../shared/data/ir-scores not present")
@pytest.mark.parametrize("path", MATRICES, ids=lambda p: p.stem)
def test_every_trec_matrix_prints_as_the_long_frame_path(path: Path) -> None:
    expected = _full(path)
    got = _anova_fast.matrix_anova_summary(path)
    if expected is None:  # a matrix with missing cells or a warning: the full path answers
        assert got is None
    else:
        assert got == expected


@pytest.mark.skipif(not MATRICES, reason="../shared/data/ir-scores not present")
@pytest.mark.parametrize(("alpha", "digits"), [(0.01, 2), (0.1, 7), (0.05, 17), (0.5, 1)])
def test_alpha_and_digits_are_those_of_the_long_frame_path(alpha: float, digits: int) -> None:
    path = SCORES / "adhoc8_ap.csv"
    got = _anova_fast.matrix_anova_summary(path, alpha=alpha, digits=digits)
    assert got is not None
    assert got == _full(path, alpha, digits)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=st.tuples(st.integers(2, 9), st.integers(2, 9)),
    effects=st.tuples(st.sampled_from([0.0, 0.3, 3.0]), st.sampled_from([0.0, 0.3, 3.0])),
    kind=st.sampled_from(["noise", "ties", "integers", "huge", "tiny", "separated"]),
    seed=st.integers(0, 2**32 - 1),
    sep=st.sampled_from([",", "\t"]),
)
def test_random_matrices_print_as_the_long_frame_path(tmp_path: Path, shape, effects, kind,
                                                      seed, sep) -> None:
    rng = np.random.default_rng(seed)
    t, s = shape
    values = (effects[0] * rng.uniform(0, 1, (t, 1)) + effects[1] * rng.uniform(0, 1, (1, s))
              + rng.uniform(0, 1, shape))
    if kind == "ties":  # few distinct values: rounding-noise sums of squares, equal runs
        values = np.round(values * 2) / 2
    elif kind == "integers":
        values = np.round(values)
    elif kind == "huge":
        values = values * 1e150
    elif kind == "tiny":
        values = values * 1e-150
    elif kind == "separated":  # strong system effect, small noise: p-values below 2.2e-16
        values = np.linspace(0, 1, s) + rng.normal(0, 1e-3, shape)
    path = _write(tmp_path / ("m.csv" if sep == "," else "m.tsv"), values, sep=sep)
    expected = _full(path)
    got = _anova_fast.matrix_anova_summary(path)
    if expected is None:
        assert got is None  # an error or a warning: left to the long-frame path
    else:
        assert got == expected


def _args(**kw) -> argparse.Namespace:
    base = dict(data="m.csv", formula=None, model=None, ss_type=None, components=False,
                dunnett=None, latex=False, systems=None, measure=None, alpha=0.05, digits=4)
    base.update(kw)
    return argparse.Namespace(**base)


def test_only_a_plain_table_is_eligible() -> None:
    assert _anova_fast.eligible(_args())
    assert _anova_fast.eligible(_args(model="MD1", alpha=0.01, digits=6))
    for kw in (dict(model="MD2"), dict(formula="score ~ topic + system"), dict(ss_type=2),
               dict(components=True), dict(dunnett="run1"), dict(latex=True),
               dict(systems=["a", "b"]), dict(measure="AP"), dict(data="-")):
        assert not _anova_fast.eligible(_args(**kw)), kw


def test_files_that_are_not_complete_matrices_go_the_full_way(tmp_path: Path) -> None:
    long = tmp_path / "long.csv"
    long.write_text("topic,system,score\n1,a,0.1\n1,b,0.2\n2,a,0.3\n2,b,0.5\n")
    missing = tmp_path / "missing.csv"
    missing.write_text("topic,a,b\n1,0.1,NA\n2,0.3,0.4\n")
    trec = tmp_path / "q.txt"
    trec.write_text("map\t1\t0.25\nmap\t2\t0.5\n")
    parquet = tmp_path / "m.parquet"
    parquet.write_bytes(b"")
    one_system = _write(tmp_path / "one.csv", np.array([[0.1], [0.2]]))
    newline = tmp_path / "newline.csv"  # a quoted label with a line break: frame() refuses it
    newline.write_text('topic,"a\nb",c\n1,0.1,0.2\n2,0.3,0.5\n')
    for path in (long, missing, trec, parquet, one_system, newline, tmp_path / "absent.csv",
                 tmp_path):
        assert _anova_fast.matrix_anova_summary(path) is None, path.name


def test_a_warning_hands_the_command_to_the_full_path(tmp_path: Path) -> None:
    # topic ids under an unknown header (qno): read_matrix warns, so the fast path steps aside
    ids = tmp_path / "ids.csv"
    ids.write_text("qno,a,b\n401,0.2,0.1\n402,0.2,0.3\n403,0.2,0.5\n")
    # identical runs: the residual is rounding noise (a perfect fit), warned
    perfect = _write(tmp_path / "perfect.csv", np.tile(np.array([[0.1], [0.4], [0.7]]), (1, 3)))
    # no system effect: F < 1, the partial omega squared of system is negative, warned
    rng = np.random.default_rng(0)
    flat = _write(tmp_path / "flat.csv",
                  rng.uniform(0, 0.6, (6, 1)) + rng.normal(0, 0.05, (6, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fast path itself warns of nothing
        for path in (ids, perfect, flat):
            assert _anova_fast.matrix_anova_summary(path) is None, path.name
    with pytest.warns(irm.errors.NegativeVarianceWarning, match="for system"):
        irm.anova("MD1", irm.read_matrix(flat))


def test_parse_matrix_says_its_note_instead_of_warning(tmp_path: Path) -> None:
    # warn=False: no warning, the message in Matrix.notes; warn=True (read_matrix): the same
    # message warned at the caller of read_matrix (this file)
    from irmodels.data._lines import parse_matrix

    ids = tmp_path / "ids.csv"
    ids.write_text("qno,a,b\n401,0.2,0.1\n402,0.2,0.3\n403,0.2,0.5\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = parse_matrix(ids, warn=False)
        clean = parse_matrix(_write(tmp_path / "m.csv", np.full((3, 3), 0.25)), warn=False)
    assert clean.notes == ()
    assert len(m.notes) == 1 and "'qno' holds distinct whole numbers (401 to 403)" in m.notes[0]
    with pytest.warns(irm.DataQualityWarning) as caught:
        irm.read_matrix(ids)
    assert [str(w.message) for w in caught] == list(m.notes)
    assert caught[0].filename == __file__


@pytest.mark.parametrize("case", ["ids", "constant", "missing"])
def test_the_cli_says_what_the_full_path_says(tmp_path: Path, capsys, monkeypatch, case) -> None:
    if case == "ids":
        path = tmp_path / "m.csv"
        path.write_text("qno,a,b\n401,0.2,0.1\n402,0.2,0.3\n403,0.2,0.5\n")
    elif case == "constant":
        path = _write(tmp_path / "m.csv", np.full((3, 3), 0.25))
    else:
        path = tmp_path / "m.csv"
        path.write_text("topic,a,b\n1,0.1,NA\n2,0.3,0.4\n")
    code = main(["anova", str(path)])
    fast = capsys.readouterr()
    monkeypatch.setattr(_anova_fast, "eligible", lambda args: False)
    assert main(["anova", str(path)]) == code
    full = capsys.readouterr()
    assert (fast.out, fast.err) == (full.out, full.err)
    assert fast.err.startswith("irmodels: ")  # a warning or an error was printed


def test_a_matrix_is_analysed_without_importing_pandas(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)  # topic and system effects: F > 1, nothing to warn about
    values = rng.uniform(0, 0.5, (6, 1)) + np.linspace(0, 0.3, 4) + rng.normal(0, 0.02, (6, 4))
    path = _write(tmp_path / "m.csv", values)
    # one fresh interpreter: the plain command first (pandas must still be unloaded after it),
    # then, in the same process, an option that needs the long frame: it imports pandas, so the
    # check is not vacuous (nothing the first command loaded can hide that import: it had not
    # loaded pandas)
    code = ("import sys; from irmodels.cli import main; rc = main(['anova', sys.argv[1]]); "
            "print('PANDAS', 'pandas' in sys.modules, rc); "
            "rc = main(['anova', sys.argv[1], '--components']); "
            "print('PANDAS', 'pandas' in sys.modules, rc)")
    res = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, check=True)
    lines = res.stdout.splitlines()
    assert lines.count("PANDAS False 0") == 1 and lines[-1] == "PANDAS True 0"
    first = lines.index("PANDAS False 0")
    assert "\n".join(lines[:first]) == _full(path)


def test_the_numbers_are_those_of_the_long_frame_table(tmp_path: Path) -> None:
    # bitwise: the same parse, codes, row order and kernels as irm.anova
    from irmodels.data._lines import parse_matrix
    from irmodels.models._anova_table import table_values
    from irmodels.models._balanced import cell_layout, fit_balanced

    values = np.random.default_rng(7).uniform(0, 1, (11, 7))
    path = _write(tmp_path / "m.csv", values)
    fit = irm.anova("MD1", irm.read_matrix(path))
    m = parse_matrix(path)
    y = m.values.reshape(-1)
    codes = [np.repeat(np.arange(11), 7), np.tile(np.arange(7), 11)]
    flat, _ = cell_layout(codes, (11, 7))
    keys = [frozenset({"topic"}), frozenset({"system"})]
    bf = fit_balanced(y, ("topic", "system"), flat, (11, 7), 1, keys)
    table = table_values([bf.ss[k] for k in keys], [bf.df[k] for k in keys], bf.ss_resid,
                         bf.df_resid, y.size, 0.05)
    np.testing.assert_array_equal(table, fit.table.to_numpy())
    assert isinstance(fit.table, pd.DataFrame)


PANDAS_FREE = ("irmodels._format", "irmodels.data._lines", "irmodels.formula.parser",
               "irmodels.models._balanced", "irmodels.models._anova_table",
               "irmodels.cli._anova_fast", "irmodels.cli._sniff", "irmodels.cli._options",
               "irmodels.cli.anova_cmd")


def test_the_modules_of_the_fast_path_import_no_pandas() -> None:
    code = (f"import importlib, sys\nfor m in {PANDAS_FREE!r}:\n    importlib.import_module(m)\n"
            "print(sorted(m for m in ('pandas', 'scipy.stats') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert res.stdout.strip() == "[]"


def test_load_data_picks_the_reader_by_data_kind(tmp_path: Path) -> None:
    # the reader decision of every command (cli/_sniff.data_kind, also used by the fast path):
    # a .txt file of trec_eval -q output is read as such, a .txt matrix as a matrix, and a .txt
    # long frame is refused with the frame reader's message
    from irmodels.cli._common import load_data
    from irmodels.cli._sniff import data_kind

    trec = tmp_path / "run1.txt"
    trec.write_text("map\t401\t0.25\nmap\t402\t0.5\nmap\tall\t0.375\n")
    assert data_kind(trec) == "trec_eval"
    pd.testing.assert_frame_equal(load_data(trec), irm.read_trec_eval(trec))
    assert load_data(trec)["topic"].astype(str).tolist() == ["401", "402"]
    matrix = tmp_path / "m.txt"
    matrix.write_text("topic,a,b\n1,0.1,0.2\n2,0.3,0.5\n")
    assert data_kind(matrix) == "matrix"
    pd.testing.assert_frame_equal(load_data(matrix), irm.read_matrix(matrix))
    long = tmp_path / "long.txt"
    long.write_text("topic,system,score\n1,a,0.1\n1,b,0.2\n2,a,0.3\n2,b,0.5\n")
    assert data_kind(long) == "frame"
    with pytest.raises(irm.DataFormatError, match="extension '.txt'"):
        load_data(long)
