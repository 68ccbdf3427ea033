"""irm.meta_analysis against R's metafor (rma + predict), and its refusals."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import (
    ArgumentError,
    ConvergenceError,
    ConvergenceWarning,
    DataFormatError,
    DesignError,
)
from irmodels.inference import meta

SCALARS = ("estimate", "se", "z", "p", "ci_lower", "ci_upper", "pi_lower", "pi_upper", "tau2",
           "se_tau2", "Q", "Q_p", "I2", "H2")


@pytest.fixture(scope="module")
def fixture(reference_dir):
    return json.loads((reference_dir / "meta_analysis.json").read_text())


def _cases():
    from tests.conftest import REFERENCE

    data = json.loads((REFERENCE / "meta_analysis.json").read_text())
    return [pytest.param(i, id=f"{c['data']}-{c['method']}-{c['level']}")
            for i, c in enumerate(data["cases"])]


def _close(got: float, want: float | None, name: str) -> None:
    if want is None:
        assert math.isnan(got), name
        return
    # relative 1e-8; p-values below 1e-20 (bcg's Q_p) relative too, zeros absolutely
    assert got == pytest.approx(want, rel=1e-8, abs=1e-12 if abs(want) > 1e-11 else 1e-300), (
        name, got, want)


@pytest.mark.parametrize("i", _cases())
def test_against_metafor(fixture, i) -> None:
    case = fixture["cases"][i]
    d = fixture["data"][case["data"]]
    yi, vi = np.atleast_1d(d["yi"]), np.atleast_1d(d["vi"])
    res = irm.meta_analysis(yi, vi, method=case["method"], level=case["level"],
                            labels=np.atleast_1d(d["labels"]).tolist())
    for name in SCALARS:
        if name.startswith("pi_") and case[name] is None:  # metafor: no PI for an FE model
            assert case["method"] == "FE"
            assert getattr(res, name) == getattr(res, name.replace("pi_", "ci_"))
            continue
        _close(getattr(res, name), case[name], name)
    assert res.tau == pytest.approx(math.sqrt(case["tau2"]), rel=1e-8, abs=1e-300)
    assert res.df == len(yi) - 1 and res.k == len(yi)
    np.testing.assert_allclose(res.to_frame()["weight"], np.atleast_1d(case["weight"]),
                               rtol=1e-8)
    # the same fit from standard errors and from a DataFrame (yi/vi and estimate/se)
    by_se = irm.meta_analysis(yi, se=np.sqrt(vi), method=case["method"], level=case["level"])
    assert by_se.estimate == pytest.approx(res.estimate, rel=1e-12)
    assert by_se.tau2 == pytest.approx(res.tau2, rel=1e-9, abs=1e-15)
    frame = pd.DataFrame({"yi": yi, "vi": vi})
    assert irm.meta_analysis(frame, method=case["method"]).to_frame()["weight"].tolist() == (
        pytest.approx(irm.meta_analysis(yi, vi, method=case["method"]).to_frame()["weight"]
                      .tolist(), rel=1e-12))


def test_fixture_records_versions(fixture) -> None:
    assert fixture["R_version"].startswith("R version") and fixture["metafor_version"]


def test_known_bcg_values(fixture) -> None:
    """metafor's documented REML fit of dat.bcg (Viechtbauer 2010): -0.7145, tau2 0.3132."""
    d = fixture["data"]["bcg"]
    res = irm.meta_analysis(d["yi"], d["vi"], labels=d["labels"])
    assert round(res.estimate, 4) == -0.7145 and round(res.tau2, 4) == 0.3132
    assert round(res.I2, 2) == 92.22 and res.iterations > 1


def test_trec_fixture_matches_shared_data(fixture, shared_data, reference_dir) -> None:
    """meta_analysis_trec.csv is best-minus-median per collection, from the shared scores."""
    table = pd.read_csv(reference_dir / "meta_analysis_trec.csv")
    assert table["collection"].tolist() == fixture["data"]["trec"]["labels"]
    for row in table.itertuples():
        wide = irm.to_wide(irm.datasets.load(row.collection, "AP"))
        means = wide.mean(axis=0)
        order = sorted(means.index, key=lambda s: (-means[s], str(s)))
        diff = (wide[order[0]] - wide[order[(len(order) - 1) // 2]]).to_numpy(dtype=float)
        assert row.estimate == pytest.approx(diff.mean(), rel=1e-12)
        assert row.variance == pytest.approx(diff.var(ddof=1) / len(diff), rel=1e-12)


def test_boundary_and_re_equal_fe_at_tau2_zero(fixture) -> None:
    d = fixture["data"]["homogeneous"]
    fe = irm.meta_analysis(d["yi"], d["vi"], method="FE")
    for method in ("REML", "DL"):
        res = irm.meta_analysis(d["yi"], d["vi"], method=method)
        assert res.tau2 == 0.0 and res.I2 == 0.0 and res.H2 == 1.0
        assert res.estimate == pytest.approx(fe.estimate, rel=1e-14)
        assert (res.pi_lower, res.pi_upper) == pytest.approx((res.ci_lower, res.ci_upper))


def test_identical_estimates_fixed_effect() -> None:
    """Q = 0: I2 = 0 (metafor: NaN from 0/0), H2 = 0, the pooled value is the common one."""
    res = irm.meta_analysis([0.1, 0.1, 0.1], [0.01, 0.02, 0.04], method="FE")
    assert res.Q == 0.0 and res.I2 == 0.0 and res.H2 == 0.0 and res.Q_p == 1.0
    assert res.estimate == pytest.approx(0.1, rel=1e-15)
    assert res.se == pytest.approx(math.sqrt(1 / (100 + 50 + 25)), rel=1e-14)
    assert irm.meta_analysis([0.1, 0.1, 0.1], [0.01, 0.02, 0.04]).tau2 == 0.0


def test_inputs_frame_series_and_labels() -> None:
    frame = pd.DataFrame({"collection": ["x", "y", "z"], "estimate": [0.1, 0.3, 0.2],
                          "se": [0.1, 0.05, 0.08]})
    res = irm.meta_analysis(frame, method="DL")
    assert res.to_frame()["label"].tolist() == ["x", "y", "z"]
    assert list(res.to_frame().columns) == list(meta.META_COLUMNS)
    np.testing.assert_allclose(res.to_frame()["variance"], [0.01, 0.0025, 0.0064])
    assert res.to_frame()["weight"].sum() == pytest.approx(100.0)
    s = pd.Series([0.1, 0.3, 0.2], index=["a", "b", "c"])
    res2 = irm.meta_analysis(s, [0.01, 0.0025, 0.0064], method="DL")
    assert res2.to_frame()["label"].tolist() == ["a", "b", "c"]
    assert res2.tau2 == pytest.approx(res.tau2, rel=1e-12)
    assert irm.meta_analysis([0.1, 0.2], [0.01, 0.02]).to_frame()["label"].tolist() == ["1", "2"]


@pytest.mark.parametrize(("args", "kwargs", "error", "match"), [
    (([0.1, np.nan], [0.01, 0.02]), {}, DataFormatError, "missing or infinite"),
    (([0.1, 0.2], [0.01, np.inf]), {}, DataFormatError, "missing or infinite"),
    (([0.1, 0.2], [0.01, 0.0]), {}, DataFormatError, "zero or negative"),
    (([0.1, 0.2], [0.01, -0.01]), {}, DataFormatError, "zero or negative"),
    (([0.1, 0.2],), {"se": [0.1, -0.1]}, DataFormatError, "standard errors are zero"),
    (([0.1, 0.2], [0.01]), {}, DataFormatError, "2 estimates but 1"),
    (([],), {"variances": []}, DataFormatError, "at least one study"),
    (([0.1, 0.2],), {}, ArgumentError, "neither"),
    (([0.1, 0.2], [0.01, 0.02]), {"se": [0.1, 0.1]}, ArgumentError, "both"),
    (([0.1, 0.2], [0.01, 0.02]), {"method": "PM"}, ArgumentError, "method must be"),
    (([0.1, 0.2], [0.01, 0.02]), {"level": 95}, ArgumentError, "level"),
    (([0.1, 0.2], [0.01, 0.02]), {"labels": ["a"]}, DataFormatError, "labels"),
    (([0.1], [0.01]), {"method": "REML"}, DesignError, "method='FE'"),
    (([0.1], [0.01]), {"method": "DL"}, DesignError, "one study"),
    ((pd.DataFrame({"est": [0.1]}),), {}, DataFormatError, "'estimate'"),
])
def test_refusals(args, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        irm.meta_analysis(*args, **kwargs)


def test_ll0_check_sets_tau2_to_zero(monkeypatch) -> None:
    """metafor's guard: a Fisher-scoring stop whose likelihood is below tau2 = 0's gives 0."""
    y = np.array([0.0, 1.0, 2.0, 0.5])
    v = np.array([0.1, 0.2, 0.1, 0.3])
    real = meta._reml_loglik
    monkeypatch.setattr(meta, "_reml_loglik",
                        lambda yy, vv, t: real(yy, vv, t) + (1e6 if t == 0.0 else 0.0))
    with pytest.warns(ConvergenceWarning, match="set to 0"):
        res = irm.meta_analysis(y, v)
    assert res.tau2 == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        monkeypatch.setattr(meta, "_reml_loglik", real)
        assert irm.meta_analysis(y, v).tau2 > 0


def test_display_and_plot(fixture) -> None:
    d = fixture["data"]["trec"]
    res = irm.meta_analysis(d["yi"], d["vi"], labels=d["labels"])
    text = res.summary()
    assert "random-effects (REML), k = 12" in text and "web2014" in text
    assert repr(res).startswith("<MetaAnalysisResult REML k=12")
    assert "tau" in res.to_latex()
    fig = res.plot()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[:12] == d["labels"] and labels[-1] == "pooled (RE, REML)"


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_random_sets_live_against_metafor(rng, tmp_path) -> None:
    """30 random sets (k = 2..40, from homogeneous to very heterogeneous) through R's metafor."""
    rows = []
    for s in range(30):
        k = int(rng.integers(2, 41))
        v = rng.uniform(0.001, 0.05, k) * rng.choice([0.01, 1.0, 10.0])
        tau = rng.choice([0.0, 0.02, 0.1, 0.5])
        y = 0.1 + rng.normal(0, tau, k) + rng.normal(0, np.sqrt(v))
        rows += [{"set": s, "yi": a, "vi": b} for a, b in zip(y, v)]
    pd.DataFrame(rows).to_csv(tmp_path / "sets.csv", index=False, float_format="%.17g")
    script = (
        "suppressPackageStartupMessages({library(metafor); library(jsonlite)})\n"
        "d <- read.csv('sets.csv'); out <- list()\n"
        "for (s in unique(d$set)) for (m in c('FE', 'DL', 'REML')) {\n"
        "  x <- d[d$set == s, ]\n"
        "  r <- tryCatch(rma(x$yi, x$vi, method = m), error = function(e) NULL)\n"
        "  if (is.null(r)) {out[[length(out) + 1]] <- list(set = s, method = m, error = TRUE)\n"
        "                   next}\n"
        "  p <- predict(r)\n"
        "  out[[length(out) + 1]] <- list(set = s, method = m, estimate = c(r$beta), se = r$se,\n"
        "    tau2 = r$tau2, Q = r$QE, I2 = r$I2, H2 = r$H2,\n"
        "    pi_upper = if (is.null(p$pi.ub)) p$ci.ub else p$pi.ub)\n"
        "}\n"
        "writeLines(toJSON(out, digits = I(17), auto_unbox = TRUE), 'out.json')\n")
    (tmp_path / "run.R").write_text(script)
    done = subprocess.run(["Rscript", "run.R"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    data = pd.read_csv(tmp_path / "sets.csv")
    n_checked = n_failed = 0
    for case in json.loads((tmp_path / "out.json").read_text()):
        x = data[data["set"] == case["set"]]
        if case.get("error"):  # metafor: "Fisher scoring algorithm did not converge"
            with pytest.raises(ConvergenceError, match="did not converge"):
                irm.meta_analysis(x["yi"].to_numpy(), x["vi"].to_numpy(), method=case["method"])
            n_failed += 1
            continue
        res = irm.meta_analysis(x["yi"].to_numpy(), x["vi"].to_numpy(), method=case["method"])
        n_checked += 1
        for name in ("estimate", "se", "tau2", "Q", "I2", "H2", "pi_upper"):
            _close(getattr(res, name), case[name], f"set {case['set']} {case['method']} {name}")
    assert n_checked >= 80 and n_failed <= 5
