"""The library's messages in the words of the command line.

Errors and warnings of the Python API tell the way out in Python terms (``pass nan='drop'``,
``method='subsample'``, ``virtual=True``). On the command line such a hint is rewritten:

- to the command's own option (``--method subsample``, ``--virtual``, ``--ddof 0``) when the
  command has that option and accepts the value;
- else to what to do instead (fix the file, drop the rows), or it is left out;
- "Drop it from the model" (a factor with one level) becomes "needs at least two topics /
  systems" in commands that have no model option.

:func:`cli_message` is applied by :func:`irmodels.cli.main` to every error line and warning.

>>> cli_message("Use smaller sizes, or method='subsample' / 'bootstrap'.",
...             {"method": ("--method", ("disjoint", "subsample", "bootstrap"), False)})
'Use smaller sizes, or --method subsample / bootstrap.'
>>> cli_message("Use more reference systems, virtual=True, or ddof=0.",
...             {"virtual": ("--virtual", None, True), "ddof": ("--ddof", (0, 1), False)})
'Use more reference systems, --virtual, or --ddof 0.'
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence

__all__ = ["cli_message", "command_options"]

#: dest -> (option string, choices or None, is a flag)
Options = Mapping[str, tuple[str, "Sequence[object] | None", bool]]

# Python hints with no option on any command: (pattern, replacement). Applied first.
_FIXED: list[tuple[re.Pattern[str], str]] = [
    # irm.frame: a missing score in a long frame
    (re.compile(r"Drop or impute them first, or pass nan='drop' to drop those rows "
                r"\(the design may become unbalanced\)\."),
     "Fill them in, or delete those rows from the file (the design may become unbalanced)."),
    # read_matrix: a missing cell of a wide matrix
    (re.compile(r"fill it in, or pass nan='drop' to drop missing cells \(the design becomes "
                r"unbalanced\)"),
     ("fill it in, or write the scores as a long frame (topic,system,score) without that "
      "cell (the design becomes unbalanced)")),
    (re.compile(r" ?\(irm\.frame\(\.\.\., nan='drop'\)\)"), ""),
    (re.compile(r"drop them first \(irm\.frame\(\.\.\., nan='drop'\)\)"), "drop them first"),
    (re.compile(r"pass force=True \(--force on the command line\)"), "pass --force"),
    # binomial GLM(M)s: P@k read as a proportion where counts of successes are needed
    (re.compile(r"give counts of successes \(for P@k: round\(P@k \* k\)\) with trials=k"),
     "give counts of successes: for P@k scores write the response as a count, e.g. --formula "
     "'score * 10 ~ ...' with --trials 10 for P@10"),
    # a wide matrix where a long frame is expected (a parquet matrix): the commands' words
    (re.compile(r"make it a long frame with irm\.from_wide\(df\) \(irm\.read_matrix reads "
                r"such a file\)"),
     "write it as a CSV/TSV matrix (the commands read those as such) or as a long frame "
     "(topic, system, score)"),
    # irm.frame: a repeated key
    (re.compile(r"name the column that tells replicates apart \(shard=\.\.\. or sample=\.\.\.\)"),
     "add a column (shard or sample) that tells the replicates apart"),
]

# name=value hints, rewritten to the option of the same name when the command has it
_NAMES = ("method", "virtual", "ddof", "undefined", "backend", "adjust", "alternative",
          "ss_type", "system_from", "force", "squeeze", "nagq", "scale", "family", "link",
          "trials", "offset")
_VALUE = r"(?:'[^']*'(?: (?:/|or) '[^']*')*|True|False|-?\d+(?:\.\d+)?)"
_HINT = re.compile(r"\b(" + "|".join(_NAMES) + r")=(" + _VALUE + r")")

# aggregate='mean' (several scores per cell): pairwise has --average, the others none
_AGGREGATE = re.compile(r"pass aggregate='mean' to average them")

# a column of a long frame named with a keyword: the command's --topic / --system / --score
_COLUMN = re.compile(r"Name the (topic|system|score) column with (?:topic|system|score)="
                     r"'([^']*)'")

# a factor with one level, in a command without --model / --formula
_ONE_LEVEL = re.compile(
    r"factor '(?P<f>topic|system|shard)' has (?P<n>\d+) level\(s\) \((?P<levels>[^)]*)\); "
    r"a (?:fixed )?factor needs at least two levels to be (?:tested|estimated)\. "
    r"Drop it from the model\.")


def command_options(parser: argparse.ArgumentParser, words: Sequence[str]) -> dict:
    """The options of the (sub)command that ``words`` run: dest -> (option, choices, flag)."""
    p = parser
    rest = list(words)
    while True:
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None:
            break
        word = next((w for w in rest if not w.startswith("-")), None)
        if word is None or word not in sub.choices:
            break
        p = sub.choices[word]
        rest = rest[rest.index(word) + 1:]
    out = {}
    for action in p._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs and action.dest not in out:
            out[action.dest] = (longs[0], action.choices, action.nargs == 0)
    return out


def _option_text(name: str, value: str, options: Options) -> str | None:
    """``--name value`` for the hint ``name=value``, or None when the command cannot take it."""
    entry = options.get(name)
    if entry is None:
        return None
    option, choices, flag = entry
    if flag:
        return option if value == "True" else None
    values = re.findall(r"'([^']*)'", value) or [value]
    if choices is not None:
        allowed = {str(c) for c in choices}
        if any(v not in allowed for v in values):
            return None
    joiners = re.findall(r" (/|or) ", value)
    text = f"{option} {values[0]}"
    for joiner, v in zip(joiners, values[1:]):
        text += f" {joiner} {v}"
    return text


def cli_message(text: str, options: Options | None = None) -> str:
    """``text`` (an error or warning of the API) with its Python hints in command-line terms
    for a command with ``options`` (see :func:`command_options`)."""
    options = options or {}
    for pattern, repl in _FIXED:
        text = pattern.sub(repl, text)

    def hint(m: re.Match[str]) -> str:
        new = _option_text(m.group(1), m.group(2), options)
        return m.group(0) if new is None else new

    text = _AGGREGATE.sub("add --average to average them" if "average" in options
                          else "average them per (topic, system) in the file first", text)
    text = _HINT.sub(hint, text)
    text = _COLUMN.sub(lambda m: (f"Name the {m.group(1)} column with --{m.group(1)} "
                                  f"{m.group(2)}" if m.group(1) in options
                                  else m.group(0)), text)
    if "model" not in options and "formula" not in options:
        def one_level(m: re.Match[str]) -> str:
            f = m.group("f")
            return (f"this command needs at least two {f}s; the data have {m.group('n')} "
                    f"({m.group('levels')}).")

        text = _ONE_LEVEL.sub(one_level, text)
    return text
