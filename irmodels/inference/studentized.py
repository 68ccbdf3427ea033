"""Moved to :mod:`irmodels.stats.studentized` (issue 26: the kernels the models call live below
them); this module re-exports its public names so that old imports keep working."""

from irmodels.stats.studentized import ptukey, qtukey, sf

__all__ = ["ptukey", "qtukey", "sf"]
