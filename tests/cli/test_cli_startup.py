"""`irmodels --help` lists every command without importing any command module (fast start), and
its one-line summaries are the ones the modules register."""

from __future__ import annotations

import subprocess
import sys

from irmodels.cli import COMMANDS, SUMMARIES, build_parser


def _registered_help() -> dict[str, str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {a.dest: a.help for a in sub._choices_actions}


def test_summaries_equal_the_registered_help() -> None:
    assert set(SUMMARIES) == set(COMMANDS)
    assert _registered_help() == SUMMARIES


def test_help_imports_no_command_module_nor_pandas() -> None:
    code = (
        "import sys\n"
        "from irmodels.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "loaded = [m for m in sys.modules if m.startswith('irmodels.cli.') or m in "
        "('pandas', 'scipy', 'matplotlib')]\n"
        "print('LOADED:' + ','.join(sorted(loaded)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "LOADED:"
    for name in COMMANDS:
        assert name in out.stdout


def test_a_command_imports_only_its_module() -> None:
    code = (
        "import sys\n"
        "from irmodels.cli import main\n"
        "try:\n    main(['power', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('irmodels.cli.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.strip().splitlines()[-1].split(","))
    assert "irmodels.cli.power" in loaded
    assert not {"irmodels.cli.anova_cmd", "irmodels.cli.report", "irmodels.cli.simulate"} & loaded
