"""Score standardization: trec_eval's -Z output, formulas by hand, persistence, diagnostics."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

import irmodels as irm
from irmodels.data.standardize import Standardizer, read_zscores, write_zscores
from irmodels.errors import DataFormatError, DataQualityWarning, DesignError

# trec_eval sums these counts over topics in the "all" line instead of averaging
SUMMED = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}


def _read_q(path):
    """Minimal reader of trec_eval -q output: {(measure, topic): text value}."""
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[(parts[0], parts[1])] = parts[2]
    return out


@pytest.fixture(scope="module")
def trec(shared_data):
    d = shared_data / "trec_eval"
    return _read_q(d / "out.test.aq"), _read_q(d / "out.test.aqZ"), read_zscores(d / "zscores_file")


@pytest.fixture(scope="module")
def adhoc5(shared_data):
    return irm.from_wide(pd.read_csv(shared_data / "ir-scores" / "adhoc5_ap.csv"))


def test_read_zscores(trec):
    _, _, z = trec
    assert len(z) == 95
    assert list(z["map"].index) == ["301", "302", "303"]
    assert z["map"].loc["301", "mu"] == 0.1212 and z["map"].loc["301", "sigma"] == 0.1545
    assert z["num_rel"].loc["301", "sigma"] == 0.0


def test_reproduces_trec_eval_Z_output(trec):
    """Every Z<measure> per-topic line of out.test.aqZ, to the printed precision."""
    aq, aqz, z = trec
    rows = []
    for (m, t), v in aq.items():
        if t != "all" and m in z and not v.startswith("'"):
            rows.append({"measure": m, "topic": t, "system": "STANDARD", "score": float(v)})
    frame = irm.frame(pd.DataFrame(rows))
    factors = pd.concat({m: df for m, df in z.items()}, names=["measure"]).reset_index()
    s = Standardizer.from_factors(factors, method="z")
    out = s.transform(frame)
    got = {(r.measure, r.topic): r.score for r in out.itertuples()}
    checked = 0
    for (zm, t), printed in aqz.items():
        if not zm.startswith("Z") or t == "all":
            continue
        m = zm[1:]
        sd = z[m].loc[t, "sigma"]
        # the per-topic input is printed to 4 decimals (trec_eval used the full value) and the
        # Z value too: the two roundings bound the difference
        tol = 0.5e-4 + (0.5e-4 / sd if sd > 0 else 0.0) + 1e-12
        assert abs(got[(m, t)] - float(printed)) <= tol, (m, t, got[(m, t)], printed)
        checked += 1
    assert checked == 95 * 3
    # the "all" lines: mean over topics of the per-topic Z (sum for count measures)
    n_all = 0
    for (zm, t), printed in aqz.items():
        m = zm[1:]
        if t != "all" or not zm.startswith("Z") or m not in z:
            continue
        per = [float(aqz[(zm, tt)]) for tt in ("301", "302", "303")]
        expect = sum(per) if m in SUMMED else sum(per) / 3
        assert abs(expect - float(printed)) <= 2e-4, (m, expect, printed)
        n_all += 1
    assert n_all == 95


def test_zscores_round_trip(tmp_path, trec):
    _, _, z = trec
    p = write_zscores(z, tmp_path / "zs")
    back = read_zscores(p)
    assert list(back) == list(z)
    for m in z:
        pd.testing.assert_frame_equal(back[m], z[m])
    # same lines as trec_eval's own file, up to number formatting
    first = p.read_text().splitlines()[0].split()
    assert first[:2] == ["301", "num_ret"] and float(first[2]) == 967.0


def test_zscores_from_fitted_standardizer(tmp_path, adhoc5):
    f = adhoc5.assign(measure="AP")
    s = Standardizer("z").fit(irm.frame(f))
    p = write_zscores(s, tmp_path / "z")
    back = read_zscores(p)["AP"]
    assert len(back) == 50
    assert back["mu"].to_numpy() == pytest.approx(s.factors["mu"].to_numpy(), rel=1e-15)


def test_read_zscores_errors(tmp_path):
    p = tmp_path / "bad"
    p.write_text("301 map 0.1\n")
    with pytest.raises(DataFormatError, match="line 1"):
        read_zscores(p)
    p.write_text("301 map x 0.1\n")
    with pytest.raises(DataFormatError, match="numbers"):
        read_zscores(p)


@pytest.mark.parametrize("method", ["z", "normal", "t1", "uniform", "ecdf"])
def test_methods_by_hand(method, adhoc5):
    wide = irm.to_wide(adhoc5)
    x = wide.to_numpy()
    mu = x.mean(axis=1, keepdims=True)
    sd = x.std(axis=1, ddof=1, keepdims=True)  # the sample SD (Webber et al. 2008)
    z = np.where(sd > 0, (x - mu) / np.where(sd > 0, sd, 1), 0)
    expect = {
        "z": z,
        "normal": stats.norm.cdf(z),
        "t1": 0.5 + np.arctan(z) / np.pi,
        "uniform": np.clip(0.15 * z + 0.5, 0, 1),
        "ecdf": (x[:, :, None] >= x[:, None, :]).mean(axis=2),
    }[method]
    out = irm.to_wide(Standardizer(method).fit_transform(adhoc5))
    np.testing.assert_allclose(out.to_numpy(), expect, rtol=1e-12, atol=1e-14)


def test_reference_subsets_and_top_k(adhoc5):
    systems = list(adhoc5["system"].cat.categories)
    s = Standardizer("z").fit(adhoc5, reference=systems[:10])
    assert s.reference == systems[:10]
    wide = irm.to_wide(adhoc5)[systems[:10]]
    np.testing.assert_allclose(s.factors["mu"], wide.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(s.factors["sigma"], wide.std(axis=1, ddof=1), rtol=1e-12)
    assert (s.factors["n"] == 10).all()
    pop = Standardizer("z", ddof=0).fit(adhoc5, reference=systems[:10])
    np.testing.assert_allclose(pop.factors["sigma"], wide.std(axis=1, ddof=0), rtol=1e-12)
    top = Standardizer("z").fit(adhoc5, reference=5)
    best = irm.to_wide(adhoc5).mean().sort_values(ascending=False).index[:5]
    assert set(top.reference) == set(best)
    # other systems are transformed with the reference factors
    out = s.transform(adhoc5)
    assert len(out) == len(adhoc5)


def test_virtual_systems(adhoc5):
    s = Standardizer("z", virtual=True).fit(adhoc5)
    wide = irm.to_wide(adhoc5)
    aug = np.column_stack([wide.to_numpy(), np.zeros(50), np.ones(50)])
    np.testing.assert_allclose(s.factors["mu"], aug.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(s.factors["sigma"], aug.std(axis=1, ddof=1), rtol=1e-12)
    assert (s.factors["n"] == wide.shape[1] + 2).all()
    assert (s.factors["sigma"] > 0).all()


def test_per_measure_factors(adhoc5, shared_data):
    p10 = irm.from_wide(pd.read_csv(shared_data / "ir-scores" / "adhoc5_p10.csv"), measure="P@10")
    both = irm.frame(pd.concat([adhoc5.assign(measure="AP"), p10.astype({"measure": str})]))
    s = Standardizer("z").fit(both)
    assert s.factors.index.names == ["measure", "topic"]
    assert len(s.factors) == 100
    out = s.transform(both)
    ap = out[out["measure"] == "AP"]
    alone = Standardizer("z").fit_transform(adhoc5)
    np.testing.assert_allclose(np.sort(ap["score"]), np.sort(alone["score"]), rtol=1e-12)


def test_unknown_topics(adhoc5):
    s = Standardizer("z").fit(adhoc5[adhoc5["topic"].isin(["1", "2"])])
    with pytest.raises(DataFormatError, match="have no factors"):
        s.transform(adhoc5)
    with pytest.warns(DataQualityWarning, match="dropped"):
        out = s.transform(adhoc5, unknown="drop")
    assert set(out["topic"].astype(str)) == {"1", "2"}


def test_save_load(tmp_path, adhoc5):
    for method in ["z", "normal", "uniform", "t1", "ecdf"]:
        s = Standardizer(method, virtual=True, A=0.2, B=0.4).fit(adhoc5, reference=12)
        for suffix in ([".json"] if method == "ecdf" else [".csv", ".json"]):
            p = s.save(tmp_path / f"f_{method}{suffix}")
            back = Standardizer.load(p)
            assert (back.method, back.virtual, back.A, back.B) == (method, True, 0.2, 0.4)
            assert back.reference == s.reference
            pd.testing.assert_frame_equal(back.factors, s.factors, check_exact=True)
            pd.testing.assert_frame_equal(back.transform(adhoc5), s.transform(adhoc5))
    with pytest.raises(DesignError, match="JSON"):
        Standardizer("ecdf").fit(adhoc5).save(tmp_path / "x.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("topic,mu\n1,2\n")
    with pytest.raises(DataFormatError, match="not a file written"):
        Standardizer.load(bad)


def test_diagnostics(adhoc5):
    ref = adhoc5[adhoc5["system"].isin(list(adhoc5["system"].cat.categories[:5]))]
    s = Standardizer("z").fit(ref)
    d0 = s.diagnostics()
    assert d0.beyond_bound.empty  # Samuelson: reference scores stay within (n - 1)/sqrt(n)
    d = s.diagnostics(adhoc5)
    z = s.transform(adhoc5)["score"].to_numpy()
    bound = 4 / math.sqrt(5)
    assert len(d.beyond_bound) == int((np.abs(z) > bound + 1e-12).sum()) > 0
    np.testing.assert_allclose(d.beyond_bound["bound"], bound, rtol=1e-15)
    assert (d.beyond_bound["z"].abs() > bound).all()
    # with the population SD the bound is sqrt(n - 1)
    d_pop = Standardizer("z", ddof=0).fit(ref).diagnostics(adhoc5)
    assert (d_pop.beyond_bound["bound"] == 2.0).all()
    assert d.zero_sd.empty == (s.factors["sigma"] > 0).all()
    # a topic where every reference system scores the same
    flat = irm.from_wide(pd.DataFrame({"a": [0.0, 0.3], "b": [0.0, 0.5]}))
    dd = Standardizer("z").fit(flat).diagnostics()
    assert dd.zero_sd["topic"].tolist() == ["1"] and not dd.ok
    assert "sigma = 0" in dd.summary()


def test_errors(adhoc5):
    with pytest.raises(DesignError, match="unknown standardization method"):
        Standardizer("minmax")
    with pytest.raises(DesignError, match="not fitted"):
        Standardizer().transform(adhoc5)
    with pytest.raises(DataFormatError, match="unknown reference"):
        Standardizer().fit(adhoc5, reference=["nope"])
    with pytest.raises(DesignError, match="Wrap it in a list"):
        Standardizer().fit(adhoc5, reference="sys1")
    with pytest.raises(DesignError, match="between 1 and"):
        Standardizer().fit(adhoc5, reference=0)
    with pytest.raises(DesignError, match="ecdf"):
        Standardizer.from_factors(pd.DataFrame({"topic": ["1"], "mu": [0.1], "sigma": [0.1]}),
                                  method="ecdf")
    assert "unfitted" in repr(Standardizer())


@settings(max_examples=20, deadline=None)
@given(arrays(np.float64, (4, 6), elements=st.floats(0, 1, allow_nan=False)))
# a score whose square is subnormal: its z was 2.041241 just past Samuelson's bound
@example(np.array([[4.36688854e-156, 0, 0, 0, 0, 0]] + [[0.0] * 6] * 3))
def test_properties(values):
    f = irm.from_wide(pd.DataFrame(values, columns=list("abcdef")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        z = Standardizer("z").fit_transform(f)
    wz = irm.to_wide(z).to_numpy()
    sd = values.std(axis=1)
    ok = sd > 1e-9
    # reference z-scores: mean 0, sample SD 1, within Samuelson's bound (n - 1)/sqrt(n)
    assert np.allclose(wz[ok].mean(axis=1), 0, atol=1e-9)
    assert np.allclose(wz[ok].std(axis=1, ddof=1), 1, atol=1e-6)
    assert (np.abs(wz) <= 5 / math.sqrt(6) + 1e-9).all()
    assert Standardizer("z").fit(f).diagnostics().beyond_bound.empty
    wz0 = irm.to_wide(Standardizer("z", ddof=0).fit_transform(f)).to_numpy()
    assert np.allclose(wz0[ok].std(axis=1), 1, atol=1e-6)
    assert (np.abs(wz0) <= math.sqrt(5) + 1e-9).all()
    for method in ["normal", "t1", "uniform", "ecdf"]:
        out = irm.to_wide(Standardizer(method).fit_transform(f)).to_numpy()
        assert ((out >= 0) & (out <= 1)).all()
        # monotone within a topic: order of systems preserved
        for i in range(4):
            order = np.argsort(values[i], kind="stable")
            assert np.all(np.diff(out[i][order]) >= -1e-12)


def test_missing_key_column(adhoc5):
    s = Standardizer("z").fit(irm.frame(adhoc5.assign(measure="AP")))
    with pytest.raises(DataFormatError, match="per \\(measure, topic\\).*'measure'"):
        s.transform(adhoc5)
    out = s.transform(adhoc5.assign(measure="AP"))
    assert len(out) == len(adhoc5)


def test_sample_sd_by_default_and_ddof(adhoc5):
    """Webber, Moffat & Zobel (2008) and Urbano's code standardize by the sample SD (n - 1)."""
    wide = irm.to_wide(adhoc5)
    s = Standardizer("z").fit(adhoc5)
    assert s.ddof == 1
    np.testing.assert_allclose(s.factors["sigma"], wide.std(axis=1, ddof=1), rtol=1e-12)
    # z scores with n - 1 are those with n scaled by sqrt((n - 1)/n)
    n = wide.shape[1]
    z1 = irm.to_wide(s.transform(adhoc5)).to_numpy()
    z0 = irm.to_wide(Standardizer("z", ddof=0).fit_transform(adhoc5)).to_numpy()
    np.testing.assert_allclose(z1, z0 * math.sqrt((n - 1) / n), rtol=1e-12, atol=1e-15)
    with pytest.raises(irm.ArgumentError, match="ddof"):
        Standardizer(ddof=2)
    assert "ddof=0" in repr(Standardizer(ddof=0))


def test_single_reference_score_warns(adhoc5):
    one = adhoc5[adhoc5["system"] == adhoc5["system"].cat.categories[0]]
    with pytest.warns(DataQualityWarning, match="single reference score"):
        s = Standardizer("z").fit(adhoc5, reference=[str(one["system"].iloc[0])])
    assert (s.factors["sigma"] == 0).all()


def test_save_load_keeps_ddof(adhoc5, tmp_path):
    s = Standardizer("z", ddof=0).fit(adhoc5)
    back = Standardizer.load(s.save(tmp_path / "f.json"))
    assert back.ddof == 0
    np.testing.assert_allclose(back.factors["sigma"], s.factors["sigma"], rtol=0)


def test_sample_sd_factors_and_scores_equal_r(adhoc5):
    """Per-topic mean and sd() (n - 1) of 20 reference runs, z and pnorm(z), as R computes them
    (tests/reference/standardize.R on the TREC-5 AP matrix)."""
    import json
    from pathlib import Path

    ref = json.loads((Path(__file__).parents[1] / "reference" / "standardize.json").read_text())
    s = Standardizer("z").fit(adhoc5, reference=ref["reference"])
    np.testing.assert_allclose(s.factors["mu"], ref["mu"], rtol=1e-12)
    np.testing.assert_allclose(s.factors["sigma"], ref["sd"], rtol=1e-12)
    wide = irm.to_wide(s.transform(adhoc5))
    assert list(wide.columns) == ref["systems"]
    np.testing.assert_allclose(wide.to_numpy(), np.array(ref["z"]).T, rtol=1e-10, atol=1e-12)
    normal = irm.to_wide(Standardizer("normal").fit(adhoc5, reference=ref["reference"])
                         .transform(adhoc5))
    np.testing.assert_allclose(normal.to_numpy(), np.array(ref["normal"]).T, rtol=1e-10,
                               atol=1e-14)
    pop = Standardizer("z", ddof=0).fit(adhoc5, reference=ref["reference"])
    np.testing.assert_allclose(pop.factors["sigma"], ref["sd_population"], rtol=1e-12)


def test_from_factors_takes_the_method_by_keyword_only() -> None:
    """issue 26: ``method`` is an option (keyword-only); the factors stay positional."""
    factors = pd.DataFrame({"topic": ["1", "2"], "mu": [0.2, 0.4], "sigma": [0.1, 0.2]})
    s = Standardizer.from_factors(factors, method="z")
    out = s.transform(irm.frame(pd.DataFrame({"topic": ["1", "2"], "system": "a",
                                              "score": [0.3, 0.2]})))
    np.testing.assert_allclose(out["score"].to_numpy(), [1.0, -1.0], rtol=1e-12)
    with pytest.raises(TypeError, match="positional argument"):
        Standardizer.from_factors(factors, "z")  # type: ignore[misc]


def test_fit_takes_the_reference_by_keyword_only(adhoc5) -> None:
    """issue 26: ``reference`` is an option of fit and fit_transform (keyword-only)."""
    top = Standardizer("z").fit(adhoc5, reference=3)
    both = Standardizer("z").fit_transform(adhoc5, reference=3)
    pd.testing.assert_frame_equal(both, top.transform(adhoc5))
    assert len(top.reference) == 3
    with pytest.raises(TypeError, match="positional argument"):
        Standardizer("z").fit(adhoc5, 3)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional argument"):
        Standardizer("z").fit_transform(adhoc5, 3)  # type: ignore[misc]
