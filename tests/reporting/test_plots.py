"""Every figure of the package has one contract: ``plot(*, ax=None, ...) -> Figure``.

Without ``ax`` a new figure, made through pyplot and closed there (so it leaves nothing open in
a script and a notebook shows it once); with ``ax`` (one Axes, or one per panel) the drawing goes
into it and ``ax.figure`` is returned. The results are the small instances of
``tests/test_result_face.py`` (its registry of every result class); the notebook side (an
image in a fresh kernel) is ``test_plots_jupyter.py``.
"""

from __future__ import annotations

import importlib.util
import math
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.errors import ArgumentError, DesignError

plt = pytest.importorskip("matplotlib.pyplot")

ROOT = Path(__file__).resolve().parents[2]


def _face():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "irm_result_face", ROOT / "tests" / "test_result_face.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FACE = _face()
#: result classes with a plot() (every one of the registry that draws)
PLOTTING = sorted(name for name, cls in FACE._result_classes().items() if hasattr(cls, "plot"))
_cache: dict[str, object] = {}


def _result(name: str):  # type: ignore[no-untyped-def]
    if name not in _cache:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _cache[name] = FACE.BUILDERS[name]()
    return _cache[name]


def _methods(name: str) -> list[str]:
    cls = type(_result(name))
    return sorted(m for m in dir(cls) if m.startswith("plot") and callable(getattr(cls, m)))


def _drawn(ax) -> int:  # type: ignore[no-untyped-def]
    """Artists drawn in an Axes (lines, markers, bars, bands)."""
    return len(ax.lines) + len(ax.collections) + len(ax.patches)


def test_the_plotting_classes_are_found() -> None:
    assert {"BootstrapEffects", "GStudy", "MixedResult", "PoolingBiasStudy", "ResidualDiagnostics",
            "ShardStudy", "TopicSetStudy", "VariabilityResult"} <= set(PLOTTING)


@pytest.mark.parametrize("name", PLOTTING)
def test_plot_makes_a_closed_figure_or_draws_into_ax(name: str) -> None:
    from matplotlib.figure import Figure

    res = _result(name)
    for method in _methods(name):
        plt.close("all")
        fig = getattr(res, method)()
        assert isinstance(fig, Figure), f"{name}.{method}"
        # made through pyplot (the inline backend of a kernel can show it) and closed there
        assert hasattr(fig, "number"), f"{name}.{method} was not made through pyplot"
        assert plt.get_fignums() == [], f"{name}.{method} left a figure open in pyplot"
        panels = [a for a in fig.axes if _drawn(a)]
        assert panels, f"{name}.{method} drew nothing"
        n = len(fig.axes)
        # into the caller's Axes: one Axes, or as many as the panels
        target, axes = plt.subplots(1, n, figsize=(3 * n, 3), squeeze=False)
        given = axes[0, 0] if n == 1 else list(axes[0])
        out = getattr(res, method)(ax=given)
        assert out is target, f"{name}.{method}(ax=...) returned another figure"
        assert len(target.axes) == n, f"{name}.{method}(ax=...) added Axes"
        assert [_drawn(a) for a in target.axes] == [_drawn(a) for a in fig.axes], (
            f"{name}.{method}(ax=...) drew other artists than on its own figure")
        assert [a.get_xlabel() for a in target.axes] == [a.get_xlabel() for a in fig.axes]
        plt.close(target)
        if n > 1:  # one Axes for several panels: refused in words
            other, ax = plt.subplots()
            with pytest.raises(ArgumentError, match=rf"sequence of {n} matplotlib Axes"):
                getattr(res, method)(ax=ax)
            plt.close(other)


def test_ax_of_the_wrong_kind_is_refused() -> None:
    res = _result("VariabilityResult")
    with pytest.raises(ArgumentError, match=r"ax must be a matplotlib Axes .*got str"):
        res.plot(ax="left")
    fig, axes = plt.subplots(1, 2)
    with pytest.raises(ArgumentError, match=r"got 2 Axes"):
        res.plot(ax=list(axes))
    plt.close(fig)


def test_report_plots_take_ax() -> None:
    from irmodels.reporting.plots import tukey_means_plot, variance_components_plot

    fit = irm.anova("MD1", FACE._frame())
    fig, (a, b) = plt.subplots(1, 2)
    assert variance_components_plot(fit.variance_components(), ax=a) is fig
    assert tukey_means_plot(fit.tukey(), measure="AP", ax=b) is fig
    assert len(a.patches) == 3 and b.get_ylabel() == "mean AP (Tukey interval)"
    plt.close(fig)
    new = variance_components_plot(fit.variance_components())
    assert new is not fig and plt.get_fignums() == []


# ------------------------------------------------------------------ MixedResult.plot


def _balanced(topics: int = 15, systems: int = 4, seed: int = 3) -> pd.DataFrame:
    return FACE._frame(topics=topics, systems=systems, seed=seed)


def test_conditional_sd_balanced_closed_form() -> None:
    # balanced y ~ system + (1|topic): given beta, each topic's BLUP has conditional variance
    # sigma_t^2 sigma^2 / (sigma^2 + S sigma_t^2) (S systems per topic)
    data = _balanced()
    fit = irm.mixed("score ~ system + (1|topic)", data)
    vt = fit.components.loc["topic", "variance"]
    ve = fit.components.loc["Residual", "variance"]
    sd = fit.conditional_sd()
    expected = math.sqrt(vt * ve / (ve + 4 * vt))
    assert sd.name == "cond_sd" and len(sd) == 15
    assert list(sd.index) == list(fit.random_effects["topic"].index)
    np.testing.assert_allclose(sd.to_numpy(), expected, rtol=1e-8)


def test_mixed_plot_is_a_caterpillar_of_the_blups() -> None:
    fit = irm.mixed("score ~ 1 + (1|topic) + (1|system)", _balanced())
    fig = fit.plot(level=0.9)
    ax = fig.axes[0]
    (line,) = [c for c in ax.lines if len(c.get_xdata()) == 15]
    b = np.sort(fit.random_effects["topic"].to_numpy())
    np.testing.assert_allclose(line.get_xdata(), b)
    assert ax.get_xlabel() == "conditional mode of topic (90% interval)"
    # the error bars are +- z_0.95 times the conditional SD
    segs = [c for c in ax.collections if len(c.get_segments()) == 15][0].get_segments()
    half = np.array([(s[1][0] - s[0][0]) / 2 for s in segs])
    order = np.argsort(fit.random_effects["topic"].to_numpy(), kind="stable")
    np.testing.assert_allclose(half, 1.6448536269514722 * fit.conditional_sd().to_numpy()[order])
    sysfig = fit.plot("system")
    assert [t.get_text() for t in sysfig.axes[0].get_yticklabels()][:1] != []
    with pytest.raises(DesignError, match="random terms: topic, system"):
        fit.plot("topic:system")
    with pytest.raises(ArgumentError, match="level"):
        fit.plot(level=1.5)


@pytest.mark.r
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_conditional_sd_against_lme4_unbalanced(tmp_path: Path) -> None:
    data = _balanced(topics=20, systems=5, seed=7)
    rng = np.random.default_rng(11)
    data = data.iloc[np.sort(rng.choice(len(data), 70, replace=False))].reset_index(drop=True)
    data[["topic", "system", "score"]].to_csv(tmp_path / "d.csv", index=False)
    script = tmp_path / "c.R"
    script.write_text(
        'suppressMessages(library(lme4))\n'
        'd <- read.csv("d.csv", colClasses = c("character", "character", "numeric"))\n'
        'for (m in list(lmer(score ~ 1 + (1|topic) + (1|system), d, REML = TRUE),\n'
        '               lmer(score ~ 1 + (1|topic) + (1|system), d, REML = FALSE))) {\n'
        '  for (t in c("topic", "system")) { r <- ranef(m, condVar = TRUE)[[t]]\n'
        '    cat(paste(t, rownames(r), sqrt(attr(r, "postVar")[1, 1, ]), sep = ","),\n'
        '        sep = "\\n") }}\n')
    out = subprocess.run(["Rscript", str(script)], cwd=tmp_path, capture_output=True, text=True,
                         check=True).stdout.split()
    rows = [line.split(",") for line in out]
    half = len(rows) // 2
    for method, part in (("REML", rows[:half]), ("ML", rows[half:])):
        fit = irm.mixed("score ~ 1 + (1|topic) + (1|system)", data, method=method)
        for term in ("topic", "system"):
            r = {lvl: float(v) for t, lvl, v in part if t == term}
            ours = fit.conditional_sd(term)
            assert len(r) == len(ours)
            np.testing.assert_allclose([r[str(i)] for i in ours.index], ours.to_numpy(),
                                       rtol=1e-4)


def test_module_level_plot_functions_take_ax() -> None:
    from irmodels.studies import document_samples as ds

    tests = _result("DocumentSampleTests")
    fig, (a, b) = plt.subplots(1, 2)
    assert ds.plot_power_curve(tests.table, ax=a) is fig
    assert irm.variability.plot_mean_sd(FACE._frame(), ax=b) is fig
    assert len(a.lines) >= 2 and b.get_xlabel() == "mean score"
    plt.close(fig)
    assert plt.get_fignums() == []
    assert hasattr(ds.plot_power_curve(tests.table), "number") and plt.get_fignums() == []
