"""Root pytest configuration: applies to the tests and to the doctests in irmodels/.

The dataset registry reads the public TREC matrices from the shared reference folder instead of
the network, and matplotlib draws off-screen.
"""

import os
from pathlib import Path

_SHARED = Path(__file__).resolve().parent.parent / "shared" / "data" / "ir-scores"
os.environ.setdefault("IRM_DATA_MIRROR", str(_SHARED))
os.environ.setdefault("MPLBACKEND", "Agg")
