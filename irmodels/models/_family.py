"""Response families and link functions of generalised linear (mixed) models.

A :class:`Link` maps the mean ``mu`` to the linear predictor ``eta`` (``linkfun``) and back
(``linkinv``, ``mu_eta`` = dmu/deta), vectorised and safe at the extremes as R's
``make.link`` (the inverse logit, probit, cloglog and log are clamped to
``[eps, 1 - eps]`` / ``>= eps`` with ``eps`` the machine epsilon). A :class:`Family` gives the
conditional distribution: the log-likelihood of each observation with its constants (R's
``logLik``/``aic``), the squared deviance residuals (R's ``dev.resids``), the variance
function, R's starting values (``mustart``), and the first two derivatives of the
log-likelihood in ``eta`` (the observed information ``-d2``) beside the expected (Fisher)
information, R's working weights.

Binomial responses are proportions ``y = successes / trials`` with ``weights = trials``, as R's
``cbind(s, n - s)``; Poisson responses are counts. Families are resolved by name with
:func:`family`; other modules add families with :func:`register_family` (the beta family of
glmmTMB registers itself from ``_family_beta``).

>>> fam = family("binomial")
>>> fam.link.name, round(float(fam.link.linkinv(0.0)), 3)
('logit', 0.5)
>>> family("poisson", link="sqrt").link.name
'sqrt'
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np
from scipy import special, stats

from irmodels._validate import did_you_mean
from irmodels.errors import ArgumentError, DataFormatError

__all__ = ["Link", "Family", "Binomial", "Poisson", "LINKS", "family", "register_family",
           "family_names", "check_finite", "as_float", "EPS"]

EPS = float(np.finfo(float).eps)
_LOGIT_THRESH = 30.0
_PROBIT_THRESH = float(-stats.norm.ppf(EPS))


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=float)


class Link:
    """A link function: ``linkfun(mu) = eta``, ``linkinv(eta) = mu``, ``mu_eta(eta) = dmu/deta``
    and ``mu_eta2(eta) = d2mu/deta2`` (for the observed information of non-canonical links).

    >>> lk = LINKS["logit"]
    >>> float(lk.linkfun(0.25)) == float(np.log(1 / 3))
    True
    """

    def __init__(self, name: str, linkfun: Callable[[np.ndarray], np.ndarray],
                 linkinv: Callable[[np.ndarray], np.ndarray],
                 mu_eta: Callable[[np.ndarray], np.ndarray],
                 mu_eta2: Callable[[np.ndarray], np.ndarray]) -> None:
        self.name = name
        self._f, self._inv, self._d1, self._d2 = linkfun, linkinv, mu_eta, mu_eta2

    def linkfun(self, mu: Any) -> np.ndarray:
        return self._f(_arr(mu))

    def linkinv(self, eta: Any) -> np.ndarray:
        return self._inv(_arr(eta))

    def mu_eta(self, eta: Any) -> np.ndarray:
        return self._d1(_arr(eta))

    def mu_eta2(self, eta: Any) -> np.ndarray:
        return self._d2(_arr(eta))

    def __repr__(self) -> str:
        return f"Link({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Link) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Link", self.name))

    def __reduce__(self) -> tuple[Any, tuple[str]]:  # pickled by name (fits travel to workers)
        return (_link_by_name, (self.name,))


def _link_by_name(name: str) -> Link:
    return LINKS[name]


def _logit_inv(eta: np.ndarray) -> np.ndarray:
    # R's C_logit_linkinv: exp(eta) clamped to [eps, 1/eps] beyond |eta| > 30
    t = np.where(eta < -_LOGIT_THRESH, EPS,
                 np.where(eta > _LOGIT_THRESH, 1.0 / EPS, np.exp(np.clip(eta, -50, 50))))
    return t / (1.0 + t)


def _logit_mu_eta(eta: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(np.clip(eta, -50, 50)))
    d = e / (1.0 + e) ** 2
    return np.where(np.abs(eta) > _LOGIT_THRESH, EPS, d)


def _logit_mu_eta2(eta: np.ndarray) -> np.ndarray:
    p = special.expit(eta)
    return p * (1 - p) * (1 - 2 * p)


def _probit_inv(eta: np.ndarray) -> np.ndarray:
    return special.ndtr(np.clip(eta, -_PROBIT_THRESH, _PROBIT_THRESH))


def _probit_mu_eta(eta: np.ndarray) -> np.ndarray:
    return np.maximum(stats.norm.pdf(eta), EPS)


def _cloglog_inv(eta: np.ndarray) -> np.ndarray:
    return np.clip(-np.expm1(-np.exp(np.minimum(eta, 700.0))), EPS, 1 - EPS)


def _cloglog_mu_eta(eta: np.ndarray) -> np.ndarray:
    e = np.minimum(eta, 700.0)
    return np.maximum(np.exp(e) * np.exp(-np.exp(e)), EPS)


def _cloglog_mu_eta2(eta: np.ndarray) -> np.ndarray:
    e = np.minimum(eta, 700.0)
    return np.exp(e) * np.exp(-np.exp(e)) * (1 - np.exp(e))


def _log_inv(eta: np.ndarray) -> np.ndarray:
    return np.maximum(np.exp(np.minimum(eta, 700.0)), EPS)


LINKS: dict[str, Link] = {
    "logit": Link("logit", lambda m: np.log(m / (1 - m)), _logit_inv, _logit_mu_eta,
                  _logit_mu_eta2),
    "probit": Link("probit", lambda m: special.ndtri(m), _probit_inv, _probit_mu_eta,
                   lambda e: -e * stats.norm.pdf(e)),
    "cloglog": Link("cloglog", lambda m: np.log(-np.log1p(-m)), _cloglog_inv, _cloglog_mu_eta,
                    _cloglog_mu_eta2),
    "log": Link("log", np.log, _log_inv, _log_inv, _log_inv),
    "identity": Link("identity", lambda m: m, lambda e: e, np.ones_like, np.zeros_like),
    "sqrt": Link("sqrt", np.sqrt, lambda e: e * e, lambda e: 2 * e,
                 lambda e: np.full_like(e, 2.0)),
}


def _ylogy(y: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """``y * log(y / mu)`` with ``0 log 0 = 0`` (R's ``y_log_y``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0) / mu), 0.0)


class Family(abc.ABC):
    """A conditional distribution with a link, as R's ``family`` objects.

    Subclasses set ``name``, ``links`` (the allowed names, the first the default),
    ``has_dispersion`` (a precision ``phi`` estimated as an outer parameter) and
    ``laplace_weights`` (``"expected"``: the Laplace approximation uses the Fisher information
    in ``eta``, as lme4's ``glmer`` for every link; ``"observed"``: the observed information
    ``-d2`` of :meth:`deta_derivs`, as glmmTMB).
    """

    name: ClassVar[str] = ""
    links: ClassVar[tuple[str, ...]] = ()
    has_dispersion: ClassVar[bool] = False
    laplace_weights: ClassVar[Literal["expected", "observed"]] = "expected"
    #: whether the response takes trials (binomial ``weights``)
    takes_trials: ClassVar[bool] = False

    def __init__(self, link: str | Link | None = None) -> None:
        if link is None:
            link = self.links[0]
        name = link.name if isinstance(link, Link) else link
        if not isinstance(name, str) or name not in self.links:
            raise ArgumentError(
                f"link {name!r} is not available for the {self.name} family; use one of "
                f"{', '.join(map(repr, self.links))}{did_you_mean(name, self.links)}.")
        self.link = LINKS[name] if not isinstance(link, Link) else link

    def __repr__(self) -> str:
        return f"{type(self).__name__}(link={self.link.name!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.link == self.link  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.link.name))

    @property
    def canonical(self) -> bool:
        """Whether the link is the family's canonical link (observed = expected information)."""
        return self.link.name == self.links[0] and self.name in ("binomial", "poisson")

    # -- to implement -------------------------------------------------------------------------
    @abc.abstractmethod
    def check_response(self, y: np.ndarray, weights: np.ndarray) -> None:
        """Raise :class:`DataFormatError` if ``y`` (with ``weights``) is not a valid response."""

    @abc.abstractmethod
    def loglik_obs(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray,
                   phi: float | None = None) -> np.ndarray:
        """Log-likelihood of each observation with its constants (R's ``logLik``)."""

    @abc.abstractmethod
    def deviance_resid(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Squared deviance residuals (R's ``family$dev.resids``)."""

    @abc.abstractmethod
    def variance(self, mu: np.ndarray, phi: float | None = None) -> np.ndarray:
        """The variance function ``V(mu)`` (the conditional variance for beta)."""

    @abc.abstractmethod
    def start_mu(self, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """R's ``mustart``."""

    # -- derived ------------------------------------------------------------------------------
    def dloglik_dmu(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray,
                    phi: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """First and second derivative of :meth:`loglik_obs` in ``mu`` (exponential families:
        ``w (y - mu) / V`` and its derivative)."""
        V = self.variance(mu, phi)
        dV = self._dvariance(mu)
        g1 = weights * (y - mu) / V
        g2 = weights * (-V - (y - mu) * dV) / V ** 2
        return g1, g2

    def _dvariance(self, mu: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def deta_derivs(self, y: np.ndarray, eta: np.ndarray, weights: np.ndarray,
                    phi: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(d1, d2)``: first and second derivative of :meth:`loglik_obs` in ``eta``
        (the observed information is ``-d2``)."""
        mu = self.link.linkinv(eta)
        m1 = self.link.mu_eta(eta)
        m2 = self.link.mu_eta2(eta)
        g1, g2 = self.dloglik_dmu(y, mu, weights, phi)
        return g1 * m1, g2 * m1 ** 2 + g1 * m2

    def expected_weights(self, eta: np.ndarray, weights: np.ndarray,
                         phi: float | None = None) -> np.ndarray:
        """Fisher information in ``eta``: ``w mu_eta^2 / V`` (R's IRLS working weights)."""
        mu = self.link.linkinv(eta)
        return weights * self.link.mu_eta(eta) ** 2 / self.variance(mu, phi)

    def phi_start(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray) -> float:
        """A starting value of the precision ``phi`` (families with a dispersion)."""
        return 1.0


def check_finite(y: np.ndarray, what: str) -> None:
    """Raise :class:`DataFormatError` naming ``what`` if ``y`` has a NaN or an infinity."""
    _finite(y, what)


def as_float(x: Any) -> np.ndarray:
    """``x`` as a float array (for families defined in other modules)."""
    return _arr(x)


def _finite(y: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(y)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataFormatError(
            f"the {what} has {int(bad.sum())} missing or infinite value(s) (first at row {i}: "
            f"{y[i]!r}); drop or impute those rows (missing='drop') before fitting.")


class Binomial(Family):
    """Binomial: ``y`` the proportion of successes, ``weights`` the number of trials.

    >>> b = Binomial()
    >>> float(b.loglik_obs(np.array([0.3]), np.array([0.3]), np.array([10.0]))[0]) == float(
    ...     stats.binom.logpmf(3, 10, 0.3))
    True
    """

    name = "binomial"
    links = ("logit", "probit", "cloglog", "log", "identity")
    takes_trials = True

    def check_response(self, y: np.ndarray, weights: np.ndarray) -> None:
        y, n = _arr(y), _arr(weights)
        _finite(n, "number of trials")
        _finite(y, "response")
        if (n <= 0).any() or (np.abs(n - np.round(n)) > 1e-8).any():
            i = int(np.flatnonzero((n <= 0) | (np.abs(n - np.round(n)) > 1e-8))[0])
            raise DataFormatError(
                f"binomial trials must be whole numbers >= 1; row {i} has {n[i]!r} trials; "
                "drop rows without trials or give trials= the number of trials of each row.")
        s = y * n
        bad = (s < -1e-8) | (s > n + 1e-8)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataFormatError(
                f"binomial successes must lie between 0 and the number of trials; row {i} has "
                f"{s[i]:g} successes out of {n[i]:g}; check the response column and trials=.")
        frac = np.abs(s - np.round(s)) > 1e-6 * np.maximum(1.0, n)
        if frac.any():
            i = int(np.flatnonzero(frac)[0])
            raise DataFormatError(
                f"binomial successes must be whole numbers; row {i} has {s[i]:g} successes out "
                f"of {n[i]:g}; give counts of successes (for P@k: round(P@k * k)) with "
                "trials=k.")

    def loglik_obs(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray,
                   phi: float | None = None) -> np.ndarray:
        n = np.round(_arr(weights))
        s = np.round(_arr(y) * n)
        const = special.gammaln(n + 1) - special.gammaln(s + 1) - special.gammaln(n - s + 1)
        return const + special.xlogy(s, mu) + special.xlog1py(n - s, -np.asarray(mu, float))

    def deviance_resid(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return 2 * weights * (_ylogy(y, mu) + _ylogy(1 - y, 1 - mu))

    def variance(self, mu: np.ndarray, phi: float | None = None) -> np.ndarray:
        return mu * (1 - mu)

    def _dvariance(self, mu: np.ndarray) -> np.ndarray:
        return 1 - 2 * mu

    def start_mu(self, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return (weights * y + 0.5) / (weights + 1)


class Poisson(Family):
    """Poisson counts (prior ``weights`` multiply the log-likelihood, as R's ``poisson()``).

    >>> p = Poisson()
    >>> float(p.deviance_resid(np.array([0.0]), np.array([2.0]), np.array([1.0]))[0])
    4.0
    """

    name = "poisson"
    links = ("log", "identity", "sqrt")

    def check_response(self, y: np.ndarray, weights: np.ndarray) -> None:
        y = _arr(y)
        _finite(y, "response")
        if (y < 0).any():
            i = int(np.flatnonzero(y < 0)[0])
            raise DataFormatError(
                f"Poisson counts must be >= 0; row {i} has {y[i]:g}; check the response "
                "column (a negative count cannot come from a Poisson model).")
        frac = np.abs(y - np.round(y)) > 1e-8
        if frac.any():
            i = int(np.flatnonzero(frac)[0])
            raise DataFormatError(
                f"Poisson counts must be whole numbers; row {i} has {y[i]:g}; give counts, "
                "or use family='beta' for scores in (0, 1).")

    def loglik_obs(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray,
                   phi: float | None = None) -> np.ndarray:
        y = np.round(_arr(y))
        return weights * (special.xlogy(y, mu) - mu - special.gammaln(y + 1))

    def deviance_resid(self, y: np.ndarray, mu: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return 2 * weights * (_ylogy(y, mu) - (y - mu))

    def variance(self, mu: np.ndarray, phi: float | None = None) -> np.ndarray:
        return mu

    def _dvariance(self, mu: np.ndarray) -> np.ndarray:
        return np.ones_like(mu)

    def start_mu(self, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return y + 0.1


_REGISTRY: dict[str, Callable[..., Family]] = {"binomial": Binomial, "poisson": Poisson}
#: families registered by a module imported on first use (name -> module)
_LAZY: dict[str, str] = {"beta": "irmodels.models._family_beta"}


def register_family(name: str, factory: Callable[..., Family]) -> None:
    """Make ``family(name, link=...)`` return ``factory(link)`` (``link`` None = default)."""
    _REGISTRY[name] = factory


def family_names() -> tuple[str, ...]:
    """The names :func:`family` accepts."""
    return tuple(dict.fromkeys([*_REGISTRY, *_LAZY]))


def family(name: str | Family, link: str | None = None) -> Family:
    """The :class:`Family` called ``name`` with ``link`` (None: the family's default link).

    >>> family("binomial", link="probit")
    Binomial(link='probit')
    >>> family("binomal")
    Traceback (most recent call last):
    ...
    irmodels.errors.ArgumentError: family must be one of 'binomial', 'poisson', 'beta'; got 'binomal' (did you mean 'binomial'?).
    """
    if isinstance(name, Family):
        if link is not None and link != name.link.name:
            return type(name)(link)
        return name
    if isinstance(name, str) and name not in _REGISTRY and name in _LAZY:
        try:
            importlib.import_module(_LAZY[name])
        except ImportError:
            pass
    names = family_names()
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ArgumentError(
            f"family must be one of {', '.join(map(repr, names))}; got {name!r}"
            f"{did_you_mean(name, names)}.")
    if link is not None and not isinstance(link, str):
        raise ArgumentError(f"link must be a link name such as 'logit'; got {link!r}.")
    return _REGISTRY[name](link)
