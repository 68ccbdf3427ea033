"""``irmodels anova MATRIX.csv`` without pandas.

The common first command on a new collection is the two-way table of a complete score matrix
(rows = topics, columns = systems) with no other option. Importing pandas is most of what such a
command costs (about 0.3 s of 0.5 s), so it is answered here from numpy arrays: the matrix is
parsed by :func:`irmodels.data._lines.parse_matrix` (the parser of :func:`irmodels.read_matrix`),
fitted by :func:`irmodels.models._balanced.fit_balanced` on the codes and row order that
:func:`irmodels.from_wide` gives, tabled by :mod:`irmodels.models._anova_table` and printed by
:func:`irmodels._format.text_grid`: the functions :func:`irmodels.anova` and its ``summary()``
use, so the output is the same, character for character (tested on random and real matrices).

Anything else goes the full way: another option, a file that is not a complete matrix, and any
error or warning on the way (a perfect fit, a negative omega squared, a first column of topic
ids: the full path then raises or warns with its own message). Nothing here catches a warning:
the parser returns its ``notes`` (``parse_matrix(warn=False)``) and the table's kernels take
``warn=False`` and say what they would have warned of.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from irmodels._format import format_column, summary_text, text_grid
from irmodels.cli._sniff import data_kind
from irmodels.data._lines import Matrix, parse_matrix
from irmodels.formula.parser import resolve
from irmodels.models._anova_table import (
    SHOWN_COLUMNS,
    TABLE_TITLE,
    anova_title,
    check_scores,
    clip_omega,
    table_values,
    without_rounding_noise,
)
from irmodels.models._balanced import cell_layout, fit_balanced

__all__ = ["eligible", "matrix_anova_summary"]


def eligible(args: argparse.Namespace) -> bool:
    """True when the command is a plain MD1 table of a CSV/TSV file (no option that needs the
    long frame)."""
    return (args.formula is None and args.model in (None, "MD1") and args.ss_type is None
            and not args.components and args.dunnett is None and not args.latex
            and not args.systems and args.measure is None and str(args.data) != "-"
            and not any(getattr(args, c, None) for c in ("topic", "system", "score")))


def matrix_anova_summary(path: str | Path, *, alpha: float = 0.05, digits: int = 4) -> str | None:
    """The summary of ``irm.anova("MD1", irm.read_matrix(path), alpha=alpha)`` with ``digits``,
    or None when the file is not a complete wide matrix or anything would raise or warn."""
    p = Path(path)
    try:
        if data_kind(p) != "matrix":  # a long frame, parquet, trec_eval, a directory
            return None
        # a note (a first column that holds topic ids) sends the file the full way, which
        # warns with read_matrix's own message and stack level
        m = parse_matrix(p, warn=False)
        return None if m.notes else _summary(m, alpha, digits)
    except Exception:  # noqa: BLE001 - the full path reports it with its own message
        return None


def _summary(m: Matrix, alpha: float, digits: int) -> str | None:
    n_t, n_s = m.values.shape
    labels = (*m.topics, *m.systems)
    if n_t < 2 or n_s < 2 or not all(t.strip() and t.isprintable() for t in labels):
        return None  # too few levels, or labels irm.frame refuses: its messages
    spec = resolve("MD1", ["topic", "system", "score"])
    terms = list(spec.fixed)
    factors = ("topic", "system")
    if tuple(t.name for t in terms) != factors:  # pragma: no cover - MD1 is topic + system
        return None
    # the long frame of from_wide: topic-major rows, codes in the matrix's order
    y = m.values.reshape(-1)
    codes = [np.repeat(np.arange(n_t), n_s), np.tile(np.arange(n_s), n_t)]
    ymax = check_scores(y, spec.response_label)
    flat, _ = cell_layout(codes, (n_t, n_s))
    bf = fit_balanced(y, factors, flat, (n_t, n_s), 1, [t.key for t in terms])
    ss = np.array([bf.ss[t.key] for t in terms])
    df = np.array([bf.df[t.key] for t in terms], dtype=float)
    ss, ss_resid = without_rounding_noise(ss, bf.ss_resid, y, ymax, warn=False)
    if ss_resid == 0.0:
        return None  # a perfect fit: the full path warns
    names = [t.name for t in terms]
    values, clipped = clip_omega(table_values(ss, df, ss_resid, bf.df_resid, y.size, alpha),
                                 names, warn=False)
    if clipped:
        return None  # a negative partial omega squared: the full path warns
    cells = [format_column(name, values[:, j].tolist(), digits)
             for j, name in enumerate(SHOWN_COLUMNS)]
    table = text_grid([*names, "Residual"], list(SHOWN_COLUMNS), cells)
    return summary_text(anova_title(spec, int(y.size), "balanced", 2), [(TABLE_TITLE, table)])
