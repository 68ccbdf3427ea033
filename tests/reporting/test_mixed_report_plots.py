"""Structure of the mixed fits' figures: residual diagnostics (plot_residuals) and the
caterpillar plot of random slopes (SlopeMixedResult.plot). Artists, labels and counts; no
pixels."""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from scipy.special import ndtri  # noqa: E402

import irmodels as irm  # noqa: E402
from irmodels.errors import ArgumentError, DataFormatError, DesignError  # noqa: E402

REF = Path(__file__).resolve().parents[1] / "reference" / "data" / "lme4"
IR = "score ~ system + shard + (1 + shard | topic) + (1 | topic:system)"


@pytest.fixture(scope="module")
def irslopes():
    return pd.read_csv(REF / "irslopes.csv", dtype={"topic": str, "system": str, "shard": str})


@pytest.fixture(scope="module")
def fit(irslopes):
    return irm.mixed(IR, irslopes)


@pytest.fixture(scope="module")
def sleep():
    d = pd.read_csv(REF / "sleepstudy.csv", dtype={"Subject": str})
    return irm.mixed("Reaction ~ Days + (Days | Subject)", d)


def _n_boxes(ax) -> int:
    return sum(1 for p in ax.patches if type(p).__name__ == "PathPatch")


def _hlines(ax) -> list[float]:
    out = []
    for line in ax.get_lines():
        y = np.asarray(line.get_ydata(), dtype=float)
        if len(y) == 2 and y[0] == y[1] and list(line.get_xdata()) == [0, 1]:
            out.append(float(y[0]))
    return sorted(out)


def test_fitted_kind(fit):
    before = plt.get_fignums()
    fig = fit.plot_residuals()
    assert plt.get_fignums() == before  # closed in pyplot
    (ax,) = fig.axes
    assert ax.get_xlabel() == "fitted value (conditional)"
    assert ax.get_ylabel() == "standardized residual"
    pts = ax.collections[0].get_offsets()
    assert len(pts) == fit.n_obs
    np.testing.assert_allclose(np.asarray(pts)[:, 1], fit.residuals("standardized"))
    np.testing.assert_allclose(np.asarray(pts)[:, 0], fit.fitted())
    assert _hlines(ax) == [-2.0, 0.0, 2.0]
    # the raw residuals: only the line at 0
    ax2 = fit.plot_residuals("fitted", type="response").axes[0]
    assert ax2.get_ylabel() == "residual" and _hlines(ax2) == [0.0]


def test_boxplot_by_topic_and_system(fit):
    fig = fit.plot_residuals("boxplot")
    top, bottom = fig.axes
    assert (_n_boxes(top), _n_boxes(bottom)) == (40, 8)
    assert (top.get_xlabel(), bottom.get_xlabel()) == ("topic", "system")
    assert [t.get_text() for t in bottom.get_xticklabels()] == [f"s{i}" for i in range(8)]
    assert top.get_ylabel() == "standardized residual"
    # medians of the boxes are the medians of the residuals of each system
    r = fit.residuals("standardized")
    sys_codes = fit.data["system"].to_numpy()
    meds = [line for line in bottom.get_lines() if line.get_color() == "#dd8452"]
    assert len(meds) == 8
    np.testing.assert_allclose([m.get_ydata()[0] for m in meds],
                               [np.median(r[sys_codes == f"s{i}"]) for i in range(8)])


def test_boxplot_by_cells_and_by_grouping_factor(fit, sleep):
    (ax,) = fit.plot_residuals("boxplot", by="topic:system", type="pearson").axes
    assert _n_boxes(ax) == 320
    assert ax.get_xlabel() == "320 levels of topic:system" and not ax.get_xticks().size
    assert ax.get_ylabel() == "Pearson residual"
    (ax,) = sleep.plot_residuals("boxplot").axes  # no topic/system: the grouping factor
    assert _n_boxes(ax) == 18 and ax.get_xlabel() == "Subject"
    with pytest.raises(DataFormatError, match="'sytem'"):
        fit.plot_residuals("boxplot", by="sytem")


def test_qq_of_conditional_modes(fit):
    fig = fit.plot_residuals("qq")
    axes = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title() for a in axes] == ["topic: (Intercept)", "topic: shardB",
                                             "topic:system: (Intercept)"]
    counts = [len(a.collections[0].get_offsets()) for a in axes]
    assert counts == [40, 40, 320]
    b = fit.random_effects["topic"]["shardB"].to_numpy()
    pts = np.asarray(axes[1].collections[0].get_offsets())
    np.testing.assert_allclose(pts[:, 1], np.sort(b))
    n = len(b)
    np.testing.assert_allclose(pts[:, 0], ndtri((np.arange(1, n + 1) - 0.5) / n))
    line = axes[1].get_lines()[0]
    np.testing.assert_allclose(np.asarray(line.get_ydata()) / np.asarray(line.get_xdata()),
                               np.std(b, ddof=1))


def test_intercept_fit_plots():
    data = irm.datasets.load("adhoc3", "AP")
    m = irm.mixed("score ~ system + (1|topic)", data)
    (ax,) = m.plot_residuals("qq").axes
    assert ax.get_title() == "topic" and len(ax.collections[0].get_offsets()) == 50
    top, bottom = m.plot_residuals("boxplot").axes
    assert (_n_boxes(top), _n_boxes(bottom)) == (50, 40)


def test_ax_contract(fit):
    f, ax = plt.subplots()
    plt.close(f)
    assert fit.plot_residuals("fitted", ax=ax) is f
    f2, axes = plt.subplots(2, 1)
    plt.close(f2)
    assert fit.plot_residuals("boxplot", ax=axes) is f2
    with pytest.raises(ArgumentError, match="2 matplotlib Axes"):
        fit.plot_residuals("boxplot", ax=ax)
    f3, axes3 = plt.subplots(1, 3)
    plt.close(f3)
    assert fit.plot_residuals("qq", ax=axes3) is f3
    f4, axes4 = plt.subplots(1, 2)
    plt.close(f4)
    assert fit.plot(ax=axes4) is f4


@pytest.mark.parametrize("kwargs", [{"kind": "box"}, {"kind": "fitted", "type": "normalized"}])
def test_bad_choices(fit, kwargs):
    with pytest.raises(ArgumentError, match="must be one of"):
        fit.plot_residuals(**kwargs)


def test_caterpillar(fit):
    fig = fit.plot()
    a0, a1 = fig.axes
    assert (a0.get_title(), a1.get_title()) == ("(Intercept)", "shardB")
    assert a0.get_ylabel() == "topic"
    b = fit.random_effects["topic"]
    sd = fit.conditional_sd("topic")
    order = np.argsort(b["(Intercept)"].to_numpy(), kind="stable")
    assert [t.get_text() for t in a0.get_yticklabels()] == list(b.index[order])
    # second panel: same rows, the slope modes, intervals of 1.96 conditional SDs
    pts = a1.lines[0].get_xydata()
    np.testing.assert_allclose(pts[:, 0], b["shardB"].to_numpy()[order])
    seg = a1.collections[0].get_segments()
    half = np.array([(s[1, 0] - s[0, 0]) / 2 for s in seg])
    np.testing.assert_allclose(half, ndtri(0.975) * sd["shardB"].to_numpy()[order])
    assert "95% interval" in a0.get_xlabel()
    (ax,) = fit.plot("topic:system", level=0.5).axes
    assert ax.get_ylabel() == "320 levels of topic:system, sorted"
    assert "50% interval" in ax.get_xlabel()
    with pytest.raises(DesignError, match="grouping factor"):
        fit.plot("system")
    with pytest.raises(ArgumentError):
        fit.plot(level=1.5)


def test_singular_fit_plots(irslopes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = irm.mixed("score ~ system + (1 + shard_c | topic) + (0 + shard_c | system)",
                      irslopes)
    assert g.boundary
    (ax,) = g.plot("system").axes  # every mode 0: still drawn
    np.testing.assert_allclose(ax.lines[0].get_xdata(), 0.0, atol=1e-8)
    assert np.all(np.isfinite(g.residuals("standardized")))
