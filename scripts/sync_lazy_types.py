"""Rewrite the ``if TYPE_CHECKING:`` block of ``irmodels/__init__.py`` from its ``_LAZY`` table.

The package resolves its public names lazily (``irmodels.__getattr__``), which type checkers and
IDEs cannot follow; the block imports the same names statically for them only. Run this after
adding a name to ``_LAZY``; ``tests/test_package.py`` fails while the two disagree.

    python scripts/sync_lazy_types.py
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

INIT = Path(__file__).resolve().parents[1] / "irmodels" / "__init__.py"
START = "if TYPE_CHECKING:  # static view of the lazy names (scripts/sync_lazy_types.py)\n"
END = "# end of the static view\n"


def lazy_table(source: str) -> dict[str, str]:
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_LAZY":
            return ast.literal_eval(node.value)
    raise SystemExit("no _LAZY table in irmodels/__init__.py")


def block(table: dict[str, str]) -> str:
    lines = [START]
    for name, target in table.items():
        module, _, attr = target.partition(":")
        if attr:
            alias = "" if attr == name else f" as {name}"
            lines.append(f"    from {module} import {attr}{alias}\n")
        else:
            parent, _, child = module.rpartition(".")
            alias = "" if child == name else f" as {name}"
            lines.append(f"    from {parent} import {child}{alias}\n")
    lines.append(END)
    return "".join(lines)


def main() -> None:
    source = INIT.read_text(encoding="utf-8")
    new = block(lazy_table(source))
    if START in source:
        source = re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: new, source,
                        flags=re.S)
    else:
        anchor = "\n__all__ = sorted("
        source = source.replace(anchor, "\n" + new + anchor, 1)
    INIT.write_text(source, encoding="utf-8")


if __name__ == "__main__":
    main()
