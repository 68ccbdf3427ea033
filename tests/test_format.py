"""irmodels._format.text_grid draws pandas' ``DataFrame.to_string()`` layout (a frame of
strings, unnamed index) without pandas: equal on random tables of printable ASCII, so that
``irmodels anova`` on a matrix (no pandas) and every ``summary()`` print the same characters."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irmodels._display import frame_to_text
from irmodels._format import text_grid
from irmodels._render import _formatted

TEXT = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
# labels without surrounding spaces (pandas strips those; frame_to_text leaves such labels to
# pandas); built once here, not on every draw (the filter's analysis was a third of the test's time)
LABEL = TEXT.filter(lambda t: t and t == t.strip())


@settings(max_examples=500, deadline=None)
@given(data=st.data(), n_rows=st.integers(1, 6), n_cols=st.integers(1, 6))
def test_text_grid_is_pandas_to_string(data, n_rows: int, n_cols: int) -> None:
    index = data.draw(st.lists(LABEL, min_size=n_rows, max_size=n_rows, unique=True))
    names = data.draw(st.lists(LABEL, min_size=n_cols, max_size=n_cols, unique=True))
    cells = [data.draw(st.lists(TEXT, min_size=n_rows, max_size=n_rows)) for _ in names]
    frame = pd.DataFrame(dict(zip(names, cells)), index=index)
    assert text_grid(index, names, cells) == frame.to_string()


@pytest.mark.parametrize("df", [
    pd.DataFrame({"SS": [168.0, 60.03], "p": [0.0, 0.012]}, index=["topic", "Residual"]),
    pd.DataFrame({"SS": [1.5, 2.25]}, index=["café", "b"]),  # not ASCII: pandas draws it
    pd.DataFrame({"x": [0.5, 0.25]}, index=pd.MultiIndex.from_tuples([("a", 1), ("b", 2)])),
    pd.DataFrame({"x": [0.5, float("nan")]}, index=pd.Index(["a", "b"], name="term")),
    pd.DataFrame({"x": [1, 2], "y": [True, False]}, index=[3, 4]),
])
def test_frame_to_text_is_pandas_layout_whoever_draws_it(df: pd.DataFrame) -> None:
    assert frame_to_text(df, 4) == _formatted(df, 4).to_string()
