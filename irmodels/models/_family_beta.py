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
the second does not depend on ``y``, so the Fisher information in ``eta`` is
``phi^2 (trigamma(mu phi) + trigamma((1 - mu) phi)) mu_eta^2``. The Laplace approximation
uses the *observed* information (``laplace_weights = "observed"``), as glmmTMB (TMB
differentiates the joint likelihood exactly).

**Fitting** (:func:`fit_beta_laplace`, the engine's ``fit_laplace`` hook): as glmmTMB, the
Laplace approximation of the marginal likelihood is maximised over ``(theta, beta, log phi)``
jointly, with its exact gradient (the implicit derivative of the conditional modes included);
the covariance of ``beta`` is the ``beta`` block of the inverse Hessian over all of them
(TMB's ``sdreport``, ``vcov(fit)$cond``). emmeans gives glmmTMB fits ``df.residual`` (``n``
minus the number of parameters) as the df of their t tests; a beta fit's ``contrast_df`` is
the same, so ``tukey``/``dunnett`` equal emmeans' pairs on glmmTMB.

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

A beta mixed model of TREC-8 AP (four runs; run7 scores 0 on topic 43):

>>> import irmodels as irm
>>> ap = irm.datasets.load("adhoc8", "ap")
>>> ap = ap[ap["system"].isin(["run3", "run7", "run74", "run109"])]
>>> irm.mixed("score ~ system + (1|topic)", ap, family="beta")
Traceback (most recent call last):
...
irmodels.errors.DataFormatError: the beta family needs scores strictly between 0 and 1; 1 of 200 rows is exactly 0 or 1 (1 at 0, 0 at 1): topic 43; system run7. Either pass squeeze=True (Smithson & Verkuilen's (y (n - 1) + 0.5) / n, n = 200), or drop or recode those rows yourself.
>>> g = irm.mixed("score ~ system + (1|topic)", ap, family="beta", squeeze=True)
>>> round(g.phi, 2)
23.54
>>> g.marginal_means("system", scale="response").round(3).tolist()
[0.21, 0.174, 0.284, 0.25]
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import special
from scipy.linalg import LinAlgError, cho_factor, cho_solve, cholesky
from scipy.optimize import minimize

from irmodels.errors import ConvergenceError, ConvergenceWarning, DataFormatError
from irmodels.models._family import Family, register_family
from irmodels.models._glmm import GlmmDeviance, GlmmFit
from irmodels.models._lmm_optim import SINGULAR_TOL

__all__ = ["Beta", "squeeze", "check_bounds", "beta_response", "fit_beta_laplace"]


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
        """``2 |l(y; y, phi) - l(y; mu, phi)|`` per observation, betareg's deviance residuals
        squared (the saturated mean ``mu = y`` at the fitted precision; not the maximum of the
        density in ``mu``, hence the absolute value). ``phi`` is required; glmmTMB defines no
        deviance for the beta family."""
        y = _arr(y)
        return 2 * np.abs(self.loglik_obs(y, y, weights, phi)
                          - self.loglik_obs(y, mu, weights, phi))

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
        g2 = -w * ph ** 2 * (_trigamma(a) + _trigamma(b))
        return g1, g2

    def expected_weights(self, eta: np.ndarray, weights: np.ndarray,
                         phi: float | None = None) -> np.ndarray:
        ph = _phi(phi)
        mu = self.link.linkinv(eta)
        info = ph ** 2 * (_trigamma(mu * ph) + _trigamma((1 - mu) * ph))
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


    def simulate(self, mu: np.ndarray, weights: np.ndarray, phi: float | None,
                 rng: np.random.Generator) -> np.ndarray:
        """Draws of the response at means ``mu`` (the parametric bootstrap): ``Beta(mu phi,
        (1 - mu) phi)``, kept inside (0, 1) (a draw that rounds to 0 or 1 in double precision
        is moved to the nearest representable score inside)."""
        ph = _phi(phi)
        mu = _arr(mu)
        y = rng.beta(mu * ph, (1 - mu) * ph)
        tiny = np.finfo(float).tiny
        return np.clip(y, tiny, np.nextafter(1.0, 0.0))

    def prepare_response(self, y: np.ndarray, data: pd.DataFrame | None = None, *,
                         squeeze: bool = False) -> np.ndarray:
        """The engine's hook (:func:`irmodels.models._glmm.glmm_design`): the response as
        fitted, :func:`beta_response` (scores at 0 or 1 refused, or every score squeezed)."""
        return beta_response(y, data, squeeze_scores=squeeze)

    #: the most random effects of glmmTMB's fit here (:data:`BETA_DENSE_MAX_Q`; the design
    #: refuses more: the general engine's expected-information Laplace is not glmmTMB's)
    max_random_effects: ClassVar[int] = 2000

    def fit_laplace(self, gd: Any, *, maxiter: int = 1000, warn: bool = True,
                    _stacklevel: int = 2) -> Any:
        """The engine's hook (:func:`irmodels.models._glmm.fit_glmm`): glmmTMB's fit,
        :func:`fit_beta_laplace` (None beyond its size: the general engine fits it)."""
        return fit_beta_laplace(gd, maxiter=maxiter, warn=warn, _stacklevel=_stacklevel + 1)

    def laplace_derivs(self, y: np.ndarray, eta: np.ndarray, weights: np.ndarray,
                       phi: float) -> dict[str, np.ndarray]:
        """Per observation: ``mu``, the log-likelihood, its first three derivatives in ``eta``
        (``d1, d2, d3``), and in ``phi`` the derivative of the log-likelihood (``lp``) and of
        ``d1`` and ``d2`` (``d1p, d2p``): what the exact gradient of the Laplace objective
        needs (:func:`fit_beta_laplace`)."""
        lk = self.link
        y, w = _arr(y), _arr(weights)
        mu = lk.linkinv(eta)
        m1, m2, m3 = lk.mu_eta(eta), lk.mu_eta2(eta), _mu_eta3(lk.name, eta)
        a, b = mu * phi, (1 - mu) * phi
        ystar = np.log(y) - np.log1p(-y)
        r = ystar - special.digamma(a) + special.digamma(b)
        t1a, t1b = _trigamma(a), _trigamma(b)
        t2a, t2b = _tetragamma(a), _tetragamma(b)
        g1 = w * phi * r
        g2 = -w * phi ** 2 * (t1a + t1b)
        g3 = -w * phi ** 3 * (t2a - t2b)
        g1p = w * (r + phi * (-mu * t1a + (1 - mu) * t1b))
        g2p = -w * (2 * phi * (t1a + t1b) + phi ** 2 * (mu * t2a + (1 - mu) * t2b))
        return {"mu": mu, "ll": self.loglik_obs(y, mu, w, phi), "d1": g1 * m1,
                "d2": g2 * m1 ** 2 + g1 * m2, "d3": g3 * m1 ** 3 + 3 * g2 * m1 * m2 + g1 * m3,
                "lp": self.dloglik_dphi(y, mu, w, phi), "d1p": g1p * m1,
                "d2p": g2p * m1 ** 2 + g1p * m2}


def _mu_eta3(link: str, eta: np.ndarray) -> np.ndarray:
    """Third derivative of the inverse link in ``eta``."""
    eta = _arr(eta)
    if link == "logit":
        p = special.expit(eta)
        m1 = p * (1 - p)
        return m1 * (1 - 2 * p) ** 2 - 2 * m1 ** 2
    if link == "probit":
        return (eta ** 2 - 1) * np.exp(-0.5 * eta ** 2) / np.sqrt(2 * np.pi)
    if link == "cloglog":
        e = np.exp(np.minimum(eta, 700.0))
        return np.exp(eta - e) * ((1 - e) ** 2 - e)
    raise ValueError(f"no third derivative for the {link} link")


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=float)


#: Bernoulli numbers B2, B4, ..., B14 (the asymptotic series of the polygamma functions)
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
_SHIFT_TO = 10.0


def _shift(x: np.ndarray, power: int, coef: float) -> tuple[np.ndarray, np.ndarray]:
    """Recurrence ``psi_n(x) = psi_n(x + 1) + coef / x^power`` until every ``x >= 10``:
    ``(x shifted, the accumulated terms)``."""
    z = np.array(x, dtype=float)
    acc = np.zeros_like(z)
    lo = float(np.nanmin(z)) if z.size and np.isfinite(z).any() else _SHIFT_TO
    k = min(max(int(np.ceil(_SHIFT_TO - lo)), 0), 64) if np.isfinite(lo) else 0
    for _ in range(k):
        m = z < _SHIFT_TO
        acc += np.where(m, coef / z ** power, 0.0)
        z = np.where(m, z + 1.0, z)
    return z, acc


def _trigamma(x: Any) -> np.ndarray:
    """``psi'(x)`` for ``x > 0``: the recurrence up to 10, then the asymptotic series through
    ``B14`` (relative error below 1e-15; scipy's ``polygamma(1, x)`` goes through the Hurwitz
    zeta function and costs five times as much)."""
    z, acc = _shift(_arr(x), 2, 1.0)
    r = 1.0 / z
    r2 = r * r
    poly = np.zeros_like(z)
    for b in reversed(_BERNOULLI):
        poly = b + r2 * poly
    return acc + r + 0.5 * r2 + r * r2 * poly


def _tetragamma(x: Any) -> np.ndarray:
    """``psi''(x)`` for ``x > 0``, as :func:`_trigamma`."""
    z, acc = _shift(_arr(x), 3, -2.0)
    r = 1.0 / z
    r2 = r * r
    poly = np.zeros_like(z)
    for j in range(len(_BERNOULLI) - 1, -1, -1):
        poly = (2 * j + 3) * _BERNOULLI[j] + r2 * poly
    return acc - r2 - r * r2 - r2 * r2 * poly


def _finite(y: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(y)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(
            f"the {what} has {int(bad.sum())} missing or infinite value(s) (first at row {i}: "
            f"{y[i]!r}); drop those rows (missing='drop') before fitting.")


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
        f"rows {'is' if bad.sum() == 1 else 'are'} exactly 0 or 1 ({int(low.sum())} at 0, "
        f"{int(high.sum())} at 1){where}. "
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


# --------------------------------------------------------------------------------------------
# the Laplace fit of a beta GLMM, as glmmTMB

#: the most random effects of the exact-gradient path (dense q x q); the design refuses more
BETA_DENSE_MAX_Q = Beta.max_random_effects


class _BetaLaplace:
    """glmmTMB's objective for a beta GLMM: with ``A = Z Lambda(theta)``,
    ``eta = offset + X beta + A u`` and ``f(u) = -sum l_i(eta_i, phi) + |u|^2 / 2``,

    ``F(theta, beta, log phi) = f(u*) + log|H| / 2``,  ``H = A' W A + I``,  ``W = -d2 l / d eta2``

    at the mode ``u*`` (the Laplace approximation of ``-log`` of the marginal likelihood; the
    normalising constants cancel, and a linear change of variables ``b = Lambda u`` leaves it
    unchanged, so it equals glmmTMB's, which integrates ``b ~ N(0, Sigma)``). Its gradient is
    exact: ``dF/dpsi = df/dpsi + tr(H^-1 dH/dpsi) / 2 - g' H^-1 d2f/(du dpsi)`` with
    ``g = A' (W' o h) / 2``, ``h = diag(A H^-1 A')``, ``W' = -d3 l / d eta3`` (the implicit
    derivative of the mode), as TMB obtains by automatic differentiation."""

    def __init__(self, gd: Any) -> None:
        d = gd.lmm
        self.gd, self.fam = gd, gd.family
        self.y, self.w, self.off = gd.y, gd.weights, gd.offset
        self.X = d.X
        self.Z = d.Z.tocsc()
        self.Zr = d.Z.tocsr()
        self.q = self.Z.shape[1]
        self.nt, self.p = d.n_theta, d.X.shape[1]
        self.lmm = d
        eye = np.eye(self.nt)
        #: dLambda / dtheta_k (Lambda is linear in theta), dense q x q
        self.dLam = [d.Lambda(eye[k]).toarray() for k in range(self.nt)]
        self.u = np.zeros(self.q)

    # Everything is computed in the q-space of the random effects: Z' W Z by a sparse product,
    # then Lambda (dense q x q) on both sides; the n x q matrix Z Lambda is never formed.
    def _ZtWZ(self, W: np.ndarray) -> np.ndarray:
        return (self.Z.T @ self.Z.multiply(W[:, None])).toarray()

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        return x[:self.nt], x[self.nt:self.nt + self.p], float(np.exp(x[-1]))

    def _nll(self, eta: np.ndarray, phi: float) -> float:
        mu = self.fam.link.linkinv(eta)
        return -float(np.sum(self.fam.loglik_obs(self.y, mu, self.w, phi)))

    def mode(self, theta: np.ndarray, beta: np.ndarray, phi: float) -> tuple[np.ndarray,
                                                                              np.ndarray]:
        """The conditional mode ``u*`` by Newton steps (observed information; Fisher scoring
        where it is not positive definite) with step halving. Returns ``(u*, Lambda)``."""
        Lam = self.lmm.Lambda(theta).toarray()
        Z = self.Zr
        base = self.off + self.X @ beta
        u = self.u.copy()
        fu = float(self._nll(base + Z @ (Lam @ u), phi) + 0.5 * u @ u)
        if not np.isfinite(fu):
            u = np.zeros(self.q)
            fu = self._nll(base, phi)
        eye = np.eye(self.q)
        for _ in range(200):
            eta = base + Z @ (Lam @ u)
            d1, d2 = self.fam.deta_derivs(self.y, eta, self.w, phi)
            g = u - Lam.T @ (Z.T @ d1)
            try:
                c = cho_factor(Lam.T @ self._ZtWZ(-d2) @ Lam + eye)
            except LinAlgError:
                We = self.fam.expected_weights(eta, self.w, phi)
                c = cho_factor(Lam.T @ self._ZtWZ(We) @ Lam + eye)
            step = cho_solve(c, g)
            t = 1.0
            for _ in range(40):
                un = u - t * step
                fn = self._nll(base + Z @ (Lam @ un), phi) + 0.5 * un @ un
                if np.isfinite(fn) and fn <= fu + 1e-13 * abs(fu):
                    break
                t /= 2
            else:
                break
            moved = float(np.max(np.abs(u - un), initial=0.0))
            u, fu = un, fn
            if float(np.max(np.abs(g), initial=0.0)) < 1e-11 or moved < 1e-13:
                break
        self.u = u
        return u, Lam

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.asarray(x, float)
        theta, beta, phi = self.split(x)
        u, Lam = self.mode(theta, beta, phi)
        Z = self.Zr
        b = Lam @ u
        eta = self.off + self.X @ beta + Z @ b
        dv = self.fam.laplace_derivs(self.y, eta, self.w, phi)
        W = -dv["d2"]
        ZtWZ = self._ZtWZ(W)
        H = Lam.T @ ZtWZ @ Lam + np.eye(self.q)
        try:
            L = cholesky(H, lower=True)
        except LinAlgError:
            return np.inf, np.zeros_like(x)
        F = -float(np.sum(dv["ll"])) + 0.5 * u @ u + float(np.sum(np.log(np.diag(L))))
        Hi = cho_solve((L, True), np.eye(self.q))
        K = Lam @ Hi @ Lam.T  # h_i = z_i' K z_i = diag(A H^-1 A'), A = Z Lambda
        h = np.asarray(Z.multiply(Z @ K).sum(axis=1)).ravel()
        Wph = -dv["d3"] * h
        v = Hi @ (0.5 * (Lam.T @ (Z.T @ Wph)))
        Av = Z @ (Lam @ v)
        d1 = dv["d1"]
        Ztd1 = Z.T @ d1
        X = self.X
        gb = -X.T @ d1 + 0.5 * X.T @ Wph - X.T @ (W * Av)
        G = ZtWZ @ Lam @ Hi  # tr(H^-1 Lambda' Z'W Z dLambda_k) = sum(dLambda_k * G)
        gt = np.empty(self.nt)
        for k, dL in enumerate(self.dLam):
            c = Z @ (dL @ u)
            gt[k] = (-d1 @ c + float(np.sum(dL * G)) + 0.5 * Wph @ c + v @ (dL.T @ Ztd1)
                     - Av @ (W * c))
        gp = phi * (-float(np.sum(dv["lp"])) - 0.5 * float(np.sum(dv["d2p"] * h))
                    + float(Av @ dv["d1p"]))
        return F, np.concatenate([gt, gb, [gp]])

    def hessian(self, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Central differences of the exact gradient over the parameters ``idx``."""
        k = len(idx)
        Hs = np.empty((k, k))
        for j, i in enumerate(idx):
            h = 1e-5 * max(1.0, abs(x[i]))
            xp, xm = x.copy(), x.copy()
            xp[i] += h
            xm[i] -= h
            Hs[:, j] = (self(xp)[1][idx] - self(xm)[1][idx]) / (2 * h)
        return (Hs + Hs.T) / 2


def fit_beta_laplace(gd: Any, *, maxiter: int = 1000, warn: bool = True,
                     _stacklevel: int = 2) -> Any:
    """Fit a beta GLMM design (:func:`irmodels.models._glmm.glmm_design` with
    ``family="beta"``) as glmmTMB: ``(theta, beta, log phi)`` jointly by L-BFGS-B on the
    Laplace objective with its exact gradient (:class:`_BetaLaplace`), a diagonal theta that
    stops on its bound restarted off it, Newton steps on the central-difference Hessian of the
    gradient; the covariance of beta is the beta block of the inverse of that Hessian over
    every free parameter (TMB's ``sdreport``, ``vcov(fit)$cond``). Returns the engine's
    ``GlmmFit`` (``objective`` = -2 logLik), or None for a design beyond
    ``BETA_DENSE_MAX_Q`` random effects (the general engine then fits it)."""
    if gd.lmm.Z.shape[1] > BETA_DENSE_MAX_Q or gd.nagq != 1:
        return None
    obj = _BetaLaplace(gd)
    nt, p = obj.nt, obj.p
    lower_t = gd.lmm.lower
    fam = gd.family
    eta0 = fam.link.linkfun(fam.start_mu(gd.y, gd.weights)) - gd.offset
    b0 = np.linalg.lstsq(gd.lmm.X, eta0, rcond=None)[0]
    mu0 = fam.link.linkinv(gd.offset + gd.lmm.X @ b0)
    x0 = np.concatenate([np.where(lower_t == 0, 1.0, 0.0), b0,
                         [math.log(fam.phi_start(gd.y, mu0, gd.weights))]])
    low = np.concatenate([lower_t, np.full(p + 1, -np.inf)])
    bounds = [(0.0 if lo == 0 else None, None) for lo in low]
    opts = {"maxiter": maxiter, "ftol": 1e-15, "gtol": 1e-10}

    def run(x: np.ndarray) -> Any:
        return minimize(obj, x, jac=True, method="L-BFGS-B", bounds=bounds, options=opts)

    r = run(x0)
    x, fx, n_iter, ok, msg = r.x.copy(), float(r.fun), int(r.nit), bool(r.success), str(r.message)
    # a diagonal theta on its bound: the objective is even in it there (a stationary point that
    # need not be the minimum); restart it off the bound and keep the better end point
    for i in np.flatnonzero((lower_t == 0) & (x[:nt] <= SINGULAR_TOL)):
        xs = x.copy()
        xs[i] = 0.1 * max(1.0, float(np.max(x[:nt])))
        r3 = run(xs)
        n_iter += int(r3.nit)
        if float(r3.fun) < fx - 1e-10 * max(1.0, abs(fx)):
            x, fx, ok, msg = r3.x.copy(), float(r3.fun), bool(r3.success), str(r3.message)
    if not np.isfinite(fx):
        raise ConvergenceError("the beta GLMM's Laplace objective is not finite at the "
                               "optimiser's end point; check the scores (values very close to "
                               "0 or 1?) and near-collinear columns.")

    def free_idx(x: np.ndarray) -> np.ndarray:
        on_bnd = (np.arange(len(x)) < nt) & (low == 0) & (x <= SINGULAR_TOL)
        return np.flatnonzero(~on_bnd)

    # Newton polish on the free parameters with one Hessian (central differences of the exact
    # gradient), recomputed at the end point when the steps moved x
    idx = free_idx(x)
    fx, grad = obj(x)
    Hf = obj.hessian(x, idx)
    moved = False
    for _ in range(8):
        g = grad[idx]
        gmax = float(np.max(np.abs(g), initial=0.0))
        if gmax < 1e-10:
            break
        try:
            step = np.linalg.solve(Hf, g)
        except np.linalg.LinAlgError:
            break
        improved = False
        for a in (1.0, 0.5, 0.25, 0.125):
            xn = x.copy()
            xn[idx] -= a * step
            xn = np.maximum(xn, np.where(low == 0, 0.0, -np.inf))
            fn, gn = obj(xn)
            # near the optimum F changes below its rounding: accept a step that shrinks the
            # (exact) gradient without raising F beyond that noise
            if fn <= fx or (fn <= fx + 1e-12 * max(1.0, abs(fx))
                            and float(np.max(np.abs(gn[idx]))) < gmax):
                x, fx, grad, improved = xn, min(fn, fx), gn, True
                moved = moved or float(np.max(np.abs(a * step))) > 1e-6
                break
        if not improved:
            break
    if moved or not np.array_equal(idx, free_idx(x)):
        idx = free_idx(x)
        Hf = obj.hessian(x, idx)
    H = np.full((len(x), len(x)), np.nan)
    H[np.ix_(idx, idx)] = 2 * Hf  # the Hessian of the deviance -2 logLik, as the engine's
    gnorm = float(np.max(np.abs(grad[idx]), initial=0.0))
    Hi = np.linalg.inv(Hf)
    pos = {i: j for j, i in enumerate(idx)}
    bi = [pos[i] for i in range(nt, nt + p)]
    V = Hi[np.ix_(bi, bi)]
    V = (V + V.T) / 2
    theta, beta, phi = obj.split(x)
    dev = GlmmDeviance(gd)
    dev.u_last = obj.u.copy()
    mode = dev.pirls(theta, beta, phi, u0=obj.u.copy())
    objective = 2 * fx  # -2 logLik (the engine's dev.laplace(mode) to PIRLS' tolerance)
    bnd = []  # the diagonal elements of theta at 0 (as the engine names them)
    for blk in gd.lmm.blocks:
        k = blk.theta_offset
        for j in range(blk.q):
            if theta[k] < SINGULAR_TOL:
                bnd.append(f"{blk.group}: {blk.columns[j]}" if blk.q > 1 else blk.group)
            k += blk.q - j
    converged = gnorm < 1e-4 or (ok and gnorm < 1e-3)
    note = "" if converged else (
        f"the beta GLMM optimiser did not converge cleanly ({msg}; gradient {gnorm:.2g}); "
        "check the estimates or simplify the random part.")
    if note and warn:
        warnings.warn(note, ConvergenceWarning, stacklevel=_stacklevel)
    return GlmmFit(gd, dev, x, objective, mode, V, "hessian", n_iter, converged, gnorm, msg,
                   bool(bnd), tuple(bnd), H, warning=note)
