"""BLAS threads of irmodels' kernels (irmodels/_threads.py): chosen by size once per fit,
restored after, overridable by irm.set_options(threads=...) and IRM_BLAS_THREADS."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import irmodels as irm
from irmodels import _threads
from irmodels.errors import ArgumentError
from irmodels.models import _lmm, _reml


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


@pytest.fixture
def options():
    previous = irm.set_options()
    yield
    irm.set_options(**previous)


@pytest.fixture
def seen(monkeypatch):
    """The BLAS thread counts in force at each evaluation of the deviance's factorisation."""
    out: list[list[int]] = []
    factor = _reml._factor

    def spy(*args, **kwargs):
        out.append(_blas_threads())
        return factor(*args, **kwargs)

    monkeypatch.setattr(_reml, "_factor", spy)
    return out


def _shards(seed: int = 3, T: int = 40, S: int = 10, H: int = 4) -> pd.DataFrame:
    """40 topics x 10 systems x 4 shards with 10% of the rows removed: q1 = 400 (topic:system),
    r = 40 + 160 + 10 = 210 dense columns (below LARGE). Smaller designs for the
    fits with several threads (multi-threaded BLAS stalls on a loaded machine: the point)."""
    rng = np.random.default_rng(seed)
    ti, si, hi = np.meshgrid(np.arange(T), np.arange(S), np.arange(H), indexing="ij")
    y = (rng.normal(0, 0.1, T)[ti] + rng.normal(0, 0.05, (T, S))[ti, si]
         + rng.normal(0, 0.05, (T, H))[ti, hi] + rng.normal(0, 0.05, ti.shape))
    data = pd.DataFrame({"topic": [f"t{i:02d}" for i in ti.ravel()],
                         "system": [f"s{j:02d}" for j in si.ravel()],
                         "shard": [f"h{k}" for k in hi.ravel()], "score": y.ravel()})
    return data[rng.random(len(data)) >= 0.1].reset_index(drop=True)


MODEL = "score ~ system + (1|topic) + (1|topic:system) + (1|topic:shard)"


def test_mixed_limits_blas_during_the_fit_and_restores_it(options, seen):
    with threadpool_limits(3, "blas"):
        fit = irm.mixed(MODEL, _shards())
        after = _blas_threads()
    assert fit._state.problem.r == 210
    assert len(seen) > 5  # an optimisation, not a closed form
    assert all(n == [1] * len(n) for n in seen)  # one thread in every evaluation
    assert after == [3] * len(after)  # the caller's setting is back


def test_threads_option_overrides_and_none_leaves_blas_alone(options, seen):
    data = _shards(T=8, S=4, H=3)  # r = 36
    with threadpool_limits(1, "blas"):
        irm.set_options(threads=2)
        irm.mixed(MODEL, data)
        assert seen and all(n == [2] * len(n) for n in seen)
        assert _blas_threads() == [1] * len(_blas_threads())
    seen.clear()
    irm.set_options(threads=None)
    with threadpool_limits(2, "blas"):
        irm.mixed(MODEL, data)
    assert seen and all(n == [2] * len(n) for n in seen)


def test_results_do_not_depend_on_the_threads(options):
    data = _shards(T=20, S=6, H=3)
    one = irm.mixed(MODEL, data)
    irm.set_options(threads=None)
    with threadpool_limits(2, "blas"):
        two = irm.mixed(MODEL, data)
    assert one.loglik == pytest.approx(two.loglik, rel=1e-10)
    np.testing.assert_allclose(one.variance_components()["variance"],
                               two.variance_components()["variance"], rtol=1e-6)


def test_post_fit_kernels_and_slopes_are_limited(options, monkeypatch):
    fit = irm.mixed(MODEL, _shards())
    inside: list[list[int]] = []
    factor = _reml._factor
    monkeypatch.setattr(_reml, "_factor",
                        lambda *a, **k: inside.append(_blas_threads()) or factor(*a, **k))
    with threadpool_limits(3, "blas"):
        fit.fixed  # Satterthwaite: the Hessian's deviance evaluations  # noqa: B018
        assert _blas_threads() == [3] * len(_blas_threads())
    assert inside and all(n == [1] * len(n) for n in inside)

    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(120), 5)
    x = np.tile(np.arange(5.0), 120)
    d = pd.DataFrame({"g": [f"g{i:03d}" for i in g], "x": x,
                      "y": rng.normal(0, 1, 120)[g] + rng.normal(0, 0.3, 120)[g] * x
                      + rng.normal(0, 0.5, g.size)})
    pls_threads: list[list[int]] = []
    pls = _lmm.ProfiledDeviance._pls
    monkeypatch.setattr(_lmm.ProfiledDeviance, "_pls",
                        lambda self, t: pls_threads.append(_blas_threads()) or pls(self, t))
    with threadpool_limits(3, "blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        irm.mixed("y ~ x + (x | g)", d)  # q = 240 random effects
        assert _blas_threads() == [3] * len(_blas_threads())
    assert pls_threads and all(n == [1] * len(n) for n in pls_threads)


def test_least_squares_anova_is_limited(options, monkeypatch):
    from irmodels.models import anova as anova_module

    rng = np.random.default_rng(0)
    d = pd.DataFrame({"topic": np.repeat([f"t{i:02d}" for i in range(50)], 100),
                      "system": np.tile([f"s{j:03d}" for j in range(100)], 50),
                      "score": rng.random(5000)})
    d = d[rng.random(len(d)) > 0.1].reset_index(drop=True)
    inside: list[list[int]] = []
    fit_lsq = anova_module.fit_lsq
    monkeypatch.setattr(anova_module, "fit_lsq",
                        lambda *a, **k: inside.append(_blas_threads()) or fit_lsq(*a, **k))
    with threadpool_limits(3, "blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        irm.anova("score ~ system + topic", d)
        assert _blas_threads() == [3] * len(_blas_threads())
    assert inside == [[1] * len(inside[0])]


def test_choose_by_size(options, monkeypatch):
    assert _threads.choose(1) == 1
    assert _threads.choose(11) == 1  # a small mixed model's columns: spins too (docstring)
    assert _threads.choose(_threads.LARGE - 1) == 1
    monkeypatch.setattr(_threads, "_idle_cores", lambda: 2)
    with threadpool_limits(4, "blas"):
        assert _threads.choose(_threads.LARGE) == 2  # the idle cores
    with threadpool_limits(1, "blas"):
        assert _threads.choose(_threads.LARGE) == 1  # never more than the user's setting
    irm.set_options(threads=3)
    assert _threads.choose(5) == 3


def test_idle_cores_follow_the_load(monkeypatch):
    monkeypatch.setattr(_threads.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    for load, cores in [(0.1, 2), (1.0, 2), (1.7, 1), (6.0, 1)]:
        monkeypatch.setattr(_threads.os, "getloadavg", lambda load=load: (load, load, load))
        assert _threads._idle_cores() == cores, load


def test_nested_blocks_keep_the_outer_choice(options):
    with threadpool_limits(3, "blas"):
        with _threads.kernel_threads(500):
            assert set(_blas_threads()) == {1}
            with _threads.kernel_threads(5000):
                assert set(_blas_threads()) == {1}
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {3}
        with _threads.kernel_threads(10):  # small: one thread too
            assert set(_blas_threads()) == {1}
        irm.set_options(threads=None)
        with _threads.kernel_threads(10):  # threads=None: untouched
            assert set(_blas_threads()) == {3}


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "two", "", [1]])
def test_set_options_validates(options, bad):
    if bad == "":
        assert _threads._check_threads(bad, "threads") is None  # IRM_BLAS_THREADS= (empty)
        return
    before = irm.get_options()
    with pytest.raises(ArgumentError, match="threads must be 'auto', a positive number"):
        irm.set_options(threads=bad)
    assert irm.get_options() == before


def test_set_options_returns_previous_and_parses_text(options):
    irm.set_options(threads="auto")
    assert irm.set_options(threads="4") == {"threads": "auto"}
    assert irm.get_options() == {"threads": 4}
    assert irm.set_options(threads="none") == {"threads": 4}
    assert irm.get_options() == {"threads": None}
    assert irm.set_options() == {"threads": None}  # nothing passed: unchanged


def test_environment_variable(monkeypatch):
    monkeypatch.setenv(_threads.ENV, "2")
    assert _threads._from_env() == 2
    monkeypatch.setenv(_threads.ENV, "None")
    assert _threads._from_env() is None
    monkeypatch.setenv(_threads.ENV, "lots")
    with pytest.raises(ArgumentError, match="IRM_BLAS_THREADS must be"):
        _threads._from_env()
    monkeypatch.delenv(_threads.ENV)
    assert _threads._from_env() == "auto"


def test_glm_and_glmm_fits_run_on_one_thread(options, monkeypatch):
    from irmodels.models import _glm, glmm

    inside: list[list[int]] = []

    def spy(real):
        return lambda *a, **k: inside.append(_blas_threads()) or real(*a, **k)

    monkeypatch.setattr(_glm, "dispatch", spy(_glm.dispatch))
    monkeypatch.setattr(glmm, "mixed_glmm", spy(glmm.mixed_glmm))
    rng = np.random.default_rng(2)
    d = pd.DataFrame({"topic": np.repeat([f"t{i:02d}" for i in range(20)], 4),
                      "system": np.tile(["a", "b", "c", "d"], 20)})
    d["rel"] = rng.poisson(3.0, len(d)).astype(float)
    with threadpool_limits(2, "blas"):
        fit = irm.anova("rel ~ system + topic", d, family="poisson")
        gfit = irm.mixed("rel ~ system + (1|topic)", d, family="poisson")
        assert _blas_threads() == [2] * len(_blas_threads())
    assert len(inside) == 2 and all(n == [1] * len(n) for n in inside)
    assert np.isfinite(fit.deviance) and np.isfinite(gfit.loglik)


class _Seen(Exception):
    """Raised by a spy once it has recorded the BLAS threads (the rest of the call is skipped)."""


def test_inference_entry_points_set_the_threads_once(options, monkeypatch):
    """Kenward-Roger and confint (both mixed engines and GLMMs) run their kernels on one
    thread at these sizes, and give the caller's 3 threads back afterwards."""
    from irmodels.models import (
        _glmm_confint,
        _lmm_confint,
        _lmm_inference,
        _mixed_anova,
        _mixed_confint,
    )

    fit = irm.mixed(MODEL, _shards())  # r = 210
    rng = np.random.default_rng(2)
    g = np.repeat(np.arange(60), 5)
    x = np.tile(np.arange(5.0), 60)
    eta = rng.normal(0, 0.5, 60)[g] + 0.2 * x - 0.5
    d = pd.DataFrame({"g": [f"g{i:02d}" for i in g], "x": x,
                      "y": eta + rng.normal(0, 0.3, 60)[g] * x + rng.normal(0, 0.5, g.size),
                      "k": rng.binomial(10, 1 / (1 + np.exp(-eta)))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        slopes = irm.mixed("y ~ x + (x | g)", d)  # q = 120
        glmm = irm.mixed("k ~ x + (1 | g)", d, family="binomial", trials=10)
    cases = [(_mixed_anova, "kr_adjusted", lambda: fit.anova(ddf="kenward-roger")),
             (_mixed_confint, "wald_intervals", lambda: fit.confint(method="wald")),
             (_lmm_inference, "kr_adjusted", lambda: slopes.anova(ddf="kenward-roger")),
             (_lmm_confint, "wald_intervals", lambda: slopes.confint(method="wald")),
             (_glmm_confint, "wald_intervals", lambda: glmm.confint(method="wald"))]
    for module, name, call in cases:
        inside: list[list[int]] = []

        def spy(*args, _inside=inside, **kwargs):
            _inside.append(_blas_threads())
            raise _Seen

        monkeypatch.setattr(module, name, spy)
        with threadpool_limits(3, "blas"):
            with pytest.raises(_Seen):
                call()
            assert _blas_threads() == [3] * len(_blas_threads()), module.__name__
        assert inside == [[1] * len(inside[0])], module.__name__
