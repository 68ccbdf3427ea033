"""The beta family for scores in (0, 1): glmmTMB's ``beta_family()``.

A score ``y`` in the open interval (0, 1) (AP, nDCG, RBP) is modelled as
``y ~ Beta(mu phi, (1 - mu) phi)`` with mean ``mu = linkinv(eta)`` and *precision* ``phi``:

``E(y) = mu``, ``Var(y) = mu (1 - mu) / (1 + phi)``,

``log f(y) = lgamma(phi) - lgamma(mu phi) - lgamma((1 - mu) phi) + (mu phi - 1) log y
+ ((1 - mu) phi - 1) log(1 - y)``

(Ferrari & Cribari-Neto, "Beta regression for modelling rates and proportions", J. Appl.
Stat. 31(7), 2004; the parameterisation of glmmTMB's ``beta_family``, Brooks et al., "glmmTMB
balances speed and flexibility among packages for zero-inflated generalized linear mixed
modeling", The R Journal 9(2), 2017, where ``sigma(fit)`` returns ``phi``). Links: logit
(default), probit, cloglog, as glmmTMB.

With ``y* = logit(y)`` and ``mu* = digamma(mu phi) - digamma((1 - mu) phi)`` the derivatives
in ``mu`` are ``phi (y* - mu*)`` and ``-phi^2 (trigamma(mu phi) + trigamma((1 - mu) phi))``;
the second has expectation equal to itself, so the Fisher information in ``eta`` is
``phi^2 (trigamma(mu phi) + trigamma((1 - mu) phi)) mu_eta^2``. The Laplace approximation
uses the *observed* information (``laplace_weights = "observed"``), as glmmTMB (TMB
differentiates the joint likelihood exactly).

**Scores of exactly 0 or 1** have density 0 or infinity under any beta distribution; the family
refuses them (:func:`check_bounds`) unless the user asks for Smithson & Verkuilen's squeeze
(:func:`squeeze`; "A better lemon squeezer? Maximum-likelihood regression with beta-distributed
dependent variables", Psychological Methods 11(1), 2006, p. 55):
``y' = (y (n - 1) + 1/2) / n`` with ``n`` the number of observations, which maps [0, 1] into
(0, 1) and moves scores already inside by at most ``1 / (2 n)``.

>>> fam = Beta()
>>> fam.link.name, fam.has_dispersion
('logit', True)
>>> from scipy import stats
>>> y, mu = np.array([0.2, 0.7]), np.array([0.3, 0.6])
>>> ll = fam.loglik_obs(y, mu, np.ones(2), phi=5.0)
>>> bool(np.allclose(ll, stats.beta.logpdf(y, mu * 5, (1 - mu) * 5)))
True
>>> [float(v) for v in squeeze(np.array([0.0, 0.5, 1.0]))]
[0.16666666666666666, 0.5, 0.8333333333333334]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from irmodels.errors import DataFormatError
from irmodels.models._family import Family, _arr, _finite, register_family

__all__ = ["Beta", "squeeze", "check_bounds", "beta_response"]


class Beta(Family):
    """Beta family with precision ``phi`` (glmmTMB's ``beta_family``); see the module notes.

    >>> Beta("probit")
    Beta(link='probit')
    >>> float(Beta().variance(np.array([0.5]), phi=3.0)[0])
    0.0625
    """

    name = "beta"
    links = ("logit", "probit", "cloglog")
    has_dispersion = True
    laplace_weights = "observed"

    def check_response(self, y: np.ndarray, weights: np.ndarray) -> None:
        y = _arr(y)
        _finite(y, "response")
        out = (y <= 0) | (y >= 1)
        if out.any():
            i = int(np.flatnonzero(out)[0])
            raise DataFormatError(
                f"the beta family needs scores strictly between 0 and 1; {int(out.sum())} of "
                f"{len(y)} rows lie outside (0, 1) (first at row {i}: {y[i]!r}); "
                "use irm.mixed(..., squeeze=True) for Smithson & Verkuilen's squeeze "
                "(y (n - 1) + 0.5) / n, or drop or recode those rows yourself.")

    def loglik_obs(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray,
                   phi: float | None = None) -> np.ndarray:
        ph = _phi(phi)
        y, mu = _arr(y), _arr(mu)
        a, b = mu * ph, (1 - mu) * ph
        ll = (special.gammaln(ph) - special.gammaln(a) - special.gammaln(b)
              + (a - 1) * np.log(y) + (b - 1) * np.log1p(-y))
        return _arr(weights) * ll

    def deviance_resid(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray,
                       phi: float | None = None) -> np.ndarray:
        """``2 (l(y; y, phi) - l(y; mu, phi))`` per observation (the saturated model keeps the
        precision; ``phi`` is required: a beta deviance has no meaning without it)."""
        y = _arr(y)
        return 2 * (self.loglik_obs(y, y, weights, phi) - self.loglik_obs(y, mu, weights, phi))

    def variance(self, mu: np.ndarray, phi: float | None = None) -> np.ndarray:
        mu = _arr(mu)
        return mu * (1 - mu) / (1 + _phi(phi))

    def start_mu(self, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.clip(_arr(y), 1e-6, 1 - 1e-6)

    def dloglik_dmu(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray,
                    phi: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        ph = _phi(phi)
        y, mu, w = _arr(y), _arr(mu), _arr(weights)
        a, b = mu * ph, (1 - mu) * ph
        ystar = np.log(y) - np.log1p(-y)
        mustar = special.digamma(a) - special.digamma(b)
        g1 = w * ph * (ystar - mustar)
        g2 = -w * ph ** 2 * (special.polygamma(1, a) + special.polygamma(1, b))
        return g1, g2

    def expected_weights(self, eta: np.ndarray, weights: np.ndarray,
                         phi: float | None = None) -> np.ndarray:
        ph = _phi(phi)
        mu = self.link.linkinv(eta)
        info = ph ** 2 * (special.polygamma(1, mu * ph) + special.polygamma(1, (1 - mu) * ph))
        return _arr(weights) * info * self.link.mu_eta(eta) ** 2

    def dloglik_dphi(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray,
                     phi: float | None = None) -> np.ndarray:
        """Derivative of :meth:`loglik_obs` in ``phi`` per observation."""
        ph = _phi(phi)
        y, mu = _arr(y), _arr(mu)
        d = (special.digamma(ph) - mu * special.digamma(mu * ph)
             - (1 - mu) * special.digamma((1 - mu) * ph) + mu * np.log(y)
             + (1 - mu) * np.log1p(-y))
        return _arr(weights) * d

    def phi_start(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray) -> float:
        """Method of moments, ``mean(mu (1 - mu)) / mean((y - mu)^2) - 1`` (at least 1)."""
        y, mu = _arr(y), _arr(mu)
        r2 = float(np.mean((y - mu) ** 2))
        if not r2 > 0:
            return 1.0
        return max(1.0, float(np.mean(mu * (1 - mu))) / r2 - 1.0)


def _phi(phi: float | None) -> float:
    if phi is None:
        raise DataFormatError("the beta family needs its precision phi (a positive number); "
                              "pass phi=, e.g. the fitted model's .phi")
    return float(phi)


def squeeze(y: Any) -> np.ndarray:
    """Smithson & Verkuilen's (2006) squeeze ``(y (n - 1) + 0.5) / n``, ``n = len(y)``: maps
    [0, 1] into (0, 1) (0 to ``1 / (2 n)``, 1 to ``1 - 1 / (2 n)``).

    >>> [round(float(v), 4) for v in squeeze([0.0, 0.25, 1.0, 0.5])]
    [0.125, 0.3125, 0.875, 0.5]
    """
    y = _arr(y)
    n = len(y)
    return (y * (n - 1) + 0.5) / n


def check_bounds(y: np.ndarray, data: pd.DataFrame | None = None, *,
                 labels: Sequence[str] = ("topic", "system")) -> None:
    """Refuse scores outside (0, 1) for the beta family, naming how many rows, and the topics
    and systems (columns ``labels`` of ``data``) they belong to, with the two ways out.

    >>> import pandas as pd
    >>> d = pd.DataFrame({"topic": ["1", "1", "2"], "system": ["a", "b", "a"],
    ...                   "ap": [0.0, 0.3, 1.0]})
    >>> check_bounds(d["ap"].to_numpy(), d)
    Traceback (most recent call last):
    ...
    irmodels.errors.DataFormatError: the beta family needs scores strictly between 0 and 1; 2 of 3 rows are exactly 0 or 1 (1 at 0, 1 at 1): topic 1, 2; system a. Either pass squeeze=True (Smithson & Verkuilen's (y (n - 1) + 0.5) / n, n = 3), or drop or recode those rows yourself.
    """
    y = _arr(y)
    _finite(y, "response")
    low, high = y <= 0, y >= 1
    bad = low | high
    if not bad.any():
        return
    if ((y < 0) | (y > 1)).any():
        i = int(np.flatnonzero((y < 0) | (y > 1))[0])
        raise DataFormatError(
            f"the beta family needs scores in (0, 1); row {i} has {y[i]!r}, outside [0, 1], "
            "which no squeeze can repair; check the response column (a score, not a rank or "
            "a count?).")
    where = ""
    if data is not None:
        parts = []
        for col in labels:
            if col in data.columns:
                vals = pd.unique(data[col].to_numpy()[bad])
                shown = ", ".join(map(str, vals[:10])) + (", ..." if len(vals) > 10 else "")
                parts.append(f"{col} {shown}")
        if parts:
            where = ": " + "; ".join(parts)
    raise DataFormatError(
        f"the beta family needs scores strictly between 0 and 1; {int(bad.sum())} of {len(y)} "
        f"rows are exactly 0 or 1 ({int(low.sum())} at 0, {int(high.sum())} at 1){where}. "
        f"Either pass squeeze=True (Smithson & Verkuilen's (y (n - 1) + 0.5) / n, "
        f"n = {len(y)}), or drop or recode those rows yourself.")


def beta_response(y: np.ndarray, data: pd.DataFrame | None = None, *,
                  squeeze_scores: bool = False) -> np.ndarray:
    """The response the beta family fits: ``y`` itself when every score lies in (0, 1), its
    :func:`squeeze` when ``squeeze_scores`` (applied to every row, as Smithson & Verkuilen),
    else :func:`check_bounds` refuses the scores at 0 or 1."""
    y = _arr(y)
    if squeeze_scores:
        _finite(y, "response")
        if ((y < 0) | (y > 1)).any():
            check_bounds(y, data)
        return squeeze(y)
    check_bounds(y, data)
    return y


register_family("beta", Beta)
