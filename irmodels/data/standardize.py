"""Per-topic score standardization: fit factors on reference systems, apply them anywhere.

Topics differ in difficulty: a score of 0.3 is excellent on one topic and poor on another.
Standardization rescales each topic by the mean ``mu_t`` and the standard deviation
``sigma_t`` of a set of *reference* systems on it, ``z = (x - mu_t) / sigma_t``, and may map
``z`` into [0, 1]. The factors are fitted once, saved or published (also in trec_eval's
``-Z`` zscores format) and applied to new systems or collections.

References: docs/methods.md: "Score standardization"; Webber, Moffat & Zobel, "Score Standardization for
Inter-collection Comparison of Retrieval Systems", SIGIR 2008; Sakai, "A Simple and
Effective Approach to Score Standardisation", ICTIR 2016 (U-std); Urbano, Lima & Hanjalic,
"A New Perspective on Score Standardization", SIGIR 2019 (E-std).
"""

from __future__ import annotations

import io
import json
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from irmodels._display import ResultDisplay
from irmodels._safeio import atomic_file, write_text
from irmodels._validate import check_int
from irmodels.data.frame import check_finite_scores, natural_key, require_columns
from irmodels.data.io import EXACT_FLOATS
from irmodels.errors import DataFormatError, DataQualityWarning, DesignError

__all__ = ["Standardizer", "StandardizationDiagnostics", "read_zscores", "write_zscores"]

Method = Literal["z", "normal", "t1", "uniform", "ecdf"]
_METHODS = ("z", "normal", "t1", "uniform", "ecdf")
_KEY_ORDER = ("collection", "measure", "topic")
_CSV_MAGIC = "# irmodels-standardizer "


def _key_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in _KEY_ORDER if c in df.columns]


def _key_index(df: pd.DataFrame, keys: Sequence[str]) -> pd.MultiIndex:
    return pd.MultiIndex.from_arrays([df[k].astype(str).to_numpy() for k in keys], names=list(keys))


def _scaled_std(x: np.ndarray, ddof: int) -> float:
    """The SD of ``x`` computed on ``x / max|x|``: squares of scores near 1e-156 are subnormal and
    lose digits (a z score then passed Samuelson's bound), while the SD is scale-equivariant."""
    scale = float(np.max(np.abs(x)))
    return scale * float(np.std(x / scale, ddof=ddof)) if scale > 0 else 0.0


@dataclass(frozen=True)
class StandardizationDiagnostics(ResultDisplay):
    """What :meth:`Standardizer.diagnostics` found.

    Attributes
    ----------
    zero_sd : DataFrame
        Topics (with their measure/collection keys) whose reference scores are all equal:
        columns ``<keys>, mu, n``. Every score on them standardizes to ``z = 0``.
    beyond_bound : DataFrame
        Scores whose ``|z|`` exceeds the largest value a reference score can reach among ``n``
        scores (Samuelson's inequality: ``(n - 1)/sqrt(n)`` with the sample SD, ``sqrt(n - 1)``
        with the population SD): a sign that the system is far outside the reference pool. Columns ``<keys>, system, score, z, bound``.
    """

    zero_sd: pd.DataFrame
    beyond_bound: pd.DataFrame

    @property
    def ok(self) -> bool:
        """True when nothing was flagged."""
        return self.zero_sd.empty and self.beyond_bound.empty

    def to_frame(self) -> pd.DataFrame:
        """Every flag, one row each: column ``flag`` (``"zero_sd"`` or ``"beyond_bound"``), then
        the columns of :attr:`zero_sd` and :attr:`beyond_bound`."""
        parts = [t.assign(flag=name) for name, t in
                 (("zero_sd", self.zero_sd), ("beyond_bound", self.beyond_bound)) if len(t)]
        if not parts:
            cols = ["flag", *dict.fromkeys([*self.zero_sd.columns, *self.beyond_bound.columns])]
            return pd.DataFrame(columns=cols)
        out = pd.concat(parts, ignore_index=True)
        return out[["flag", *[c for c in out.columns if c != "flag"]]]

    def _display_title(self) -> str:
        return (
            f"Standardization diagnostics: {len(self.zero_sd)} topic(s) with sigma = 0, "
            f"{len(self.beyond_bound)} score(s) beyond the sqrt(n-1) bound"
        )

    def _display_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Topics with sigma = 0", self.zero_sd),
                ("Scores beyond sqrt(n - 1)", self.beyond_bound)]

    def __repr__(self) -> str:
        return (f"<StandardizationDiagnostics zero_sd={len(self.zero_sd)}, "
                f"beyond_bound={len(self.beyond_bound)}>")


class Standardizer:
    """Per-topic standardization fitted on reference systems.

    Parameters
    ----------
    method : {"normal", "z", "t1", "uniform", "ecdf"}
        ``"z"``: ``z = (x - mu_t) / sigma_t``. ``"normal"`` (default, Webber et al. 2008):
        ``Phi(z)``, the standard normal CDF. ``"t1"``: the CDF of Student's t with one degree
        of freedom (Cauchy), ``1/2 + arctan(z)/pi``. ``"uniform"`` (Sakai's U-std):
        ``A z + B`` clipped to [0, 1]. ``"ecdf"`` (E-std): the empirical CDF of the
        reference scores on the topic, ``#{reference <= x} / n``.
    virtual : bool
        Add two virtual reference systems scoring 0 and 1 on every topic (smoothing: no topic
        has ``sigma = 0`` and the factors do not depend as much on a weak pool).
    A, B : float
        Slope and intercept of ``"uniform"`` (Sakai 2016 uses 0.15 and 0.5).
    ddof : int
        Delta degrees of freedom of ``sigma_t``: 1 (default) for the sample standard deviation
        (divisor ``n - 1``), as Webber, Moffat & Zobel (2008) and Urbano et al. (2019) compute
        it; 0 for the population standard deviation (divisor ``n``), the default of irmodels
        0.1. Factors read from a file (:meth:`from_factors`, :func:`read_zscores`) are used as
        given.

    Attributes
    ----------
    factors : DataFrame
        After :meth:`fit`: indexed by topic (by ``measure, topic`` or ``collection, measure,
        topic`` when the data have those columns), columns ``mu`` (mean), ``sigma``
        (SD with divisor ``n - ddof``) and ``n`` (reference scores, virtual ones included).
    reference : list of str
        The reference systems used.

    Notes
    -----
    ``mu_t`` and ``sigma_t`` are the mean and the standard deviation (divisor ``n - ddof``,
    the sample SD by default) of the reference systems' scores on topic ``t`` (every row
    counts, so shards or samples of a reference system are pooled); ``z = 0`` where
    ``sigma_t = 0``, as trec_eval does. A topic whose reference scores are all equal has
    ``mu_t`` equal to that score and ``sigma_t = 0`` exactly (not a rounding residue such as
    1e-16), and is listed by :meth:`diagnostics`. A topic with ``n <= ddof`` reference scores
    has no standard deviation: ``sigma_t = 0`` there, with a :class:`DataQualityWarning`. A
    topic unknown to the factors raises at :meth:`transform` time unless ``unknown="drop"``
    (those rows are then dropped with a :class:`DataQualityWarning`); scores are never left
    missing, to keep the long-frame contract.

    Examples
    --------
    >>> import pandas as pd, irmodels as irm
    >>> f = irm.from_wide(pd.DataFrame({"a": [.2, .6], "b": [.4, .7], "c": [.6, .8]}))
    >>> s = irm.Standardizer(method="z").fit(f, reference=["a", "b"])
    >>> s.factors.round(3)
            mu  sigma  n
    topic
    1      0.3   0.141  2
    2      0.65  0.071  2
    >>> s.transform(f).round(3)
      topic system  score
    0     1      a -0.707
    1     1      b  0.707
    2     1      c  2.121
    3     2      a -0.707
    4     2      b  0.707
    5     2      c  2.121
    >>> irm.Standardizer(ddof=0).fit(f).transform(f)["score"].round(4).tolist()
    [0.1103, 0.5, 0.8897, 0.1103, 0.5, 0.8897]
    >>> irm.Standardizer().fit(f).transform(f)["score"].round(4).tolist()
    [0.1587, 0.5, 0.8413, 0.1587, 0.5, 0.8413]
    """

    def __init__(
        self,
        method: Method = "normal",
        *,
        virtual: bool = False,
        A: float = 0.15,
        B: float = 0.5,
        ddof: int = 1,
    ) -> None:
        if method not in _METHODS:
            raise DesignError(
                f"unknown standardization method {method!r}; choose one of {', '.join(_METHODS)}"
            )
        if not (np.isfinite(A) and np.isfinite(B)) or A <= 0:
            raise DesignError(f"A must be positive and B finite; got A={A!r}, B={B!r}")
        self.method: str = method
        self.virtual = bool(virtual)
        self.A = float(A)
        self.B = float(B)
        self.ddof = check_int(ddof, "ddof", low=0, high=1)
        self._factors: pd.DataFrame | None = None
        self._keys: list[str] = []
        self._scores: dict[tuple[str, ...], np.ndarray] = {}
        self.reference: list[str] = []
        self._fit_data: pd.DataFrame | None = None

    # ------------------------------------------------------------------ fitting
    def fit(self, frame: pd.DataFrame, *, reference: Sequence[str] | int | None = None
            ) -> Standardizer:
        """Fit the per-topic factors on the reference systems of ``frame``.

        Parameters
        ----------
        frame : DataFrame
            Long frame (``topic, system, score``; ``measure`` and ``collection`` columns make
            the factors per measure and collection).
        reference : None, sequence of str or int
            All systems (None), these systems, or the ``k`` systems with the highest mean
            score over the frame.

        Returns
        -------
        Standardizer
            ``self``, fitted.

        Raises
        ------
        DataFormatError
            A missing (NaN) or infinite score (of any system).
        """
        require_columns(frame, ["topic", "system", "score"])
        # a NaN would make its topic's mu and sigma NaN (every score there then maps to z = 0)
        check_finite_scores(frame, "Standardizer.fit")
        systems = pd.Series(frame["system"].astype(str))
        all_systems = sorted(systems.unique(), key=natural_key)
        if reference is None:
            ref = all_systems
        elif isinstance(reference, (int, np.integer)) and not isinstance(reference, bool):
            if not 1 <= reference <= len(all_systems):
                raise DesignError(
                    f"reference={reference} top systems requested but the data have "
                    f"{len(all_systems)}; give a number between 1 and {len(all_systems)}."
                )
            means = frame.assign(system=systems).groupby("system")["score"].mean()
            ranked = means.sort_values(ascending=False, kind="mergesort")
            ref = sorted(ranked.index[: int(reference)], key=natural_key)
        elif isinstance(reference, str):
            raise DesignError(
                f"reference must be a list of systems or a number; got the string {reference!r}. "
                f"Wrap it in a list: reference=[{reference!r}]."
            )
        else:
            ref = [str(s) for s in reference]  # type: ignore[union-attr]
            unknown = [s for s in ref if s not in set(all_systems)]
            if unknown:
                raise DataFormatError(
                    f"unknown reference system(s) {unknown[:5]}; the data have "
                    f"{len(all_systems)} systems, e.g. {all_systems[:5]}."
                )
            if not ref:
                raise DesignError("the reference list is empty; name at least one system")
        rows = frame.loc[systems.isin(set(ref)).to_numpy()]
        keys = _key_columns(frame)
        idx = _key_index(rows, keys)
        values = rows["score"].to_numpy(dtype=float)
        order = np.lexsort([idx.codes[i] for i in reversed(range(len(keys)))])
        codes = np.ravel_multi_index([c[order] for c in idx.codes], [len(lv) for lv in idx.levels])
        _, starts = np.unique(codes, return_index=True)
        groups = np.split(values[order], starts[1:])
        labels = [tuple(idx[order[s]]) for s in starts]
        scores: dict[tuple[str, ...], np.ndarray] = {}
        for lab, g in zip(labels, groups):
            if self.virtual:
                g = np.concatenate([g, [0.0, 1.0]])
            scores[lab] = np.sort(g)
        labels = sorted(labels, key=lambda t: tuple(natural_key(v) for v in t))
        # a topic whose reference scores are all equal has mu = that score and sigma = 0
        # exactly (as R's mean and sd give): np.mean of six 0.7 is 0.7000000000000001, and the
        # SD about it 1.2e-16, which would turn the zero-SD topic into z = -0.91 everywhere
        flat = [scores[lab][0] == scores[lab][-1] for lab in labels]  # sorted: ptp == 0
        mu = np.array([scores[lab][0] if fl else scores[lab].mean()
                       for lab, fl in zip(labels, flat)])
        n = np.array([len(scores[lab]) for lab in labels], dtype=np.int64)
        short = n <= self.ddof
        sigma = np.array([0.0 if k <= self.ddof or fl else _scaled_std(scores[lab], self.ddof)
                          for lab, k, fl in zip(labels, n, flat)])
        if short.any():
            names = [" ".join(lab) for lab, bad in zip(labels, short) if bad]
            warnings.warn(
                f"{short.sum()} topic(s) have a single reference score, so no sample standard "
                f"deviation (e.g. {names[:3]}); their sigma is 0 and their z scores 0. Use more "
                "reference systems, virtual=True, or ddof=0.",
                DataQualityWarning, stacklevel=2)
        index = pd.MultiIndex.from_tuples(labels, names=keys) if len(keys) > 1 else pd.Index(
            [lab[0] for lab in labels], name=keys[0]
        )
        self._factors = pd.DataFrame({"mu": mu, "sigma": sigma, "n": n}, index=index)
        self._keys = keys
        self._scores = scores
        self.reference = list(ref)
        self._fit_data = frame.loc[systems.isin(set(ref)).to_numpy()].reset_index(drop=True)
        return self

    @classmethod
    def from_factors(
        cls,
        factors: pd.DataFrame,
        *,
        method: Method = "z",
        A: float = 0.15,
        B: float = 0.5,
    ) -> Standardizer:
        """A standardizer from published factors (e.g. :func:`read_zscores`).

        ``factors`` has columns ``mu`` and ``sigma`` (``n`` optional) and the keys (``topic``,
        optionally ``measure``, ``collection``) as columns or index levels. ``"ecdf"`` needs
        the reference scores themselves and is not available from factors.
        """
        if method == "ecdf":
            raise DesignError(
                "the ecdf method needs the reference scores, which factors do not hold; fit it "
                "on the reference data, or save/load it as JSON."
            )
        df = factors.reset_index() if any(n in _KEY_ORDER for n in factors.index.names) else factors
        require_columns(df, ["topic", "mu", "sigma"], "factors")
        keys = _key_columns(df)
        out = cls(method, A=A, B=B)
        n = df["n"].to_numpy() if "n" in df.columns else np.zeros(len(df), dtype=np.int64)
        index = _key_index(df, keys) if len(keys) > 1 else pd.Index(
            df["topic"].astype(str).to_numpy(), name="topic"
        )
        if index.has_duplicates:
            raise DataFormatError(f"the factors repeat key(s) {list(index[index.duplicated()][:3])}")
        out._factors = pd.DataFrame(
            {"mu": df["mu"].to_numpy(float), "sigma": df["sigma"].to_numpy(float),
             "n": np.asarray(n, dtype=np.int64)},
            index=index,
        )
        if (out._factors["sigma"] < 0).any() or out._factors[["mu", "sigma"]].isna().any().any():
            raise DataFormatError("factors have a negative or missing sigma or mu")
        out._keys = keys
        return out

    # ------------------------------------------------------------------ applying
    @property
    def factors(self) -> pd.DataFrame:
        """Per-topic ``mu, sigma, n`` (a copy)."""
        return self._require_fit().copy()

    def _require_fit(self) -> pd.DataFrame:
        if self._factors is None:
            raise DesignError("the standardizer is not fitted; call .fit(frame) first")
        return self._factors

    def _lookup(self, frame: pd.DataFrame, unknown: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        factors = self._require_fit()
        absent = [k for k in self._keys if k not in frame.columns]
        if absent:
            raise DataFormatError(
                f"the factors are per ({', '.join(self._keys)}) but the data have no "
                f"{', '.join(repr(a) for a in absent)} column; add it (e.g. "
                f"frame.assign({absent[0]}=...)) or fit the factors on data without it."
            )
        require_columns(frame, ["score"], "the data to standardize")
        keys_here = _key_index(frame, self._keys)
        fidx = factors.index if isinstance(factors.index, pd.MultiIndex) else pd.MultiIndex.from_arrays(
            [factors.index], names=self._keys
        )
        pos = fidx.get_indexer(keys_here)
        missing = pos < 0
        if missing.any():
            bad = sorted({tuple(k) for k in keys_here[missing]})
            show = ", ".join("/".join(b) for b in bad[:5])
            if unknown == "raise":
                raise DataFormatError(
                    f"{len(bad)} {'/'.join(self._keys)} key(s) have no factors, e.g. {show}; the "
                    f"factors cover {len(factors)}. Fit on data with these topics, or pass "
                    "unknown='drop' to drop their rows."
                )
            warnings.warn(
                f"dropped {int(missing.sum())} row(s) of {len(bad)} topic(s) without factors "
                f"(e.g. {show})",
                DataQualityWarning,
                stacklevel=3,
            )
            frame = frame.loc[~missing].reset_index(drop=True)
            pos = pos[~missing]
        return frame, pos, keys_here[~missing] if missing.any() else keys_here

    def _z(self, x: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sigma > 0, (x - mu) / np.where(sigma > 0, sigma, 1.0), 0.0)
        return z

    def transform(
        self, frame: pd.DataFrame, *, unknown: Literal["raise", "drop"] = "raise"
    ) -> pd.DataFrame:
        """Standardize the scores of ``frame`` (any systems) with the fitted factors.

        Parameters
        ----------
        frame : DataFrame
            Long frame with the key columns the factors were fitted with.
        unknown : {"raise", "drop"}
            A topic without factors raises :class:`DataFormatError`, or its rows are dropped
            with a :class:`DataQualityWarning`.

        Returns
        -------
        DataFrame
            A copy of ``frame`` with ``score`` replaced by the standardized score.

        Raises
        ------
        DataFormatError
            A topic without factors (with ``unknown="raise"``), a missing (NaN) or infinite
            score (in a row that is kept).
        """
        if unknown not in ("raise", "drop"):
            raise DesignError(f"unknown must be 'raise' or 'drop'; got {unknown!r}")
        frame, pos, _ = self._lookup(frame, unknown)
        check_finite_scores(frame, "Standardizer.transform")  # rows of unknown topics: as before
        f = self._require_fit()
        x = frame["score"].to_numpy(dtype=float)
        mu = f["mu"].to_numpy()[pos]
        sigma = f["sigma"].to_numpy()[pos]
        if self.method == "ecdf":
            out = np.empty(len(x))
            fidx = f.index
            for p in np.unique(pos):
                sel = pos == p
                lab = fidx[p] if isinstance(fidx, pd.MultiIndex) else (fidx[p],)
                ref = self._scores[tuple(str(v) for v in lab)]
                out[sel] = np.searchsorted(ref, x[sel], side="right") / len(ref)
        else:
            z = self._z(x, mu, sigma)
            if self.method == "z":
                out = z
            elif self.method == "normal":
                out = stats.norm.cdf(z)
            elif self.method == "t1":
                out = stats.t.cdf(z, 1)
            else:
                out = np.clip(self.A * z + self.B, 0.0, 1.0)
        result = frame.copy()
        result["score"] = np.asarray(out, dtype=float)
        return result

    def fit_transform(
        self, frame: pd.DataFrame, *, reference: Sequence[str] | int | None = None
    ) -> pd.DataFrame:
        """:meth:`fit` then :meth:`transform` the same frame."""
        return self.fit(frame, reference=reference).transform(frame)

    def diagnostics(self, frame: pd.DataFrame | None = None) -> StandardizationDiagnostics:
        """Topics with ``sigma = 0`` and scores beyond Samuelson's bound on ``|z|``.

        Parameters
        ----------
        frame : DataFrame, optional
            Scores to check (e.g. new systems); default the reference scores of the fit, which
            by Samuelson's inequality never exceed the bound.

        Examples
        --------
        >>> import pandas as pd, irmodels as irm
        >>> ref = irm.from_wide(pd.DataFrame({"a": [.2, .5], "b": [.4, .5]}))
        >>> new = irm.from_wide(pd.DataFrame({"x": [.9, .5]}))
        >>> d = irm.Standardizer("z").fit(ref).diagnostics(new)
        >>> d.zero_sd
          topic   mu  n
        0     2  0.5  2
        >>> d.beyond_bound.round(3)
          topic system  score    z  bound
        0     1      x    0.9  4.243  0.707
        """
        f = self._require_fit()
        if frame is None:
            if self._fit_data is None:
                frame = pd.DataFrame(columns=self._keys + ["system", "score"])
            else:
                frame = self._fit_data
        zero = f[f["sigma"] == 0].reset_index()[self._keys + ["mu", "n"]].reset_index(drop=True)
        if len(frame):
            frame, pos, _ = self._lookup(frame, "drop")
            check_finite_scores(frame, "Standardizer.diagnostics")
        else:
            pos = np.zeros(0, dtype=np.int64)
        x = frame["score"].to_numpy(dtype=float)
        mu, sigma = f["mu"].to_numpy()[pos], f["sigma"].to_numpy()[pos]
        n = f["n"].to_numpy()[pos].astype(float)
        z = self._z(x, mu, sigma)
        # Samuelson's inequality: |z| <= sqrt(n - 1) with the population SD, (n - 1)/sqrt(n)
        # with the sample SD, for every score of the reference pool itself
        bound = np.sqrt(np.maximum(n - 1, 0)) if self.ddof == 0 else (
            np.maximum(n - 1, 0) / np.sqrt(np.maximum(n, 1)))
        flag = (np.abs(z) > bound + 1e-12) & (n > 0)
        cols = self._keys + (["system"] if "system" in frame.columns else [])
        beyond = frame.loc[flag, cols].astype(str).reset_index(drop=True)
        beyond["score"] = x[flag]
        beyond["z"] = z[flag]
        beyond["bound"] = bound[flag]
        return StandardizationDiagnostics(zero_sd=zero, beyond_bound=beyond)

    # ------------------------------------------------------------------ persistence
    def _meta(self) -> dict[str, Any]:
        return {"method": self.method, "virtual": self.virtual, "A": self.A, "B": self.B,
                "ddof": self.ddof, "keys": self._keys, "reference": self.reference}

    def save(self, path: str | Path, *, format: Literal["csv", "json"] | None = None) -> Path:
        """Write the factors to ``path`` as CSV or JSON (by suffix unless ``format`` is given).

        CSV: a first comment line ``# irmodels-standardizer {json settings}``, then columns
        ``<keys>, mu, sigma, n``. JSON: ``{"method", "virtual", "A", "B", "keys",
        "reference", "factors": [...], "scores": {...}}`` (``scores``, the sorted reference
        scores per topic, only for ``"ecdf"``, which therefore needs JSON). Values are
        written with full precision. For trec_eval's ``-Z`` format use :func:`write_zscores`.
        """
        f = self._require_fit()
        path = Path(path)
        fmt = format or ("json" if path.suffix.lower() == ".json" else "csv")
        if fmt not in ("csv", "json"):
            raise DesignError(f"format must be 'csv' or 'json'; got {fmt!r}")
        table = f.reset_index()
        if fmt == "csv":
            if self.method == "ecdf":
                raise DesignError(
                    "the ecdf method keeps every reference score; save it as JSON "
                    "(a path ending in .json, or format='json')."
                )
            with atomic_file(path, force=True) as tmp, tmp.open("w", encoding="utf-8", newline="") as fh:
                fh.write(_CSV_MAGIC + json.dumps(self._meta()) + "\n")
                table.to_csv(fh, index=False, float_format="%.17g")
            return path
        doc = self._meta()
        doc["factors"] = [
            {**{k: str(r[k]) for k in self._keys}, "mu": float(r["mu"]), "sigma": float(r["sigma"]),
             "n": int(r["n"])}
            for _, r in table.iterrows()
        ]
        if self.method == "ecdf":
            doc["scores"] = {"\t".join(k): v.tolist() for k, v in self._scores.items()}
        write_text(path, json.dumps(doc, indent=1), force=True)  # atomic
        return path

    @classmethod
    def load(cls, path: str | Path) -> Standardizer:
        """Read factors written by :meth:`save` (CSV or JSON, detected from the content)."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        if text.lstrip().startswith("{"):
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataFormatError(f"not valid JSON: {exc}", path=str(path)) from exc
            table = pd.DataFrame(doc.get("factors", []))
        elif text.startswith(_CSV_MAGIC):
            first, _, rest = text.partition("\n")
            doc = json.loads(first[len(_CSV_MAGIC):])
            # the saved 17 digits, exactly
            table = pd.read_csv(io.StringIO(rest), dtype={k: str for k in doc.get("keys", [])},
                                **EXACT_FLOATS)
        else:
            raise DataFormatError(
                "not a file written by Standardizer.save (no settings line or JSON object); "
                "for trec_eval zscores use irm.data.standardize.read_zscores.",
                path=str(path),
            )
        keys = doc.get("keys") or ["topic"]
        require_columns(table, keys + ["mu", "sigma"], f"factors in {path}")
        method = doc.get("method", "z")
        # files of irmodels 0.1 carry no ddof: their factors used the population SD
        out = cls(method, virtual=bool(doc.get("virtual", False)), A=doc.get("A", 0.15),
                  B=doc.get("B", 0.5), ddof=int(doc.get("ddof", 0)))
        index = _key_index(table, keys) if len(keys) > 1 else pd.Index(
            table[keys[0]].astype(str).to_numpy(), name=keys[0]
        )
        out._factors = pd.DataFrame(
            {"mu": table["mu"].to_numpy(float), "sigma": table["sigma"].to_numpy(float),
             "n": table["n"].to_numpy(np.int64) if "n" in table else 0},
            index=index,
        )
        out._keys = list(keys)
        out.reference = list(doc.get("reference", []))
        if method == "ecdf":
            scores = doc.get("scores")
            if not scores:
                raise DataFormatError("an ecdf standardizer file has no reference scores",
                                      path=str(path))
            out._scores = {tuple(k.split("\t")): np.sort(np.asarray(v, dtype=float))
                           for k, v in scores.items()}
        return out

    def __repr__(self) -> str:
        state = "unfitted" if self._factors is None else (
            f"{len(self._factors)} topic key(s), {len(self.reference) or '?'} reference systems"
        )
        extra = ", virtual" if self.virtual else ""
        if self.method == "uniform":
            extra += f", A={self.A:g}, B={self.B:g}"
        if self.ddof != 1:
            extra += f", ddof={self.ddof}"
        return f"<Standardizer method={self.method!r}{extra}: {state}>"


# ---------------------------------------------------------------------------- trec_eval -Z
def read_zscores(path: str | Path) -> dict[str, pd.DataFrame]:
    """Read trec_eval's zscores file (``trec_eval -Z``): one ``topic measure mean sd`` per line.

    Returns
    -------
    dict
        measure -> DataFrame indexed by ``topic`` (str), columns ``mu`` and ``sigma``, in file
        order. Feed one to :meth:`Standardizer.from_factors`.

    Examples
    --------
    >>> import tempfile, os
    >>> from irmodels.data.standardize import read_zscores
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "z")
    ...     _ = open(p, "w").write("301 map 0.12 0.15\\n302 map 0.3 0.2\\n")
    ...     read_zscores(p)["map"]
             mu  sigma
    topic
    301    0.12   0.15
    302    0.30   0.20
    """
    path = Path(path)
    rows: dict[str, list[tuple[str, float, float]]] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 4:
                raise DataFormatError(
                    f"expected 4 fields 'topic measure mean sd', found {len(parts)}: {line.strip()!r}",
                    path=str(path), line=lineno,
                )
            try:
                mu, sd = float(parts[2]), float(parts[3])
            except ValueError:
                raise DataFormatError(
                    f"mean and sd must be numbers, got {parts[2]!r} and {parts[3]!r}",
                    path=str(path), line=lineno,
                ) from None
            if not (math.isfinite(mu) and math.isfinite(sd)) or sd < 0:
                raise DataFormatError(f"invalid mean/sd {mu}, {sd}", path=str(path), line=lineno)
            rows.setdefault(parts[1], []).append((parts[0], mu, sd))
    if not rows:
        raise DataFormatError("the zscores file has no entries", path=str(path))
    out = {}
    for measure, recs in rows.items():
        df = pd.DataFrame(recs, columns=["topic", "mu", "sigma"]).set_index("topic")
        if df.index.has_duplicates:
            dup = df.index[df.index.duplicated()][0]
            raise DataFormatError(f"topic {dup} appears twice for measure {measure}", path=str(path))
        out[measure] = df
    return out


def write_zscores(
    factors_by_measure: Mapping[str, pd.DataFrame] | pd.DataFrame | Standardizer,
    path: str | Path,
) -> Path:
    """Write per-topic factors in trec_eval's zscores format (``topic measure mean sd``).

    Parameters
    ----------
    factors_by_measure : mapping, DataFrame or Standardizer
        measure -> DataFrame (``topic`` index or column; ``mu``, ``sigma``); or one DataFrame
        with ``measure, topic, mu, sigma`` columns (or index levels); or a :class:`Standardizer`
        fitted on a frame with a ``measure`` column.
    path : str or Path

    Notes
    -----
    Lines are grouped by topic, measures in the given order (as trec_eval's own file);
    numbers are written with full precision (trec_eval parses them with ``strtod``).
    """
    if isinstance(factors_by_measure, Standardizer):
        table = factors_by_measure.factors.reset_index()
    elif isinstance(factors_by_measure, pd.DataFrame):
        table = factors_by_measure
        if any(n in _KEY_ORDER for n in table.index.names):
            table = table.reset_index()
    else:
        parts = []
        for m, df in factors_by_measure.items():
            d = df.reset_index() if "topic" in df.index.names else df.copy()
            d["measure"] = m
            parts.append(d)
        if not parts:
            raise DataFormatError("no factors to write")
        table = pd.concat(parts, ignore_index=True)
    require_columns(table, ["measure", "topic", "mu", "sigma"], "zscores factors")
    if "collection" in table.columns and table["collection"].nunique() > 1:
        raise DesignError("a zscores file is for one collection; select one first")
    measures = list(dict.fromkeys(table["measure"].astype(str)))
    topics = sorted(dict.fromkeys(table["topic"].astype(str)), key=natural_key)
    lookup = {(str(t), str(m)): (float(mu), float(sd)) for t, m, mu, sd in zip(
        table["topic"], table["measure"], table["mu"], table["sigma"])}
    path = Path(path)
    with atomic_file(path, force=True) as tmp, tmp.open("w", encoding="utf-8") as fh:
        for t in topics:
            for m in measures:
                if (t, m) in lookup:
                    mu, sd = lookup[(t, m)]
                    fh.write(f"{t} {m} {mu!r} {sd!r}\n")
    return path
