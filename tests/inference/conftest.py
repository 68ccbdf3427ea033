"""Fixtures shared by the pairwise and variability tests: the pairwise.R reference and its data."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import irmodels as irm

REF = Path(__file__).resolve().parents[1] / "reference"


@pytest.fixture(scope="module")
def ref() -> dict:
    """Values R computed with tests/reference/pairwise.R."""
    return json.loads((REF / "pairwise.json").read_text())


@pytest.fixture(scope="module")
def frames(shared_data: Path) -> dict[str, pd.DataFrame]:
    """The data pairwise.R used: a small seeded set and 8 systems of TREC-5 ad hoc AP."""
    small = irm.frame(pd.read_csv(REF / "data" / "pairwise_small.csv"))
    adhoc5 = pd.read_csv(shared_data / "ir-scores" / "adhoc5_ap.csv").iloc[:, :8]
    return {"small": small, "adhoc5": irm.from_wide(adhoc5)}
