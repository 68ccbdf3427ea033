"""Dunnett's many-to-one comparisons: every level of a factor against a control (baseline).

Given the (least-squares) means of a factor and their covariance from a fitted model, the
differences ``level - control`` are tested simultaneously: with ``T_i = diff_i / se_i`` and the
correlation ``R`` of the differences (from the model's covariance), the adjusted p-value of level
``i`` is ``P[max_j |T_j| >= |t_i|]`` (two-sided) under the multivariate t distribution with the
model's error degrees of freedom, and the simultaneous interval is ``diff_i +- c se_i`` with
``P[max_j |T_j| <= c] = 1 - alpha``. One-sided versions use ``max_j T_j`` (``"greater"``) or
``min_j T_j`` (``"less"``).

Computation of the multivariate t probability:

- when the correlations have the product form ``R_ij = l_i l_j`` (every one-factor or additive
  design where the control's mean is correlated with the others only through itself: balanced
  designs with equal correlations ``1/2``, unequal replication), ``T_i = (l_i Z_0 +
  sqrt(1 - l_i^2) E_i) / S`` and the probability is a deterministic two-dimensional quadrature
  (one dimension for ``df = inf``): Gauss-Legendre panels over the quantiles of the
  studentizing ``S`` and a trapezoidal rule over ``Z_0`` (Dunnett 1955); accurate to about 1e-9;
- otherwise Genz & Bretz's randomised quasi-Monte Carlo integration
  (:func:`scipy.stats.multivariate_t`), with a fixed seed so results are reproducible
  (absolute error about 1e-5); where the Bonferroni bound on the tail probability is below
  1e-8 it is used instead (the exact value lies between 0 and the bound).

References: Dunnett, C. W. (1955). A multiple comparison procedure for comparing several
treatments with a control. *JASA* 50, 1096-1121. Genz, A. & Bretz, F. (2009). *Computation of
Multivariate Normal and t Probabilities*. Springer. Hothorn, Bretz & Westfall (2008),
Simultaneous inference in general parametric models (R package multcomp).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from irmodels._display import ResultDisplay, format_number
from irmodels._validate import did_you_mean
from irmodels.errors import ArgumentError, DataFormatError, DesignError
from irmodels.stats.tukey import check_alpha, check_error_variance

__all__ = ["DUNNETT_COLUMNS", "DunnettResult", "dunnett", "pmvt_max"]

#: Columns of :attr:`DunnettResult.table`, in this order.
DUNNETT_COLUMNS = ("level", "diff", "se", "statistic", "p_adj", "lower", "upper", "reject")

Alternative = Literal["two-sided", "greater", "less"]

_SEED = 20240611  # fixed seed of the quasi-Monte Carlo integration (reproducible results)
_QMC_POINTS = 50_000
# Gauss-Legendre panels over the quantile u of the studentizing S (denser at both tails)
_U_EDGES = np.array([0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99, 0.999,
                     0.9999, 1e-5 * 99999, 1.0 - 1e-6, 1.0])


@dataclass(frozen=True, repr=False, eq=False)
class DunnettResult(ResultDisplay):
    """Dunnett's comparisons of each level of ``factor`` with ``control``.

    Attributes
    ----------
    factor : str
        The factor compared.
    control : str
        The control (baseline) level.
    table : DataFrame
        One row per treatment level, in level order, columns

        - ``level``: the treatment level;
        - ``diff``: ``mean[level] - mean[control]``;
        - ``se``: standard error of ``diff`` from the model;
        - ``statistic``: ``diff / se``;
        - ``p_adj``: p-value adjusted for the family of comparisons (multivariate t);
        - ``lower``, ``upper``: simultaneous ``1 - alpha`` interval of ``diff`` (one-sided
          alternatives give an infinite bound);
        - ``reject``: ``p_adj < alpha``;
        - ``df`` (only when the degrees of freedom differ between comparisons, as in mixed
          models with Satterthwaite df).
    alternative : str
        ``"two-sided"``, ``"greater"`` (treatment better than control) or ``"less"``.
    alpha : float
    df : float or ndarray
        Error degrees of freedom (one per comparison when they differ).
    critical_value : float or ndarray
        ``c`` with ``P[max |T| <= c] = 1 - alpha`` (one per comparison when df differ).
    correlation : DataFrame
        Correlation matrix of the differences.
    means : Series
        The means compared (``means_kind`` says which).
    means_kind : str
    method : str
        How the multivariate t probabilities were computed.
    """

    factor: str
    control: str
    table: pd.DataFrame
    alternative: str
    alpha: float
    df: float | np.ndarray
    critical_value: float | np.ndarray
    correlation: pd.DataFrame = field(repr=False)
    means: pd.Series = field(repr=False)
    means_kind: str = "given"
    method: str = ""

    @property
    def n_significant(self) -> int:
        """Number of levels significantly different from the control at ``alpha``."""
        return int(self.table["reject"].sum())

    @property
    def n_comparisons(self) -> int:
        """Number of treatment levels compared with the control."""
        return len(self.table)

    def to_frame(self) -> pd.DataFrame:
        """The table of comparisons (a copy)."""
        return self.table.copy()

    def _display_title(self) -> str:
        side = {"two-sided": "two-sided", "greater": "one-sided, level > control",
                "less": "one-sided, level < control"}[self.alternative]
        df = (format_number(float(self.df)) if np.ndim(self.df) == 0 else
              f"{format_number(float(np.min(self.df)))} to {format_number(float(np.max(self.df)))}")
        crit = (format_number(float(self.critical_value)) if np.ndim(self.critical_value) == 0
                else "per comparison")
        return (
            f"Dunnett's comparisons with control {self.control!r} on {self.factor} ({side}): "
            f"{self.n_significant} of {self.n_comparisons} significant at alpha = "
            f"{self.alpha:g} (critical value {crit}, df = {df}; {self.means_kind} means)"
        )

    def _display_tables(self) -> Sequence[tuple[str, pd.DataFrame]]:
        shown = self.table.set_index("level")
        shown.index = [f"{lv} - {self.control}" for lv in shown.index]
        return [("Comparisons with the control", shown)]

    def __repr__(self) -> str:
        return (
            f"<DunnettResult {self.factor} vs {self.control!r}: {self.n_significant}/"
            f"{self.n_comparisons} significant at alpha={self.alpha:g} ({self.alternative})>"
        )


# --------------------------------------------------------------------------------------------
# multivariate t probabilities


def _product_form(corr: np.ndarray) -> np.ndarray | None:
    """``l`` with ``corr_ij = l_i l_j`` (i != j) and ``|l_i| < 1``, or None."""
    m = corr.shape[0]
    if m == 1:
        return np.zeros(1)
    if m == 2:
        r = float(corr[0, 1])
        a = np.sqrt(abs(r))
        lam = np.array([a, a if r >= 0 else -a])
    else:
        lam = np.empty(m)
        off = np.abs(corr) * (1 - np.eye(m))
        for i in range(m):
            order = np.argsort(-off[i], kind="stable")
            j, k = (int(x) for x in order[:2])
            if corr[j, k] == 0:
                return None
            v = corr[i, j] * corr[i, k] / corr[j, k]
            if v < 0:
                return None
            lam[i] = np.sqrt(v)
        ref = int(np.argmax(lam))
        sign = np.where(corr[ref] < 0, -1.0, 1.0)
        sign[ref] = 1.0
        lam = lam * sign
    if not (np.abs(lam) < 1 - 1e-9).all():
        return None
    model = np.outer(lam, lam)
    off = ~np.eye(m, dtype=bool)
    if np.max(np.abs(model[off] - corr[off])) > 1e-10:
        return None
    return lam


def _s_nodes(df: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for E[g(S)], S = sqrt(chi2_df / df) (panels over its quantile)."""
    if not np.isfinite(df):
        return np.ones(1), np.ones(1)
    x, w = np.polynomial.legendre.leggauss(12)
    lo, hi = _U_EDGES[:-1], _U_EDGES[1:]
    u = (lo[:, None] + hi[:, None]) / 2 + (hi - lo)[:, None] / 2 * x[None, :]
    wu = (hi - lo)[:, None] / 2 * w[None, :]
    s = np.sqrt(stats.chi2.ppf(u.ravel(), df) / df)
    return s, wu.ravel()


def _prob_product(c: np.ndarray, lam: np.ndarray, df: float, kind: str) -> np.ndarray:
    """P[all T_i within c] for product-form correlations (deterministic quadrature)."""
    # equal l_i (balanced designs) enter once, raised to their multiplicity
    lam_u, mult = np.unique(np.round(lam, 13), return_counts=True)
    tau = np.sqrt(1.0 - lam_u**2)
    lmax = float(np.max(np.abs(lam_u)))
    step = min(0.2, 0.2 * float(np.min(tau)) / max(lmax, 1e-12))
    z = np.arange(-9.0, 9.0 + step / 2, step)
    wz = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi) * step
    s, ws = _s_nodes(df)
    lz = (lam_u[None, :] * z[:, None])[None, :, :]  # (1, nz, u)
    out = np.empty(c.shape[0])
    for i, ci in enumerate(c):
        a = (ci * s)[:, None, None]  # (ns, 1, 1)
        up = special.ndtr((a - lz) / tau)
        if kind == "two-sided":
            up = up - special.ndtr((-a - lz) / tau)
        inner = np.prod(np.clip(up, 0.0, 1.0) ** mult, axis=2) @ wz  # (ns,)
        out[i] = float(inner @ ws)
    return np.clip(out, 0.0, 1.0)


def _mvn_cdf(upper: np.ndarray, lower: np.ndarray, corr: np.ndarray) -> float:
    """``P[lower <= Z <= upper]`` for a standard normal ``Z`` with correlation ``corr``, seeded.

    The frozen distribution takes the seed (the function form draws unseeded points: two equal
    calls differed by 4e-7). Older scipy (1.15) integrates the normal in Fortran with its own
    unseeded generator; there the multivariate t of 1e12 degrees of freedom (the normal to
    1e-12, below the integration's 1e-7) gives a seeded, reproducible value."""
    try:
        mvn = stats.multivariate_normal(cov=corr, seed=_SEED, maxpts=_QMC_POINTS, abseps=1e-7,
                                        releps=0)
    except TypeError:  # older scipy: the frozen normal takes no integration options
        return float(stats.multivariate_t.cdf(upper, shape=corr, df=1e12, lower_limit=lower,
                                              maxpts=_QMC_POINTS,
                                              random_state=np.random.default_rng(_SEED)))
    return float(mvn.cdf(upper, lower_limit=lower))


def _prob_general(c: np.ndarray, corr: np.ndarray, df: float, kind: str) -> np.ndarray:
    """P[all T_i within c] by Genz-Bretz quasi-Monte Carlo (scipy), fixed seed."""
    m = corr.shape[0]
    out = np.empty(c.shape[0])
    for i, ci in enumerate(c):
        upper = np.full(m, ci)
        lower = -upper if kind == "two-sided" else np.full(m, -np.inf)
        if np.isfinite(df):
            val = stats.multivariate_t.cdf(upper, shape=corr, df=df, lower_limit=lower,
                                           maxpts=_QMC_POINTS,
                                           random_state=np.random.default_rng(_SEED))
        else:
            val = _mvn_cdf(upper, lower, corr)
        out[i] = float(val)
    return np.clip(out, 0.0, 1.0)


def pmvt_max(
    c: float | Sequence[float] | np.ndarray,
    corr: np.ndarray,
    df: float,
    alternative: Alternative = "two-sided",
) -> np.ndarray:
    """``P[max_i |T_i| <= c]`` (two-sided) or ``P[max_i T_i <= c]`` (one-sided).

    ``T`` is multivariate t with correlation ``corr`` and ``df`` degrees of freedom
    (``np.inf``: normal). Product-form correlations (``corr_ij = l_i l_j``) use a deterministic
    quadrature, others Genz-Bretz quasi-Monte Carlo with a fixed seed.

    Examples
    --------
    Dunnett's balanced case (correlation 1/2), three treatments, 20 df: R's
    ``mvtnorm::pmvt(-2.5, 2.5, corr = ..., df = 20)`` = 0.9439 (to its 1e-4 error):

    >>> import numpy as np
    >>> r = np.full((3, 3), 0.5); np.fill_diagonal(r, 1.0)
    >>> round(float(pmvt_max(2.5, r, 20)[0]), 6)
    0.945692
    """
    cc = np.atleast_1d(np.asarray(c, dtype=float))
    corr = np.asarray(corr, dtype=float)
    kind = "two-sided" if alternative == "two-sided" else "one-sided"
    m = corr.shape[0]
    if m == 1:
        dist = stats.norm if not np.isfinite(df) else stats.t(df)
        if kind == "two-sided":
            return np.clip(1.0 - 2.0 * dist.sf(np.abs(cc)), 0.0, 1.0) * (cc >= 0)
        return dist.cdf(cc)
    lam = _product_form(corr)
    res = np.zeros(cc.shape[0])
    ok = cc > 0 if kind == "two-sided" else np.isfinite(cc)
    if kind == "one-sided":
        res[np.isposinf(cc)] = 1.0
        ok = np.isfinite(cc)
    if ok.any():
        if lam is not None:
            res[ok] = _prob_product(cc[ok], lam, df, kind)
        else:
            # far in the tail the Bonferroni bound is exact to 1e-8 (below the QMC error)
            dist = stats.norm if not np.isfinite(df) else stats.t(df)
            bound = m * (2 if kind == "two-sided" else 1) * dist.sf(np.where(ok, cc, 0.0))
            far = ok & (bound < 1e-8)
            res[far] = 1.0 - bound[far]
            rest = ok & ~far
            if rest.any():
                res[rest] = _prob_general(cc[rest], corr, df, kind)
    return res


def _critical(alpha: float, corr: np.ndarray, df: float, alternative: Alternative) -> float:
    """``c`` with ``P[max T <= c] = 1 - alpha`` (Brent's method on a bracket)."""
    seen: dict[float, float] = {}  # Brent starts from the bracket's ends, already integrated

    def f(x: float) -> float:
        if x not in seen:  # pmvt_max is deterministic (fixed QMC seed)
            seen[x] = float(pmvt_max(x, corr, df, alternative)[0]) - (1.0 - alpha)
        return seen[x]

    lo = hi = None
    if _product_form(corr) is None and corr.shape[0] > 2:
        # costly integration: bracket tightly around the critical value of the nearest
        # product-form correlation (cheap quadrature), so Brent needs few evaluations
        m = corr.shape[0]
        off = ~np.eye(m, dtype=bool)
        lam = np.sqrt(np.clip((corr * off).sum(axis=1) / (m - 1), 0.0, 0.98))
        approx = np.outer(lam, lam)
        np.fill_diagonal(approx, 1.0)
        c0 = _critical(alpha, approx, df, alternative)
        a, b = c0 - 0.02 * c0, c0 + 0.02 * c0
        if f(a) < 0 < f(b):
            lo, hi = a, b
    if lo is None or hi is None:
        lo = float(stats.norm.ppf(1 - alpha / (2 if alternative == "two-sided" else 1)) * 0.5)
        hi = float(stats.t.ppf(1 - alpha / (2 * corr.shape[0]), df if np.isfinite(df) else 1e9))
        hi = max(hi, lo + 1.0) * 1.05
        while f(hi) < 0:
            hi *= 1.5
        while f(lo) > 0:
            lo *= 0.5
    return float(optimize.brentq(f, lo, hi, xtol=1e-8, rtol=1e-10))


# --------------------------------------------------------------------------------------------
# kernel


def _check_covariance(V: np.ndarray, labels: list[str]) -> None:
    """Refuse a ``cov`` that is not a covariance matrix (not symmetric, or with a negative
    eigenvalue beyond rounding), naming that cause rather than its symptom (a difference
    with a zero or negative variance)."""
    top = float(np.max(np.abs(V))) if V.size else 0.0
    asym = float(np.max(np.abs(V - V.T))) if V.size else 0.0
    if asym > 1e-8 * top:
        i, j = np.unravel_index(int(np.argmax(np.abs(V - V.T))), V.shape)
        raise DataFormatError(
            f"cov is not symmetric: cov[{labels[i]!r}, {labels[j]!r}] = {V[i, j]:.6g} but "
            f"cov[{labels[j]!r}, {labels[i]!r}] = {V[j, i]:.6g}; a covariance matrix of the "
            "means is symmetric. Pass the model's covariance of the means (e.g. "
            "MS_error / n * identity for a balanced design).")
    eig = np.linalg.eigvalsh((V + V.T) / 2.0)
    if eig.size and eig[0] < -1e-10 * max(float(eig[-1]), top):
        raise DataFormatError(
            f"cov is not positive semi-definite (smallest eigenvalue {eig[0]:.3g}, largest "
            f"{eig[-1]:.3g}): some contrast of the means would have a negative variance, so "
            "it is not a covariance matrix. Pass the model's covariance of the means (e.g. "
            "MS_error / n * identity for a balanced design), not a correlation or a "
            "hand-edited matrix.")


def dunnett(
    means: pd.Series | Mapping[str, float],
    cov: np.ndarray | pd.DataFrame,
    *,
    control: str,
    df: float | Sequence[float] | np.ndarray,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    factor: str = "system",
    means_kind: str = "given",
) -> DunnettResult:
    """Dunnett's comparisons of every level with ``control``, from means and their covariance.

    Parameters
    ----------
    means : Series or mapping
        Mean of each level (the index names the levels, in the factor's order).
    cov : (k, k) array or DataFrame
        Covariance matrix of the means (from the model; ``MS_error / n * I`` for a balanced
        design).
    control : str
        The control level; every other level is compared with it (``level - control``).
    df : float or array
        Error degrees of freedom (``np.inf`` for normal); or one per treatment level (in
        level order, control left out), as emmeans does for mixed models.
    alpha : float
        Family-wise significance level.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: the treatment is better than the control (one-sided upper).
    factor, means_kind : str
        For display.

    Returns
    -------
    DunnettResult

    Raises
    ------
    DesignError
        ``control`` is not a level; fewer than two levels; an error variance of zero (every
        difference with the control has variance 0 or at most 1e-12 times the variance of the
        means: a perfect fit, which would make every difference "significant").
    DataFormatError
        Bad alpha, alternative, shapes, non-numeric or non-finite means or covariance.

    Examples
    --------
    Four systems with 30 observations each, ``MS_error = 0.01``, 87 df:

    >>> import numpy as np, pandas as pd
    >>> m = pd.Series({"base": 0.30, "a": 0.31, "b": 0.36, "c": 0.25})
    >>> res = dunnett(m, np.eye(4) * 0.01 / 30, control="base", df=87)
    >>> res.table.round(4)
      level  diff      se  statistic   p_adj   lower   upper  reject
    0     a  0.01  0.0258     0.3873  0.9624 -0.0517  0.0717   False
    1     b  0.06  0.0258     2.3238  0.0587 -0.0017  0.1217   False
    2     c -0.05  0.0258    -1.9365  0.1386 -0.1117  0.0117   False
    >>> round(float(res.critical_value), 4)
    2.3907
    """
    alpha = check_alpha(alpha)
    if alternative not in ("two-sided", "greater", "less"):
        raise ArgumentError(
            f"alternative must be 'two-sided', 'greater' or 'less'; got {alternative!r}"
            f"{did_you_mean(alternative, ('two-sided', 'greater', 'less'))}."
        )
    try:
        s = (pd.Series(means, dtype=float) if isinstance(means, Mapping)
             else pd.Series(means).astype(float))
        V = np.asarray(cov, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"means and cov must be numbers; {exc}.") from None
    labels = [str(x) for x in s.index]
    k = len(labels)
    if k < 2:
        raise DesignError(f"Dunnett's test needs a control and at least one other level; "
                          f"{factor} has {k}.")
    if str(control) not in labels:
        shown = ", ".join(labels[:6]) + (", ..." if k > 6 else "")
        raise DesignError(
            f"control level {control!r} is not a level of {factor} ({k} levels: {shown}). "
            "Pass one of them as control (names are case-sensitive)."
        )
    if V.shape != (k, k):
        raise DataFormatError(f"cov must be a {k} x {k} matrix; got shape {V.shape}.")
    m = s.to_numpy()
    if not (np.isfinite(m).all() and np.isfinite(V).all()):
        raise DataFormatError("means and their covariance must be finite (non-estimable mean?).")
    _check_covariance(V, labels)
    ci = labels.index(str(control))
    trt = [i for i in range(k) if i != ci]
    C = np.zeros((k - 1, k))
    C[np.arange(k - 1), trt] = 1.0
    C[:, ci] = -1.0
    diff = C @ m
    cd = C @ V @ C.T
    # the same check as Tukey's HSD: a zero error variance (a perfect fit) is refused
    check_error_variance(np.diag(cd), m)
    se = np.sqrt(np.clip(np.diag(cd), 0.0, None))
    if not (se > 0).all():
        raise DataFormatError("a difference with the control has zero standard error; "
                              "the covariance of the means is degenerate.")
    corr = cd / np.outer(se, se)
    np.fill_diagonal(corr, 1.0)
    stat = diff / se
    df_arr = np.broadcast_to(np.asarray(df, dtype=float), (k - 1,)).copy()
    if np.any(np.isnan(df_arr)) or np.any(df_arr <= 0):
        raise DataFormatError(f"df must be positive (or inf); got {df!r}.")
    per = not np.all(df_arr == df_arr[0])
    if alternative == "two-sided":
        x = np.abs(stat)
    elif alternative == "greater":
        x = stat
    else:
        x = -stat
    if per:
        p = np.array([1.0 - pmvt_max(x[i], corr, df_arr[i], alternative)[0] for i in range(k - 1)])
        # one critical value per distinct df (contrasts often share one: integer df)
        by_df = {d: _critical(alpha, corr, d, alternative) for d in dict.fromkeys(df_arr.tolist())}
        crit: float | np.ndarray = np.array([by_df[d] for d in df_arr.tolist()])
    else:
        p = 1.0 - pmvt_max(x, corr, float(df_arr[0]), alternative)
        crit = _critical(alpha, corr, float(df_arr[0]), alternative)
    p = np.clip(p, 0.0, 1.0)
    half = np.asarray(crit) * se
    if alternative == "two-sided":
        lower, upper = diff - half, diff + half
    elif alternative == "greater":
        lower, upper = diff - half, np.full(k - 1, np.inf)
    else:
        lower, upper = np.full(k - 1, -np.inf), diff + half
    table = pd.DataFrame({
        "level": [labels[i] for i in trt],
        "diff": diff, "se": se, "statistic": stat, "p_adj": p,
        "lower": lower, "upper": upper, "reject": p < alpha,
    })
    if per:
        table["df"] = df_arr
    names = [labels[i] for i in trt]
    method = ("quadrature (product-form correlation)" if _product_form(corr) is not None
              else "Genz-Bretz quasi-Monte Carlo")
    return DunnettResult(
        factor=factor,
        control=str(control),
        table=table,
        alternative=alternative,
        alpha=float(alpha),
        df=df_arr if per else float(df_arr[0]),
        critical_value=crit,
        correlation=pd.DataFrame(corr, index=names, columns=names),
        means=pd.Series(m, index=pd.Index(labels, name=factor), name="mean"),
        means_kind=means_kind,
        method=method,
    )
