"""Release hygiene: one version, licence and citation files that agree, README links that work on a
package index, declared minimum versions that `make test-min` installs."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import irmodels

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_defined_once() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in meta["project"]
    assert meta["project"]["dynamic"] == ["version"]
    assert meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "irmodels.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", irmodels.__version__)


def test_citation_and_changelog_name_the_version() -> None:
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(irmodels.__version__)}$", cff, re.M)
    assert f"## {irmodels.__version__}" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_licence_matches_the_declared_one() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert meta["project"]["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_readme_links_are_absolute() -> None:
    """A package index shows the README without the repository, so relative links break there."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links
    relative = [x for x in links if not re.match(r"https?://|#", x)]
    assert relative == []


def test_minimum_versions_are_the_declared_floors() -> None:
    """Every floor in `dependencies` is what `make test-min` installs (.ci/constraints-min.txt)."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = dict(
        line.split("==") for line in (ROOT / ".ci" / "constraints-min.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    for dep in meta["project"]["dependencies"]:
        name, floor = re.fullmatch(r"([A-Za-z0-9_.\-]+)>=([\d.]+)", dep).groups()
        assert name in pins, name
        assert pins[name].startswith(floor), (name, floor, pins[name])
    assert meta["project"]["requires-python"] == ">=3.11"


def test_slow_first_files_exist_and_make_test_keeps_their_order() -> None:
    """conftest.py's SLOW_FIRST starts the slowest files first; a renamed or removed file there
    would silently stop doing so, and without --no-loadscope-reorder xdist re-sorts them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("irm_root_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    missing = [p for p in mod.SLOW_FIRST if not (ROOT / p).is_file()]
    assert not missing, f"conftest.py SLOW_FIRST names files that do not exist: {missing}"
    assert len(set(mod.SLOW_FIRST)) == len(mod.SLOW_FIRST)
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("test:", "test-min:"):
        body = make.split(f"\n{target}", 1)[1].split("\n\n", 1)[0]
        assert "--dist loadfile --no-loadscope-reorder" in body, target
