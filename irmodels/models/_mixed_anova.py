"""F tests of the fixed terms of a linear mixed model: ``MixedResult.anova(type=3, ddf=...)``.

Type III hypotheses (each term's effects vanish, averaged with equal weights over the levels of
the other factors: SAS's type III, lmerTest's ``anova(type = 3)``), tested by

- Satterthwaite's approximation for multi-df contrasts as lmerTest's ``contestMD`` (Kuznetsova,
  Brockhoff & Christensen, J. Stat. Softw. 82(13), 2017): the hypothesis ``L beta = 0`` is split
  into the eigen-contrasts of ``L C L'``, each with its Satterthwaite df ``nu_m``; ``F`` is the
  mean of their squared t statistics and the denominator df is ``2E / (E - q)`` with
  ``E = sum nu_m / (nu_m - 2)``;
- Kenward & Roger (Biometrics 53, 1997) as pbkrtest computes it (Halekoh & Hojsgaard,
  J. Stat. Softw. 59(9), 2014): the small-sample adjusted covariance of the fixed effects in
  the (linear) variance-component parametrisation, a scaled Wald F and its df.

References for the formulas: the project's docs/mixed.md, "F tests of fixed effects".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.special import fdtrc  # not scipy.stats: importing it costs a command ~0.5 s

from irmodels._display import ResultDisplay, TableAccess
from irmodels._threads import kernel_threads
from irmodels.errors import ModelError
from irmodels.models._design import covariate_values

if TYPE_CHECKING:  # pragma: no cover
    from irmodels.models.mixed import MixedResult

#: Columns of :class:`MixedAnovaResult` tables, in this order.
ANOVA_COLUMNS = ("F", "num_df", "den_df", "p")
#: Above this many observations Kenward-Roger (which needs n x n matrices) is refused.
KR_MAX_OBS = 6000


@dataclass(frozen=True, repr=False, eq=False)
class MixedAnovaResult(TableAccess, ResultDisplay):
    """Type III F tests of the fixed terms of a mixed model (see :meth:`MixedResult.anova`).

    Attributes
    ----------
    table : DataFrame
        Index ``term`` (fixed terms in formula order); columns ``F``, ``num_df``, ``den_df``,
        ``p``.
    ddf : {"satterthwaite", "kenward-roger"}
        The denominator-df method.
    model : str
        The formula of the fit.
    """

    table: pd.DataFrame
    ddf: str
    model: str
    type: int = 3

    def to_frame(self) -> pd.DataFrame:
        """The F tests, tidy: columns ``term, F, num_df, den_df, p``."""
        return self.table.reset_index()

    def _display_title(self) -> str:
        how = "Satterthwaite" if self.ddf == "satterthwaite" else "Kenward-Roger"
        return f"Type III F tests of fixed effects ({how} df): {self.model}"

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("F tests of fixed effects", self.table)]

    def __repr__(self) -> str:
        return (f"<MixedAnovaResult type {self.type}, {self.ddf} df, {len(self.table)} terms: "
                f"{self.model}>")


# --------------------------------------------------------------------------------------------
# type III hypotheses


def _dense_x(fit: MixedResult) -> np.ndarray:
    """The fixed-effects design matrix (n x p), dense."""
    pb = fit._state.problem
    X = np.zeros((pb.n, pb.p))
    rows = np.arange(pb.n)
    for j in range(pb.K, pb.cols.shape[1]):
        np.add.at(X, (rows, pb.cols[:, j] - pb.q), pb.vals[:, j])
    return X


def _term_columns(fit: MixedResult) -> dict[str, list[int]]:
    terms = fit._state.fixed_terms
    names = list(fit.fixed_estimates.index)
    out: dict[str, list[int]] = {t.name: [] for t in fit.spec.fixed}
    for j, t in enumerate(terms if terms is not None else ["(Intercept)"] * len(names)):
        if t in out:
            out[t].append(j)
    return out


def type3_hypotheses(fit: MixedResult) -> dict[str, np.ndarray]:
    """Contrast matrix (rows) of the type III hypothesis of every fixed term, as lmerTest.

    With one fixed term, lmerTest's type I contrasts: the term's rows of the unit upper
    triangular factor of the Doolittle decomposition of ``X'X``. With several, lmerTest's
    ``get_contrasts_type3``: ``L = (X^+ X_full)'`` with ``X_full`` the rank-deficient design of
    every level (combination) of every term, the columns of a term made orthogonal to those of
    the terms containing it (highest order first), the rows of the model's coefficients kept.
    The F statistic does not depend on the basis of the rows; the Satterthwaite denominator df
    of a multi-df hypothesis does, hence lmerTest's basis.
    """
    st = fit._state
    return type3_contrasts(fit.spec, list(fit.fixed_estimates.index), _term_columns(fit),
                           _dense_x(fit), st.codes, st.levels, st.data)


def type3_contrasts(spec: Any, names: list[str], cols: dict[str, list[int]], X: np.ndarray,
                    codes: dict[str, np.ndarray], levels: dict[str, list[str]],
                    data: pd.DataFrame) -> dict[str, np.ndarray]:
    """:func:`type3_hypotheses` from the parts of a fit (``cols``: the columns of ``X`` of
    each fixed term; ``codes``, ``levels``: the factors' level codes and labels), for any
    engine (the random-slopes one too)."""
    p = X.shape[1]
    terms = list(spec.fixed)
    if len(terms) <= 1 or p <= 1:
        R = np.linalg.cholesky(X.T @ X).T  # X'X = R'R, R upper
        U = R / np.diag(R)[:, None]
        return {t.name: U[cols[t.name]] for t in terms if cols[t.name]}
    full_parts = []
    full_names: list[str] = []
    if spec.intercept:
        full_parts.append(np.ones((X.shape[0], 1)))
        full_names.append("(Intercept)")
    numeric = {f for t in terms for f in getattr(t, "numeric", ())}
    if numeric:
        values = {f: covariate_values(data, f) for f in numeric}
    for t in terms:
        cats = [f for f in t.factors if f not in numeric]
        sizes = [len(levels[f]) for f in cats]
        cell = np.zeros(X.shape[0], dtype=np.int64)
        for f, sz in zip(cats, sizes):
            cell = cell * sz + codes[f]
        ncell = int(np.prod(sizes)) if cats else 1
        if ncell > 100_000:
            raise ModelError(f"anova(): the term {t.name} has {ncell} cells, too many")
        # lmerTest's model.matrix(~ 0 + term): a dummy per cell of the categorical factors,
        # times the values of the numeric ones
        weight = np.ones(X.shape[0])
        for f in t.factors:
            if f in numeric:
                weight = weight * values[f]
        M = np.zeros((X.shape[0], ncell))
        M[np.arange(X.shape[0]), cell] = weight
        full_parts.append(M)
        for combo in product(*[range(sz) for sz in sizes]):
            lv = dict(zip(cats, combo))
            full_names.append(":".join(f if f in numeric else f"{f}{levels[f][lv[f]]}"
                                       for f in t.factors))
    rdX = np.hstack(full_parts)
    L = np.linalg.pinv(X) @ rdX  # (p x r); lmerTest's L is its transpose
    L = L.T
    L[np.abs(L) < 1e-12 * max(1.0, float(np.abs(L).max()))] = 0.0
    keys = {t.key for t in terms}
    for t in sorted(terms, key=lambda t: -t.order):
        containing = [u for u in terms if u is not t and t.key < u.key and u.key in keys]
        if not containing or not cols[t.name]:
            continue
        Cc = L[:, [j for u in containing for j in cols[u.name]]]
        Y = L[:, cols[t.name]]
        coef = np.linalg.lstsq(Cc, Y, rcond=None)[0]
        resid = Y - Cc @ coef
        resid[np.abs(resid) < 1e-12] = 0.0
        L[:, cols[t.name]] = resid
    pos = {n: i for i, n in enumerate(full_names)}
    Lk = L[[pos[n] for n in names]]  # rows of the model's coefficients (p x p)
    out: dict[str, np.ndarray] = {}
    for t in terms:
        Lt = Lk[:, cols[t.name]].T
        out[t.name] = Lt[np.abs(Lt).sum(axis=1) > 1e-8]
    return out


# --------------------------------------------------------------------------------------------
# Satterthwaite (lmerTest's contestMD)


def ddf_from_nu(nu: np.ndarray) -> float:
    """lmerTest's ``get_Fstat_ddf``."""
    if nu.size == 1:
        return float(nu[0])
    if np.all(np.abs(nu - nu[0]) < 1e-8):
        return float(nu[0])
    if np.any(nu <= 2):
        return 2.0
    E = float(np.sum(nu / (nu - 2.0)))
    return 2.0 * E / (E - nu.size)


def satterthwaite_f(fit: MixedResult, L: np.ndarray) -> tuple[float, int, float]:
    """(F, numerator df, denominator df) of ``L beta = 0`` as lmerTest's ``contestMD``."""
    beta = fit.fixed_estimates.to_numpy() / fit._state.sigma  # F is invariant to the scale
    vb = fit._vcov_unit  # Var(beta) / sigma^2, the scale of fit._satterthwaite
    jac, acov = fit._satterthwaite
    VL = L @ vb @ L.T
    d, P = np.linalg.eigh(VL)
    order = np.argsort(d)[::-1]
    d, P = d[order], P[:, order]
    tol = max(np.sqrt(np.finfo(float).eps) * d[0], 0.0)
    pos = d > tol
    q = int(pos.sum())
    PtL = (P.T @ L)[:q]
    t2 = (PtL @ beta) ** 2 / d[:q]
    F = float(np.sum(t2) / q)
    g = np.einsum("ij,pjk,ik->ip", PtL, jac, PtL) / d[:q, None]  # relative: no d**2 underflow
    nu = 2.0 / np.einsum("ip,pq,iq->i", g, acov, g)
    return F, q, ddf_from_nu(nu)


# --------------------------------------------------------------------------------------------
# Kenward-Roger (pbkrtest's vcovAdj and .KR_adjust)


def kr_adjusted(fit: MixedResult) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """(Phi, PhiA, P list, W): pbkrtest's ``vcovAdj`` in the variance-component parametrisation.

    ``V = sum_k s_k^2 Z_k Z_k' + s^2 I``; the derivatives ``G_k = Z_k Z_k'`` (and ``I``) enter
    only through ``Z_k' V^-1`` (``m_k x n``), so besides ``V^-1`` no n x n matrix is formed:
    ``tr(G_r V^-1 G_s V^-1) = ||Z_r' V^-1 Z_s||_F^2``, ``P_r = -(Z_r'V^-1X)'(Z_r'V^-1X)`` and
    ``Q_rs = (Z_r'V^-1X)' (Z_r'V^-1Z_s) (Z_s'V^-1X)``.
    """
    st = fit._state
    pb = st.problem
    # in units of the residual variance (sigma = 1): Phi, PhiA are Var(beta) / sigma^2, and
    # the F statistic and df that kenward_roger_f forms from them (with beta / sigma) do not
    # depend on the unit; the response's own scale (1e90) would overflow V^-1's squares
    theta, sigma = st.theta, 1.0
    n, K = pb.n, pb.K
    X = _dense_x(fit)
    Z: list[sp.csr_matrix | None] = []
    V = np.eye(n) * sigma**2
    off = 0
    for k in range(K):
        size = pb.term_sizes[k]
        codes = pb.cols[:, k] - off
        off += size
        Zk = sp.csr_matrix((np.ones(n), (np.arange(n), codes)), shape=(n, size))
        Z.append(Zk)
        V += (sigma * theta[k]) ** 2 * (codes[:, None] == codes[None, :])
    Z.append(None)  # the residual: Z = I
    cho = sla.cho_factor(V, lower=True, check_finite=False)
    del V
    Vinv = sla.cho_solve(cho, np.eye(n), check_finite=False)
    A = [np.asarray(Zk.T @ Vinv) if Zk is not None else Vinv for Zk in Z]  # Z_k' V^-1
    AX = [a @ X for a in A]  # Z_k' V^-1 X
    Phi = np.linalg.inv(X.T @ (Vinv @ X))
    m = len(Z)

    def zvz(r: int, s: int) -> np.ndarray:  # Z_r' V^-1 Z_s
        Zs = Z[s]
        return A[r] if Zs is None else np.asarray((Zs.T @ A[r].T).T)

    PP = [-(ax.T @ ax) for ax in AX]
    Q = {}
    IE2 = np.zeros((m, m))
    for r in range(m):
        PhiPr = Phi @ PP[r]
        for s in range(r, m):
            B = zvz(r, s)
            Q[r, s] = AX[r].T @ B @ AX[s]
            ktr = float(np.sum(B * B))
            IE2[r, s] = IE2[s, r] = (ktr - 2.0 * float(np.sum(Phi * Q[r, s]))
                                     + float(np.sum(PhiPr * (PP[s] @ Phi))))
    PhiA, W = kr_adjust(Phi, IE2, Q, PP)
    return Phi, PhiA, PP, W


def kr_adjust(Phi: np.ndarray, IE2: np.ndarray, Q: Any, PP: Sequence[np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray]:
    """Kenward & Roger's adjusted covariance of the fixed effects (pbkrtest's ``vcovAdj``)
    from ``Phi`` (the unadjusted one), the expected information ``IE2`` of the variance
    parameters, and the ``Q[r, s]`` and ``P[r]`` terms; returns ``(PhiA, W)``, ``W`` the
    covariance of the variance parameters. Shared by the intercept and slope engines."""
    m = len(PP)
    ev = np.linalg.eigvalsh(IE2)
    W = 2.0 * (np.linalg.inv(IE2) if np.min(np.abs(ev)) > 1e-10 else np.linalg.pinv(IE2))
    W = (W + W.T) / 2
    U = np.zeros_like(Phi)
    for r in range(m - 1):
        for s in range(r + 1, m):
            U += W[r, s] * (Q[r, s] - PP[r] @ Phi @ PP[s])
    U = U + U.T
    for r in range(m):
        U += W[r, r] * (Q[r, r] - PP[r] @ Phi @ PP[r])
    return Phi + 2.0 * Phi @ U @ Phi, W


def kenward_roger_f(L: np.ndarray, beta: np.ndarray, Phi: np.ndarray, PhiA: np.ndarray,
                    PP: list[np.ndarray], W: np.ndarray) -> tuple[float, int, float]:
    """(F, numerator df, denominator df) of ``L beta = 0`` as pbkrtest's ``.KR_adjust``."""
    Theta = L.T @ np.linalg.solve(L @ Phi @ L.T, L)
    TP = Theta @ Phi
    m = len(PP)
    A1 = A2 = 0.0
    for i in range(m):
        ui = TP @ PP[i] @ Phi
        for j in range(i, m):
            e = 1.0 if i == j else 2.0
            uj = TP @ PP[j] @ Phi
            A1 += e * W[i, j] * np.trace(ui) * np.trace(uj)
            A2 += e * W[i, j] * float(np.sum(ui * uj.T))
    q = int(np.linalg.matrix_rank(L))
    B = (A1 + 6.0 * A2) / (2.0 * q)
    g = ((q + 1) * A1 - (q + 4) * A2) / ((q + 2) * A2)
    den = 3.0 * q + 2.0 * (1.0 - g)
    c1, c2, c3 = g / den, (q - g) / den, (q + 2 - g) / den
    V0 = 1.0 + c1 * B
    V1 = 1.0 - c2 * B
    V2 = 1.0 - c3 * B
    V0 = 0.0 if abs(V0) < 1e-10 else V0
    ratio = (1.0 - A2 / q) / V1 if V1 != 0 else 0.0
    rho = 1.0 / q * ratio**2 * V0 / V2
    df2 = 4.0 + (q + 2.0) / (q * rho - 1.0)
    # pbkrtest: no scaling where df2 - 2 (the denominator) is about 0 (this read df2 - 4,
    # leaving F unscaled, off by about 1 - A2 / q twice over, for df2 within 0.01 of 4)
    scaling = 1.0 if abs(df2 - 2.0) < 1e-2 else df2 * (1.0 - A2 / q) / (df2 - 2.0)
    Lb = L @ beta
    wald = float(Lb @ np.linalg.solve(L @ PhiA @ L.T, Lb))
    return scaling * wald / q, q, float(df2)


# --------------------------------------------------------------------------------------------


def anova(fit: MixedResult, type: int = 3, ddf: str = "satterthwaite") -> MixedAnovaResult:
    """Type III F tests of the fixed terms (see :meth:`MixedResult.anova`)."""
    if type != 3:
        raise ModelError(f"anova(type=...) supports type=3 (lmerTest's default); got {type!r}")
    key = str(ddf).lower().replace("_", "-")
    if key not in ("satterthwaite", "kenward-roger"):
        raise ModelError(
            f"ddf must be 'satterthwaite' or 'kenward-roger'; got {ddf!r}"
        )
    hyps = type3_hypotheses(fit)
    if not hyps:
        raise ModelError(
            f"the model {fit.spec} has no fixed terms to test (only an intercept); add a fixed "
            "term such as system"
        )
    rows = []
    if key == "satterthwaite":
        for L in hyps.values():
            rows.append(satterthwaite_f(fit, L))
    else:
        if fit.method != "REML":
            raise ModelError(
                "Kenward-Roger df are defined for REML fits (pbkrtest and lmerTest refuse ML "
                "fits); refit with method='REML' or use ddf='satterthwaite'."
            )
        if fit.residual is not None:
            raise ModelError(
                "Kenward-Roger df are available for homoscedastic fits only (pbkrtest works "
                "on lmer fits); use ddf='satterthwaite' for a heteroscedastic fit."
            )
        if fit.n_obs > KR_MAX_OBS:
            raise ModelError(
                f"Kenward-Roger needs n x n matrices; {fit.n_obs} observations exceed the "
                f"limit of {KR_MAX_OBS}. Use ddf='satterthwaite' (the two agree closely on "
                "large designs)."
            )
        with kernel_threads(fit.n_obs):  # its n x n products: BLAS threads by size
            Phi, PhiA, PP, W = kr_adjusted(fit)  # in units of sigma^2
        beta = fit.fixed_estimates.to_numpy() / fit._state.sigma
        for L in hyps.values():
            rows.append(kenward_roger_f(L, beta, Phi, PhiA, PP, W))
    return f_table(rows, list(hyps), key, fit.spec)


def f_table(rows: Sequence[tuple[float, float, float]], terms: list[str], ddf: str,
            spec: Any) -> MixedAnovaResult:
    """The :class:`MixedAnovaResult` of F tests ``rows`` (``F, num_df, den_df`` per term);
    shared by the intercept and slope engines."""
    F = np.array([r[0] for r in rows])
    num = np.array([r[1] for r in rows], dtype=float)
    den = np.array([r[2] for r in rows])
    with np.errstate(invalid="ignore"):
        # = stats.f.sf(F, num, den): fdtrc, and 1 at F <= 0 (the bottom of the support)
        p = np.where((F <= 0) & (num > 0) & (den > 0), 1.0, fdtrc(num, den, F))
    table = pd.DataFrame({"F": F, "num_df": num.astype(int), "den_df": den, "p": p},
                         index=pd.Index(terms, name="term"))
    return MixedAnovaResult(table=table, ddf=ddf, model=str(spec))
