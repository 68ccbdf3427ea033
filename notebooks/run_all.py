"""Build every notebook from its ``build_NN_*.py`` script and execute it in place, with outputs.

Run from anywhere: ``python notebooks/run_all.py [NN ...]`` (default: all). The committed
notebooks carry their outputs (tables and figures) so a reader browsing the repository sees
them; ``tests/test_notebooks.py`` re-executes each one and checks the committed outputs are
current. Figures use matplotlib's inline backend (``MPLBACKEND`` is set for the kernel only),
execution timings are not recorded and cell ids are numbered, so re-running gives the same
files.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
INLINE = "module://matplotlib_inline.backend_inline"


def execute(path: Path, timeout: int = 600):  # type: ignore[no-untyped-def]
    """Execute ``path`` (the notebook's own folder as working directory); return the notebook."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):  # stable ids: a re-run changes only what changed
        cell["id"] = f"cell-{i:03d}"
    old = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = INLINE  # the kernel inherits it: figures are shown inline
    try:
        nbclient.NotebookClient(
            nb, timeout=timeout, kernel_name="python3", record_timing=False,
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
    finally:
        if old is None:
            os.environ.pop("MPLBACKEND", None)
        else:
            os.environ["MPLBACKEND"] = old
    return nb


def library_versions() -> dict[str, str]:
    """The versions that shape a notebook's printed outputs (recorded in its metadata)."""
    import importlib.metadata as md

    return {name: md.version(name) for name in ("numpy", "scipy", "pandas", "matplotlib")}


def main(argv: list[str]) -> int:
    import nbformat

    scripts = sorted(HERE.glob("build_*.py"))
    if argv:
        scripts = [s for s in scripts if any(s.name.startswith(f"build_{a}") for a in argv)]
    for script in scripts:
        before = set(HERE.glob("*.ipynb"))
        mtimes = {p: p.stat().st_mtime for p in before}
        subprocess.run([sys.executable, script.name], cwd=HERE, check=True)
        written = [p for p in HERE.glob("*.ipynb") if p not in before or p.stat().st_mtime != mtimes[p]]
        for nb_path in written:
            t0 = time.perf_counter()
            nb = execute(nb_path)
            nb.metadata["irmodels"] = {"executed_with": library_versions()}
            nbformat.write(nb, nb_path)
            print(f"{nb_path.name}: executed in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
