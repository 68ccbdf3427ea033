"""The public namespace: every advertised name resolves, errors share one base."""

from __future__ import annotations

import importlib

import pytest

import irmodels as irm
from irmodels import errors


def test_every_lazy_name_resolves() -> None:
    missing = []
    for name, target in irm._LAZY.items():
        module_name = target.partition(":")[0]
        try:
            importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing.append(f"{name} -> {exc.name}")
            continue
        getattr(irm, name)
    assert not missing, f"public names point at modules that do not exist: {missing}"


def test_unknown_attribute_raises() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        irm.nope  # noqa: B018


@pytest.mark.parametrize(
    "cls",
    [errors.DataFormatError, errors.DesignError, errors.FormulaError, errors.ModelError,
     errors.ConvergenceError, errors.DatasetError, errors.MissingDependencyError],
)
def test_errors_share_base(cls: type) -> None:
    assert issubclass(cls, irm.IRModelsError)


def test_data_format_error_names_file_and_line() -> None:
    e = errors.DataFormatError("expected 6 columns, found 5", path="run.txt", line=17)
    assert str(e) == "run.txt, line 17: expected 6 columns, found 5"
    assert (e.path, e.line) == ("run.txt", 17)


def test_formula_error_points_at_span() -> None:
    e = errors.FormulaError("unknown column 'sytem'", "score ~ sytem", (8, 13))
    assert str(e).splitlines() == ["unknown column 'sytem'", "  score ~ sytem", "          ^^^^^"]


def test_static_view_of_the_lazy_names_is_current():
    """`if TYPE_CHECKING:` in irmodels/__init__.py imports exactly the `_LAZY` names, so mypy and
    IDEs see the public API typed (regenerate with `python scripts/sync_lazy_types.py`)."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("sync", root / "scripts" / "sync_lazy_types.py")
    sync = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sync)
    source = (root / "irmodels" / "__init__.py").read_text(encoding="utf-8")
    assert sync.block(sync.lazy_table(source)) in source


def test_every_lazy_name_resolves_to_an_object():
    import irmodels as irm

    for name in irm._LAZY:
        assert getattr(irm, name) is not None, name


def test_one_lazy_loader_serves_every_package() -> None:
    """Every package's lazy names go through irmodels._lazy.attach; no package writes its own."""
    from pathlib import Path

    root = Path(irm.__file__).resolve().parent
    own = [str(p.relative_to(root)) for p in root.rglob("*.py")
           if p.name != "_lazy.py"
           and "\ndef __getattr__" in p.read_text(encoding="utf-8")]  # module level (PEP 562)
    assert own == []
    for package in ("irmodels", "irmodels.replicates", "irmodels.studies", "irmodels.reporting"):
        module = importlib.import_module(package)
        assert module.__getattr__.__module__ == "irmodels._lazy", package
    assert "Section" in dir(irm.reporting) and "assign_shards" in dir(irm.replicates)
    assert irm.replicates.assign_shards is importlib.import_module(
        "irmodels.replicates.sharding").assign_shards
    with pytest.raises(AttributeError, match="no longer fits models"):
        irm.reporting.build_report  # noqa: B018
    with pytest.raises(AttributeError, match="'irmodels.studies' has no attribute 'nope'"):
        irm.studies.nope  # noqa: B018


def test_import_irmodels_loads_only_the_loader_and_the_errors() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "import sys, irmodels; "
         "print(*sorted(m for m in sys.modules if m.startswith('irmodels')))"],
        capture_output=True, text=True, check=True).stdout.split()
    assert out == ["irmodels", "irmodels._lazy", "irmodels.errors"]
