"""The import contract: imports flow one way through the package's layers.

Every ``import`` / ``from ... import`` statement of every module under ``irmodels/`` (at module
level, inside functions and under ``TYPE_CHECKING`` alike) is read from the AST and checked:

- a layer imports only layers below it (or itself), in the order of the README's picture::

      data -> replicates -> formula -> inference -> models -> studies -> reporting
           -> analysis -> cli

  (``inference`` holds the kernels the models use: Tukey HSD, effect sizes, G-theory);
- the base modules (``errors``, ``_display``, ``_format``, ``_section``, ``_safeio``, ``_validate``, ``parallel``, the
  package root) import no layer;
- ``reporting`` only assembles: it imports no study and no model-fitting function.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "irmodels"

LAYERS = ["data", "replicates", "formula", "inference", "models", "studies", "reporting",
          "analysis", "cli", "__main__"]
BASE = {"irmodels", "errors", "_display", "_format", "_section", "_safeio", "_validate", "parallel",
        "_version", "_typing"}
#: (importer module, imported module) pairs allowed against the order, with the reason.
ALLOWED: dict[tuple[str, str], str] = {
    ("irmodels.inference.compare", "irmodels.models.anova"):
        "irm.compare's Tukey letters come from the topic-blocked ANOVA fit (a driver kept "
        "beside the paired tests it also runs)",
}
#: Names reporting may not import: fitting a model or computing a statistic is the caller's job.
FITTING = {"anova", "mixed", "tukey_hsd", "gstudy", "residual_diagnostics", "shards",
           "evaluate", "pairwise"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, imported names, line) for every import statement of ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            if target == "irmodels":  # from irmodels import parallel -> irmodels.parallel
                for n in names:
                    sub = PACKAGE / n
                    if sub.is_dir() or sub.with_suffix(".py").exists():
                        out.append((f"irmodels.{n}", [], node.lineno))
                    else:
                        out.append(("irmodels", [n], node.lineno))
            else:
                out.append((target, names, node.lineno))
    if module == "irmodels":  # the facade's static view of its lazy names, for type checkers only
        tree = ast.parse(path.read_text(encoding="utf-8"))
        static = [range(node.lineno, node.end_lineno + 1) for node in ast.walk(tree)
                  if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"]
        out = [o for o in out if not any(o[2] in r for r in static)]
    return [(t, n, line) for t, n, line in out if t == "irmodels" or t.startswith("irmodels.")]


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "irmodels"


def _rank(layer: str) -> int | None:
    return None if layer in BASE else LAYERS.index(layer)


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_is_in_a_known_layer():
    unknown = {_layer(_module_name(p)) for p in MODULES} - BASE - set(LAYERS)
    assert not unknown, f"modules outside the layer map: {sorted(unknown)}; add them to LAYERS/BASE"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _module_name(p))
def test_imports_flow_one_way(path):
    importer = _module_name(path)
    src = _layer(importer)
    bad = []
    for target, names, line in _imports(path):
        dst = _layer(target)
        if (importer, target) in ALLOWED or dst == src:
            continue
        if src in BASE:
            if dst not in BASE:
                bad.append(f"line {line}: base module imports layer {target}")
            continue
        if dst in BASE:
            continue
        if _rank(dst) > _rank(src):  # type: ignore[operator]
            bad.append(f"line {line}: {src} imports {target} (a later layer)")
        if src == "reporting" and dst == "studies":
            bad.append(f"line {line}: reporting imports a study ({target}); the study renders "
                       "its own Section")
        if src == "reporting" and set(names) & FITTING:
            bad.append(f"line {line}: reporting imports {sorted(set(names) & FITTING)} from "
                       f"{target}; fitting is the caller's job (irmodels.analysis)")
    assert not bad, f"{importer}:\n" + "\n".join(bad)


def test_the_contract_sees_imports():
    """The checker is not vacuous: it finds the known downward imports."""
    found = {t for t, _, _ in _imports(PACKAGE / "analysis.py")}
    assert "irmodels.models.anova" in found and "irmodels.reporting.report" in found
    src = "from irmodels.reporting.report import Section\n"
    tree_targets = [n.module for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)]
    assert _rank(_layer(tree_targets[0])) > _rank("studies")  # would be flagged in a study


def test_readme_picture_lists_the_layers_in_this_order():
    """The README's Architecture picture is the import order this test enforces."""
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    drawn = []
    for line in section.splitlines():
        word = line.strip().split(" ", 1)[0].rstrip("/").removesuffix(".py")
        if line.startswith("    ") and word in LAYERS and word not in drawn:
            drawn.append(word)
    assert drawn[::-1] == [layer for layer in LAYERS if layer != "__main__"], drawn
