"""The small least-squares path (dense Householder QR in numpy, :func:`fit_small`) and the cheap
set-up of a small fit (factor encoding and covariate detection in Python, the cells as the
replicate groups): the same numbers, refusals and warnings as the sparse path and pandas."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsq_data import random_design

import irmodels as irm
from irmodels.errors import DataFormatError, DataQualityWarning, DesignError, IRModelsWarning
from irmodels.models import _anova_fit, _design
from irmodels.models import anova as anova_module

WARPBREAKS = Path(__file__).resolve().parents[1] / "reference" / "data" / "warpbreaks.csv"
#: benchmarks/tiny.py's design: R's warpbreaks less 8 rows (46 rows, 6-9 per cell)
DROP = [2, 9, 14, 22, 30, 37, 45, 51]

MODELS = ["MD1", "MD3", "MD4", "MD5", "MD6", "score ~ topic*system*shard - topic:system:shard",
          "score ~ system + topic:system", "score ~ topic + system:shard",
          "score ~ shard + topic:system + topic:shard", "score ~ system*shard"]


_design_frame = random_design


def _fit(model, data, ss_type, *, small: bool, **kw):
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore", IRModelsWarning)
        warnings.simplefilter("ignore", DataQualityWarning)
        calls: list[int] = []
        fit_small = _anova_fit.fit_small
        mp.setattr(_anova_fit, "fit_small", lambda *a, **k: calls.append(1) or fit_small(*a, **k))
        if not small:
            mp.setattr(_anova_fit, "SMALL_COLUMNS", 0)  # the sparse path, as large designs take
        fit = irm.anova(model, data, ss_type=ss_type, **kw)
        assert bool(calls) == (small and fit.method.startswith("lstsq")), "path not taken"
        return fit


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), t=st.integers(2, 5), s=st.integers(2, 4),
       k=st.integers(2, 3), reps=st.integers(1, 2), drop=st.floats(0.02, 0.4),
       model=st.sampled_from(MODELS), ss_type=st.sampled_from([1, 2, 3]))
def test_small_path_equals_sparse_path(seed, t, s, k, reps, drop, model, ss_type) -> None:
    data = _design_frame(seed, t, s, k, reps, drop)
    try:
        sparse = _fit(model, data, ss_type, small=False)
    except DesignError as exc:  # aliased, no residual df, type III on an empty cell...
        with pytest.raises(DesignError) as info:
            _fit(model, data, ss_type, small=True)
        assert str(info.value) == str(exc)  # ... refused the same way
        return
    small = _fit(model, data, ss_type, small=True)
    np.testing.assert_array_equal(small.table["df"], sparse.table["df"])
    assert small.df_resid == sparse.df_resid and small.method == sparse.method
    scale = float(sparse.table["SS"].sum())
    np.testing.assert_allclose(small.table["SS"], sparse.table["SS"], rtol=1e-10,
                               atol=1e-13 * scale)
    np.testing.assert_allclose(small.fitted(), sparse.fitted(), rtol=0, atol=1e-10)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), drop=st.floats(0.0, 0.3),
       model=st.sampled_from(["score ~ topic + system + x", "score ~ system*x + shard",
                              "score ~ topic + system:x", "score ~ x*z + system"]),
       ss_type=st.sampled_from([1, 2, 3]))
def test_small_path_with_covariates_equals_sparse_path(seed, drop, model, ss_type) -> None:
    data = _design_frame(seed, 4, 3, 2, 2, drop)
    rng = np.random.default_rng(seed + 1)
    data["x"] = rng.normal(size=len(data)).round(3)
    data["z"] = rng.uniform(1, 5, len(data)).round(2)
    try:
        ref = _fit(model, data, ss_type, small=False)
    except DesignError as exc:
        with pytest.raises(DesignError) as info:
            _fit(model, data, ss_type, small=True)
        assert str(info.value) == str(exc)
        return
    small = _fit(model, data, ss_type, small=True)
    np.testing.assert_array_equal(small.table["df"], ref.table["df"])
    np.testing.assert_allclose(small.table["SS"], ref.table["SS"], rtol=1e-10, atol=1e-13)


def _warpbreaks() -> pd.DataFrame:
    return pd.read_csv(WARPBREAKS).drop(index=DROP).reset_index(drop=True)


#: R 4.x: anova(lm(breaks ~ wool * tension, d)) and car::Anova(..., type = 2 and 3) with
#: options(contrasts = c("contr.sum", "contr.poly")), d = warpbreaks[-c(3, 10, 15, 23, 31, 38,
#: 46, 52), ]: sums of squares of wool, tension, wool:tension, Residuals; p of the first three
R_WARPBREAKS = {
    1: ([402.08695652173861, 1470.23469834849925, 592.11002214839323, 5192.78571428571831],
        [0.0860696858020528893, 0.0068325867082168002, 0.1153711732696395681]),
    2: ([430.58759689922408, 1470.23469834849948, 592.11002214839300, 5192.78571428571831],
        [0.0760600600072345312, 0.0068325867082167932, 0.1153711732696396930]),
    3: ([404.22240259740192, 1489.18289036544866, 592.11002214839300, 5192.78571428571831],
        [8.5270604549815013e-02, 6.4553443160248487e-03, 1.1537117326963969e-01]),
}


@pytest.mark.parametrize("ss_type", [1, 2, 3])
def test_tiny_warpbreaks_equals_r(ss_type) -> None:
    fit = _fit("breaks ~ wool * tension", _warpbreaks(), ss_type, small=True)
    ss, p = R_WARPBREAKS[ss_type]
    np.testing.assert_allclose(fit.table["SS"], ss, rtol=1e-12)
    np.testing.assert_allclose(fit.table["p"].iloc[:3], p, rtol=1e-9)
    assert fit.table["df"].tolist() == [1.0, 2.0, 2.0, 40.0]


def test_tiny_fit_warns_about_replicates_as_before(monkeypatch) -> None:
    # the cells serve as the replicate groups: the same warning as the check's own grouping
    data = _warpbreaks()
    with pytest.warns(DataQualityWarning) as fast:
        irm.anova("breaks ~ wool * tension", data)
    monkeypatch.setattr(anova_module, "cell_groups", lambda *a: None)
    with pytest.warns(DataQualityWarning) as slow:
        irm.anova("breaks ~ wool * tension", data)
    assert [str(w.message) for w in fast] == [str(w.message) for w in slow]
    assert "46 rows repeat the same (wool, tension) key, e.g. wool=A, tension=L" in str(
        fast[0].message)


def test_cell_groups_only_when_the_cells_are_the_rows_key() -> None:
    d = _warpbreaks()
    two = _design.resolve_model("breaks ~ wool * tension")
    cells = _anova_fit.encode_factors(two, d)
    assert cells.exact and cells.flat is not None
    assert _anova_fit.cell_groups(d, "breaks", cells) is cells.flat
    one = _anova_fit.encode_factors(_design.resolve_model("breaks ~ wool"), d)
    assert _anova_fit.cell_groups(d, "breaks", one) is None  # tension tells rows apart
    obj = _anova_fit.encode_factors(two, d.astype({"wool": object}))
    assert not obj.exact and _anova_fit.cell_groups(d, "breaks", obj) is None
    # what classify read is not read again, and gives the same codes
    seen: dict = {}
    _design.classify(two, d, seen=seen)
    assert set(seen) == {"wool", "tension"}
    again = _anova_fit.encode_factors(two, d, seen)
    np.testing.assert_array_equal(again.flat, cells.flat)


COLUMNS = {
    "str": pd.Series(["t10", "t2", "t2", "t1"], dtype="str"),
    "object": pd.Series(["b", "a", "b", "c"], dtype=object),
    "int": pd.Series([3, 1, 10, 3]),
    "object ints": pd.Series([3, 1, 10, 3], dtype=object),
    "one and '1'": pd.Series([1, "1", 2, 2], dtype=object),
    "bool": pd.Series([True, False, True, True]),
    "float": pd.Series([0.5, 1.0, 0.5, 2.0]),
    "categorical": pd.Series(pd.Categorical(["x", "y", "x", "z"], categories=["z", "y", "x"])),
}


@pytest.mark.parametrize("name", list(COLUMNS))
def test_small_encoding_equals_pandas(name, monkeypatch) -> None:
    col = COLUMNS[name]
    codes, levels = _design.encode(col)
    monkeypatch.setattr(_design, "SMALL_ROWS", -1)  # pandas' factorisation
    ref_codes, ref_levels = _design.encode(col)
    np.testing.assert_array_equal(codes, ref_codes)
    pd.testing.assert_index_equal(levels, ref_levels)


@pytest.mark.parametrize("values", [["a", None, "b"], ["a", np.nan, "b"]])
def test_small_encoding_refuses_missing_labels(values) -> None:
    for dtype in (object, "str"):
        with pytest.raises(DataFormatError, match="1 missing label"):
            _design.encode(pd.Series(values, dtype=dtype, name="system"))


@pytest.mark.parametrize("values, refused", [
    (["1", "2", "3"], True), (["1.5", "-2", "1e3", "inf"], True), (["1", "2"], False),
    (["a", "b", "1"], False), (["low", "mid", "high"], False), (["x1", "x2", "x3"], False),
])
def test_small_covariate_check_equals_pandas(values, refused, monkeypatch) -> None:
    spec = _design.resolve_model("score ~ level + system")
    for dtype in (object, "str"):
        d = pd.DataFrame({"level": pd.Series(values * 2, dtype=dtype),
                          "system": ["a", "b"] * len(values), "score": 0.1})
        outcomes = []
        for small_rows in (_design.SMALL_ROWS, -1):  # Python's check, then pandas'
            monkeypatch.setattr(_design, "SMALL_ROWS", small_rows)
            try:
                outcomes.append(_design.classify(spec, d).covariates)
            except DataFormatError as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]
        assert ("numbers stored as text" in str(outcomes[0])) == refused


def test_tiny_design_leaves_the_blas_alone_larger_ones_set_it(monkeypatch) -> None:
    entered: list[int] = []
    kernel_threads = anova_module.kernel_threads
    monkeypatch.setattr(anova_module, "kernel_threads",
                        lambda dim: entered.append(dim) or kernel_threads(dim))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        irm.anova("breaks ~ wool * tension", _warpbreaks())
        assert entered == []  # 46 rows x 6 columns: OpenBLAS stays on one thread
        irm.anova("MD3", _design_frame(1, 30, 20, 2, 1, 0.1))
    assert entered == [1 + 30 + 20 + 600]
