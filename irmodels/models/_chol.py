"""Cholesky factor and solve of the deviance kernels through LAPACK directly.

``scipy.linalg.cholesky``/``cho_factor``/``cho_solve`` call the same LAPACK routines (``potrf``,
``potrs``) after argument checks and a batching wrapper that cost 10-15 us a call: a profile
or a bootstrap evaluates the deviance tens of thousands of times on factors of a few dozen
columns, where that is a tenth of the kernel. The results are the same arrays, bit for bit.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

__all__ = ["cho_inverse", "cho_solve_lower", "cholesky_lower"]


def cholesky_lower(a: np.ndarray, clean: bool = True) -> np.ndarray:
    """Lower Cholesky factor of the symmetric positive definite float64 matrix ``a``
    (``scipy.linalg.cholesky(a, lower=True, check_finite=False)``; ``clean=False`` leaves the
    strict upper triangle as it was, as ``cho_factor``). Raises ``numpy.linalg.LinAlgError``
    when ``a`` is not positive definite."""
    if a.size == 0:
        return np.empty_like(a, dtype=float)
    c, info = lapack.dpotrf(a, lower=1, clean=int(clean))
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor of the array is not positive "
                                    "definite")
    if info < 0:  # pragma: no cover - the arguments are ours
        raise ValueError(f"LAPACK reported an illegal value in {-info}-th argument on entry "
                         "to POTRF.")
    return c


def cho_solve_lower(c: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^-1 b`` from the lower Cholesky factor ``c`` of ``A`` (``scipy.linalg.cho_solve((c,
    True), b, check_finite=False)``)."""
    x, info = lapack.dpotrs(c, b, lower=1)
    if info != 0:  # pragma: no cover - the arguments are ours
        raise ValueError(f"illegal value in {-info}th argument of internal potrs")
    return x


def cho_inverse(a: np.ndarray) -> np.ndarray:
    """The inverse of the symmetric positive definite float64 matrix ``a`` from its Cholesky
    factor (LAPACK ``potrf`` then ``potri``: a third of the work of solving for the identity).
    Raises ``numpy.linalg.LinAlgError`` when ``a`` is not positive definite.

    >>> cho_inverse(np.array([[4.0, 2.0], [2.0, 3.0]])) @ np.array([[4.0, 2.0], [2.0, 3.0]])
    array([[1., 0.],
           [0., 1.]])
    """
    if a.size == 0:
        return np.empty_like(a, dtype=float)
    inv, info = lapack.dpotri(cholesky_lower(a, clean=False), lower=1)
    if info != 0:  # pragma: no cover - a positive definite factor has a nonzero diagonal
        raise np.linalg.LinAlgError(f"POTRI failed (info {info})")
    lower = np.tril(inv)  # potri writes the lower triangle; the upper is the factor's
    return lower + np.tril(lower, -1).T
