"""The user's own column names in every function that takes a score frame.

:func:`irmodels.anova` and :func:`irmodels.mixed` name columns through their formula; every
other function that takes a long frame (``irm.pairwise``, ``irm.gstudy``, ``irm.compare``, the
variability, rank, comparability and power functions, the topic-set study) takes the names
through the keywords ``topic=``, ``system=`` and ``score=`` (keyword-only, as
:func:`irmodels.frame` has them). :func:`user_frame` is the one route: with the canonical
names the frame is used as it is (so nothing changes for a canonical frame); with other names
it goes through :func:`irmodels.frame`, which renames and validates, and the result names
the user's columns where it names a factor (:func:`relabel`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

import pandas as pd

from irmodels.data.frame import frame
from irmodels.errors import DataFormatError, UsageError

__all__ = ["CANONICAL", "check_names", "own_names", "relabel", "user_columns", "user_frame"]

#: The canonical names of the three columns every score frame has.
CANONICAL = ("topic", "system", "score")


def check_names(topic: object = "topic", system: object = "system", score: object = "score",
                *, what: str = "data") -> dict[str, str]:
    """The mapping canonical name -> the user's column name, after checking each is a
    string and that no column is named for two roles.

    >>> check_names("qid", "run", "map")
    {'topic': 'qid', 'system': 'run', 'score': 'map'}
    """
    names = {"topic": topic, "system": system, "score": score}
    for role, given in names.items():
        if not isinstance(given, str) or not given:
            raise UsageError(f"{what}: {role}= names a column, so it is a non-empty string; "
                             f"got {given!r}.")
    seen: dict[str, str] = {}
    for role, given in names.items():
        if given in seen:
            raise UsageError(f"{what}: {seen[given]}= and {role}= both name the column "
                             f"{given!r}; each role needs its own column.")
        seen[str(given)] = role
    return {k: str(v) for k, v in names.items()}


def _looks_wide(data: pd.DataFrame) -> bool:
    """Numbers in every column but (perhaps) the first, at least two of them: a wide matrix
    (rows = topics, columns = systems) rather than a long frame."""
    cols = list(data.columns)
    numeric = [pd.api.types.is_numeric_dtype(data[c]) and not pd.api.types.is_bool_dtype(data[c])
               for c in cols]
    return len(cols) >= 2 and sum(numeric[1:]) >= 2 and all(numeric[1:])


def refuse_missing(data: pd.DataFrame, names: Mapping[str, str], what: str,
             owner: str = "the data") -> None:
    """Refuse a column named (or expected by default) that ``data`` lacks, with a "did you
    mean" from the columns present (and :func:`irmodels.from_wide` for a wide matrix)."""
    columns = [str(c) for c in data.columns]
    for role, given in names.items():
        if given in data.columns:
            continue
        others = [c for c in columns if c not in names.values()] or columns
        lower = {c.lower(): c for c in others}
        close = [lower[given.lower()]] if given.lower() in lower else [
            lower[c] for c in difflib.get_close_matches(given.lower(), list(lower), n=1,
                                                         cutoff=0.6)]
        if not close and given == role:  # the default name: guess the usual other names
            usual = {"topic": ("qid", "query", "query_id", "topic_id", "topics"),
                     "system": ("run", "runid", "run_id", "system_id", "name", "systems"),
                     "score": ("value", "map", "ap", "ndcg", "metric")}[role]
            close = [c for c in others if c.lower() in usual][:1]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        shown = ", ".join(map(repr, columns[:12])) + (", ..." if len(columns) > 12 else "")
        if _looks_wide(data) and not close:
            way_out = ("It looks like a wide matrix (rows = topics, columns = systems, "
                       "numbers in the cells): make it a long frame with irm.from_wide(df) "
                       "(irm.read_matrix reads such a file).")
        else:
            keyword = f"{role}={close[0]!r}" if close else f"{role}='<name>'"
            way_out = f"Name the {role} column with {keyword}."
        prefix = f"{what}: " if what else ""
        raise DataFormatError(
            f"{prefix}{owner} has no column {given!r}{hint} for the {role}; columns present: "
            f"{shown}. {way_out}"
        )


def user_frame(data: Any, *, topic: str = "topic", system: str = "system",
               score: str = "score", what: str = "data", owner: str = "the data"
               ) -> tuple[Any, dict[str, str]]:
    """``data`` with canonical ``topic, system, score`` columns, and the mapping canonical name
    -> the user's name.

    With the canonical names (the defaults) a DataFrame that has them is returned as it is,
    so a canonical frame gives exactly today's numbers; anything that is not a DataFrame is
    returned as it is for the caller to judge. Other names go through :func:`irmodels.frame`
    (the one renaming and validation of the package), which keeps ``measure``, ``collection``,
    ``shard`` and ``sample`` columns; ``data.attrs`` are kept. A column that is not there
    (named, or canonical and expected) is a :class:`~irmodels.errors.DataFormatError` that
    names it, with a "did you mean".

    >>> import pandas as pd
    >>> raw = pd.DataFrame({"qid": [1, 1, 2, 2], "run": ["a", "b", "a", "b"],
    ...                     "map": [0.1, 0.2, 0.3, 0.4]})
    >>> f, names = user_frame(raw, topic="qid", system="run", score="map")
    >>> list(f.columns), names["system"]
    (['topic', 'system', 'score'], 'run')
    >>> user_frame(raw, topic="qid", system="rn", score="map", what="irm.pairwise")
    Traceback (most recent call last):
    ...
    irmodels.errors.DataFormatError: irm.pairwise: the data has no column 'rn' (did you mean 'run'?) for the system; columns present: 'qid', 'run', 'map'. Name the system column with system='run'.
    """
    names = check_names(topic, system, score, what=what)
    if not isinstance(data, pd.DataFrame):
        return data, names
    if all(names[c] == c for c in CANONICAL):
        if set(CANONICAL) <= set(data.columns):
            return data, names
        # a frame with other names and no keywords: say which keyword names them
        if len(data.columns) and not ({"name", "qid", "measure", "value"}
                                      <= set(map(str, data.columns))):
            refuse_missing(data, names, what, owner)
        return data, names
    refuse_missing(data, names, what, owner)
    out = frame(data, topic=names["topic"], system=names["system"], score=names["score"])
    out.attrs.update(data.attrs)
    return out, names


def user_columns(data: pd.DataFrame, names: Mapping[str, str], *, what: str = "data"
                 ) -> pd.DataFrame:
    """``data`` with the user's columns ``names`` (canonical -> name) under their canonical
    names, for the functions that need only some of ``topic, system, score`` (the rank
    correlations need ``system`` and ``score``); a column that is not there is refused with
    a "did you mean". Other columns are kept, except one already called by a canonical name
    that is being replaced.

    >>> raw = pd.DataFrame({"run": ["a", "b"], "map": [0.2, 0.4]})
    >>> list(user_columns(raw, {"system": "run", "score": "map"}).columns)
    ['system', 'score']
    """
    for role, given in names.items():
        if not isinstance(given, str) or not given:
            raise UsageError(f"{what}: {role}= names a column, so it is a non-empty string; "
                             f"got {given!r}.")
    if all(k == v for k, v in names.items()):
        if set(names) <= set(data.columns):
            return data
    refuse_missing(data, names, what)
    moved = {v: k for k, v in names.items() if k != v}
    drop = [c for c in data.columns if c in moved.values() and c not in moved]
    return data.drop(columns=drop).rename(columns=moved)


def own_names(names: Mapping[str, str]) -> dict[str, str] | None:
    """``names`` when any differs from the canonical one (a result then names them), else
    None.

    >>> own_names({"topic": "topic", "system": "system", "score": "score"}) is None
    True
    """
    return dict(names) if any(names.get(c, c) != c for c in CANONICAL) else None


def relabel(names: Mapping[str, str] | None, text: str) -> str:
    """``text`` (a factor or term label such as ``system`` or ``topic:system``) in the
    user's names: ``run``, ``qid:run``; as it is with the canonical names.

    >>> relabel({"topic": "qid", "system": "run", "score": "map"}, "topic:system")
    'qid:run'
    """
    if not names:
        return text
    return ":".join(names.get(part, part) for part in str(text).split(":"))
