"""irm.compare: the comparison table reproduces Tukey HSD and the adjusted paired tests exactly."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.cli import main
from irmodels.errors import ArgumentError, DataFormatError, DesignError
from irmodels.inference.compare import system_letters

PDFLATEX = shutil.which("pdflatex")


@pytest.fixture(scope="module")
def trec8() -> pd.DataFrame:
    """TREC-8 ad hoc, AP and P@10, 50 topics x 129 runs (a long frame with two measures)."""
    return pd.concat([irm.datasets.load("adhoc8", "AP"), irm.datasets.load("adhoc8", "P@10")],
                     ignore_index=True)


def _wide(seed: int, systems: int = 5, topics: int = 25, step: float = 0.04) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.beta(2, 5, size=(topics, 1))
    return pd.DataFrame(np.clip(base + step * np.arange(systems)
                                + rng.normal(0, 0.05, (topics, systems)), 0, 1),
                        columns=[f"sys{i + 1}" for i in range(systems)])


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    return pd.concat([irm.from_wide(_wide(1)).assign(measure="AP"),
                      irm.from_wide(_wide(2)).assign(measure="nDCG@10")], ignore_index=True)


def _tukey_pairs(frame: pd.DataFrame, alpha: float = 0.05) -> set[tuple[str, str]]:
    hsd = irm.anova("score ~ topic + system", frame).tukey("system", alpha=alpha)
    p = hsd.pairs[hsd.pairs["reject"]]
    return set(zip(p["a"].astype(str), p["b"].astype(str)))


@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_tukey_reproduces_fit_tukey_exactly_on_trec8(trec8: pd.DataFrame, alpha: float) -> None:
    res = irm.compare(trec8, alpha=alpha)
    assert res.measures == ["AP", "P@10"] and len(res.systems) == 129
    for m in res.measures:
        expected = _tukey_pairs(trec8[trec8["measure"] == m], alpha)
        assert res.significant_pairs(m) == expected
        assert len(expected) > 1000  # the test is not vacuous
    # the means are the plain means per system
    means = trec8.groupby(["system", "measure"], observed=True)["score"].mean().unstack()
    np.testing.assert_allclose(res.means.to_numpy(), means.loc[res.systems, res.measures],
                               rtol=1e-14, atol=0)


def test_marks_are_the_letters_of_the_systems_beaten(small: pd.DataFrame) -> None:
    res = irm.compare(small)
    marks = res.marks()
    for m in res.measures:
        sub = small[small["measure"] == m]
        means = sub.groupby("system", observed=True)["score"].mean()
        sig = _tukey_pairs(sub)
        for s in res.systems:
            beaten = [t for t in res.systems
                      if ((s, t) in sig or (t, s) in sig) and means[s] > means[t]]
            assert marks.loc[s, m] == "".join(res.letters[t] for t in beaten)
    assert res.best("AP") == [str(res.means["AP"].idxmax())]
    assert list(res.letters) == ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization"])
@pytest.mark.parametrize("adjust", ["holm", "bonferroni", "none"])
def test_paired_tests_reproduce_pairwise(small: pd.DataFrame, test: str, adjust: str) -> None:
    res = irm.compare(small, test=test, adjust=adjust, seed=3, n_resamples=2000)
    for m in res.measures:
        pw = irm.pairwise(small[small["measure"] == m].drop(columns="measure"), test,
                          adjust=None if adjust == "none" else adjust, seed=3,
                          n_resamples=2000).table
        got = res.pairs[res.pairs["measure"] == m]
        np.testing.assert_array_equal(got["p_adj"].to_numpy(), pw["p_adj"].to_numpy())
        assert res.significant_pairs(m) == {
            (a, b) for a, b, r in zip(pw["a"], pw["b"], pw["reject"]) if r}
        # the winner has the larger mean
        for a, b, d, w in zip(got["a"], got["b"], got["diff"], got["better"]):
            assert w == ("" if not w else (a if d > 0 else b))


def test_baseline_daggers(small: pd.DataFrame) -> None:
    res = irm.compare(small, measures=["AP"], test="t", baseline="sys3")
    pw = irm.pairwise(small[small["measure"] == "AP"].drop(columns="measure"), "t",
                      pairs=[("sys3", s) for s in ["sys1", "sys2", "sys4", "sys5"]],
                      adjust="holm").table
    assert set(res.pairs["a"]) == {"sys3"}
    np.testing.assert_array_equal(res.pairs["p_adj"].to_numpy(), pw["p_adj"].to_numpy())
    marks = res.marks()["AP"]
    for b, d, r in zip(pw["b"], pw["diff"], pw["reject"]):
        assert marks[b] == ("" if not r else ("-" if d > 0 else "+"))
    assert marks["sys3"] == ""
    assert (marks != "").sum() >= 2
    tex = res.to_latex()
    assert r"\dagger" in tex and "baseline sys3" in tex
    # Tukey with a baseline keeps the Tukey family (all pairs): the same decisions as fit.tukey
    tk = irm.compare(small, measures=["AP"], baseline="sys3")
    expected = {p for p in _tukey_pairs(small[small["measure"] == "AP"]) if "sys3" in p}
    assert {frozenset(p) for p in tk.significant_pairs("AP")} == {frozenset(p) for p in expected}


def test_latex_table(small: pd.DataFrame, tmp_path: Path) -> None:
    res = irm.compare(small)
    tex = res.to_latex()
    best_ap = res.best("AP")[0]
    row = next(line for line in tex.splitlines() if line.startswith(best_ap + " "))
    assert rf"\textbf{{{res.means.loc[best_ap, 'AP']:.4f}}}" in row
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert r"\label{tab:compare}" in tex
    caption = re.search(r"\\caption\{(.*)\}", tex).group(1)
    assert "Tukey HSD" in caption and "alpha = 0.05" in caption
    tex_t = irm.compare(small, test="wilcoxon", adjust="bh", alpha=0.1).to_latex(
        caption="My runs", label="tab:runs", digits=3, columns=["nDCG@10"])
    assert r"\caption{My runs}" in tex_t and r"\label{tab:runs}" in tex_t and "AP" not in tex_t
    assert re.search(r"& \d\.\d{3}[\$ \\]", tex_t)
    caption = irm.compare(small, test="wilcoxon", adjust="bh", alpha=0.1).caption()
    assert "Wilcoxon" in caption and "Benjamini-Hochberg" in caption and "alpha = 0.1" in caption
    with pytest.raises(KeyError):
        res.to_latex(columns=["MAP"])
    if PDFLATEX:
        (tmp_path / "doc.tex").write_text(
            "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"
            + tex + "\n" + tex_t + "\n\\end{document}\n")
        proc = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        log = (tmp_path / "doc.log").read_text(encoding="latin-1")
        assert proc.returncode == 0, log[-2000:]
        assert "Overfull \\hbox" not in log


def test_frame_html_summary(small: pd.DataFrame) -> None:
    res = irm.compare(small)
    f = res.to_frame()
    assert list(f.columns) == ["system", "letter", "measure", "mean", "best", "better_than",
                               "n_topics"]
    assert len(f) == 10 and f["best"].sum() == 2 and (f["n_topics"] == 25).all()
    row = f[(f["system"] == "sys5") & (f["measure"] == "AP")].iloc[0]
    assert row["better_than"] == ",".join(res.better_than("AP")["sys5"])
    page = res._repr_html_()
    assert "<table" in page and "<b>" in page and "<sup>" in page
    text = res.summary()
    assert "Tukey HSD" in text and "*" in text
    assert "\n" not in repr(res)


def test_systems_selection_and_single_measure(small: pd.DataFrame) -> None:
    ap = small[small["measure"] == "AP"].drop(columns="measure")
    res = irm.compare(ap, systems=["sys5", "sys1", "sys3"])
    assert res.systems == ["sys5", "sys1", "sys3"] and res.measures == ["score"]
    sub = ap[ap["system"].isin(["sys1", "sys3", "sys5"])]
    expected = _tukey_pairs(irm.frame(sub.assign(system=sub["system"].astype(str))))
    assert {frozenset(p) for p in res.significant_pairs()} == {frozenset(p) for p in expected}
    assert len(expected) >= 1


def test_errors(small: pd.DataFrame) -> None:
    with pytest.raises(ArgumentError, match="unknown test"):
        irm.compare(small, test="anova")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="unknown adjustment"):
        irm.compare(small, test="t", adjust="fdr")  # type: ignore[arg-type]
    with pytest.raises(DataFormatError, match="not in the frame"):
        irm.compare(small, measures=["MAP"])
    with pytest.raises(DataFormatError, match="not in the frame"):
        irm.compare(small, systems=["sys1", "nope"])
    with pytest.raises(DataFormatError, match="baseline"):
        irm.compare(small, baseline="nope")
    with pytest.raises(ArgumentError, match="alpha"):
        irm.compare(small, alpha=5)
    with pytest.raises(DesignError, match="two systems"):
        irm.compare(small, systems=["sys1"])
    sharded = pd.concat([small.assign(shard="1"), small.assign(shard="2")], ignore_index=True)
    for test in ("tukey", "t"):
        with pytest.raises(DesignError, match="one score per"):
            irm.compare(sharded, test=test)
    holes = small[~((small["system"] == "sys2") & (small["topic"].astype(str) == "3"))]
    with pytest.raises(DesignError, match="every system scored on every topic"):
        irm.compare(holes)


def test_letters() -> None:
    assert system_letters(1) == ["a"]
    assert system_letters(26)[-1] == "z" and system_letters(27)[-1] == "aa"
    assert len(set(system_letters(800))) == 800


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), shift=st.floats(-0.5, 0.5), order=st.permutations(range(4)))
def test_invariant_to_shift_and_row_order(seed: int, shift: float, order: list[int]) -> None:
    """Adding a constant to every score, or listing the systems in another order, changes
    neither the significant pairs nor who wins them."""
    wide = _wide(seed, systems=4, topics=15, step=0.05)
    f = irm.from_wide(wide)
    base = irm.compare(f)
    moved = irm.compare(irm.from_wide(wide + shift), systems=[f"sys{i + 1}" for i in order])
    assert {frozenset(p) for p in base.significant_pairs()} == {
        frozenset(p) for p in moved.significant_pairs()}
    assert base.better_than() == {s: sorted(v, key=base.systems.index)
                                  for s, v in moved.better_than().items()}


# ------------------------------------------------------------------------------------ CLI


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    irm.collection.generate(preset="small", systems=5, seed=1).write(d)
    return d


def test_cli_runs_qrels_latex(demo_dir: Path, tmp_path: Path, capsys) -> None:
    tex = tmp_path / "t.tex"
    out = tmp_path / "t.csv"
    rc = main(["compare", str(demo_dir / "runs"), "--qrels", str(demo_dir / "qrels.txt"),
               "--measures", "AP", "nDCG@10", "--latex", str(tex), "--out", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert text.startswith("Comparison of 5 systems on AP, nDCG@10: Tukey HSD")
    runs = irm.read_runs(sorted((demo_dir / "runs").iterdir()))
    data = irm.evaluate(runs, irm.read_qrels(demo_dir / "qrels.txt"), ["AP", "nDCG@10"])
    expected = irm.compare(data, ["AP", "nDCG@10"])
    assert tex.read_text().strip() == expected.to_latex()
    pd.testing.assert_frame_equal(pd.read_csv(out, dtype={"better_than": str}).fillna(""),
                                  expected.to_frame().astype({"better_than": str}),
                                  check_dtype=False)


def test_cli_long_frame_and_trec_eval(demo_dir: Path, tmp_path: Path, capsys) -> None:
    runs = irm.read_runs(sorted((demo_dir / "runs").iterdir()))
    data = irm.evaluate(runs, irm.read_qrels(demo_dir / "qrels.txt"), ["AP", "P@10"])
    path = tmp_path / "scores.csv"
    irm.write_frame(data, path)
    assert main(["compare", str(path), "--test", "t", "--systems", "sys01", "sys02", "sys03",
                 "--latex", "-"]) == 0
    tex = capsys.readouterr().out
    expected = irm.compare(data, test="t", systems=["sys01", "sys02", "sys03"])
    assert tex.strip() == expected.to_latex()
    # trec_eval -q files, one per run
    names = {"AP": "map", "P@10": "P_10"}
    files = []
    for system, g in data.groupby("system", observed=True):
        p = tmp_path / f"{system}.treceval"
        lines = [f"runid\tall\t{system}"]
        lines += [f"{names[str(m)]}\t{t}\t{s:.6f}"
                  for m, t, s in zip(g["measure"], g["topic"], g["score"])]
        p.write_text("\n".join(lines) + "\n")
        files.append(str(p))
    assert main(["compare", *files, "--measures", "AP", "--baseline", "sys01"]) == 0
    out = capsys.readouterr().out
    assert "baseline sys01" in out


def test_cli_errors(demo_dir: Path, capsys) -> None:
    rc = main(["compare", str(demo_dir / "runs"), "--qrels", str(demo_dir / "qrels.txt"),
               "--measures", "NOPE"])
    assert rc != 0
    err = capsys.readouterr().err
    assert err.startswith("irmodels: error:") and "Traceback" not in err


def test_one_topic_is_refused_in_the_comparison_s_words():
    """The ANOVA's "Drop it from the model" made no sense to irm.compare, which has no model."""
    one = pd.DataFrame({"topic": ["1", "1", "1"], "system": ["a", "b", "c"],
                        "score": [0.1, 0.2, 0.3]})
    with pytest.raises(irm.DesignError, match=r"needs at least two topics .* have 1 \(1\)"):
        irm.compare(one)
