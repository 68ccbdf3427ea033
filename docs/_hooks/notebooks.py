"""MkDocs hook: render the executed notebooks in ``notebooks/`` as pages under ``notebooks/``.

Markdown cells are copied, code cells become Python blocks, and the committed outputs follow
them (text, HTML tables, PNG figures inline). No notebook is executed and no converter program
is needed: the notebooks are committed with their outputs (``tests/test_notebooks.py`` keeps them
current).
"""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]


def _output_markdown(output: dict) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return "```text\n" + "".join(output.get("text", "")).rstrip() + "\n```\n"
    if kind == "error":
        return "```text\n" + html.escape(f"{output.get('ename')}: {output.get('evalue')}") + "\n```\n"
    data = output.get("data", {})
    if "image/png" in data:
        png = "".join(data["image/png"]).replace("\n", "")
        return f'<img alt="figure" src="data:image/png;base64,{png}" />\n'
    if "text/html" in data:
        body = "".join(data["text/html"])
        return f'<div class="nb-output" markdown="0">\n{body}\n</div>\n'
    if "text/plain" in data:
        return "```text\n" + "".join(data["text/plain"]).rstrip() + "\n```\n"
    return ""


def notebook_markdown(path: Path) -> str:
    """The Markdown page for one notebook."""
    nb = nbformat.read(path, as_version=4)
    parts: list[str] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            parts.append(cell.source.rstrip() + "\n")
        elif cell.cell_type == "code" and cell.source.strip():
            parts.append("```python\n" + cell.source.rstrip() + "\n```\n")
            parts.extend(_output_markdown(o) for o in cell.get("outputs", []))
    return "\n".join(parts)


def on_files(files: Files, config) -> Files:  # noqa: ANN001 - MkDocs hook signature
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        files.append(File.generated(config, f"notebooks/{path.stem}.md",
                                    content=notebook_markdown(path)))
    return files
