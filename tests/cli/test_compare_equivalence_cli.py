"""``irmodels compare --pairs / --equivalence``: the pairs table with d_z and TOST, as irm.compare."""

from __future__ import annotations

import pytest

import irmodels as irm
from irmodels.cli import main

SYSTEMS = ["run95", "run83", "run51"]


@pytest.fixture(scope="module")
def adhoc8_csv(shared_data):
    return str(shared_data / "ir-scores" / "adhoc8_ap.csv")


def test_equivalence_prints_the_pairs_with_p_equiv(adhoc8_csv, capsys) -> None:
    assert main(["compare", adhoc8_csv, "--systems", *SYSTEMS, "--equivalence", "0.02"]) == 0
    out = capsys.readouterr().out
    ref = irm.compare(irm.read_matrix(adhoc8_csv), systems=SYSTEMS, equivalence=0.02).effects()
    assert "p_equiv" in out and "within +/-0.02" in out
    # run83 - run51: the TOST p of irm.compare (itself checked against R's t.test)
    line = next(ln for ln in out.splitlines() if "run83 - run51" in ln)
    value = float(line.split()[-1])
    assert value == pytest.approx(float(ref.xs("run83 - run51", level="pair")["p_equiv"].iloc[0]),
                                  abs=5e-5)
    assert value == pytest.approx(0.2365, abs=5e-5)


def test_pairs_without_equivalence_has_no_p_equiv(adhoc8_csv, capsys) -> None:
    assert main(["compare", adhoc8_csv, "--systems", *SYSTEMS, "--pairs"]) == 0
    out = capsys.readouterr().out
    assert "dz_lower" in out and "p_equiv" not in out
    assert main(["compare", adhoc8_csv, "--systems", *SYSTEMS]) == 0
    assert "dz_lower" not in capsys.readouterr().out


def test_latex_holds_both_tables(adhoc8_csv, tmp_path, capsys) -> None:
    tex = tmp_path / "t.tex"
    assert main(["compare", adhoc8_csv, "--systems", *SYSTEMS, "--equivalence", "0.02",
                 "--latex", str(tex)]) == 0
    text = tex.read_text()
    assert text.count(r"\begin{tabular}") == 2
    assert r"\label{tab:compare}" in text and r"\label{tab:compare-pairs}" in text


def test_bad_margin_is_a_usage_error(adhoc8_csv, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", adhoc8_csv, "--equivalence", "-1"])
    assert info.value.code == 2
