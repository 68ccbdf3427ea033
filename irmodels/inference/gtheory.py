"""Generalizability theory: G-study variance components and D-study stability of a test collection.

A G-study splits the variance of the scores into components (systems, topics, their
interaction, and with shards or document samples the extra facets); a D-study predicts how
stable the comparison of systems would be with ``n'`` topics (and shards). The object of
measurement is the system; every other facet is random.

This module is the entry, :func:`gstudy` (``irm.gstudy``); the result class :class:`GStudy`
and the estimates live in :mod:`irmodels.stats.gtheory`, below the models, whose
``MixedResult.gstudy()`` builds its G-study there (this module re-exports them).

References: docs/methods.md: "Variance components"; Brennan, *Generalizability Theory* (2001), ch. 3-6;
Webber, *Measurement in Information Retrieval Evaluation* (PhD thesis, 2010), ch. 4;
Urbano, Marrero & Martin, "On the Measurement of Test Collection Reliability", SIGIR 2013.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from irmodels.data._columns import own_names, user_frame
from irmodels.errors import DataFormatError
from irmodels.stats.gtheory import GStudy, from_data, from_fit, term_name

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models.base import FittedModel

__all__ = ["GStudy", "gstudy", "term_name"]


def gstudy(
    data_or_result: pd.DataFrame | FittedModel,
    *,
    facets: Sequence[str] | None = None,
    data: pd.DataFrame | None = None,
    topic: str = "topic",
    system: str = "system",
    score: str = "score",
) -> GStudy:
    """G-study: variance components of a system x topic (x shard) design.

    Parameters
    ----------
    data_or_result : DataFrame or FittedModel
        A long frame (``irm.frame``) with one score per (system, topic), or per (system,
        topic, shard) with a third facet; or a fitted model (``irm.anova``, ``irm.mixed``: a
        :class:`~irmodels.models.base.FittedModel`), whose ``variance_components()`` and
        ``data`` are used.
    facets : sequence of str, optional
        The third facet: ``["shard"]`` or ``["sample"]``; ``[]`` for none. By default a
        ``shard`` or ``sample`` column with more than one level is the facet.
    data : DataFrame, optional
        The data a result was fitted on, when the result does not carry them (``.data``); they
        give the numbers of topics and systems and the mean squares for the intervals.
    topic, system, score : str
        The names of the topic, system and score columns of the data (as in
        :func:`irmodels.frame`): ``irm.gstudy(df, topic="qid", system="run", score="map")``.
        The summary then names the user's columns (``run``, ``qid``, ``qid:run``);
        ``components`` keeps the canonical index.

    Returns
    -------
    GStudy
        ``components`` is indexed by component: ``system``, ``topic``, then with a third facet
        ``shard`` (or ``sample``), ``topic:system``, ``system:shard``, ``topic:shard``, and
        ``Residual`` last. With one score per (system, topic) the system x topic interaction is
        confounded with the error; that component is named ``Residual`` (as in the ANOVA
        table), i.e. it is ``var_st,e``. Columns ``variance, sd, share``.

    Raises
    ------
    DesignError
        Unbalanced data (fit ``irm.mixed`` and pass its result), several measures, fewer than
        two systems or topics; a fitted model that lacks a term of the design (``topic``; with
        a third facet, also the facet and every two-way interaction, as MD6 has), whose
        variance the residual would hold.

    Warns
    -----
    NegativeVarianceWarning
        When a moment estimate is negative; it is set to 0.
    DataQualityWarning
        When the relative error variance is 0: with a system variance, a perfect additive fit
        (Erho2 = rho_I = 1 for any number of topics); without one, identical systems (Erho2 and
        rho_I are 0/0, reported as NaN, and ``topics_needed`` for Erho2 raises).

    Notes
    -----
    Random-effects estimates from the expected mean squares (docs/methods.md: "Variance components";
    Brennan 2001, ch. 3 and 4): ``var_s = (MS_s - MS_e)/n_t``, ``var_t = (MS_t - MS_e)/n_s``,
    ``var_e = MS_e``. For system x topic x shard, fully crossed with one score per cell,
    ``var_st = (MS_st - MS_e)/n_h``, ``var_s = (MS_s - MS_st - MS_sh + MS_e)/(n_t n_h)`` and so
    on; negative estimates are set to 0 after solving (Brennan 2001, sec. 3.4). A sum of
    squares within rounding of 0 (its root mean square per cell at most ``1000 eps max|score|``)
    is exactly 0, so identical systems get components of 0, not 1e-33. The per-topic
    indices are ``phi = var_s / (var_s + var_t + var_e)`` and ``rho_I = var_s / (var_s + var_e)``.
    A ``sample`` facet (document samples) is treated as crossed with topics, like shards.
    For Brennan's Table 3.2 data the components are 0.6258 (persons/systems), 0.8840
    (items/topics) and 2.7872 (residual), his Table 6.2.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> w = pd.DataFrame({"a": [.2, .4, .5, .3, .6], "b": [.3, .5, .7, .3, .8],
    ...                   "c": [.1, .2, .5, .1, .4], "d": [.4, .4, .8, .5, .7]})
    >>> g = irm.gstudy(irm.from_wide(w))
    >>> g.components.round(4)
              variance      sd   share
    component
    system      0.0172  0.1313  0.3255
    topic       0.0308  0.1756  0.5818
    Residual    0.0049  0.0701  0.0928
    >>> round(g.phi, 4), round(g.rho_I, 4)
    (0.3255, 0.7782)
    """
    if isinstance(data_or_result, pd.DataFrame):
        df, names = user_frame(data_or_result, topic=topic, system=system, score=score,
                               what="irm.gstudy")
        gs = from_data(df, facets)
        return replace(gs, column_names=own_names(names)) if own_names(names) else gs
    if hasattr(data_or_result, "variance_components"):
        return from_fit(data_or_result, facets, data, topic=topic, system=system, score=score)
    raise DataFormatError(
        f"gstudy expects a long frame or a fitted irm.anova / irm.mixed result; got "
        f"{type(data_or_result).__name__}. Build a frame with irm.frame(...) or irm.from_wide(...)."
    )

