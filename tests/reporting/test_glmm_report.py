"""``irm.report`` of generalised linear (mixed) models: the section of a GLMM (binomial P@10,
beta AP) and of a GLM, the Tukey section on the response scale, and LaTeX that compiles."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special

import irmodels as irm
from irmodels.models._glmm_report import response_means_table

SYSTEMS = ["run1", "run10", "run100", "run101", "run102", "run103"]


@pytest.fixture(scope="module")
def trec8(shared_data: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for name, measure in (("p10", "P@10"), ("ap", "AP")):
        d = irm.read_matrix(shared_data / "ir-scores" / f"adhoc8_{name}.csv", measure=measure)
        out[name] = d[d["system"].isin(SYSTEMS)].reset_index(drop=True)
    return out


@pytest.fixture(scope="module")
def binomial(trec8):
    return irm.mixed("score * 10 ~ system + (1|topic)", trec8["p10"], family="binomial",
                     trials=10)


@pytest.fixture(scope="module")
def beta(trec8):
    return irm.mixed("score ~ system + (1|topic)", trec8["ap"], family="beta", squeeze=True)


@pytest.fixture(scope="module")
def glm(trec8):
    return irm.anova("score * 10 ~ topic + system", trec8["p10"], family="binomial", trials=10)


def _table(html: str, title: str) -> str:
    i = html.index(title)
    return html[i:html.index("</table>", i)]


def test_glmm_section(binomial):
    s = irm.report(binomial).sections[0]
    assert s.title.startswith("Generalized linear mixed model fit by maximum likelihood "
                              "(Laplace approximation)")
    assert "family: binomial (logit)" in s.html
    assert "latent (logit) scale" in s.html and "Wald z tests (as summary(glmer))" in s.html
    fixed = _table(s.html, "Fixed effects (link scale, Wald z)")
    assert f"{binomial.fixed.loc['systemrun10', 'z']:.4g}" in fixed
    re_tab = _table(s.html, "Random effects (latent scale)")
    assert f"{binomial.variance_components()['variance'].iloc[0]:.4g}" in re_tab
    assert "Beta precision" not in s.html and "squeezed" not in s.html
    assert "**Fixed effects (link scale, Wald z)**" in s.markdown
    assert "Note: Coefficients are on the logit (link) scale" in s.markdown
    assert r"\begin{table}" in s.latex


def test_means_on_both_scales(binomial):
    t = response_means_table(binomial)
    assert list(t.columns) == ["link_mean", "link_se", "mean", "se", "lower", "upper"]
    link = binomial.marginal_means("system")
    np.testing.assert_allclose(t["link_mean"], link, rtol=1e-12)
    np.testing.assert_allclose(t["mean"], special.expit(link), rtol=1e-12)
    np.testing.assert_allclose(t["mean"], binomial.marginal_means("system", scale="response"),
                               rtol=1e-12)
    # delta method: se(mu) = mu (1 - mu) se(eta); interval = expit(eta +- 1.96 se(eta))
    mu = t["mean"].to_numpy()
    np.testing.assert_allclose(t["se"], mu * (1 - mu) * t["link_se"], rtol=1e-10)
    np.testing.assert_allclose(t["lower"], special.expit(link - 1.959963984540054
                                                         * t["link_se"]), rtol=1e-8)
    assert ((t["lower"] < t["mean"]) & (t["mean"] < t["upper"])).all()
    assert response_means_table(binomial, "topic") is None  # topic is random here


def test_beta_section_notes(beta):
    s = beta.to_section()
    assert re.search(r"Beta precision phi = [0-9.]+: Var\(y\) = mu \(1 - mu\) / \(1 \+ phi\)",
                     s.html)
    assert f"{beta.phi:.4g}" in s.html
    assert "squeezed into (0, 1)" in s.html
    fit_tab = _table(s.html, "<h4>Fit</h4>")
    assert "phi" in fit_tab and f"{beta.loglik:.4g}" in fit_tab


def test_glm_section(glm):
    s = irm.report(glm).sections[0]
    assert s.title.startswith("Generalised linear model (binomial, logit link)")
    assert "Wald z tests (as summary(glm))" in s.html and "latent" not in s.html
    dev = _table(s.html, "Analysis of deviance")
    assert "system" in dev
    means = _table(s.html, "Marginal means of system")
    t = response_means_table(glm)
    assert f"{t['mean'].iloc[0]:.4f}" in means
    np.testing.assert_allclose(t["mean"], glm.marginal_means("system", scale="response"),
                               rtol=1e-12)


def test_tukey_on_the_response_scale_in_a_report(binomial):
    hsd = binomial.tukey(scale="response")
    page = irm.report(binomial, hsd, title="P@10")
    tk = page.sections[1]
    assert tk.title.startswith("Tukey HSD on system") and "df = inf" in tk.title
    assert "odds ratios" in tk.html and "ratio_lower" in tk.html
    r = hsd.pairs.set_index(["a", "b"]).loc[("run10", "run100")]
    assert f"{r['ratio']:.4g}" in tk.html
    assert np.exp(r["diff"]) == pytest.approx(r["ratio"], rel=1e-12)
    html = page.to_html()
    assert html.count("<h2>") >= 2 and "<h2>Tukey HSD on system" in html


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed")
def test_latex_compiles(binomial, beta, glm, tmp_path):
    page = irm.report(binomial, binomial.tukey(scale="response"), beta, glm)
    body = "\n\n".join(page.latex_tables().values())
    doc = tmp_path / "doc.tex"  # the GLM's coefficients (50 topics) make a longtable
    doc.write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{longtable}\n"
                   "\\begin{document}\n" + body + "\n\\end{document}\n", encoding="utf-8")
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    log = (tmp_path / "doc.log").read_text(encoding="latin-1")
    assert proc.returncode == 0, log[-3000:]
    assert "Output written" in log and "longtable" in body
