"""Every ```python block of docs/*.md runs as written.

Each page's blocks run in order in one namespace (a later block may use an earlier one's names),
in a fresh temporary directory, with ``IRM_DATA_MIRROR`` set (the ``shared_data`` fixture) and
the Agg backend. A block that needs the reader's own files says so in its fence,
```` ```python notest ````, and is skipped (the site renders it as a plain Python block:
docs/_hooks/fences.py drops the word, which SuperFences would not accept). A failure names the
page, the block and its first line.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
FENCE = re.compile(r"^```python([^\n`]*)\n(.*?)^```\s*$", re.S | re.M)


def blocks(page: Path) -> list[tuple[int, str, str]]:
    """(line, fence info, code) of every ```python block of ``page``."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.append((line, m.group(1).strip(), m.group(2)))
    return out


PAGES = sorted(p for p in DOCS.glob("*.md") if blocks(p))
# a page's blocks share one namespace, in order: under pytest-xdist `make test` keeps them in one
# worker with --dist loadfile (every test of a file in one worker, in order)
CASES = [(page, i) for page in PAGES for i, _ in enumerate(blocks(page))]


def test_fence_parser_sees_notest_and_code():
    assert FENCE.findall("```python notest\nx = 1\n```\n") == [(" notest", "x = 1\n")]
    assert FENCE.findall("```python\nprint(1)\n```\n```sh\nls\n```\n") == [("", "print(1)\n")]


@pytest.fixture(scope="module")
def namespaces():
    return {}


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory):
    return {}


@pytest.mark.parametrize(
    "page, index", CASES, ids=[f"{p.stem}-{i + 1}" for p, i in CASES]
)
def test_docs_block_runs(page, index, namespaces, workdirs, tmp_path_factory, shared_data,
                         monkeypatch):
    line, info, code = blocks(page)[index]
    if "notest" in info.split():
        pytest.skip(f"{page.name}:{line} needs the reader's own files (```python notest)")
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setenv("IRM_DATA_MIRROR", str(shared_data / "ir-scores"))
    workdir = workdirs.setdefault(page.stem, tmp_path_factory.mktemp(f"docs-{page.stem}"))
    monkeypatch.chdir(workdir)
    if page.stem not in namespaces:
        # a real module, so functions the page defines pickle (irm.parallel.map with processes)
        module = types.ModuleType(f"irm_docs_{page.stem}")
        sys.modules[module.__name__] = module
        namespaces[page.stem] = module.__dict__
    ns = namespaces[page.stem]
    if index and ns.get("__failed__"):
        pytest.skip(f"an earlier block of {page.name} failed")
    try:
        exec(compile(code, f"{page.name}:{line}", "exec"), ns)  # noqa: S102 - our own docs
    except BaseException:
        ns["__failed__"] = True
        raise
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")


def test_readme_states_the_exit_statuses_of_the_command():
    # the README once said every error exits with status 2; the command has one status per kind
    from irmodels.cli import EXIT_CODES, EXIT_OK

    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    sentence = readme[readme.index("Errors print one line"):]
    sentence = " ".join(sentence[:sentence.index(")).") + 3].split())
    stated = [int(n) for n in re.findall(r"(?:: |, )(\d+) ", sentence)]
    assert stated == sorted(c for c in EXIT_CODES if c != EXIT_OK), sentence


def test_docs_name_no_folder_outside_the_repository():
    # a reader has no ../shared (the project's test data): the docs name the public matrices of
    # irm.datasets, or the upstream distribution of a test file, instead
    for page in [*DOCS.glob("*.md"), DOCS.parent / "README.md"]:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"\.\./shared", text):
            line = text.count("\n", 0, m.start()) + 1
            context = text[max(0, m.start() - 200):m.start()]
            assert page.name == "README.md" and "make test" in context, f"{page.name}:{line}"
