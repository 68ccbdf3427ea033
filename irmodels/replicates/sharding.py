"""Random partitions of a document collection into shards (Ferro & Sanderson, SIGIR 2019).

A *shard* is a random subset of the collection's documents. Splitting the collection into S
shards of (near) equal size and scoring every run on every shard turns one score per
(topic, system) into S replicates, which separates the topic*system interaction from the error
(models MD3-MD6 of docs/methods.md: "Crossed ANOVA models"). The assignment returned here (doc id -> shard) is what
``irm.evaluate(runs, qrels, measures, shards=assignment)`` takes.

References: N. Ferro and M. Sanderson, "Improving the Accuracy of System Performance Estimation
by Using Shards", SIGIR 2019, section 4; docs/methods.md: "Shards and undefined values".
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from irmodels._validate import check_seed
from irmodels.data.frame import natural_key
from irmodels.errors import ArgumentError, DataFormatError, DataQualityWarning, DesignError
from irmodels.parallel import spawn_seeds

__all__ = ["as_docids", "assign_shards", "docids_from", "read_docids", "shard_labels", "shard_sizes", "shard_splits"]


def as_docids(docids: Iterable[object]) -> pd.Index:
    """The collection's document ids as a ``pd.Index`` of str named ``docid``; a single
    string, a frame, missing ids or an id listed twice raise :class:`DataFormatError`."""
    if isinstance(docids, (str, bytes)):
        raise DataFormatError(
            "docids is a single string; pass a sequence of document ids "
            "(e.g. collection.docids or irm.replicates.sharding.read_docids(path))."
        )
    if isinstance(docids, pd.DataFrame):
        raise DataFormatError(
            "docids is a DataFrame; pass its column of document ids (e.g. frame['docid']).")
    if not isinstance(docids, Iterable):
        raise DataFormatError(
            f"docids must be a sequence of document ids (e.g. collection.docids or "
            f"irm.replicates.sharding.read_docids(path)); got {type(docids).__name__} "
            f"{docids!r}.")
    if isinstance(docids, pd.Index):
        values = pd.Series(docids.to_numpy(), copy=False)
    elif isinstance(docids, (pd.Series, np.ndarray)):
        values = pd.Series(np.asarray(docids), copy=False)
    else:
        values = pd.Series(list(docids), dtype=object)
    if values.isna().any():
        raise DataFormatError("docids contain missing values; every document needs an id.")
    ids = pd.Index(values.astype("str"), name="docid")
    if ids.has_duplicates:
        dup = ids[ids.duplicated()].unique()
        raise DataFormatError(
            f"{len(dup)} document id(s) appear more than once, e.g. {dup[:3].tolist()}. "
            "Each document must be listed once: remove the duplicates."
        )
    return ids


def _seed_sequence(seed: int | np.random.SeedSequence) -> np.random.SeedSequence:
    checked = check_seed(seed)
    if isinstance(checked, np.random.Generator):
        raise ArgumentError("seed must be None, a whole number >= 0 or a SeedSequence; got a "
                            "Generator. Pass e.g. seed=0 (the same seed gives the same shards).")
    return checked if isinstance(checked, np.random.SeedSequence) else np.random.SeedSequence(checked)


def _check_n_shards(n_shards: object, n_docs: int) -> int:
    if isinstance(n_shards, (bool, np.bool_)) or not isinstance(n_shards, (int, np.integer)):
        raise DesignError(f"n_shards must be an integer; got {n_shards!r}.")
    if n_shards < 1:
        raise DesignError(f"n_shards must be at least 1; got {n_shards}. Use S >= 1 shards.")
    if n_shards > n_docs:
        raise DesignError(
            f"cannot split {n_docs} document(s) into {n_shards} shards: every shard needs at "
            f"least one document. Use at most {n_docs} shards, or a larger document list."
        )
    return int(n_shards)


def assign_shards(
    docids: Iterable[object], n_shards: int, seed: int | np.random.SeedSequence
) -> pd.Series:
    """Assign every document to one of ``n_shards`` random shards of (near) equal size.

    The labels ``1, 2, ..., S, 1, 2, ...`` (so sizes differ by at most one, the first
    ``N mod S`` shards holding the extra document) are shuffled with
    ``numpy.random.default_rng(seed)`` and given to the documents in the order listed.

    Parameters
    ----------
    docids : sequence of str
        Every document of the collection, each once (ids are compared as strings).
    n_shards : int
        Number of shards S, ``1 <= S <= len(docids)``.
    seed : int or numpy.random.SeedSequence
        The same seed and document list give the same assignment.

    Returns
    -------
    Series
        Indexed by doc id (``str``, the input order), values the shard number ``1..S``
        (int64), named ``shard``. Pass it as ``irm.evaluate(..., shards=assignment)``.

    Raises
    ------
    DesignError
        ``n_shards`` below 1 or above the number of documents; a bad seed.
    DataFormatError
        ``docids`` not a sequence of ids (a number, a string, a DataFrame); duplicated or
        missing document ids.

    Notes
    -----
    Ferro & Sanderson (SIGIR 2019, section 4) split the collection at random into S shards of
    equal size; a run and the qrels are split by the same assignment. See docs/methods.md: "Shards and undefined values".

    Examples
    --------
    >>> import irmodels as irm
    >>> a = irm.replicates.assign_shards([f"d{i}" for i in range(7)], 3, seed=1)
    >>> a.value_counts().sort_index().tolist()
    [3, 2, 2]
    >>> a.equals(irm.replicates.assign_shards([f"d{i}" for i in range(7)], 3, seed=1))
    True
    """
    ids = as_docids(docids)
    return pd.Series(shard_labels(len(ids), n_shards, seed), index=ids, name="shard")


def shard_labels(n_docs: int, n_shards: int, seed: int | np.random.SeedSequence) -> np.ndarray:
    """The shard numbers (1..S) that :func:`assign_shards` gives to ``n_docs`` listed documents.

    ``assign_shards(docids, S, seed).to_numpy()`` equals ``shard_labels(len(docids), S, seed)``; this
    form skips the document ids (cheap to compute inside a worker).

    >>> shard_labels(6, 3, seed=0).tolist()
    [1, 3, 3, 2, 1, 2]
    """
    s = _check_n_shards(n_shards, int(n_docs))
    rng = np.random.default_rng(_seed_sequence(seed))
    labels = np.arange(int(n_docs), dtype=np.int64) % s + 1
    rng.shuffle(labels)
    return labels


def shard_splits(
    docids: Iterable[object], n_shards: int, n_splits: int, seed: int | np.random.SeedSequence
) -> list[pd.Series]:
    """``n_splits`` independent random assignments of the documents to ``n_shards`` shards.

    Split ``k`` uses the ``k``-th child of ``numpy.random.SeedSequence(seed).spawn(n_splits)``
    (see :func:`irmodels.parallel.spawn_seeds`), so splits are independent of each other and
    split ``k`` does not depend on ``n_splits``.

    Parameters
    ----------
    docids : sequence of str
        Every document of the collection, each once.
    n_shards : int
        Number of shards per split.
    n_splits : int
        Number of splits (>= 1).
    seed : int or numpy.random.SeedSequence
        Seed of the whole set of splits.

    Returns
    -------
    list of Series
        Each as returned by :func:`assign_shards`.

    Examples
    --------
    >>> import irmodels as irm
    >>> docs = [f"d{i}" for i in range(100)]
    >>> splits = irm.replicates.shard_splits(docs, 4, n_splits=3, seed=0)
    >>> [s.value_counts().tolist() for s in splits]
    [[25, 25, 25, 25], [25, 25, 25, 25], [25, 25, 25, 25]]
    >>> splits[0].equals(splits[1])
    False
    """
    if isinstance(n_splits, (bool, np.bool_)) or not isinstance(n_splits, (int, np.integer)) \
            or n_splits < 1:
        raise ArgumentError(f"n_splits must be a positive integer; got {n_splits!r}.")
    ids = as_docids(docids)
    _check_n_shards(n_shards, len(ids))
    return [assign_shards(ids, n_shards, child) for child in spawn_seeds(_seed_sequence(seed), int(n_splits))]


def shard_sizes(assignment: pd.Series) -> pd.Series:
    """Number of documents per shard (index 1..S).

    >>> import irmodels as irm
    >>> shard_sizes(irm.replicates.assign_shards(list("abcde"), 2, seed=3)).tolist()
    [3, 2]
    """
    return assignment.value_counts().sort_index().rename("documents")


def docids_from(runs: pd.DataFrame, qrels: pd.DataFrame) -> np.ndarray:
    """The document ids of the union of the runs and the qrels, with a warning.

    Use this only when the collection's own document list is not available: documents that were
    neither retrieved by any run nor judged are missing, so shards built from this list are
    smaller than the real ones (their relative sizes are still even). The warning says so.

    Parameters
    ----------
    runs : DataFrame
        Runs with a ``docid`` column.
    qrels : DataFrame
        Qrels with a ``docid`` column.

    Returns
    -------
    ndarray of str
        Unique ids in natural order (``d2`` before ``d10``).

    Warns
    -----
    DataQualityWarning
        Always: unjudged, unretrieved documents are not in the list.

    Examples
    --------
    >>> import warnings, pandas as pd
    >>> runs = pd.DataFrame({"docid": ["d10", "d2", "d3"]})
    >>> qrels = pd.DataFrame({"docid": ["d3", "d7"]})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     docids_from(runs, qrels).tolist()
    ['d2', 'd3', 'd7', 'd10']
    """
    for name, df in (("runs", runs), ("qrels", qrels)):
        if not isinstance(df, pd.DataFrame) or "docid" not in df.columns:
            raise DataFormatError(
                f"{name} must be a DataFrame with a 'docid' column; got "
                f"{type(df).__name__}"
                + (f" with columns {list(df.columns)}" if isinstance(df, pd.DataFrame) else "")
                + ". Read it with irm.read_runs / irm.read_qrels."
            )
    ids = pd.unique(pd.concat([runs["docid"].astype(str), qrels["docid"].astype(str)]).to_numpy())
    ordered = np.array(sorted(ids, key=natural_key), dtype=object)
    warnings.warn(
        f"built the document list from the runs and qrels ({len(ordered)} documents): "
        "documents that no run retrieved and nobody judged are missing, so the shards hold "
        "only part of the collection. Pass the collection's own list of doc ids "
        "(e.g. --docids FILE, read with read_docids) for faithful shards.",
        DataQualityWarning,
        stacklevel=2,
    )
    return ordered


def read_docids(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a document-id file: one id per line.

    Blank lines and lines starting with ``#`` are skipped; surrounding whitespace is removed.

    Parameters
    ----------
    path : str or path-like
        A text file (UTF-8).

    Returns
    -------
    ndarray of str
        The ids in file order.

    Raises
    ------
    DataFormatError
        With the file and line number: a line with more than one field, a duplicated id
        (naming the first line that had it), or a file without ids.
    FileNotFoundError
        The file does not exist.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "docids.txt"
    >>> _ = p.write_text("# TREC-8 ids\\nFT911-1\\nLA010189-0001\\n\\n")
    >>> read_docids(p).tolist()
    ['FT911-1', 'LA010189-0001']
    """
    p = Path(path)
    ids: list[str] = []
    first_line: dict[str, int] = {}
    with p.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            fields = text.split()
            if len(fields) != 1:
                raise DataFormatError(
                    f"expected one document id per line, found {len(fields)} fields "
                    f"({text[:60]!r}). Write one id per line.",
                    path=str(p), line=lineno,
                )
            if text in first_line:
                raise DataFormatError(
                    f"document id {text!r} is repeated (first on line {first_line[text]}). "
                    "List each document once.",
                    path=str(p), line=lineno,
                )
            first_line[text] = lineno
            ids.append(text)
    if not ids:
        raise DataFormatError(
            "the file has no document ids; expected one id per line.", path=str(p)
        )
    return np.array(ids, dtype=object)
