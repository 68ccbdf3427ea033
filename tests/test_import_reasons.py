"""Imports at module level (issue 26 item 6), in every module of the package: an ``import``
inside a function says why it is not at module level (a comment on its line or the line above:
an optional dependency such as pyarrow, the start-up time of a heavy one such as matplotlib or
of the CLI); every other import is at module level."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "irmodels"
FILES = sorted(PACKAGE.rglob("*.py"))


def unexplained_imports(text: str) -> list[int]:
    """Lines of the function-level imports of ``text`` without a comment on the line or the
    line above (imports under ``if TYPE_CHECKING:`` never run and are not counted)."""
    lines = text.splitlines()
    out: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                line = child.lineno
                above = lines[line - 2].strip() if line > 1 else ""
                if "#" not in lines[line - 1] and not above.startswith("#"):
                    out.append(line)
            visit(child, in_function or isinstance(child, (ast.FunctionDef,
                                                           ast.AsyncFunctionDef)))

    visit(ast.parse(text), False)
    return out


def test_the_files_exist() -> None:
    assert all(p.exists() for p in FILES) and len(FILES) > 150


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_function_level_imports_say_why(path: Path) -> None:
    bad = unexplained_imports(path.read_text(encoding="utf-8"))
    assert not bad, (f"{path.relative_to(PACKAGE)}: imports inside functions without a reason "
                     f"at lines {bad}; move them to module level, or say why on the line or "
                     "above (e.g. '# here, not at import: pyarrow is optional')")


def test_the_check_sees_an_unexplained_import() -> None:
    src = ("import os\n\n\ndef f():\n    import json\n\n\ndef g():\n"
           "    # here, not at import: pyarrow is optional\n    import csv\n"
           "    import re  # optional, as above\n    import abc\n")
    assert unexplained_imports(src) == [5, 12]
