"""Moved to :mod:`irmodels.stats.dunnett` (issue 26: the kernels the models call live below
them); this module re-exports its public names so that old imports keep working."""

from irmodels.stats.dunnett import DUNNETT_COLUMNS, DunnettResult, dunnett, pmvt_max

__all__ = ["DUNNETT_COLUMNS", "DunnettResult", "dunnett", "pmvt_max"]
