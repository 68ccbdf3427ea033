"""One face for every result: each public result class, built small, passes the same checks.

As scikit-learn's ``parametrize_with_checks`` does for estimators: every subclass of
``irmodels._display.ResultDisplay`` in the package must have a builder here (a test fails for a
class without one), and every instance gives ``summary() -> str``, ``to_frame() -> DataFrame``,
``to_latex()`` that compiles with pdflatex in a plain ``article`` with booktabs and fits the text
width, ``_repr_html_()`` with a ``<table>``, a one-line ``__repr__`` and, where it has one, a
``plot()`` that returns a matplotlib Figure.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels._display import ResultDisplay

PDFLATEX = shutil.which("pdflatex")
#: Overfull boxes narrower than this (pt) are tolerated (rounding in TeX's line breaking).
OVERFULL_TOLERANCE_PT = 1.0


def _frame(topics: int = 12, systems: int = 4, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.beta(2, 5, size=(topics, 1))
    wide = pd.DataFrame(np.clip(base + np.linspace(0, 0.15, systems) +
                                rng.normal(0, 0.05, (topics, systems)), 0, 1),
                        columns=[f"run_{i + 1}" for i in range(systems)])
    return irm.from_wide(wide)


def _anova():
    return irm.anova("MD1", _frame())


def _tukey():
    return _anova().tukey("system")


def _mixed():
    return irm.mixed("score ~ system + (1|topic)", _frame())


def _gstudy():
    return irm.gstudy(_frame())


def _slopes():
    from irmodels.models._lmm import ReTerm, fit_lmm

    rng = np.random.default_rng(3)
    g = np.repeat(np.arange(8), 6)
    x = np.tile(np.arange(6.0), 8)
    y = (1 + 0.5 * x + rng.normal(0, 1, 8)[g] + rng.normal(0, 0.3, 8)[g] * x
         + rng.normal(0, 0.5, 48))
    d = pd.DataFrame({"topic": [f"t{k}" for k in g], "x": x, "score": y})
    return fit_lmm("score ~ x + (1|topic)", d, terms=(ReTerm(("topic",), True, ("x",)),))


def _pairwise():
    return irm.pairwise(_frame(), "t", adjust="holm")


def _compare():
    f = _frame()
    g = _frame(seed=1)
    data = pd.concat([f.assign(measure="AP"), g.assign(measure="nDCG@10")], ignore_index=True)
    return irm.compare(data)


def _paired_t_power():
    return irm.power.paired_t(delta=0.05, sigma=0.1, power=0.8)


def _topic_set_design():
    return irm.power.topics_table(_frame())


def _standardization():
    ref = irm.from_wide(pd.DataFrame({"a": [0.2, 0.5, 0.3], "b": [0.4, 0.5, 0.35],
                                      "c": [0.3, 0.5, 0.4]}))
    new = irm.from_wide(pd.DataFrame({"x": [0.95, 0.5, 0.3]}))
    return irm.Standardizer("z").fit(ref).diagnostics(new)


def _variability():
    return irm.variability.variability(_frame(), None)


def _variability_test():
    return irm.variability.compare(_frame(), "run_1", "run_2")


def _tie_breaking():
    return irm.variability.tie_breaking(_frame())


def _rbo():
    return irm.rbo(["a", "b", "c", "d"], ["b", "a", "d", "e"], p=0.9)


def _shard_study():
    col = irm.collection.generate(preset="tiny")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return irm.studies.shards(col, n_shards=(2,), n_splits=2, seed=0)


def _topic_set_study():
    return irm.studies.topic_sets(_frame(topics=20), sizes=[5, 10], n_samples=20, seed=0)


def _bootstrap_effects():
    return irm.studies.bootstrap_effects(_anova(), n_resamples=50, seed=1)


def _comparability():
    from irmodels.inference.comparability import comparability

    return comparability(_frame(topics=12), _frame(topics=12, seed=2), n_resamples=50,
                         n_halvings=5, seed=1)


def _pooling_bias():
    col = irm.collection.generate(preset="tiny")
    return irm.studies.pooling_bias(col.runs, col.qrels, widths=[2], common_topics=[2],
                                    n_resamples=2, seed=0)


def _pooling_adjustment():
    return irm.pooling.adjust({"1": 0.2, "2": 0.3, "3": 0.25, "4": 0.4},
                              {"1": 0.26, "2": 0.34})


def _document_sample_tests():
    from irmodels.studies import document_samples as ds

    coll = irm.collection.generate(preset="tiny", seed=1)
    return ds.compare_tests(coll.runs, coll.qrels, n_samples=4, mixed_models=False, seed=2)


def _document_sample_validation():
    from irmodels.studies import document_samples as ds

    coll = irm.collection.generate(preset="tiny", seed=1)
    return ds.validate(coll.runs, coll.qrels, n_samples=20, seed=1)


def _dunnett():
    return _anova().dunnett("run_1")


def _residual_diagnostics():
    from irmodels.inference.diagnostics import residual_diagnostics

    return residual_diagnostics(_anova())


#: class name -> builder of a small instance
BUILDERS: dict[str, Callable[[], ResultDisplay]] = {
    "AnovaResult": _anova,
    "TukeyResult": _tukey,
    "MixedResult": _mixed,
    "MixedAnovaResult": lambda: _mixed().anova(),
    "SlopeMixedResult": _slopes,
    "GStudy": _gstudy,
    "PairwiseResult": _pairwise,
    "EffectSizeResult": lambda: irm.effect_size([0.3, 0.5, 0.2, 0.6, 0.4], [0.2, 0.45, 0.25, 0.5, 0.3], equivalence=0.1),
    "CompareResult": _compare,
    "PairedTPower": _paired_t_power,
    "TopicSetDesign": _topic_set_design,
    "StandardizationDiagnostics": _standardization,
    "VariabilityResult": _variability,
    "VariabilityTest": _variability_test,
    "TieBreaking": _tie_breaking,
    "RBOResult": _rbo,
    "ShardStudy": _shard_study,
    "TopicSetStudy": _topic_set_study,
    "DunnettResult": _dunnett,
    "BootstrapEffects": _bootstrap_effects,
    "BootstrapAnova": lambda: irm.studies.bootstrap_anova(_frame(), n_resamples=50, seed=1),
    "TrialSizing": lambda: irm.design.size_from_trial(_frame(), delta=0.05),
    "CommonSigmaTest": lambda: irm.design.common_sigma_test(_frame(), n_resamples=50),
    "SequentialDesign": lambda: irm.design.sequential(start=5, step=5, max_topics=20, n_sim=200),
    "Comparability": _comparability,
    "DocumentSampleTests": _document_sample_tests,
    "DocumentSampleValidation": _document_sample_validation,
    "PoolingBiasStudy": _pooling_bias,
    "PoolingAdjustment": _pooling_adjustment,
    "ResidualDiagnostics": _residual_diagnostics,
    "TopicSimulator": lambda: irm.replicates.fit_simulator(_frame()),
    "ErrorRateStudy": lambda: irm.studies.test_errors(_frame(), tests=["t", "sign"], sizes=[5],
                                                      n_trials=10, seed=1),
    "MetaAnalysisResult": lambda: irm.meta_analysis([0.03, 0.01, 0.05], [1e-4, 2e-4, 1.5e-4],
                                                    labels=["adhoc6", "adhoc_7", "web&2010"]),
    "GlmResult": lambda: irm.anova(
        "rel ~ topic + system", _frame().assign(rel=lambda d: (d["score"] * 10).round()),
        family="binomial", trials=10),
    "GlmmResult": lambda: irm.mixed(
        "rel ~ system + (1|topic)", _frame().assign(rel=lambda d: (d["score"] * 10).round()),
        family="binomial", trials=10),
}


def _result_classes() -> dict[str, type]:
    """Every ResultDisplay subclass defined in the package (modules imported first)."""
    import irmodels

    for info in pkgutil.walk_packages(irmodels.__path__, "irmodels."):
        if ".cli" in info.name or info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional dependency
            continue
    out: dict[str, type] = {}
    todo = list(ResultDisplay.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if (cls.__module__.startswith("irmodels.") and not cls.__name__.startswith("_")
                and not inspect.isabstract(cls)):  # FittedModel: its subclasses are built
            out[cls.__name__] = cls
    return out


def test_every_result_class_has_a_builder() -> None:
    missing = sorted(set(_result_classes()) - set(BUILDERS))
    assert not missing, f"add a builder to tests/test_result_face.py for {missing}"


_cache: dict[str, ResultDisplay] = {}


def _instance(name: str) -> ResultDisplay:
    if name not in _cache:
        try:
            _cache[name] = BUILDERS[name]()
        except (ImportError, AttributeError) as exc:  # a class another change is still adding
            if name in _result_classes():
                raise
            pytest.skip(f"{name} is not in the package yet ({exc})")
    return _cache[name]


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_face(name: str) -> None:
    res = _instance(name)
    assert type(res).__name__ == name and isinstance(res, ResultDisplay)
    text = res.summary()
    assert isinstance(text, str) and text.strip()
    assert str(res) == text
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame) and not frame.empty
    assert frame.columns.is_unique
    page = res._repr_html_()
    assert isinstance(page, str) and "<table" in page
    r = repr(res)
    assert isinstance(r, str) and "\n" not in r and r.strip() and len(r) < 300
    # one repr style: <ClassName key facts>
    assert re.fullmatch(rf"<{name}( .*)?>", r), f"{name}'s repr is not '<{name} ...>': {r}"
    # the aliases removed before 0.2.0 (issue 26): to_section(), summary(), to_frame() remain
    for alias in ("to_report_section", "summary_frame", "to_series"):
        assert not hasattr(type(res), alias), f"{name}.{alias} is an alias removed in 0.2.0"
    section = res.to_section() if hasattr(res, "to_section") else None
    assert section is not None, f"{name} renders no report section (to_section)"
    assert section.title and "<" in section.html and section.markdown and section.latex
    if hasattr(res, "plot"):
        from matplotlib.figure import Figure

        fig = res.plot()
        assert isinstance(fig, Figure)
        import matplotlib.pyplot as plt

        plt.close("all")


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_pickles_and_frame_like_access(name: str) -> None:
    """Results travel between processes (parallel backends); those wrapping one table index,
    measure and iterate like it."""
    import pickle

    from irmodels._display import TableAccess

    res = _instance(name)
    back = pickle.loads(pickle.dumps(res))
    assert type(back) is type(res) and repr(back) == repr(res)
    if isinstance(res, TableAccess):
        table = res.table
        assert len(res) == len(table) and list(res) == list(table.columns)
        col = table.columns[0]
        assert col in res
        pd.testing.assert_series_equal(res[col], table[col])
        pd.testing.assert_frame_equal(res.head(2), table.head(2))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_latex_tables_are_complete(name: str) -> None:
    tex = _instance(name).to_latex()
    n_tables = tex.count(r"\begin{table}")
    assert n_tables >= 1
    assert tex.count(r"\caption{") == n_tables and tex.count(r"\label{") == n_tables
    # a table too wide for one tabular is split into several in the same float
    assert tex.count(r"\toprule") >= n_tables
    assert tex.count(r"\toprule") == tex.count(r"\bottomrule") == tex.count(r"\midrule")
    assert "True" not in tex and "False" not in tex and "nan" not in tex.lower().split()
    assert "¿" not in tex
    labels = re.findall(r"\\label\{([^}]*)\}", tex)
    assert len(set(labels)) == len(labels)


def compile_latex(body: str, workdir: Path) -> str:
    """Compile ``body`` in a plain article with booktabs; return the log (fails on an error)."""
    doc = workdir / "doc.tex"
    doc.write_text("\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
                   + body + "\n\\end{document}\n", encoding="utf-8")
    proc = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", doc.name],
                          cwd=workdir, capture_output=True, text=True, timeout=120)
    log = (workdir / "doc.log").read_text(encoding="latin-1")
    assert proc.returncode == 0, log[-3000:]
    return log


def overfull(log: str) -> list[float]:
    """Widths (pt) of the overfull horizontal boxes reported in a pdflatex log."""
    return [float(x) for x in re.findall(r"Overfull \\hbox \(([\d.]+)pt too wide\)", log)]


_OVERFULL_AT = re.compile(r"Overfull \\hbox \(([\d.]+)pt too wide\)[^\n]*?at lines? (\d+)")


@functools.cache
def _joint_overfull() -> dict[str, list[float]] | None:
    """Every class's LaTeX compiled in one pdflatex run instead of one run each: each body in
    its own group (nothing it sets reaches the next), the table counter reset (its captions are
    numbered as when alone) and a page of its own; the overfull boxes are attributed to bodies
    by the source lines the log gives. ``None`` when that is not possible (a builder skipped or
    failed, the joint document had an error, a box without a line number): each case then
    compiles alone, so a failure names its class exactly as before."""
    lines = ["\\documentclass{article}", "\\usepackage{booktabs}", "\\begin{document}"]
    spans: dict[str, tuple[int, int]] = {}
    try:
        for name in sorted(BUILDERS):
            body = _instance(name).to_latex().splitlines()
            lines += ["\\begingroup\\setcounter{table}{0}"]
            spans[name] = (len(lines) + 1, len(lines) + len(body))
            lines += body + ["\\endgroup\\clearpage"]
    except (Exception, pytest.skip.Exception):
        return None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            log = compile_latex("\n".join(lines[3:]), Path(tmp))
        except AssertionError:  # an error somewhere: let each case find its own
            return None
    out: dict[str, list[float]] = {name: [] for name in spans}
    found = _OVERFULL_AT.findall(log)
    if len(found) != len(overfull(log)):
        return None
    for width, line in found:
        owner = [n for n, (a, b) in spans.items() if a <= int(line) <= b]
        if len(owner) != 1:
            return None
        out[owner[0]].append(float(width))
    return out


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed")
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_latex_compiles_and_fits(name: str, tmp_path: Path) -> None:
    joint = _joint_overfull()
    if joint is not None:
        widths = joint[name]
    else:
        widths = overfull(compile_latex(_instance(name).to_latex(), tmp_path))
    too_wide = [w for w in widths if w > OVERFULL_TOLERANCE_PT]
    assert not too_wide, f"{name}: tables wider than the text by {too_wide} pt"


def test_html_cells_read_as_the_text_summary():
    """A p-value that underflowed showed as 0 in the notebook's HTML while summary() says
    < 2.2e-16; a power that rounds to 1 shows as > 0.9999 in both."""
    from irmodels._display import frame_to_html

    df = pd.DataFrame({"F": [143.3, 1.0], "Pr(>F)": [0.0, 0.5], "power": [0.999996, 0.42],
                       "reject": [True, False]}, index=["system", "topic"])
    h = frame_to_html(df)
    assert "<td>&lt; 2.2e-16</td>" in h and "<td>0.5000</td>" in h
    assert "<td>&gt; 0.9999</td>" in h and "<td>0.4200</td>" in h
    assert "<td>yes</td>" in h and "<td>143.3</td>" in h
