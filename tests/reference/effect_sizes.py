"""Write ``effect_sizes.csv``: per-topic differences of a few pairs of TREC-8 ad hoc AP runs.

The fixture of ``effect_sizes.R`` (the exact noncentral-t intervals of d_z and of Sakai's
effect size, and TOST) and of ``tests/inference/test_effect_sizes_intervals.py``. Columns:
``pair, a, b, topic, d`` (``score(a) - score(b)`` on the topic, 17 significant digits) and,
repeated on every row of a pair, ``ms_error`` and ``df_error``: the residual variance V_E
of the two-way ANOVA ``score ~ topic + system`` over all 129 runs of the matrix and its
degrees of freedom (irmodels' value; the existing pairwise fixture checks it against R).

Run from ``tests/reference/``: ``IRM_DATA_MIRROR=../../../shared/data/ir-scores python
effect_sizes.py``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

#: Pairs (by column of the matrix): a large and a small positive effect, a negative one, a
#: near-zero one and two close runs.
PAIRS = (("run1", "run2"), ("run5", "run40"), ("run60", "run3"), ("run10", "run11"),
         ("run100", "run101"), ("run7", "run120"))


def main() -> None:
    from irmodels.inference.pairwise import _ms_error

    shared = Path(__file__).resolve().parents[3] / "shared" / "data" / "ir-scores"
    X = pd.read_csv(shared / "adhoc8_ap.csv")
    T, R = X.shape
    ms = _ms_error(X.to_numpy(dtype=float))
    rows = []
    for k, (a, b) in enumerate(PAIRS):
        d = X[a].to_numpy(dtype=float) - X[b].to_numpy(dtype=float)
        for i, v in enumerate(d):
            rows.append((k + 1, a, b, i + 1, repr(float(v)), repr(ms), (T - 1) * (R - 1)))
    out = pd.DataFrame(rows, columns=["pair", "a", "b", "topic", "d", "ms_error", "df_error"])
    out.to_csv(Path(__file__).resolve().parent / "effect_sizes.csv", index=False)


if __name__ == "__main__":
    main()
