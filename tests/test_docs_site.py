"""The documentation site (MkDocs over docs/) builds as ``make docs`` builds it, strict: a broken
link, a missing anchor, an unresolved API reference or any other WARNING fails the suite; and
every page renders as written (its headings are headings, its code blocks separate blocks)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> tuple[Path, str]:
    """(site folder, log) of the command ``make docs`` runs, from the repository's root."""
    site = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-6000:]
    return site, log


def test_site_builds_strict_without_warnings(build) -> None:
    site, log = build
    warnings = [line for line in log.splitlines() if re.match(r"\s*WARNING\b", line)]
    assert not warnings, "\n".join(warnings)
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    # the API reference is generated from the docstrings
    assert "irmodels.models.anova.anova" in api
    assert "irmodels.models.mixed.MixedResult" in api
    # docstring examples are shown as code, not as prose
    assert '<span class="gp">&gt;&gt;&gt; </span>' in api
    # every committed notebook is rendered as a page
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert (site / "notebooks" / nb.stem / "index.html").is_file(), nb.name


def _outside_fences(text: str) -> tuple[list[str], int]:
    """(lines outside fenced code, number of fenced blocks) of a Markdown page."""
    lines: list[str] = []
    blocks = 0
    fence: str | None = None
    for line in text.splitlines():
        m = re.match(r"^[ \t]*(`{3,}|~{3,})(.*)$", line)
        if fence is None and m:
            fence, blocks = m.group(1), blocks + 1
        elif fence is not None and m and m.group(1)[0] == fence[0] \
                and len(m.group(1)) >= len(fence) and not m.group(2).strip():
            fence = None
        elif fence is None:
            lines.append(line)
    return lines, blocks


PAGES = sorted(p for p in DOCS.glob("*.md") if p.name != "api.md")  # api.md: mkdocstrings


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_renders_its_headings_and_code_blocks(build, page: Path) -> None:
    # a fence SuperFences does not recognise (```python notest before docs/_hooks/fences.py)
    # turned the rest of the page into one code block: its headings and anchors were lost
    site, _ = build
    html_path = site / "index.html" if page.stem == "index" else site / page.stem / "index.html"
    article = html_path.read_text(encoding="utf-8").split("<article", 1)[1].split("</article>")[0]
    lines, blocks = _outside_fences(page.read_text(encoding="utf-8"))
    headings = [ln for ln in lines if re.match(r"#{1,6} ", ln)]
    assert len(re.findall(r"<h[1-6][ >]", article)) == len(headings), page.name
    assert article.count("<pre") >= blocks, page.name  # each fence its own block


def test_notest_fences_render_as_python() -> None:
    spec = importlib.util.spec_from_file_location("irm_docs_fences", DOCS / "_hooks" / "fences.py")
    assert spec is not None and spec.loader is not None
    fences = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fences)
    text = "a\n```python notest\nx = 1\n```\n  ```python  notest \ny\n  ```\n```python\nz\n```\n"
    assert fences.strip_notest(text) == (
        "a\n```python\nx = 1\n```\n  ```python\ny\n  ```\n```python\nz\n```\n")
    assert fences.strip_notest("```pythonic notest\n") == "```pythonic notest\n"
    # every notest fence of the docs is one the hook rewrites (and tests/test_docs.py skips)
    for page in DOCS.glob("*.md"):
        for line in page.read_text(encoding="utf-8").splitlines():
            if "notest" in line and line.lstrip().startswith(("```", "~~~")):
                assert fences.NOTEST.match(line), f"{page.name}: {line!r}"
