"""In a Jupyter kernel, every ``plot()`` shows its figure as an image, once.

For each result class with a ``plot()`` (the registry of ``tests/test_result_face.py``), a cell
that ends with ``result.plot()`` or with the returned figure must show one ``image/png`` and no
figure as bare ``<Figure ...>`` text (what a figure made without pyplot shows in a fresh kernel,
as the topic-set study's did). The notebooks run in nbclient kernels, as ``tests/test_notebooks.py``
runs the notebooks, with matplotlib's backend left to the kernel (a user's kernel: ipykernel
picks the inline backend).

IPython shows a Figure as an image once the inline backend module is loaded (it registers the
Figure's image formatter when imported), and pyplot loads it when it makes its first figure. So
in a kernel where pyplot has made a figure, a figure made without pyplot shows as an image too:
a kernel shared by every class would hide the bug after the first plot. Two kernels instead of
one per class:

- a fresh kernel builds one result, shows that a figure made without pyplot is bare text there
  (the state every first plot of a session starts from), then plots the result: an image;
- one kernel builds every result (pyplot still not imported after all the builds), plots each
  (one image) and checks, whatever ran before, the condition that makes a fresh
  kernel show the figure: pyplot made it. pyplot numbers the figures it makes
  (``Figure.number``, kept after ``plt.close``) after its backend made their manager, which loads
  the inline backend first; a ``matplotlib.figure.Figure()`` has no number, and the same kernel
  shows the check fails on one (while the image check alone passes it there).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FACE = ROOT / "tests" / "test_result_face.py"


def _plotting() -> list[str]:
    spec = importlib.util.spec_from_file_location("irm_result_face", FACE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return sorted(n for n, cls in mod._result_classes().items() if hasattr(cls, "plot"))


PLOTTING = _plotting()
#: the class plotted in a fresh kernel
FRESH = PLOTTING[0]

_SETUP = f"""\
import importlib.util, sys, warnings
spec = importlib.util.spec_from_file_location('face', {str(FACE)!r})
face = importlib.util.module_from_spec(spec)
spec.loader.exec_module(face)
res = {{}}

def build(name):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        res[name] = face.BUILDERS[name]()

def pyplot_made(fig):
    # pyplot numbers the figures it makes; a Figure made without pyplot has no number
    return getattr(fig, 'number', None) is not None
"""
_PYPLOT = "print('pyplot imported:', 'matplotlib.pyplot' in sys.modules)"
_BARE = "from matplotlib.figure import Figure\nbare = Figure()\nbare.subplots().plot([0, 1])\nbare"
_BARE_CHECK = "print('bare', pyplot_made(bare))"


def _build(name: str) -> str:
    return f"build({name!r})"


def _plot_cells(name: str) -> list[str]:
    """A cell ending with the plot, one ending with the returned figure, the pyplot check."""
    return [f"res[{name!r}].plot()", f"fig = res[{name!r}].plot()\nfig",
            f"print({name!r}, pyplot_made(fig))"]


def _shared_cells(name: str) -> list[str]:
    """In the shared kernel: the cell ending with the returned figure (what a cell ending with
    ``plot()`` shows too: the fresh kernel runs both) and the pyplot check."""
    return _plot_cells(name)[1:]


def _execute(sources: list[str]) -> dict[str, object]:
    """Run the cells in one new kernel (errors recorded, not raised); cells by source."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("matplotlib_inline")
    from nbformat.v4 import new_code_cell, new_notebook

    assert len(set(sources)) == len(sources)
    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    with pytest.MonkeyPatch.context() as mp:
        # the kernel a user starts: no backend forced (the suite's MPLBACKEND=Agg would hide the
        # problem as well as the figure); ipykernel then chooses matplotlib's inline backend
        mp.delenv("MPLBACKEND", raising=False)
        mp.setenv("IRM_DATA_MIRROR", os.environ.get("IRM_DATA_MIRROR", ""))
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(ROOT)}}).execute()
    assert nbformat.validate(nb) is None
    return {c.source: c for c in nb.cells}


@pytest.fixture(scope="module")
def fresh() -> dict[str, object]:
    """A new kernel: build one result, show a figure made without pyplot, plot the result."""
    return _execute([_SETUP, _build(FRESH), _PYPLOT, _BARE, *_plot_cells(FRESH)[:2]])


@pytest.fixture(scope="module")
def shared() -> dict[str, object]:
    """One kernel: build every result, then plot each (and check it), then a bare Figure."""
    plots = [src for name in PLOTTING for src in _shared_cells(name)]
    return _execute([_SETUP, *(_build(n) for n in PLOTTING), _PYPLOT, *plots, _BARE,
                     _BARE_CHECK])


def _errors(cell) -> list[str]:  # type: ignore[no-untyped-def]
    return [f"{o.get('ename')}: {o.get('evalue')}" for o in cell.get("outputs", [])
            if o.get("output_type") == "error"]


def _stdout(cell) -> str:  # type: ignore[no-untyped-def]
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


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


def _assert_one_image(name: str, cell) -> None:  # type: ignore[no-untyped-def]
    assert not _errors(cell), f"{name}: {cell.source!r} raised {_errors(cell)}"
    n, bare = _images(cell)
    assert not bare, f"{name}: {cell.source!r} shows the figure as text: {bare}"
    assert n == 1, f"{name}: {cell.source!r} shows {n} images (one expected)"


@pytest.mark.slow
def test_plot_shows_an_image_in_a_fresh_kernel(fresh: dict) -> None:
    build = fresh[_build(FRESH)]
    assert not _errors(build), f"building {FRESH} failed: {_errors(build)}"
    out = _stdout(fresh[_PYPLOT])
    assert out == "pyplot imported: False\n", f"building {FRESH} imported pyplot: {out!r}"
    # the kernel still shows a figure made without pyplot as text: the plot below is its first
    n, bare = _images(fresh[_BARE])
    assert n == 0 and bare and bare[0].startswith("<Figure size")
    for source in _plot_cells(FRESH)[:2]:
        _assert_one_image(FRESH, fresh[source])


@pytest.mark.slow
def test_building_every_result_imports_no_pyplot(shared: dict) -> None:
    failed = {n: _errors(shared[_build(n)]) for n in PLOTTING if _errors(shared[_build(n)])}
    assert not failed, f"building failed: {failed}"
    out = _stdout(shared[_PYPLOT])
    assert out == "pyplot imported: False\n", (
        f"building one of {PLOTTING} imported pyplot (the fresh-kernel check of "
        f"{FRESH} would then not be fresh for the others): {out!r}")


@pytest.mark.slow
@pytest.mark.parametrize("name", PLOTTING)
def test_plot_shows_one_image(name: str, shared: dict) -> None:
    build = shared[_build(name)]
    assert not _errors(build), f"building {name} failed: {_errors(build)}"
    _assert_one_image(name, shared[_shared_cells(name)[0]])


@pytest.mark.slow
@pytest.mark.parametrize("name", PLOTTING)
def test_plot_makes_its_figure_through_pyplot(name: str, shared: dict) -> None:
    # what makes a fresh kernel show the figure as an image, whatever this kernel ran before
    cell = shared[_shared_cells(name)[1]]
    assert not _errors(cell), f"{name}: {cell.source!r} raised {_errors(cell)}"
    assert _stdout(cell) == f"{name} True\n", (
        f"{name}.plot() returns a figure pyplot did not make: a fresh Jupyter kernel shows it "
        "as <Figure ...> text; make it with irmodels._section.figure_axes")


@pytest.mark.slow
def test_the_check_sees_a_figure_made_without_pyplot(fresh: dict, shared: dict) -> None:
    # the failure this file guards against: a bare matplotlib Figure in a fresh kernel is text
    n, bare = _images(fresh[_BARE])
    assert n == 0 and bare and bare[0].startswith("<Figure size")
    # after pyplot made a figure the same Figure shows as an image (so the image check alone
    # depends on the order), and the pyplot check fails on it whatever the order
    assert _images(shared[_BARE]) == (1, [])
    assert _stdout(shared[_BARE_CHECK]) == "bare False\n"
