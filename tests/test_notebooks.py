"""Every notebook under notebooks/ executes, and its committed outputs are current.

The notebooks are committed executed (``python notebooks/run_all.py``) so a reader browsing the
repository sees tables and figures. This test re-executes each one (inline figures, as
run_all.py does) and compares it cell by cell with the committed file: the source, then every
output's text (streams on stdout, ``text/plain``, ``text/html``) after normalising what changes
from run to run (memory addresses, timings, time stamps, embedded image bytes); images are
compared by presence. A failure names the notebook and the cell: re-run
``python notebooks/run_all.py NN`` and commit the notebook.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(HERE.glob("*.ipynb"))

_NORMALISE = [
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x?"),
    (re.compile(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+"), "data:image/?"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?( UTC)?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(s|ms|µs|us|sec|seconds|min)\b"), "<duration>"),
    (re.compile(r"\d+(\.\d+)?\s?(KiB|MiB|kB|MB)\b"), "<size>"),
    (re.compile(r"/tmp/[^\s'\"<>]+"), "<tmp>"),
    (re.compile(r"[ \t]+\n"), "\n"),
]


def _run_all():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("irm_run_all", HERE / "run_all.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def normalise(text: str) -> str:
    for pattern, repl in _NORMALISE:
        text = pattern.sub(repl, text)
    return text.strip()


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def signature(cell) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """What a reader sees of a code cell's outputs, normalised."""
    out: list[tuple[str, str]] = []
    stdout: list[str] = []  # consecutive prints arrive as one stream output or several
    for o in cell.get("outputs", []):
        kind = o["output_type"]
        if kind == "stream":
            if o.get("name") == "stdout":
                stdout.append(_text(o["text"]))
            continue
        if stdout:
            out.append(("stdout", normalise("".join(stdout))))
            stdout = []
        if kind in ("execute_result", "display_data"):
            data = o.get("data", {})
            for mime in sorted(data):
                if mime.startswith("image/"):
                    out.append((mime, "<image>"))
                elif mime in ("text/plain", "text/html", "text/markdown", "text/latex"):
                    out.append((mime, normalise(_text(data[mime]))))
        elif kind == "error":
            out.append(("error", f"{o.get('ename')}: {o.get('evalue')}"))
    if stdout:
        out.append(("stdout", normalise("".join(stdout))))
    return out


def test_signature_normalises_what_changes_between_runs():
    a = {"outputs": [{"output_type": "execute_result", "data": {
        "text/plain": "<Figure size 640x480 at 0x7f3a2b1c9d90>", "image/png": "iVBORw0KGgo="}},
        {"output_type": "stream", "name": "stdout", "text": "done in 1.23 s on 2026-11-22 22:10"},
        {"output_type": "stream", "name": "stderr", "text": "100%|####| 3/3"}]}
    b = {"outputs": [{"output_type": "execute_result", "data": {
        "text/plain": "<Figure size 640x480 at 0x7f00deadbeef>", "image/png": "AAAA"}},
        {"output_type": "stream", "name": "stdout", "text": "done in 0.9 s on 2026-11-23 01:00"},
        {"output_type": "stream", "name": "stderr", "text": "50%|##  | 1/3"}]}
    assert signature(a) == signature(b)
    c = {"outputs": [{"output_type": "execute_result", "data": {"text/plain": "0.4431"}}]}
    d = {"outputs": [{"output_type": "execute_result", "data": {"text/plain": "0.4432"}}]}
    assert signature(c) != signature(d)  # numbers are compared
    assert signature({"outputs": [a["outputs"][0]]}) != signature(
        {"outputs": [{"output_type": "execute_result", "data": {"text/plain": "x"}}]})


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_outputs_are_current(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("matplotlib_inline")
    committed = nbformat.read(path, as_version=4)
    source = "".join(c.source for c in committed.cells if c.cell_type == "code")
    assert "matplotlib.use(" not in source, f"{path.name}: use the inline backend, not Agg"
    code = [c for c in committed.cells if c.cell_type == "code"]
    assert any(c.get("outputs") for c in code), (
        f"{path.name} is committed without outputs: run python notebooks/run_all.py")
    # the committed cells are those its build script writes today (run here, as a script, in
    # a temporary working directory: it writes the notebook there; a new interpreter per
    # notebook would only add its start-up)
    import runpy
    import tempfile

    script = next(HERE.glob(f"build_{path.name[:2]}_*.py"), None)
    if script is not None:
        with tempfile.TemporaryDirectory() as tmp:
            with monkeypatch.context() as mp:
                mp.chdir(tmp)
                runpy.run_path(str(script), run_name="__main__")
            built = nbformat.read(Path(tmp) / path.name, as_version=4)
        assert [c.source for c in built.cells] == [c.source for c in committed.cells], (
            f"{path.name} differs from what {script.name} writes: run python "
            f"notebooks/run_all.py {path.name[:2]} and commit the notebook")
    run_all = _run_all()
    # the kernel a user starts: irmodels chooses how to start its worker processes (the suite's
    # conftest.py sets the fork server for the pytest processes only)
    monkeypatch.delenv("IRMODELS_START_METHOD", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    fresh = run_all.execute(path)  # a cell that raises fails the test on every version
    fresh_code = [c for c in fresh.cells if c.cell_type == "code"]
    assert len(fresh_code) == len(code)
    recorded = committed.metadata.get("irmodels", {}).get("executed_with")
    assert recorded, f"{path.name} has no recorded library versions: run notebooks/run_all.py"
    if recorded != run_all.library_versions():
        # other numpy/pandas/matplotlib print numbers and reprs differently (the minimum
        # versions of `make test-min`): the notebook runs, its outputs are compared only with
        # the versions it was executed with
        return
    for i, (old, new) in enumerate(zip(code, fresh_code)):
        assert signature(old) == signature(new), (
            f"{path.name}, code cell {i + 1} ({old.source.splitlines()[0][:60] if old.source else ''!r}): "
            "the committed outputs are not current; run python notebooks/run_all.py "
            f"{path.name[:2]} and commit the notebook"
        )


def test_signature_joins_prints_split_over_stream_outputs():
    one = {"outputs": [{"output_type": "stream", "name": "stdout", "text": "a\nb\n"}]}
    two = {"outputs": [{"output_type": "stream", "name": "stdout", "text": "a\n"},
                       {"output_type": "stream", "name": "stdout", "text": "b\n"}]}
    assert signature(one) == signature(two) == [("stdout", "a\nb")]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_outputs_do_not_name_the_checkout(path: Path) -> None:
    # CI runs on a clean checkout somewhere else: an output showing where this one lives (an
    # absolute path to the repository or to ../shared) would differ there
    text = path.read_text(encoding="utf-8")
    root = HERE.parent
    for where in (str(root) + "/", str(root.parent / "shared")):  # the checkout, ../shared
        assert where not in text, (
            f"{path.name} prints a path under {where}; show something that does not depend on "
            "where the repository is checked out")
