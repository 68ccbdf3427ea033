"""Write ``copula_families.json``: maximum likelihood fits of the bivariate copula families of
``irmodels.replicates._copulas`` by an independent implementation, pyvinecopulib (the C++
vinecopulib), on real TREC pairs.

R's VineCopula (the paper's implementation) does not install here (no Debian package, and no
CRAN access); pyvinecopulib is by one of VineCopula's authors and uses the same families,
parameterisations and rotations. Its bounds differ in places (Gumbel <= 50 against
VineCopula's 17, the t's nu <= 50 against 30): the test compares a fit only where the
reference's parameters lie inside VineCopula's bounds.

Pairs: the first 8 runs of the AP matrices of adhoc5 and adhoc8 (28 pairs each; duplicates
kept), pseudo-observations ``rank / (n + 1)`` with ties broken by a seeded random key
(numpy ``default_rng(2019)``), stored in the JSON so the test fits exactly these numbers.
For every pair and family (VineCopula numbers, rotations included): pyvinecopulib's MLE
(``Bicop(family, rotation).fit(u, FitControlsBicop(parametric_method="mle"))``): the
parameters and the log-likelihood; and ``mle_*``: the maximum of pyvinecopulib's
log-likelihood over VineCopula's bounds by a plain golden-section search here (pyvinecopulib's
own optimiser stops short of it by up to 0.8). The selected family (smallest AIC among independence and
the families of the sign of Kendall's tau, no pre-selection) is derived from these fits
by the test. Also, for the docs: on every pair of the first 20 runs of each of
adhoc5-8, pyvinecopulib's AIC selection among ALL its parametric families (BB1, BB6, BB7,
BB8 too, no pre-selection) and among the implemented ones only, to count how often a BB
family would win.

Run with numpy < 2 and pyvinecopulib 0.6.5 (its wheels are built against numpy 1), from
``tests/reference/``: ``IRM_DATA_MIRROR=/work/shared/data/ir-scores python
copula_families.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyvinecopulib as pv

FAM = {1: ("gaussian", 0), 2: ("student", 0), 3: ("clayton", 0), 4: ("gumbel", 0),
       5: ("frank", 0), 6: ("joe", 0), 13: ("clayton", 180), 14: ("gumbel", 180),
       16: ("joe", 180), 23: ("clayton", 90), 24: ("gumbel", 90), 26: ("joe", 90),
       33: ("clayton", 270), 34: ("gumbel", 270), 36: ("joe", 270)}


def matrix(collection: str) -> np.ndarray:
    path = Path(os.environ["IRM_DATA_MIRROR"]) / f"{collection}_ap.csv"
    return np.genfromtxt(path, delimiter=",", skip_header=1)


def pobs(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    n = X.shape[0]
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        key = rng.random(n)
        order = np.lexsort((key, X[:, j]))
        r = np.empty(n)
        r[order] = np.arange(1, n + 1)
        out[:, j] = r / (n + 1)
    return out


# VineCopula's bounds of the MLE (R/BiCopEst.R), in pyvinecopulib's (positive) parameters
BOUNDS = {"gaussian": (-0.9999, 0.9999), "clayton": (1e-4, 28.0), "gumbel": (1.0001, 17.0),
          "frank": (-35.0, 35.0), "joe": (1.0001, 30.0)}
GOLD = (5 ** 0.5 - 1) / 2


def golden(f, lo: float, hi: float, tol: float) -> float:
    """The maximum of f on [lo, hi] by golden-section search, the bounds included."""
    a, b = lo, hi
    while b - a > tol * (1 + abs(a)):
        c, d = b - GOLD * (b - a), a + GOLD * (b - a)
        if f(c) >= f(d):
            b = d
        else:
            a = c
    x = (a + b) / 2
    return max((x, lo, hi), key=f)


def loglik(name: str, rot: int, par: list[float], u: np.ndarray) -> float:
    b = pv.Bicop(family=getattr(pv.BicopFamily, name), rotation=rot,
                 parameters=np.array([[v] for v in par]))
    ll = b.loglik(u)
    return ll if np.isfinite(ll) else -1e10


def fit(fam: int, u: np.ndarray) -> dict:
    """pyvinecopulib's own MLE, and the maximum of pyvinecopulib's log-likelihood over
    VineCopula's bounds (golden-section search; for the t, over nu of the maximum over
    rho): pyvinecopulib's optimiser stops up to 0.8 log-likelihood units short of it."""
    name, rot = FAM[fam]
    b = pv.Bicop(family=getattr(pv.BicopFamily, name), rotation=rot)
    b.fit(u, pv.FitControlsBicop(parametric_method="mle"))
    p = b.parameters.ravel().tolist()
    if name == "student":
        def rho_at(nu: float) -> float:
            return golden(lambda r: loglik(name, rot, [r, nu], u), -0.9999, 0.9999, 1e-10)
        nu = golden(lambda v: loglik(name, rot, [rho_at(v), v], u), 2.0001, 30.0, 1e-8)
        m = [rho_at(nu), nu]
    else:
        lo, hi = BOUNDS[name]
        m = [golden(lambda t: loglik(name, rot, [t], u), lo, hi, 1e-11)]
    sign = -1 if rot in (90, 270) else 1  # VineCopula's 90 and 270 degree pars are negative
    return {"par": sign * p[0], "par2": p[1] if len(p) > 1 else 0.0, "loglik": b.loglik(u),
            "mle_par": sign * m[0], "mle_par2": m[1] if len(m) > 1 else 0.0,
            "mle_loglik": loglik(name, rot, m, u)}


def main() -> None:
    rng = np.random.default_rng(2019)
    pairs = []
    for coll in ("adhoc5", "adhoc8"):
        U = pobs(matrix(coll)[:, :8], rng)
        for i in range(8):
            for j in range(i + 1, 8):
                u = np.column_stack([U[:, i], U[:, j]])
                pairs.append({"collection": coll, "i": i, "j": j,
                              "u1": u[:, 0].tolist(), "u2": u[:, 1].tolist(),
                              "fits": {str(f): fit(f, u) for f in FAM}})
    # how often a BB family wins by AIC (no pre-selection) on real pairs
    every = [pv.BicopFamily.indep, pv.BicopFamily.gaussian, pv.BicopFamily.student,
             pv.BicopFamily.clayton, pv.BicopFamily.gumbel, pv.BicopFamily.frank,
             pv.BicopFamily.joe]
    bb = [pv.BicopFamily.bb1, pv.BicopFamily.bb6, pv.BicopFamily.bb7, pv.BicopFamily.bb8]
    wins: dict[str, int] = {}
    n_pairs = 0
    for coll in ("adhoc5", "adhoc6", "adhoc7", "adhoc8"):
        U = pobs(matrix(coll)[:, :20], rng)
        for i in range(20):
            for j in range(i + 1, 20):
                u = np.column_stack([U[:, i], U[:, j]])
                b = pv.Bicop()
                b.select(u, pv.FitControlsBicop(family_set=every + bb, selection_criterion="aic",
                                                preselect_families=False))
                key = f"{b.family.name}{b.rotation or ''}"
                wins[key] = wins.get(key, 0) + 1
                n_pairs += 1
    out = {"source": "tests/reference/copula_families.py", "pyvinecopulib": pv.__version__,
           "numpy": np.__version__, "pairs": pairs,
           "bb_share": {"n_pairs": n_pairs, "selected": dict(sorted(wins.items()))}}
    path = Path(__file__).resolve().parent / "copula_families.json"
    path.write_text(json.dumps(out, indent=0) + "\n")


if __name__ == "__main__":
    main()
