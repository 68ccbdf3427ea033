"""The options of a generalised linear (mixed) model on the command line: ``--family``,
``--link``, ``--trials``, ``--offset`` (``irmodels anova`` and ``irmodels mixed``), ``--nagq`` and
``--squeeze`` (``irmodels mixed``), and ``--scale`` of the Tukey and Dunnett output.

No pandas here: ``irmodels anova MATRIX.csv`` registers these options on its start-up path.

>>> trials_value("10"), trials_value("n_judged")
(10, 'n_judged')
>>> trials_value("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: --trials takes a whole number >= 1 (P@10: 10) or a column name; got '0'
"""

from __future__ import annotations

import argparse
from typing import Any

from irmodels.cli._options import nonnegative_int

__all__ = ["add_family", "add_scale", "family_kwargs", "trials_value"]


def trials_value(text: str) -> int | str:
    """``--trials``: a whole number (the same number of trials on every row) or a column."""
    stripped = text.strip()
    if stripped.lstrip("+-").isdigit():
        value = int(stripped)
        if value >= 1:
            return value
    elif stripped and not stripped[0].isdigit() and not stripped.startswith("-"):
        return stripped
    raise argparse.ArgumentTypeError(
        f"--trials takes a whole number >= 1 (P@10: 10) or a column name; got {text!r}")


def add_family(p: argparse.ArgumentParser, families: tuple[str, ...], *,
               mixed: bool) -> None:
    """``--family``, ``--link``, ``--trials``, ``--offset`` (and for a mixed model ``--nagq``,
    ``--squeeze``)."""

    g = p.add_argument_group("generalised linear models (docs/glmm.md)")
    g.add_argument("--family", choices=families, default=None,
                   help="distribution of the response: " + ", ".join(families)
                        + " (default: the Gaussian linear model)")
    g.add_argument("--link", default=None,
                   help="link function (default the family's canonical one: logit for binomial "
                        "and beta, log for poisson; also probit, cloglog, identity, sqrt)")
    g.add_argument("--trials", type=trials_value, default=None, metavar="N|COLUMN",
                   help="binomial: trials per row, a number (P@10: 10, with the response as "
                        "a count, --formula 'score * 10 ~ ...') or a column")
    g.add_argument("--offset", default=None, metavar="COLUMN",
                   help="a column added to the linear predictor (link scale), e.g. log_depth")
    if mixed:
        g.add_argument("--nagq", type=nonnegative_int, default=1, metavar="K",
                       help="1 = Laplace (default), 2..100 adaptive Gauss-Hermite quadrature "
                            "(one scalar random term, as glmer's nAGQ), 0 = lme4's nAGQ = 0")
        g.add_argument("--squeeze", action="store_true",
                       help="beta: fit Smithson & Verkuilen's squeeze (y (n - 1) + 0.5) / n of "
                            "every score instead of refusing scores of exactly 0 or 1")


def add_scale(p: argparse.ArgumentParser) -> None:
    """``--scale`` of the Tukey (and Dunnett) output."""
    p.add_argument("--scale", choices=["link", "response"], default="link",
                   help="scale of --tukey/--dunnett for a --family model: link (default; "
                        "emmeans' pairs) or response (back-transformed by the delta method: "
                        "odds or rate ratios for the logit and log links, as emmeans' "
                        "type = 'response')")


def family_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of ``irm.anova``/``irm.mixed`` given on the command line (only
    those the user set, so a Gaussian model is fitted exactly as without them)."""
    out: dict[str, Any] = {}
    for name in ("family", "link", "trials", "offset"):
        value = getattr(args, name, None)
        if value is not None:
            out[name] = value
    if getattr(args, "nagq", 1) != 1:
        out["nagq"] = args.nagq
    if getattr(args, "squeeze", False):
        out["squeeze"] = True
    return out
