"""Meta-analysis of one effect (a system difference) across collections, measures or studies.

Each study ``i`` gives an estimate ``y_i`` (e.g. the mean AP difference between two systems on
one collection) and its sampling variance ``v_i`` (e.g. the variance of the paired per-topic
differences divided by the number of topics). The random-effects model is
``y_i = mu + u_i + e_i`` with ``u_i ~ N(0, tau^2)`` and ``e_i ~ N(0, v_i)``, ``v_i`` known; the
fixed-effect (common-effect) model sets ``tau^2 = 0``.

- ``"FE"``: inverse-variance weights ``w_i = 1 / v_i``;
- ``"DL"``: DerSimonian & Laird's moment estimator
  ``tau^2 = max(0, (Q - (k - 1)) / (sum w - sum w^2 / sum w))``;
- ``"REML"``: restricted maximum likelihood by Fisher scoring, exactly as R's metafor
  ``rma()`` does it (start at ``max(0, var(y) - mean(v))``, step
  ``(y'PPy - tr P) / tr(PP)`` halved while it would go below 0, stop when ``tau^2`` changes by
  at most ``1e-5``, at most 100 iterations; then metafor's check that the restricted
  likelihood at ``tau^2 = 0`` is not larger by more than ``1.22e-4``).

The pooled estimate is ``mu = sum w_i y_i / sum w_i`` with ``w_i = 1 / (v_i + tau^2)``, its
standard error ``sqrt(1 / sum w_i)``, a z test and a normal confidence interval. Cochran's
``Q = sum (y_i - mu_FE)^2 / v_i`` (``k - 1`` df) uses the fixed-effect weights whatever the
method. ``I^2`` and ``H^2`` follow metafor: for ``"FE"`` ``I^2 = max(0, 100 (Q - (k-1)) / Q)``
and ``H^2 = Q / (k - 1)``; for the random-effects methods ``I^2 = 100 tau^2 / (tau^2 + v~)``
and ``H^2 = 1 + tau^2 / v~`` with the "typical" within-study variance
``v~ = (k - 1) / (sum w - sum w^2 / sum w)`` (Higgins & Thompson 2002; for DL without
truncation these equal the Q-based formulas). The prediction interval for the effect in a new
study is ``mu +- z_{1-alpha/2} sqrt(se^2 + tau^2)`` (metafor's ``predict()``).

References: DerSimonian, R. & Laird, N. (1986). Meta-analysis in clinical trials. *Controlled
Clinical Trials* 7, 177-188. Viechtbauer, W. (2005). Bias and efficiency of meta-analytic
variance estimators in the random-effects model. *JEBS* 30, 261-293. Viechtbauer, W. (2010).
Conducting meta-analyses in R with the metafor package. *J. Stat. Softw.* 36(3). Higgins, J. P.
T. & Thompson, S. G. (2002). Quantifying heterogeneity in a meta-analysis. *Stat. Med.* 21,
1539-1558. Riley, R. D., Higgins, J. P. T. & Deeks, J. J. (2011). Interpretation of random
effects meta-analyses. *BMJ* 342, d549.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from irmodels._display import ResultDisplay, format_number
from irmodels._section import figure_axes
from irmodels._validate import did_you_mean
from irmodels.errors import (
    ArgumentError,
    ConvergenceError,
    ConvergenceWarning,
    DataFormatError,
    DesignError,
)

__all__ = ["META_COLUMNS", "MetaAnalysisResult", "meta_analysis"]

Method = Literal["REML", "DL", "FE"]

#: Columns of :attr:`MetaAnalysisResult.studies` (and ``to_frame()``), in this order.
META_COLUMNS = ("label", "estimate", "variance", "se", "ci_lower", "ci_upper", "weight")

# metafor's rma() control defaults (threshold, maxiter, tol = .Machine$double.eps^0.25)
_THRESHOLD = 1e-5
_MAXITER = 100
_LL_TOL = float(np.finfo(float).eps) ** 0.25
_METHODS = ("REML", "DL", "FE")
_ESTIMATE_COLUMNS = ("estimate", "yi")
_VARIANCE_COLUMNS = ("variance", "vi")
_SE_COLUMNS = ("se", "sei")
_LABEL_COLUMNS = ("label", "study", "collection")


@dataclass(frozen=True, repr=False, eq=False)
class MetaAnalysisResult(ResultDisplay):
    """A fixed- or random-effects meta-analysis of ``k`` estimates.

    Attributes
    ----------
    method : str
        ``"REML"``, ``"DL"`` or ``"FE"``.
    level : float
        Confidence level of the intervals.
    k : int
        Number of studies.
    estimate, se, z, p : float
        Pooled estimate, its standard error, ``estimate / se`` and the two-sided normal p-value.
    ci_lower, ci_upper : float
        Normal confidence interval of the pooled estimate.
    pi_lower, pi_upper : float
        Prediction interval for the effect in a new study (equal to the confidence interval
        when ``tau2 = 0``).
    tau2, tau : float
        Between-study variance and its square root (0 for ``"FE"``).
    se_tau2 : float
        Standard error of ``tau2`` as metafor gives it (NaN for ``"FE"`` and ``k = 1``).
    Q, df, Q_p : float
        Cochran's Q (fixed-effect weights), its degrees of freedom ``k - 1`` and p-value.
    I2 : float
        ``I^2`` in percent (0 to 100), as metafor defines it (see the module notes).
    H2 : float
        ``H^2``.
    iterations : int
        Fisher scoring iterations (REML; 0 otherwise).
    studies : DataFrame
        One row per study, columns ``label, estimate, variance, se, ci_lower, ci_upper,
        weight`` (the study's share of the pooled estimate's weights, in percent).
    """

    method: str
    level: float
    k: int
    estimate: float
    se: float
    z: float
    p: float
    ci_lower: float
    ci_upper: float
    pi_lower: float
    pi_upper: float
    tau2: float
    se_tau2: float
    Q: float
    df: int
    Q_p: float
    I2: float
    H2: float
    iterations: int
    studies: pd.DataFrame = field(repr=False)

    @property
    def tau(self) -> float:
        """``sqrt(tau2)``."""
        return math.sqrt(self.tau2)

    @property
    def pooled(self) -> pd.DataFrame:
        """One row: ``estimate, se, z, p, ci_lower, ci_upper, pi_lower, pi_upper``."""
        return pd.DataFrame(
            {"estimate": [self.estimate], "se": [self.se], "z": [self.z], "p": [self.p],
             "ci_lower": [self.ci_lower], "ci_upper": [self.ci_upper],
             "pi_lower": [self.pi_lower], "pi_upper": [self.pi_upper]},
            index=[self._pooled_label()])

    @property
    def heterogeneity(self) -> pd.DataFrame:
        """One row: ``tau2, tau, se_tau2, Q, df, Q_p, I2, H2``."""
        return pd.DataFrame(
            {"tau2": [self.tau2], "tau": [self.tau], "se_tau2": [self.se_tau2],
             "Q": [self.Q], "df": [self.df], "Q_p": [self.Q_p], "I2": [self.I2],
             "H2": [self.H2]},
            index=["heterogeneity"])

    def to_frame(self) -> pd.DataFrame:
        """The studies (a copy): ``label, estimate, variance, se, ci_lower, ci_upper, weight``."""
        return self.studies.copy()

    def _pooled_label(self) -> str:
        return "pooled (FE)" if self.method == "FE" else f"pooled (RE, {self.method})"

    def _display_title(self) -> str:
        model = ("fixed-effect" if self.method == "FE"
                 else f"random-effects ({self.method})")
        pct = f"{100 * self.level:g}%"
        het = (f"Q({self.df}) = {format_number(self.Q)}, p = {format_number(self.Q_p)}, "
               f"I2 = {self.I2:.1f}%")
        if self.method != "FE":
            het += f", tau2 = {format_number(self.tau2)}"
        return (f"Meta-analysis, {model}, k = {self.k}: estimate = "
                f"{format_number(self.estimate)} ({pct} CI {format_number(self.ci_lower)} to "
                f"{format_number(self.ci_upper)}), z = {format_number(self.z)}, p = "
                f"{format_number(self.p)}; {het}")

    def _display_tables(self) -> Sequence[tuple[str, pd.DataFrame]]:
        return [("Pooled estimate", self.pooled), ("Heterogeneity", self.heterogeneity),
                ("Studies", self.studies.set_index("label"))]

    def __repr__(self) -> str:
        return (f"<MetaAnalysisResult {self.method} k={self.k}: estimate="
                f"{self.estimate:.4g} [{self.ci_lower:.4g}, {self.ci_upper:.4g}], "
                f"tau2={self.tau2:.4g}, I2={self.I2:.3g}%>")

    def plot(self, *, ax: Any = None) -> Any:
        """Forest plot: each study's estimate (a square sized by its weight) and confidence
        interval, the pooled estimate as a diamond spanning its confidence interval, and the
        prediction interval as a line through the diamond (random-effects methods).

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Draw there; by default a new figure.

        Returns
        -------
        matplotlib.figure.Figure
            A new figure is closed in pyplot before it is returned: a notebook shows it once,
            as an image, from the returned value.
        """
        s = self.studies
        k = len(s)
        fig, (ax,) = figure_axes(ax, figsize=(6.0, 1.6 + 0.28 * k),
                                 what="MetaAnalysisResult.plot")
        y = np.arange(k, 0, -1, dtype=float) + 0.5
        ax.hlines(y, s["ci_lower"], s["ci_upper"], color="0.2", lw=1.0)
        w = s["weight"].to_numpy(dtype=float)
        ax.scatter(s["estimate"], y, marker="s", s=12 + 100 * w / max(w.max(), 1e-300),
                   color="0.2", zorder=3)
        if self.method != "FE" and self.tau2 > 0:
            ax.hlines(0.0, self.pi_lower, self.pi_upper, color="C0", lw=1.0, ls=":")
            ax.vlines([self.pi_lower, self.pi_upper], -0.15, 0.15, color="C0", lw=1.0)
        ax.fill([self.ci_lower, self.estimate, self.ci_upper, self.estimate],
                [0.0, 0.3, 0.0, -0.3], color="C0", zorder=3)
        ax.axvline(0.0, color="0.5", lw=0.8, ls="--")
        ax.axvline(self.estimate, color="C0", lw=0.6, ls=":")
        ax.set_yticks([*y, 0.0], [*(str(v) for v in s["label"]), self._pooled_label()])
        ax.set_ylim(-0.8, k + 1.2)
        ax.set_xlabel(f"estimate ({100 * self.level:g}% CI)")
        title = f"k = {self.k}, I2 = {self.I2:.1f}%"
        if self.method != "FE":
            title += (f", tau2 = {self.tau2:.3g}; prediction interval "
                      f"[{self.pi_lower:.3g}, {self.pi_upper:.3g}]")
        ax.set_title(title, fontsize=9)
        return fig


# --------------------------------------------------------------------------------------------
# input


def _pick(frame: pd.DataFrame, names: tuple[str, ...]) -> str | None:
    found = [n for n in names if n in frame.columns]
    if len(found) > 1:
        raise ArgumentError(f"the data have the columns {found}, which mean the same; keep one "
                            "of them.")
    return found[0] if found else None


def _vector(values: Any, name: str) -> np.ndarray:
    try:
        out = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataFormatError(f"{name} must be numbers; got {values!r:.80} ({exc}).") from None
    if out.ndim == 0:
        out = out.reshape(1)
    if out.ndim != 1:
        raise DataFormatError(f"{name} must be one-dimensional; got shape {out.shape}.")
    return out


def _inputs(estimates: Any, variances: Any, se: Any, labels: Any
            ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    frame_labels: Any = None
    if isinstance(estimates, pd.DataFrame):
        if variances is not None or se is not None:
            raise ArgumentError("pass the variances (or standard errors) either as columns of "
                                "the DataFrame or as variances=/se=, not both.")
        ecol = _pick(estimates, _ESTIMATE_COLUMNS)
        vcol = _pick(estimates, _VARIANCE_COLUMNS)
        scol = _pick(estimates, _SE_COLUMNS)
        if ecol is None or (vcol is None and scol is None):
            raise DataFormatError(
                "a DataFrame for meta_analysis needs a column 'estimate' (or 'yi') and a column "
                "'variance' (or 'vi') or 'se' (or 'sei'); got columns "
                f"{list(map(str, estimates.columns))}. Rename the columns, or pass arrays.")
        if vcol is not None and scol is not None:
            raise ArgumentError(f"the data have both {vcol!r} and {scol!r}; keep one of them.")
        lcol = _pick(estimates, _LABEL_COLUMNS)
        if lcol is not None:
            frame_labels = estimates[lcol].astype(str).tolist()
        elif not isinstance(estimates.index, pd.RangeIndex):
            frame_labels = [str(v) for v in estimates.index]
        y = _vector(estimates[ecol], f"column {ecol!r}")
        if vcol is not None:
            v = _vector(estimates[vcol], f"column {vcol!r}")
            se = None
        else:
            s = _vector(estimates[scol], f"column {scol!r}")
            v, se = s, s
    else:
        if isinstance(estimates, pd.Series) and not isinstance(estimates.index, pd.RangeIndex):
            frame_labels = [str(v) for v in estimates.index]
        y = _vector(estimates, "estimates")
        if (variances is None) == (se is None):
            raise ArgumentError("give the sampling variances (variances=) or the standard "
                                "errors (se=) of the estimates, one of the two; got "
                                f"{'both' if variances is not None else 'neither'}.")
        v = _vector(variances if variances is not None else se,
                    "variances" if variances is not None else "se")
    what = "standard errors" if se is not None else "variances"
    if len(v) != len(y):
        raise DataFormatError(f"there are {len(y)} estimates but {len(v)} {what}; give one "
                              "per estimate.")
    if len(y) == 0:
        raise DataFormatError("no estimates: a meta-analysis needs at least one study.")
    for arr, name in ((y, "estimates"), (v, what)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise DataFormatError(
                f"{bad.size} of the {len(arr)} {name} are missing or infinite (first at "
                f"position {int(bad[0])}: {arr[bad[0]]}); drop those studies or supply the "
                "values.")
    bad = np.flatnonzero(v <= 0)
    if bad.size:
        raise DataFormatError(
            f"{bad.size} of the {len(v)} {what} are zero or negative (first at position "
            f"{int(bad[0])}: {v[bad[0]]:g}); every study needs a positive sampling variance "
            "(an estimate known exactly cannot be weighted by its inverse variance).")
    if se is not None:
        v = v * v
    if labels is None:
        labels = frame_labels
    if labels is None:
        names = [str(i + 1) for i in range(len(y))]
    else:
        names = [str(x) for x in (labels.tolist() if hasattr(labels, "tolist") else labels)]
        if len(names) != len(y):
            raise DataFormatError(f"there are {len(y)} estimates but {len(names)} labels; give "
                                  "one label per estimate.")
    return y, v, names


# --------------------------------------------------------------------------------------------
# estimation


def _p_matrix_sums(w: np.ndarray) -> tuple[float, float]:
    """``tr(P)`` and ``tr(PP)`` for ``P = W - w w' / sum(w)`` (intercept-only model)."""
    sw = w.sum()
    sw2 = float(np.sum(w * w))
    tr_p = sw - sw2 / sw
    tr_pp = sw2 - 2.0 * float(np.sum(w ** 3)) / sw + (sw2 / sw) ** 2
    return float(tr_p), float(tr_pp)


def _reml_loglik(y: np.ndarray, v: np.ndarray, tau2: float) -> float:
    w = 1.0 / (v + tau2)
    mu = float(np.sum(w * y) / np.sum(w))
    rss = float(np.sum(w * (y - mu) ** 2))
    k = len(y)
    return float(-0.5 * (k - 1) * math.log(2 * math.pi) - 0.5 * np.sum(np.log(v + tau2))
                 - 0.5 * math.log(np.sum(w)) - 0.5 * rss)


def _reml(y: np.ndarray, v: np.ndarray) -> tuple[float, int]:
    """metafor's Fisher scoring for the REML tau^2 (intercept-only ``rma.uni``)."""
    k = len(y)
    yc = y - y.mean()
    tau2 = max(0.0, (float(np.sum(yc * yc)) - float(np.sum(v)) * (k - 1) / k) / (k - 1))
    change = _THRESHOLD + 1.0
    it = 0
    while change > _THRESHOLD:
        it += 1
        old = tau2
        w = 1.0 / (v + tau2)
        py = w * (yc - np.sum(w * yc) / np.sum(w))  # P y
        tr_p, tr_pp = _p_matrix_sums(w)
        adj = (float(np.sum(py * py)) - tr_p) / tr_pp
        if not math.isfinite(adj):
            adj = 0.0
        while tau2 + adj < 0.0:
            adj /= 2.0
        tau2 = tau2 + adj
        change = abs(old - tau2)
        if it > _MAXITER:
            raise ConvergenceError(
                f"the Fisher scoring for the REML tau^2 did not converge in {_MAXITER} "
                f"iterations (last change {change:.3g}, tau^2 = {tau2:.6g}); use method='DL', "
                "or check the estimates and variances for outliers.")
    # metafor's check that the iteration did not stop at a worse point than tau^2 = 0
    if _reml_loglik(y, v, 0.0) - _reml_loglik(y, v, tau2) > _LL_TOL and tau2 > _THRESHOLD:
        warnings.warn(
            f"the Fisher scoring stopped at tau^2 = {tau2:.6g}, whose restricted likelihood is "
            "below that of tau^2 = 0 (a local maximum); tau^2 is set to 0, as metafor does. "
            "Inspect the profile likelihood.", ConvergenceWarning, stacklevel=3)
        tau2 = 0.0
    return max(0.0, tau2), it


def meta_analysis(
    estimates: Any,
    variances: Any = None,
    *,
    se: Any = None,
    method: Method = "REML",
    level: float = 0.95,
    labels: Sequence[Any] | None = None,
) -> MetaAnalysisResult:
    """Pool ``k`` estimates of one effect (fixed effect, or random effects with tau^2).

    Parameters
    ----------
    estimates : array-like, Series or DataFrame
        The per-study estimates ``y_i`` (e.g. the mean AP difference of two systems on each
        collection). A DataFrame gives them in a column ``estimate`` (or ``yi``) with the
        variances in ``variance`` (or ``vi``) or the standard errors in ``se`` (or ``sei``),
        and labels in ``label`` (or ``study``, ``collection``) or its index. A Series' index
        gives the labels.
    variances : array-like, optional
        Sampling variances ``v_i`` (positive). Give these or ``se``.
    se : array-like, optional
        Standard errors ``sqrt(v_i)``, instead of ``variances``.
    method : {"REML", "DL", "FE"}
        Restricted maximum likelihood (metafor's Fisher scoring), DerSimonian-Laird, or fixed
        effect (inverse variance).
    level : float
        Confidence level of the confidence and prediction intervals.
    labels : sequence, optional
        Study labels (default: the frame's labels or ``"1"``..``"k"``).

    Returns
    -------
    MetaAnalysisResult
        ``estimate, se, z, p, ci_lower, ci_upper, pi_lower, pi_upper, tau2, tau, se_tau2, Q,
        df, Q_p, I2, H2``; ``to_frame()`` lists the studies with columns

        - ``label``: the study;
        - ``estimate``, ``variance``, ``se``: its estimate, sampling variance and SE;
        - ``ci_lower``, ``ci_upper``: its normal confidence interval;
        - ``weight``: its share of the weights of the pooled estimate, in percent.

    Raises
    ------
    DataFormatError
        Missing or infinite values, zero or negative variances, lengths that differ.
    DesignError
        ``k = 1`` with a random-effects method (tau^2 needs two studies: use ``"FE"``).
    ConvergenceError
        The REML Fisher scoring did not converge in 100 iterations.

    Notes
    -----
    Identical to R's metafor ``rma(yi, vi, method=...)`` (``test="z"``) and ``predict()``;
    see the module docstring and docs/methods.md for the formulas. ``k = 1`` is allowed with
    ``method="FE"`` only, and gives the study itself with ``Q = 0``, ``df = 0``,
    ``Q_p = 1``, ``I2 = 0``, ``H2 = 1`` (as metafor). The REML estimate is truncated at 0
    (the boundary): the pooled estimate is then the fixed-effect one. With ``"FE"`` and
    identical estimates (``Q = 0``) ``I2`` is 0 where metafor gives NaN (0/0).

    References: DerSimonian & Laird (1986); Viechtbauer (2005, 2010); Higgins & Thompson
    (2002); Riley, Higgins & Deeks (2011).

    Examples
    --------
    >>> import irmodels as irm
    >>> res = irm.meta_analysis([0.031, 0.012, 0.045, -0.004], [1e-4, 2e-4, 1.5e-4, 3e-4],
    ...                         labels=["adhoc6", "adhoc7", "adhoc8", "robust2004"])
    >>> round(res.estimate, 4), round(res.tau2, 6), round(res.I2, 1)
    (0.0236, 0.000217, 56.3)
    >>> res.to_frame()[["label", "weight"]].round(1)
            label  weight
    0      adhoc6    30.9
    1      adhoc7    23.5
    2      adhoc8    26.7
    3  robust2004    18.9
    >>> round(irm.meta_analysis([0.031, 0.012], se=[0.01, 0.014], method="FE").estimate, 4)
    0.0246
    """
    if method not in _METHODS:
        raise ArgumentError(f"method must be one of {list(_METHODS)}; got {method!r}"
                            f"{did_you_mean(method, _METHODS)}.")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ArgumentError(f"level must be a number between 0 and 1; got {level!r}.")
    y, v, names = _inputs(estimates, variances, se, labels)
    k = len(y)
    if k == 1 and method != "FE":
        raise DesignError(
            f"one study cannot estimate the between-study variance tau^2 (method={method!r}); "
            "use method='FE' (which returns the study's own estimate), or add studies.")
    crit = float(stats.norm.isf((1 - level) / 2))
    w_fe = 1.0 / v
    se_tau2 = math.nan
    iterations = 0
    if k > 1:
        mu_fe = float(np.sum(w_fe * y) / np.sum(w_fe))
        q = max(0.0, float(np.sum(w_fe * (y - mu_fe) ** 2)))
        tr_p_fe, tr_pp_fe = _p_matrix_sums(w_fe)
        q_p = float(stats.chi2.sf(q, k - 1))
    else:
        q, q_p, tr_p_fe, tr_pp_fe = 0.0, 1.0, math.nan, math.nan
    if method == "FE":
        tau2 = 0.0
    elif method == "DL":
        tau2 = max(0.0, (q - (k - 1)) / tr_p_fe)
        se_tau2 = math.sqrt((2 * (k - 1) + 4 * tau2 * tr_p_fe + 2 * tau2 ** 2 * tr_pp_fe)
                            / tr_p_fe ** 2)
    else:
        tau2, iterations = _reml(y, v)
        se_tau2 = math.sqrt(2.0 / _p_matrix_sums(1.0 / (v + tau2))[1])
    w = 1.0 / (v + tau2)
    mu = float(np.sum(w * y) / np.sum(w))
    se_mu = math.sqrt(1.0 / float(np.sum(w)))
    z = mu / se_mu
    p = float(2 * stats.norm.sf(abs(z)))
    se_pred = math.sqrt(se_mu ** 2 + tau2)
    if k == 1:
        i2, h2 = 0.0, 1.0
    elif method == "FE":
        i2 = max(0.0, 100 * (q - (k - 1)) / q) if q > 0 else 0.0
        h2 = q / (k - 1)
    else:
        vt = (k - 1) / tr_p_fe
        i2 = 100 * tau2 / (vt + tau2)
        h2 = tau2 / vt + 1
    sv = np.sqrt(v)
    studies = pd.DataFrame({
        "label": pd.Series(names, dtype="str"), "estimate": y, "variance": v, "se": sv,
        "ci_lower": y - crit * sv, "ci_upper": y + crit * sv, "weight": 100 * w / np.sum(w)})
    return MetaAnalysisResult(
        method=method, level=float(level), k=k, estimate=mu, se=se_mu, z=z, p=p,
        ci_lower=mu - crit * se_mu, ci_upper=mu + crit * se_mu,
        pi_lower=mu - crit * se_pred, pi_upper=mu + crit * se_pred, tau2=float(tau2),
        se_tau2=se_tau2, Q=q, df=k - 1, Q_p=q_p, I2=float(i2), H2=float(h2),
        iterations=iterations, studies=studies)
