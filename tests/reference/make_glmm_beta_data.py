"""Seeded AP matrices for the beta mixed-model fixtures (run from tests/reference/ with
``IRM_DATA_MIRROR`` set: python make_glmm_beta_data.py; writes data/glmm/beta_*.csv).

All three come from the shared TREC ad hoc average-precision matrices (``irm.datasets.load``):

- ``beta_ap``: TREC-8 (adhoc8) AP, all 50 topics x 8 systems drawn (seed 2801) from the 84 runs
  with no score of exactly 0 or 1 (400 rows). ``tier`` is ``strong`` for the 4 drawn systems with
  the highest mean AP over the 50 topics, ``weak`` for the others; ``tier_c`` is the same as a
  -0.5/+0.5 numeric contrast (for a random slope of the strong-weak gap over topics).
- ``beta_ap_zeros``: TREC-8 AP, 50 topics x 8 systems drawn (seed 2802) from the runs that score
  exactly 0 on at least one topic (400 rows, with zeros): the squeeze fixture.
- ``beta_crossed``: TREC-7 and TREC-8 AP, 50 topics x 10 zero-free systems of each (seed 2803;
  1000 rows); topics and systems are labelled by collection (``7-1``, ``8-run3``), so both are
  nested in ``collection``, and crossed with each other within it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

import irmodels as irm

OUT = Path(__file__).resolve().parent / "data" / "glmm"


def _wide(collection: str) -> pd.DataFrame:
    d = irm.datasets.load(collection, "ap")
    return d.pivot(index="topic", columns="system", values="score")


def _draw(pool: list[str], k: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    pool = sorted(pool, key=_run_number)
    return sorted(rng.choice(pool, size=k, replace=False).tolist(), key=_run_number)


def _run_number(name: str) -> int:
    return int(name.removeprefix("run"))


def _long(wide: pd.DataFrame, systems: list[str]) -> pd.DataFrame:
    sub = wide[systems]
    t, s = np.meshgrid(np.arange(sub.shape[0]), np.arange(sub.shape[1]), indexing="ij")
    return pd.DataFrame({"topic": sub.index.to_numpy()[t.ravel()].astype(str),
                         "system": np.asarray(systems)[s.ravel()],
                         "ap": sub.to_numpy()[t.ravel(), s.ravel()]})


def _zero_free(wide: pd.DataFrame) -> list[str]:
    ok = ((wide > 0) & (wide < 1)).all()
    return [str(c) for c in wide.columns[ok.to_numpy()]]


def beta_ap(seed: int = 2801) -> pd.DataFrame:
    w = _wide("adhoc8")
    systems = _draw(_zero_free(w), 8, seed)
    d = _long(w, systems)
    means = w[systems].mean()
    strong = set(means.sort_values(ascending=False).index[:4])
    d["tier"] = np.where(d["system"].isin(strong), "strong", "weak")
    d["tier_c"] = np.where(d["tier"] == "strong", 0.5, -0.5)
    return d


def beta_ap_zeros(seed: int = 2802) -> pd.DataFrame:
    w = _wide("adhoc8")
    pool = [str(c) for c in w.columns[((w == 0).any() & (w < 1).all()).to_numpy()]]
    return _long(w, _draw(pool, 8, seed))


def beta_crossed(seed: int = 2803) -> pd.DataFrame:
    parts = []
    for i, c in enumerate(("adhoc7", "adhoc8")):
        w = _wide(c)
        d = _long(w, _draw(_zero_free(w), 10, seed + 10 * i))
        tag = c.removeprefix("adhoc")
        d["topic"] = tag + "-" + d["topic"]
        d["system"] = tag + "-" + d["system"]
        d.insert(0, "collection", "trec" + tag)
        parts.append(d)
    return pd.concat(parts, ignore_index=True)


if __name__ == "__main__":  # pragma: no cover
    OUT.mkdir(parents=True, exist_ok=True)
    for name, fn in (("beta_ap", beta_ap), ("beta_ap_zeros", beta_ap_zeros),
                     ("beta_crossed", beta_crossed)):
        fn().to_csv(OUT / f"{name}.csv", index=False)
        print("wrote", OUT / f"{name}.csv")
