"""Bad-input corpus, wave 3 (issue 25, item 8: "trusted on first contact").

One parametrized case per (public function, kind of fault), in six classes: scale (scores near
1e+-300 give the numbers of scores near 1, or the "rescale" refusal), degenerate resamples
(warned as ``pairwise`` warns), validation (values, seeds, counts that cannot fit, an
unreachable scheduler), tracebacks turned into irmodels errors, silent mistakes refused, and
messages that name the right cause. Each case asserts the exact class and a distinctive part of
the message, or the number.
"""

from __future__ import annotations

import functools
import os
import threading
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.cli import main
from irmodels.errors import (
    ArgumentError,
    DataFormatError,
    DataQualityWarning,
    OutputError,
    OutputExistsError,
    ResourceError,
)
from irmodels.parallel import ParallelError

BIG = 10**12  # a count whose arrays need terabytes


def _wide(seed: int = 3, topics: int = 20, systems: int = 4, shift: float = 0.1) -> pd.DataFrame:
    w = np.random.default_rng(seed).beta(2, 5, size=(topics, systems))
    w += np.linspace(0.0, 0.3, topics)[:, None]  # topics differ: no negative variance warned
    w[:, 0] += shift
    return pd.DataFrame(w, columns=[f"s{j}" for j in range(systems)])


def _frame(scale: float = 1.0, **kw) -> pd.DataFrame:
    return irm.from_wide(_wide(**kw) * scale)


@pytest.fixture(scope="module")
def small_frame() -> pd.DataFrame:
    return _frame(topics=12)


@pytest.fixture(scope="module")
def tiny_collection():
    return irm.collection.generate(preset="tiny", seed=0)


def _no_warnings(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


# ------------------------------------------------------------------------------------- scale

SCALES = [1e-300, 1e300, 1e-30, 1e30]
TESTS = ["t", "t2", "wilcoxon", "sign", "bootstrap", "randomization"]


@functools.cache
def _pairwise_at_scale_one(test: str) -> pd.DataFrame:
    """The unscaled reference of one test, computed once for the four scales (read only)."""
    return irm.pairwise(_frame(), test, adjust="holm", n_resamples=500).table


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("test", TESTS)
def test_pairwise_is_scale_invariant(test: str, scale: float) -> None:
    ref = _pairwise_at_scale_one(test)
    got = _no_warnings(lambda: irm.pairwise(_frame(scale), test, adjust="holm",
                                            n_resamples=500).table)
    for col in ("p", "p_adj", "effect_sd", "effect_mse"):
        np.testing.assert_allclose(got[col], ref[col], rtol=1e-9, err_msg=col)
    assert (got["reject"] == ref["reject"]).all()
    unit = scale if test in ("bootstrap", "randomization") else 1.0
    np.testing.assert_allclose(got["statistic"] / unit, ref["statistic"], rtol=1e-9)
    np.testing.assert_allclose(got["diff"] / scale, ref["diff"], rtol=1e-9)
    for col in ("ci_lower", "ci_upper"):
        np.testing.assert_allclose(got[col] / scale, ref[col], rtol=1e-9, equal_nan=True)


def _topic_sets_kw(method: str) -> dict:
    return dict(sizes=[4, 8], n_samples=30, method=method, test=["tukey", "t", "wilcoxon"],
                seed=2)


@functools.cache
def _topic_sets_at_scale_one(method: str):
    """The unscaled reference of one method, computed once for both scales (read only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)  # the same at every scale
        return irm.studies.topic_sets(_frame(), bin_width=0.02, **_topic_sets_kw(method))


@pytest.mark.parametrize("scale", [1e-300, 1e300])
@pytest.mark.parametrize("method", ["disjoint", "subsample", "bootstrap"])
def test_topic_sets_are_scale_invariant(method: str, scale: float) -> None:
    kw = _topic_sets_kw(method)
    ref = _topic_sets_at_scale_one(method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataQualityWarning)  # the same at every scale
        got = irm.studies.topic_sets(_frame(scale), bin_width=0.02 * scale, **kw)
    pd.testing.assert_frame_equal(got.to_frame(), ref.to_frame())
    pd.testing.assert_frame_equal(got.discriminative_power, ref.discriminative_power)
    a, b = got.swap_rates, ref.swap_rates
    assert a["n_pairs"].tolist() == b["n_pairs"].tolist()
    assert a["n_swaps"].tolist() == b["n_swaps"].tolist()
    np.testing.assert_allclose(a["diff_bin"] / scale, b["diff_bin"], rtol=1e-9)
    # edges keep 12 significant digits, not 12 decimals (which rounded them all to 0)
    assert not a.duplicated(["size", "diff_bin"]).any()


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_comparability_is_scale_invariant(scale: float) -> None:
    a, b = _frame(seed=1), _frame(seed=2, shift=0.0)
    ref = irm.comparability(a, b, n_resamples=200, n_halvings=20, seed=4)
    got = _no_warnings(lambda: irm.comparability(_frame(scale, seed=1),
                                                 _frame(scale, seed=2, shift=0.0),
                                                 n_resamples=200, n_halvings=20, seed=4))
    assert got.kappa == pytest.approx(ref.kappa, rel=1e-9)
    assert got.p_value == pytest.approx(ref.p_value, rel=1e-9)
    assert (got.n_a_higher, got.n_b_higher) == (ref.n_a_higher, ref.n_b_higher)
    assert got.false_positive_rate == pytest.approx(ref.false_positive_rate)
    assert got.rmse / scale == pytest.approx(ref.rmse, rel=1e-9)
    assert got.sd_a / scale == pytest.approx(ref.sd_a, rel=1e-9)
    np.testing.assert_allclose(got.systems["t"], ref.systems["t"], rtol=1e-9)
    np.testing.assert_allclose(got.systems["df"], ref.systems["df"], rtol=1e-9)


def test_bootstrap_effects_scale_invariant_where_anova_fits() -> None:
    ref = irm.studies.bootstrap_effects(irm.anova("MD1", _frame()), n_resamples=100, seed=1)
    got = _no_warnings(lambda: irm.studies.bootstrap_effects(
        irm.anova("MD1", _frame(1e-100)), n_resamples=100, seed=1))
    np.testing.assert_allclose(got.effects.to_numpy() / 1e-100, ref.effects.to_numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(got.pairs["order_rate"], ref.pairs["order_rate"])


@pytest.mark.parametrize("scale, fragment", [
    (1e-300, "too small for double precision"), (1e-200, "too small for double precision"),
    (1e300, "too large for double precision"), (1e200, "too large for double precision"),
])
def test_anova_and_bootstrap_refuse_unscalable_scores(scale: float, fragment: str) -> None:
    # where the fit itself would be wrong (a false "perfect fit" at 1e-200), irm.anova refuses
    # and says to rescale; bootstrap_effects needs that fit, so it never sees such scores
    with pytest.raises(DataFormatError, match=fragment) as info:
        irm.anova("MD1", _frame(scale))
    assert "Rescale the scores" in str(info.value)


def test_topics_cli_tiny_bin_width(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # bins rounded to 12 decimals all collided at 0 (exit 70); now 12 significant digits
    m = tmp_path / "m.csv"
    (_wide(topics=10) * 1e-300).rename_axis("topic").reset_index().to_csv(m, index=False)
    status = main(["topics", str(m), "--bin-width", "1e-302", "--sizes", "2,3",
                   "--n-samples", "5", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 0, err
    swaps = pd.read_csv(next((tmp_path / "out").glob("swap*.csv")))
    bins = swaps["diff_bin"].to_numpy()
    assert bins.max() > 0 and len(np.unique(bins)) > 5
    np.testing.assert_allclose(bins / 1e-302, np.round(bins / 1e-302), atol=1e-6)


# ------------------------------------------------------------------------- degenerate resamples


@pytest.mark.parametrize("test", ["t", "tukey"])
def test_topic_sets_bootstrap_of_two_topics_warns(test: str) -> None:
    # with 2 topics, half the bootstrap sets draw one topic twice: constant differences, an
    # infinite t or q counted significant, as pairwise counts them -- and warns
    with pytest.warns(DataQualityWarning, match=r"essentially constant.*counted significant"):
        st = irm.studies.topic_sets(_frame(topics=2), sizes=[2], n_samples=20,
                                    method="bootstrap", test=test)
    assert st.discriminative_power["fraction_significant"].iloc[0] > 0


def test_topic_sets_disjoint_sets_do_not_warn() -> None:
    st = _no_warnings(lambda: irm.studies.topic_sets(_frame(topics=12), sizes=[3, 6],
                                                    n_samples=20, test=["t", "tukey"]))
    assert len(st.to_frame()) == 4


def test_pairwise_bootstrap_of_constant_differences_warns() -> None:
    w = _wide(topics=2).iloc[[0, 0]].reset_index(drop=True)
    with pytest.warns(DataQualityWarning, match="cannot be bootstrapped"):
        res = irm.pairwise(irm.from_wide(w), "bootstrap", n_resamples=99)
    assert res["p"].tolist() == pytest.approx([0.01] * 6)


def test_pairwise_t_of_constant_differences_still_warns() -> None:
    w = _wide(topics=2).iloc[[0, 0]].reset_index(drop=True)
    with pytest.warns(DataQualityWarning, match="cannot be t-tested"):
        irm.pairwise(irm.from_wide(w), "t")


# ------------------------------------------------------------------------------- validation

_U = {"1": 0.20, "2": 0.30, "3": 0.25, "4": 0.40}
_T = {"1": 0.26, "3": 0.30}


@pytest.mark.parametrize("side, value, fragment", [
    ("unpooled", np.inf, "infinite score"), ("unpooled", -np.inf, "infinite score"),
    ("pooled", np.inf, "infinite score"), ("pooled", -np.inf, "infinite score"),
    ("unpooled", True, "boolean score"), ("pooled", np.True_, "boolean score"),
    ("pooled", False, "boolean score"),
    ("unpooled", "high", "not a number"), ("pooled", "0.3x", "not a number"),
    ("pooled", 1e308, "too large for double precision"),
    ("pooled", -1e308, "too large for double precision"),
])
def test_pooling_adjust_refuses(side: str, value: object, fragment: str) -> None:
    u, t = dict(_U), dict(_T)
    (u if side == "unpooled" else t)["1"] = value
    with pytest.raises(DataFormatError, match=fragment):
        irm.pooling.adjust(u, t)


def test_pooling_adjust_keeps_large_finite_results() -> None:
    # a large score on an unpooled-only topic is no overflow: its mean is finite
    res = irm.pooling.adjust({**_U, "4": -1e308}, _T)
    assert res.mean_adjusted == pytest.approx((0.26 + 0.30 + 0.30 + 0.05 - 1e308 + 0.05) / 4)


@pytest.mark.parametrize("study", ["topic_sets", "bootstrap", "pooling_bias"])
def test_seed_sequence_is_the_integer_seed(study: str, small_frame, tiny_collection) -> None:
    run = _study(study, small_frame, tiny_collection)
    assert run(np.random.SeedSequence(5)) == run(5)


@pytest.mark.parametrize("study", ["topic_sets", "bootstrap", "pooling_bias"])
def test_generator_seed_is_reproducible(study: str, small_frame, tiny_collection) -> None:
    run = _study(study, small_frame, tiny_collection)
    assert run(np.random.default_rng(11)) == run(np.random.default_rng(11))
    assert run(np.random.default_rng(11)) != run(np.random.default_rng(12))


def _study(name: str, frame: pd.DataFrame, col):
    if name == "topic_sets":
        return lambda seed: irm.studies.topic_sets(frame, sizes=[3], n_samples=20, test="t",
                                                   seed=seed).taus["tau"].round(12).tolist()
    if name == "bootstrap":
        fit = irm.anova("MD1", frame)
        return lambda seed: irm.studies.bootstrap_effects(
            fit, n_resamples=20, seed=seed).replicates.round(12).to_numpy().tolist()
    return lambda seed: irm.studies.pooling_bias(
        col.runs, col.qrels, widths=[2], common_topics=[2], n_resamples=3,
        seed=seed).to_frame().round(12).to_dict("list").__repr__()


def _counts(frame: pd.DataFrame, col, big_frame: pd.DataFrame):
    fit = irm.anova("MD1", frame)
    return {
        "pairwise-bootstrap": (lambda: irm.pairwise(frame, "bootstrap", n_resamples=BIG),
                               ArgumentError, "n_resamples="),
        "pairwise-tukey": (lambda: irm.pairwise(frame, "t", adjust="tukey", n_resamples=BIG),
                           ArgumentError, "n_resamples="),
        "pairwise-randomization-sampled": (
            lambda: irm.pairwise(big_frame, "randomization", n_resamples=BIG),
            ArgumentError, "n_resamples="),
        "topic-sets-samples": (lambda: irm.studies.topic_sets(frame, sizes=[3], n_samples=BIG),
                               ArgumentError, "n_samples="),
        "bootstrap-n-boot": (lambda: irm.studies.bootstrap_effects(fit, n_resamples=BIG),
                             ArgumentError, "n_resamples="),
        "comparability-n-perm": (lambda: irm.comparability(frame, frame, n_resamples=BIG),
                                 ArgumentError, "n_resamples="),
        "comparability-n-halvings": (lambda: irm.comparability(frame, frame, n_halvings=BIG),
                                     ArgumentError, "n_halvings="),
        "pooling-bias-samples": (lambda: irm.studies.pooling_bias(
            col.runs, col.qrels, widths=[2], common_topics=[2], n_resamples=BIG),
            ArgumentError, "n_resamples="),
        "power-simulate-trials": (lambda: irm.power.simulate_paired_t(
            frame, "s0", "s1", 5, n_trials=BIG), ArgumentError, "n_trials="),
        "power-simulate-n": (lambda: irm.power.simulate_paired_t(
            frame, "s0", "s1", BIG, n_trials=10), ArgumentError, "n="),
    }


COUNT_CASES = [
    "pairwise-bootstrap", "pairwise-tukey", "pairwise-randomization-sampled",
    "topic-sets-samples", "bootstrap-n-boot", "comparability-n-perm",
    "comparability-n-halvings", "pooling-bias-samples", "power-simulate-trials",
    "power-simulate-n"]


@pytest.mark.parametrize("case", COUNT_CASES)
def test_counts_that_cannot_fit_are_refused(case: str, small_frame, tiny_collection) -> None:
    call, error, fragment = _counts(small_frame, tiny_collection, _frame(topics=70))[case]
    with pytest.raises(error, match=fragment) as info:
        call()
    assert "more than this machine's" in str(info.value)
    assert "would fit" in str(info.value)


def test_exact_randomization_with_a_huge_count_still_runs(small_frame) -> None:
    # 12 topics: all 2**12 sign vectors are enumerated, whatever n_resamples allows
    res = irm.pairwise(small_frame, "randomization", n_resamples=BIG)
    ref = irm.pairwise(small_frame, "randomization", n_resamples=2**12)
    np.testing.assert_allclose(res["p"], ref["p"])


UNREACHABLE = "tcp://127.0.0.1:1"


@pytest.mark.parametrize("call", [
    lambda f: irm.parallel.map(abs, [1, 2], backend=UNREACHABLE),
    lambda f: irm.parallel.map(abs, [1, 2], backend="127.0.0.1:1"),
    lambda f: irm.pairwise(f, "bootstrap", n_resamples=50, backend=UNREACHABLE),
    lambda f: irm.studies.topic_sets(f, sizes=[3], n_samples=5, backend=UNREACHABLE),
    lambda f: irm.studies.bootstrap_effects(irm.anova("MD1", f), n_resamples=5,
                                            backend=UNREACHABLE),
], ids=["map", "map-host-port", "pairwise", "topic-sets", "bootstrap"])
def test_unreachable_scheduler_is_a_resource_error(call, small_frame) -> None:
    pytest.importorskip("distributed")
    with pytest.raises(ResourceError, match="cannot reach the Dask scheduler at"):
        call(small_frame)


def test_cli_and_library_share_the_scheduler_check() -> None:
    from irmodels.cli._options import check_scheduler

    with pytest.raises(ResourceError, match=r"127\.0\.0\.1:1 \(.*\); start it"):
        check_scheduler(UNREACHABLE, timeout=2.0)


@pytest.mark.parametrize("call, error, fragment", [
    (lambda f: irm.pairwise(f, "bootstrap", n_resamples=True), ArgumentError,
     "n_resamples must be a positive integer; got True"),
    (lambda f: irm.p_adjust([True, 0.2], "holm"), DataFormatError, "holds booleans"),
    (lambda f: irm.p_adjust(np.array([True, False]), "bh"), DataFormatError,
     "holds booleans"),
    (lambda f: irm.variability.compare(f, "s0", "s1", epsilon=float("inf")), ArgumentError,
     "epsilon must be a positive finite number"),
    (lambda f: irm.variability.compare(f, "s0", "s1", epsilon=True), ArgumentError,
     "epsilon must be a positive finite number"),
    (lambda f: irm.rbo_p_for_depth(float("inf")), DataFormatError, "gives p = 1"),
    (lambda f: irm.rbo_p_for_depth(1e300), DataFormatError, "gives p = 1"),
    (lambda f: irm.rbo_p_for_depth(True), DataFormatError, "greater than 1"),
    (lambda f: irm.studies.bootstrap_effects(irm.anova("MD1", f), level=float("nan")),
     ArgumentError, "level must be a finite number"),
    (lambda f: irm.studies.bootstrap_effects(irm.anova("MD1", f), level=1.0),
     ArgumentError, "level must be in"),
    (lambda f: irm.studies.topic_sets(f, seed=-1), ArgumentError, "seed must be None"),
    (lambda f: irm.studies.bootstrap_effects(irm.anova("MD1", f), seed=1.5), ArgumentError,
     "seed must be None"),
    (lambda f: irm.parallel.map(abs, [1], backend="threads"), ParallelError,
     "unknown backend 'threads'"),
], ids=["n-resamples-bool", "p-adjust-bool", "p-adjust-bool-array", "epsilon-inf",
        "epsilon-bool", "rbo-depth-inf", "rbo-depth-huge", "rbo-depth-bool", "level-nan",
        "level-one", "topic-sets-seed", "bootstrap-seed", "map-backend"])
def test_arguments_refused(call, error, fragment, small_frame) -> None:
    with pytest.raises(error, match=fragment):
        call(small_frame)


def test_numpy_level_and_depth_accepted(small_frame) -> None:
    fit = irm.anova("MD1", small_frame)
    a = irm.studies.bootstrap_effects(fit, n_resamples=20, level=np.float32(0.9), seed=1)
    b = irm.studies.bootstrap_effects(fit, n_resamples=20, level=0.9, seed=1)
    np.testing.assert_allclose(a.effects["lower"], b.effects["lower"], rtol=1e-6)
    assert irm.rbo_p_for_depth(np.int64(10)) == pytest.approx(0.9)


# ------------------------------------------------------------------------------- tracebacks


@pytest.fixture(scope="module")
def report():
    return irm.build_report(_frame(topics=10))


def _target(kind: str, d: Path) -> Path:
    if kind == "file":
        (d / "f").write_text("mine")
        return d / "f"
    if kind == "dangling-link":
        os.symlink(d / "nowhere", d / "link")
        return d / "link"
    if kind == "under-a-file":
        (d / "f").write_text("mine")
        return d / "f" / "report"
    if kind == "link-to-file":
        (d / "f").write_text("mine")
        os.symlink(d / "f", d / "link")
        return d / "link"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind, error, fragment", [
    ("file", OutputExistsError, "is an existing file, not a directory"),
    ("dangling-link", OutputExistsError, "is a dangling symbolic link"),
    ("under-a-file", OutputError, "is a file, not a directory"),
    ("link-to-file", OutputExistsError, "is an existing file, not a directory"),
])
def test_report_save_refuses_what_is_in_the_way(kind, error, fragment, report,
                                                tmp_path: Path) -> None:
    target = _target(kind, tmp_path)
    with pytest.raises(error, match=fragment):
        report.save(target)
    if (tmp_path / "f").exists():
        assert (tmp_path / "f").read_text() == "mine"


def _root_ignores_permissions(d: Path) -> bool:
    probe = d / "probe"
    probe.mkdir()
    os.chmod(probe, 0o555)
    try:
        (probe / "x").write_text("")
        return True
    except OSError:
        return False
    finally:
        os.chmod(probe, 0o755)


@pytest.mark.parametrize("sub", ["", "new"])
def test_report_save_into_a_read_only_folder(sub: str, report, tmp_path: Path) -> None:
    if _root_ignores_permissions(tmp_path):
        pytest.skip("running as root: a read-only folder can still be written")
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    try:
        with pytest.raises(OutputError, match="permission denied"):
            report.save(ro / sub if sub else ro)
    finally:
        os.chmod(ro, 0o755)


def test_report_save_into_a_new_nested_folder(report, tmp_path: Path) -> None:
    paths = report.save(tmp_path / "a" / "b")
    assert {p.name for p in paths} >= {"report.html", "report.md"}


@pytest.mark.parametrize("kw, fragment", [
    ({"columns": ["zz"]}, r"no column\(s\) 'zz'"),
    ({"columns": "p_adj"}, r"for one column write \['p_adj'\]"),
    ({"columns": 3}, "columns must be a list of column names"),
    ({"digits": -1}, "digits must be a whole number between 1 and 17; got -1"),
    ({"digits": 0}, "got 0"),
    ({"digits": 1.5}, "got 1.5"),
    ({"digits": True}, "got True"),
    ({"digits": 18}, "got 18"),
    ({"digits": "4"}, "got '4'"),
])
def test_to_latex_refuses(kw: dict, fragment: str, small_frame) -> None:
    res = irm.pairwise(small_frame)
    with pytest.raises(ArgumentError, match=fragment):
        res.to_latex(**kw)


@pytest.mark.parametrize("render", ["summary", "html", "frame_to_latex", "section"])
def test_other_renderers_refuse_bad_digits(render: str, small_frame) -> None:
    from irmodels._display import frame_to_html, frame_to_latex

    res = irm.pairwise(small_frame)
    call = {"summary": lambda: res.summary(digits=0),
            "html": lambda: frame_to_html(res.table, digits=-2),
            "frame_to_latex": lambda: frame_to_latex(res.table, columns=["nope"]),
            "section": lambda: res.to_section(digits=99)}[render]
    with pytest.raises(ArgumentError):
        call()


@pytest.mark.parametrize("digits", [1, 6, 17])
def test_to_latex_accepts_every_allowed_digits(digits: int, small_frame) -> None:
    assert r"\begin{table}" in irm.pairwise(small_frame).to_latex(digits=digits)


@pytest.mark.parametrize("systems", [["s0", "s0", "s1"], ["s1", "s2", "s1", "s2"]])
def test_compare_refuses_a_system_listed_twice(systems, small_frame) -> None:
    with pytest.raises(DataFormatError, match="more than once"):
        irm.compare(small_frame, systems=systems)


# ----------------------------------------------------------------------------------- silent

RUN = b"301 Q0 d1 1 2.5 bm25\n301 Q0 d2 2 2.0 bm25\n302 Q0 d3 1 1.5 bm25\n"
QRELS = b"301 0 d1 1\n301 0 d2 0\n302 0 d3 2\n"


@pytest.mark.parametrize("run, qrels, status, fragment", [
    (RUN.replace(b"301 ", b"0301 ").replace(b"302 ", b"0302 "), QRELS, 1,
     "differ by leading zeros"),
    (RUN, QRELS.replace(b"301 ", b"0301 ").replace(b"302 ", b"0302 "), 1,
     "differ by leading zeros"),
    (RUN.replace(b"302 ", b"00302 "), QRELS, 1, "e.g. run '00302', qrels '302'"),
    (RUN.replace(b"301 ", b"401 ").replace(b"302 ", b"402 "), QRELS, 1,
     "none of the runs' 2 topics"),
    (RUN.replace(b"302 ", b"303 "), QRELS, 0, "wrote"),  # one topic unjudged: as before
    (RUN, QRELS, 0, "wrote"),
])
def test_evaluate_refuses_topics_that_do_not_match(run, qrels, status, fragment,
                                                   tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r").write_bytes(run)
    (tmp_path / "q").write_bytes(qrels)
    out = tmp_path / "o.csv"
    code = main(["evaluate", str(tmp_path / "r"), "--qrels", str(tmp_path / "q"),
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == status, err
    assert "Traceback" not in err
    assert fragment in err
    if status:
        assert len([ln for ln in err.splitlines() if ln.startswith("irmodels: error:")]) == 1
        assert not out.exists()


@pytest.mark.parametrize("pairs", [
    [("s0", "s1"), ("s0", "s1")],
    [("s0", "s1"), ("s1", "s0")],
    [("s0", "s1"), ("s2", "s3"), ("s3", "s2")],
])
@pytest.mark.parametrize("adjust", ["bonferroni", "holm", None])
def test_pairwise_refuses_a_pair_listed_twice(pairs, adjust, small_frame) -> None:
    with pytest.raises(DataFormatError, match="twice"):
        irm.pairwise(small_frame, pairs=pairs, adjust=adjust)


def test_variability_refuses_a_pair_listed_twice(small_frame) -> None:
    with pytest.raises(DataFormatError, match="lists the pair"):
        irm.variability.tie_breaking(small_frame, pairs=[("s0", "s1"), ("s1", "s0")])


def test_distinct_pairs_keep_their_bonferroni_family(small_frame) -> None:
    res = irm.pairwise(small_frame, pairs=[("s0", "s1"), ("s1", "s2")], adjust="bonferroni")
    np.testing.assert_allclose(res["p_adj"], np.minimum(1, 2 * res["p"]))


# ----------------------------------------------------------------------------------- causes

_M = pd.Series({"base": 0.30, "a": 0.31, "b": 0.36})


@pytest.mark.parametrize("cov, fragment", [
    (np.array([[1, 2, 0], [2, 1, 0], [0, 0, 1.0]]) * 0.01, "not positive semi-definite"),
    (-np.eye(3) * 0.01, "not positive semi-definite"),
    (np.array([[1, 0.5, 0], [0, 1, 0], [0, 0, 1.0]]) * 0.01, "not symmetric"),
])
def test_dunnett_names_a_matrix_that_is_no_covariance(cov, fragment) -> None:
    with pytest.raises(DataFormatError, match=fragment) as info:
        irm.dunnett(_M, cov, control="base", df=20)
    assert "zero standard error" not in str(info.value)


def test_dunnett_keeps_a_valid_covariance() -> None:
    cov = np.full((3, 3), 0.002) + np.eye(3) * 0.01
    res = irm.dunnett(_M, cov, control="base", df=20)
    np.testing.assert_allclose(res.table["se"], np.sqrt(0.02))


def _double(x: int) -> int:
    return 2 * x


@pytest.mark.parametrize("items, fragment", [
    ([1, lambda x: x], r"item 1 of the work \(function"),
    ([threading.Lock()], r"item 0 of the work \(lock"),
    ([1, 2, 3, (i for i in range(2))], r"item 3 of the work \(generator"),
])
def test_parallel_names_the_unpicklable_item(items, fragment) -> None:
    with pytest.raises(ParallelError, match=fragment) as info:
        irm.parallel.map(_double, items, backend="processes", n_workers=2)
    assert "Define it at module level" not in str(info.value)
    assert "not picklable" in str(info.value)


def test_parallel_still_names_an_unpicklable_function() -> None:
    with pytest.raises(ParallelError, match="Define it at module level"):
        irm.parallel.map(lambda x: x, [1, 2], backend="processes", n_workers=2)


# ------------------------------------------------------------- more probes: shards, documents


@pytest.mark.parametrize("call, error, fragment", [
    (lambda c: irm.studies.shards(c, n_shards=[2], n_splits=BIG, models=["MD1"]), ArgumentError,
     "n_splits="),
    (lambda c: irm.studies.document_samples.validate(c.runs, c.qrels, n_samples=BIG),
     ArgumentError, "n_samples="),
    (lambda c: irm.studies.document_samples.compare_tests(c.runs, c.qrels, n_samples=BIG),
     ArgumentError, "n_samples="),
    (lambda c: irm.replicates.document_samples(c.runs, c.qrels, n_samples=BIG),
     ArgumentError, "n_samples="),
], ids=["shards-splits", "validate-samples", "compare-tests-samples", "document-samples"])
def test_study_counts_that_cannot_fit(call, error, fragment, tiny_collection) -> None:
    with pytest.raises(error, match=fragment) as info:
        call(tiny_collection)
    assert "would fit" in str(info.value)


@pytest.mark.parametrize("epsilon", [float("inf"), 0.0, 0.5, -0.1, float("nan")])
def test_document_samples_validate_refuses_epsilon(epsilon: float, tiny_collection) -> None:
    with pytest.raises(ArgumentError, match="epsilon must be"):
        irm.studies.document_samples.validate(tiny_collection.runs, tiny_collection.qrels,
                                              n_samples=3, epsilon=epsilon)


def test_document_samples_seed_sequence_is_the_integer_seed(tiny_collection) -> None:
    run = lambda seed: irm.replicates.document_samples(  # noqa: E731
        tiny_collection.runs, tiny_collection.qrels, n_samples=3, seed=seed)["score"].tolist()
    assert run(np.random.SeedSequence(4)) == run(4)
    assert run(np.random.default_rng(4)) == run(np.random.default_rng(4))


def test_shards_accepts_a_numpy_alpha(tiny_collection) -> None:
    a = irm.studies.shards(tiny_collection, n_shards=[2], n_splits=2, models=["MD1"],
                           alpha=np.float32(0.05))
    b = irm.studies.shards(tiny_collection, n_shards=[2], n_splits=2, models=["MD1"], alpha=0.05)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())


# -------------------------------------------------------------- more probes: variability, power


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_variability_z_is_scale_invariant(scale: float) -> None:
    ref, got = _frame(), _frame(scale)
    pd.testing.assert_frame_equal(
        irm.variability.variability(got, transform="z").table,
        irm.variability.variability(ref, transform="z").table, rtol=1e-9)
    for test in ("f", "levene_mean", "levene_median"):
        a = irm.variability.compare(got, "s0", "s1", test=test, transform="z")
        b = irm.variability.compare(ref, "s0", "s1", test=test, transform="z")
        assert a.p == pytest.approx(b.p, rel=1e-9)


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_power_tables_are_scale_invariant(scale: float) -> None:
    ref, got = _frame(), _frame(scale)
    a, b = irm.power.pair_sd(got), irm.power.pair_sd(ref)
    np.testing.assert_allclose(a["sd"] / scale, b["sd"], rtol=1e-9)
    np.testing.assert_allclose(a["diff"] / scale, b["diff"], rtol=1e-9)
    ta = irm.power.topics_table(got, deltas=[0.05 * scale]).to_frame()
    tb = irm.power.topics_table(ref, deltas=[0.05]).to_frame()
    assert ta["n_topics"].tolist() == tb["n_topics"].tolist()
    np.testing.assert_allclose(ta["n"], tb["n"], rtol=1e-9)
