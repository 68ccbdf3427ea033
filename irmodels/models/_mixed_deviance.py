"""Stage 2 of a mixed-model fit (lme4's ``mkLmerDevfun``): :class:`DevianceFunction` and
:func:`deviance_function`, the profiled REML or ML deviance of a :class:`MixedDesign` over the
numerical core :mod:`irmodels.models._reml`. References: docs/methods.md: "Linear
mixed-effects models"; Bates et al., J. Stat. Softw. 67(1), 2015.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from irmodels.errors import ModelError
from irmodels.models import _reml
from irmodels.models._mixed_design import (
    MixedDesign,
    check_rank,
    check_residual_df,
    stratum_sd,
)

__all__ = ["DevianceFunction", "deviance_function"]

def _problem(d: MixedDesign) -> tuple[_reml.Problem, list[int]]:
    """Columns [Z (largest term first) | X]; returns the problem and the term order used."""
    sizes = [len(l) for l in d.random_labels]
    order = sorted(range(len(sizes)), key=lambda k: -sizes[k])
    offs = np.cumsum([0] + [sizes[k] for k in order])
    q = int(offs[-1])
    zcols = [d.random_codes[k] + offs[i] for i, k in enumerate(order)]
    cols = np.column_stack(zcols + ([d.X_idx + q] if d.X_idx.shape[1] else []))
    vals = np.column_stack([np.ones(len(d.y))] * len(zcols) + ([d.X_val] if d.X_val.shape[1] else []))
    strata = d.strata
    label_code = None
    if strata is not None and d.strata_labels and len(d.strata_labels) > 1:
        # Internally the reference stratum (delta = 1, the profiled sigma) is the one with the
        # median within-stratum SD, not nlme's first stratum: the deviance is the same, but the
        # relative parameters stay of order one, and an extreme first stratum no longer drives
        # theta and the weights to magnitudes where the factorisation loses positive
        # definiteness. Results are reported relative to the first stratum (nlme's reference).
        sd = stratum_sd(d.y, strata, len(d.strata_labels))
        ref = int(np.argsort(sd, kind="stable")[(len(sd) - 1) // 2])
        label_code = np.arange(len(sd))
        label_code[[0, ref]] = label_code[[ref, 0]]
        strata = label_code[strata]
    pb = _reml.Problem(
        y=d.y, cols=cols.astype(np.int64), vals=vals.astype(float),
        term_sizes=[sizes[k] for k in order], p=len(d.fixed_names),
        strata=strata, n_strata=len(d.strata_labels) if d.strata_labels else 1,
        label_code=label_code,
    )
    return pb, order


@dataclass
class DevianceFunction:
    """Stage 2 (lme4's ``mkLmerDevfun``): the profiled REML or ML deviance of one design.

    Call it with ``x = (theta, eta)``: the relative SDs of the random terms (in ``order``, the
    largest term first) and the log SD ratios of the residual strata (relative to the internal
    reference stratum). :meth:`evaluate` returns everything one evaluation computes
    (:class:`irmodels.models._reml.Fit`, with the analytic gradient when asked).
    """

    design: MixedDesign
    problem: _reml.Problem
    order: list[int]
    reml: bool

    @property
    def method(self) -> Literal["REML", "ML"]:
        return "REML" if self.reml else "ML"

    @property
    def n_theta(self) -> int:
        return self.problem.K

    @property
    def bounds(self) -> list[tuple[float | None, float | None]]:
        """L-BFGS-B bounds of ``x``: ``theta >= 0``, ``eta`` free."""
        return [(0.0, None)] * self.problem.K + [(None, None)] * (self.problem.n_strata - 1)

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        x = np.asarray(x, float)
        K = self.problem.K
        return x[:K], (x[K:] if self.problem.n_strata > 1 else None)

    def evaluate(self, x: np.ndarray, gradient: bool = False) -> _reml.Fit:
        theta, eta = self.split(x)
        return _reml.evaluate(self.problem, theta, eta, self.reml, gradient=gradient)

    def __call__(self, x: np.ndarray) -> float:
        return self.evaluate(x).deviance


def deviance_function(design: MixedDesign, method: Literal["REML", "ML"] = "REML"
                      ) -> DevianceFunction:
    """Stage 2: the deviance of ``design`` by ``method`` (checks the fixed design's rank)."""
    if method not in ("REML", "ML"):
        raise ModelError(f"method must be 'REML' or 'ML'; got {method!r}")
    pb, order = _problem(design)
    check_rank(pb, design.fixed_names, design)
    check_residual_df(pb, design)
    return DevianceFunction(design, pb, order, method == "REML")


