"""The measure kernel's stages (issue 26): irm.evaluate and the partitioned evaluation share
``_evaluation.evaluate_in_memory``; its warnings still point at the user's line, and a partition
evaluated without the undefined-value warning keeps its undefined cells for the one warning of
the partitioned evaluation."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import irmodels as irm
from irmodels.data._evaluation import evaluate_in_memory, undefined_cells
from irmodels.errors import DataQualityWarning, UndefinedValueWarning

QRELS = pd.DataFrame({"topic": ["1", "2"], "docid": ["a", "b"], "rel": [1, 0]})
RUNS = pd.DataFrame({"system": "s", "topic": ["1", "2"], "docid": ["a", "b"],
                     "score": [1.0, 1.0]})


def test_evaluate_warnings_point_at_the_caller() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        irm.evaluate(RUNS.assign(topic=["01", "2"]), QRELS, ["AP"])
    kinds = {w.category: w for w in caught}
    assert set(kinds) == {DataQualityWarning, UndefinedValueWarning}
    assert all(w.filename == __file__ for w in caught), [(w.filename, w.lineno) for w in caught]


def test_in_memory_evaluation_without_the_warning_keeps_the_cells() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedValueWarning)
        out = evaluate_in_memory(RUNS, QRELS, ["AP"], warn_undefined=False)
    assert out["score"].tolist() == [1.0, 0.0]
    assert undefined_cells(out).to_dict("list") == {"measure": ["AP"], "topic": ["2"]}
    with pytest.warns(UndefinedValueWarning, match="1 .* cell"):
        again = evaluate_in_memory(RUNS, QRELS, ["AP"])
    pd.testing.assert_frame_equal(again, out)


def test_partitioned_evaluation_warns_once_and_equals_in_memory() -> None:
    runs = pd.concat([RUNS, RUNS.assign(system="t", score=[2.0, 0.5])], ignore_index=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = irm.evaluate([runs[runs.system == "s"], runs[runs.system == "t"]], QRELS,
                             ["AP", "P@1"])
    undefined = [w for w in caught if w.category is UndefinedValueWarning]
    assert len(undefined) == 1 and undefined[0].filename == __file__
    with pytest.warns(UndefinedValueWarning):
        whole = irm.evaluate(runs, QRELS, ["AP", "P@1"])
    pd.testing.assert_frame_equal(parts.reset_index(drop=True), whole, check_categorical=False)
    assert undefined_cells(parts).equals(undefined_cells(whole))


def test_frame_drops_missing_scores_without_the_warning_when_asked(tmp_path) -> None:
    """issue 26: read_matrix reports the dropped cells itself (naming the file) through
    ``from_wide(..., warn=False)`` instead of silencing frame()'s warning."""
    data = pd.DataFrame({"topic": ["1", "2", "3"], "system": "a", "score": [0.5, None, 0.25]})
    with pytest.warns(DataQualityWarning, match="dropped 1 row"):
        warned = irm.frame(data, nan="drop")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = irm.frame(data, nan="drop", warn=False)
        wide = irm.from_wide(pd.DataFrame({"a": [0.1, None], "b": [0.2, 0.4]}), nan="drop",
                             warn=False)
    pd.testing.assert_frame_equal(quiet, warned)
    assert quiet["score"].tolist() == [0.5, 0.25] and len(wide) == 3
    path = tmp_path / "m.csv"
    path.write_text("topic,a,b\n1,0.1,\n2,0.3,0.4\n", encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = irm.read_matrix(path, nan="drop")
    assert [str(w.message) for w in caught] == [
        f"{path}: dropped 1 missing cell(s); the design is now unbalanced"]
    assert len(m) == 3
