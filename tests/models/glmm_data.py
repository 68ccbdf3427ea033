"""Data of the GLMM tests, read as the R fixture scripts read them (tests/reference/glmer*.R)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

REF = Path(__file__).resolve().parents[1] / "reference"
#: the 8 TREC-8 runs of the P@10 fixtures, in glmer's level order
P10_SYSTEMS = ["run123", "run105", "run89", "run128", "run65", "run46", "run32", "run23"]


def cbpp() -> pd.DataFrame:
    """lme4's cbpp as glmer.R wrote it."""
    return pd.read_csv(REF / "data" / "glmm" / "cbpp.csv", dtype={"herd": str, "period": str})


def p10(shared_data: Path) -> pd.DataFrame:
    """TREC-8 P@10 of :data:`P10_SYSTEMS` as counts out of 10 (``rel = round(10 P@10)``)."""
    w = pd.read_csv(shared_data / "ir-scores" / "adhoc8_p10.csv")
    rows = [(str(t + 1), s, round(float(w[s].iloc[t]) * 10)) for s in P10_SYSTEMS
            for t in range(len(w))]
    d = pd.DataFrame(rows, columns=["topic", "system", "rel"])
    d["system"] = pd.Categorical(d["system"], categories=P10_SYSTEMS)
    return d
