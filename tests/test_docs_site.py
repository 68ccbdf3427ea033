"""The documentation site (MkDocs over docs/) builds in strict mode: a broken link, a missing
anchor or an unresolved API reference fails the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")


def test_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(site)],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    # the API reference is generated from the docstrings
    assert "irmodels.models.anova.anova" in api
    assert "irmodels.models.mixed.MixedResult" in api
    # docstring examples are shown as code, not as prose
    assert '<span class="gp">&gt;&gt;&gt; </span>' in api
    # every committed notebook is rendered as a page
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert (site / "notebooks" / nb.stem / "index.html").is_file(), nb.name
