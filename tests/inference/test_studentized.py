"""ptukey / qtukey against R (tests/reference/ptukey.R -> ptukey.json) and their properties."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import DataFormatError, DesignError
from irmodels.stats import studentized

TOL = 1e-9  # measured: max abs error 2e-14 (ptukey), 8e-13 (qtukey)


@pytest.fixture(scope="module")
def ref(reference_dir):
    return json.loads((reference_dir / "ptukey.json").read_text())


def test_ptukey_lower_and_upper_against_r(ref):
    p = ref["ptukey"]
    q, k, df = (np.asarray(p[c], dtype=float) for c in ("q", "k", "df"))
    lower = irm.ptukey(q, k, df)
    upper = irm.ptukey(q, k, df, lower_tail=False)
    assert len(q) == 10 * 13 * 21
    np.testing.assert_allclose(lower, p["lower"], rtol=0, atol=TOL)
    np.testing.assert_allclose(upper, p["upper"], rtol=0, atol=TOL)
    # upper-tail values that matter for p-values keep relative accuracy too
    big = np.asarray(p["upper"]) > 1e-6
    # (atol: with scipy 1.14-1.16 values near 1e-6 differ from R by up to 6e-13)
    np.testing.assert_allclose(upper[big], np.asarray(p["upper"])[big], rtol=1e-7, atol=1e-12)


def test_qtukey_against_r(ref):
    g = ref["qtukey"]
    got = irm.qtukey(g["p"], g["k"], g["df"])
    np.testing.assert_allclose(got, g["q"], rtol=0, atol=TOL)


def test_interpolated_inner_integral_matches_direct_quadrature(rng):
    w = np.concatenate([rng.uniform(0, 16, 3000), [0.0, 3.0, 2.999999, 3.000001, 15.99]])
    for cc in (2.0, 7.0, 129.0, 150.0):
        direct = studentized._wprob_direct(w, cc)
        interp = studentized._wprob_interp(w, cc)
        np.testing.assert_allclose(interp, direct, rtol=0, atol=3e-12)


def test_known_values_and_edges():
    # R: ptukey(3.5, 3, 12) = 0.930004514724551; qtukey(0.95, 5, 20) = 4.23185668293036
    assert float(irm.ptukey(3.5, 3, 12)) == pytest.approx(0.930004514724551, abs=1e-13)
    assert float(irm.qtukey(0.95, 5, 20)) == pytest.approx(4.23185668293036, abs=1e-11)
    out = irm.ptukey([-1.0, 0.0, np.inf, np.nan], 5, 20)
    assert out[:3].tolist() == [0.0, 0.0, 1.0] and np.isnan(out[3])
    assert irm.qtukey([0.0, 1.0], 5, 20).tolist() == [0.0, np.inf]
    assert studentized.sf(2.0, 4, 30) == pytest.approx(1 - float(irm.ptukey(2.0, 4, 30)), abs=1e-15)
    assert irm.ptukey(np.ones((2, 3)), [2, 3, 4], 10).shape == (2, 3)
    assert np.ndim(irm.ptukey(1.0, 2, 10)) == 0


def test_bad_parameters_raise_typed_errors():
    with pytest.raises(DesignError, match="at least 2 means"):
        irm.ptukey(1.0, 1, 10)
    with pytest.raises(DesignError, match="degrees of freedom"):
        irm.ptukey(1.0, 3, 1)
    with pytest.raises(DataFormatError, match=r"\[0, 1\]"):
        irm.qtukey(1.5, 3, 10)


def test_129_systems_reuse_one_interpolation_table(rng):
    # what makes 8,256 pairs at k = 129 fast (timed in benchmarks/tukey.py): the inner integral's
    # table is built once per df and reused by the next call, with the same values
    q = rng.uniform(0, 14, 8256)
    lower = irm.ptukey(q, 129, 6272)
    before = studentized._wprob_table.cache_info()
    upper = irm.ptukey(q, 129, 6272, lower_tail=False)
    after = studentized._wprob_table.cache_info()
    assert after.misses == before.misses and after.hits > before.hits
    np.testing.assert_allclose(lower + upper, 1.0, rtol=0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    q=st.lists(st.floats(0.01, 12), min_size=1, max_size=30),
    k=st.integers(2, 60),
    df=st.sampled_from([3.0, 7.0, 30.0, 250.0, 3000.0, 30000.0]),
)
def test_vectorised_equals_one_at_a_time_and_is_monotone(q, k, df):
    q = np.sort(np.asarray(q))
    together = irm.ptukey(q, k, df)
    alone = np.array([float(irm.ptukey(v, k, df)) for v in q])
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-12)
    assert np.all(np.diff(together) >= -1e-12)
    assert np.all((together >= 0) & (together <= 1))
    np.testing.assert_allclose(together + irm.ptukey(q, k, df, lower_tail=False), 1.0, atol=1e-15)


@settings(max_examples=25, deadline=None)
@given(p=st.floats(0.05, 0.995), k=st.integers(2, 150), df=st.sampled_from([5.0, 40.0, 900.0, 1e5]))
def test_qtukey_inverts_ptukey(p, k, df):
    x = float(irm.qtukey(p, k, df))
    assert float(irm.ptukey(x, k, df)) == pytest.approx(p, abs=1e-6)


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_live_against_r():
    code = "cat(sprintf('%.17g', c(ptukey(c(0.7, 4.2, 9.9), 37, 333, lower.tail=FALSE), qtukey(0.975, 37, 333))))"
    out = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, check=True).stdout
    want = np.array(out.split(), dtype=float)
    got = np.append(irm.ptukey([0.7, 4.2, 9.9], 37, 333, lower_tail=False), irm.qtukey(0.975, 37, 333))
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
