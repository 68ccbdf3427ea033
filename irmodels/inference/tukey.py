"""Moved to :mod:`irmodels.stats.tukey` (issue 26: the kernels the models call live below
them); this module re-exports its public names so that old imports keep working."""

from irmodels.stats.tukey import (
    INTERVAL_COLUMNS,
    PAIR_COLUMNS,
    TukeyResult,
    compact_letters,
    tukey_hsd,
)

__all__ = ["INTERVAL_COLUMNS", "PAIR_COLUMNS", "TukeyResult", "compact_letters", "tukey_hsd"]
