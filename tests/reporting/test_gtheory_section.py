"""The G-study report section formats the GStudy it is given, in HTML, Markdown and LaTeX."""

from __future__ import annotations

import pandas as pd
import pytest

import irmodels as irm
from irmodels.reporting.gtheory_section import gstudy_section


@pytest.fixture(scope="module")
def adhoc3(shared_data):
    return irm.read_matrix(shared_data / "ir-scores" / "adhoc3_ap.csv")


def test_section_content(adhoc3):
    g = irm.gstudy(adhoc3)
    s = gstudy_section(g, topics=[25, 50], target=0.95)
    assert s.title == "Generalizability theory"
    d = g.dstudy([25, 50])
    assert f"{d['Erho2'].iloc[1]:.4f}" in s.markdown
    assert f"{g.components.loc['system', 'variance']:.4f}" in s.markdown
    assert f"Erho2 {g.topics_needed(0.95)}, Phi {g.topics_needed(0.95, index='Phi')}" in s.markdown
    assert s.html.count("<table") == 2 and 'alt="D-study curves"' in s.html
    assert s.latex.count(r"\begin{tabular}") == 2


def test_section_in_report(adhoc3):
    s = gstudy_section(irm.gstudy(adhoc3), plot=False)
    r = irm.build_report(adhoc3, model="score ~ system + topic", sections=[s], gstudy=False)
    assert "Generalizability theory" in r.to_html()
    assert "Generalizability theory" in r.to_markdown()


def test_unreachable_target_is_reported():
    w = pd.DataFrame({"a": [0.1, 0.5, 0.3], "b": [0.3, 0.3, 0.3]})
    with pytest.warns(irm.NegativeVarianceWarning):
        g = irm.gstudy(irm.from_wide(w))
    s = gstudy_section(g, plot=False)
    assert "not reachable" in s.markdown


def test_gstudy_plot_is_returned_closed_so_a_notebook_shows_it_once(adhoc3):
    import matplotlib.pyplot as plt

    from irmodels.reporting.plots import tukey_means_plot

    plt.close("all")
    fig = irm.gstudy(adhoc3).plot(target=0.95)
    assert plt.get_fignums() == []  # not left open: the inline backend will not show it again
    assert fig.axes[0].get_xlabel() == "topics" and len(fig.axes[0].lines) >= 3
    fig2 = tukey_means_plot(irm.anova("MD1", adhoc3).tukey())
    assert plt.get_fignums() == [] and fig2.axes
    _, ax = plt.subplots()
    assert irm.gstudy(adhoc3).plot(ax=ax) is ax.figure and plt.get_fignums()  # caller's figure
    plt.close("all")
