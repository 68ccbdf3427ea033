"""MkDocs hook: a ```` ```python notest ```` fence renders as a ```` ```python ```` block.

``notest`` marks an example that needs the reader's own files: tests/test_docs.py runs every
```` ```python ```` block of docs/*.md and skips those. SuperFences reads a word after the
language as an option; it knows no ``notest``, so it would not take the line as a fence, and the
page would render from there on as one long code block (headings and anchors lost). The marker
stays in the Markdown (GitHub shows it as Python too) and is dropped here, before rendering.
"""

from __future__ import annotations

import re
from typing import Any

NOTEST = re.compile(r"^([ \t]*)(`{3,}|~{3,})python[ \t]+notest[ \t]*$", re.M)


def strip_notest(markdown: str) -> str:
    """``markdown`` with each ```` ```python notest ```` opening fence as ```` ```python ````."""
    return NOTEST.sub(r"\1\2python", markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:  # MkDocs hook
    return strip_notest(markdown)
