"""In a fresh Jupyter kernel, every ``plot()`` shows its figure as an image, once.

For each result class with a ``plot()`` (the registry of ``tests/test_result_face.py``), a tiny
notebook builds the result and ends a cell with ``result.plot()``; nbclient executes it in a
new kernel, as ``tests/test_notebooks.py`` runs the notebooks, with matplotlib's backend left
to the kernel (a user's kernel: ipykernel picks the inline backend) and pyplot not imported
before the plot. The cell must show one ``image/png`` and no figure as bare ``<Figure ...>``
text (what a figure made without pyplot shows, as the topic-set study's did).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _plotting() -> list[str]:
    spec = importlib.util.spec_from_file_location(
        "irm_result_face", ROOT / "tests" / "test_result_face.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return sorted(n for n, cls in mod._result_classes().items() if hasattr(cls, "plot"))


PLOTTING = _plotting()

_BUILD = """\
import importlib.util, sys, warnings
spec = importlib.util.spec_from_file_location('face', {face!r})
face = importlib.util.module_from_spec(spec)
spec.loader.exec_module(face)
with warnings.catch_warnings():
    warnings.simplefilter('ignore')
    res = face.BUILDERS[{name!r}]()
print('pyplot imported:', 'matplotlib.pyplot' in sys.modules)
"""


def _images(cell) -> tuple[int, list[str]]:  # type: ignore[no-untyped-def]
    """(number of image/png outputs, bare text outputs that are a figure's repr)."""
    n, bare = 0, []
    for o in cell.get("outputs", []):
        data = o.get("data", {})
        if "image/png" in data:
            n += 1
        elif "<Figure" in str(data.get("text/plain", "")) or "<Figure" in str(o.get("text", "")):
            bare.append(str(data.get("text/plain", o.get("text", ""))))
    return n, bare


@pytest.mark.slow
@pytest.mark.parametrize("name", PLOTTING)
def test_plot_shows_an_image_in_a_fresh_kernel(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("matplotlib_inline")
    from nbformat.v4 import new_code_cell, new_notebook

    build = _BUILD.format(face=str(ROOT / "tests" / "test_result_face.py"), name=name)
    nb = new_notebook(cells=[new_code_cell(build), new_code_cell("res.plot()"),
                             new_code_cell("fig = res.plot()\nfig")])
    # the kernel a user starts: no backend forced (the suite's MPLBACKEND=Agg would hide the
    # problem as well as the figure); ipykernel then chooses matplotlib's inline backend
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("IRM_DATA_MIRROR", os.environ.get("IRM_DATA_MIRROR", ""))
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    out = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    assert "pyplot imported: False" in out, f"building {name} imported pyplot: {out!r}"
    for cell in nb.cells[1:]:
        n, bare = _images(cell)
        assert not bare, f"{name}: {cell.source!r} shows the figure as text: {bare}"
        assert n == 1, f"{name}: {cell.source!r} shows {n} images (one expected)"
    assert nbformat.validate(nb) is None


@pytest.mark.slow
def test_the_check_sees_a_figure_made_without_pyplot(monkeypatch: pytest.MonkeyPatch) -> None:
    # the failure this file guards against: a bare matplotlib Figure in a fresh kernel is text
    pytest.importorskip("nbclient")
    pytest.importorskip("matplotlib_inline")
    import nbclient
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell(
        "from matplotlib.figure import Figure\nfig = Figure()\nfig.subplots().plot([0, 1])\nfig")])
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    n, bare = _images(nb.cells[0])
    assert n == 0 and bare and bare[0].startswith("<Figure size")
