"""`irmodels anova` and `irmodels gstudy` import only what they need (start-up time,
benchmarks/cli_startup.py).

An ANOVA table needs numpy, pandas (to read the data) and scipy.special (F p-values, power);
scipy.stats, scipy.linalg/optimize/sparse (pulled in by scipy.stats), statsmodels, patsy,
matplotlib and jinja2 cost most of a command's start-up and must not be imported by it. Each
case runs the command in a fresh interpreter and prints the modules it loaded.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

HEAVY = ("scipy.stats", "scipy.linalg", "scipy.optimize", "scipy.sparse", "statsmodels",
         "patsy", "matplotlib", "jinja2")

_CODE = """
import contextlib, io, sys
from irmodels.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
heavy = {heavy!r}
# what scipy.special itself pulls in on this scipy version is not the command's doing
base = {base!r}
loaded = sorted(m for m in sys.modules if m in heavy and m not in base)
print(out.getvalue())
print("EXIT:" + str(code))
print("LOADED:" + ",".join(loaded))
"""


@functools.cache
def _scipy_special_modules() -> list[str]:
    """The modules a fresh interpreter holds after ``import scipy.special``, run from an empty
    folder (the same for every command: one interpreter for the module, not one per case)."""
    with tempfile.TemporaryDirectory() as empty:
        return subprocess.run(
            [sys.executable, "-c", "import sys, scipy.special; print(*sys.modules)"],
            capture_output=True, text=True, check=True, cwd=empty).stdout.split()


def _run(tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    base = _scipy_special_modules()
    assert "scipy.special" in base
    code = _CODE.format(heavy=HEAVY, base=base)
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         cwd=tmp_path, check=False)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[-2] == "EXIT:0", res.stdout + res.stderr
    loaded = [m for m in lines[-1].removeprefix("LOADED:").split(",") if m]
    return res.stdout, loaded


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    """A 6 topics x 4 systems score matrix (wide, one column per system)."""
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.uniform(0, 1, (6, 4)), columns=["bm25", "lm", "qe", "tfidf"])
    path = tmp_path / "scores.csv"
    wide.to_csv(path, index=False)
    return path


def test_anova_on_a_file_imports_no_heavy_module(tmp_path: Path, small_csv: Path) -> None:
    out, loaded = _run(tmp_path, "anova", str(small_csv))
    assert "system" in out and "Residual" in out  # the table was printed
    assert loaded == []


def test_gstudy_on_a_file_imports_no_heavy_module(tmp_path: Path, small_csv: Path) -> None:
    out, loaded = _run(tmp_path, "gstudy", str(small_csv))
    assert "system" in out  # the components were printed
    assert loaded == []


def test_the_check_sees_a_lazy_import() -> None:
    # the list above is not vacuous: calling what needs scipy.stats imports it then
    code = ("import sys, irmodels.inference.effects as e; print('scipy.stats' in sys.modules); "
            "e.anova_power([0.1], [2], 10, 20); print('scipy.stats' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert res.stdout.split() == ["False", "True"]


def test_mixed_on_a_file_imports_no_scipy_stats(tmp_path: Path, small_csv: Path) -> None:
    # a mixed fit needs scipy.optimize, scipy.linalg and scipy.sparse, but not scipy.stats
    out, loaded = _run(tmp_path, "mixed", str(small_csv), "--formula",
                       "score ~ system + (1|topic)")
    assert "topic" in out
    assert set(loaded) <= {"scipy.linalg", "scipy.optimize", "scipy.sparse"}
