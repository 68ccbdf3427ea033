"""Public per-topic score matrices of TREC tracks: a registry, a verified cache, a local mirror.

``irm.datasets.list()`` shows what exists; ``irm.datasets.load(collection, measure)`` returns
the long frame. The registry (``registry.json`` next to this module) pins every file to a
commit of its public repository and records its sha256, licence and citation.

Where the files come from, in this order:

1. ``$IRM_DATA_MIRROR``: a local directory holding the files under their registry names
   (``adhoc8_ap.csv``...), e.g. a copy of the cache of a machine that downloaded them, for
   work offline; the project's tests point it at their copy. Nothing is downloaded.
2. The cache: ``$IRM_CACHE_DIR``, else ``$XDG_CACHE_HOME/irmodels``, else
   ``~/.cache/irmodels``.
3. A download with :mod:`urllib` from the pinned URL into the cache. The first download of a
   file issues one :class:`DatasetNotice` (a warning) with its licence and citation; later
   loads are silent. Silence it with ``warnings.filterwarnings("ignore",
   category=irm.datasets.DatasetNotice)``.

Every file is checked against its sha256 wherever it comes from; a mismatch raises
:class:`~irmodels.errors.DatasetError`. Measures are named the ir_measures way (``AP``,
``P@10``, ``P@20``, ``RR``, ``nDCG``, ``nDCG@20``, ``ERR@20``) and matched case-insensitively
with common aliases (``ap``, ``map``, ``p10``, ``P_10``, ``recip_rank``...). Four files do not
state their measure; their measure is ``unknown``.
"""

from __future__ import annotations

import builtins
import difflib
import hashlib
import json
import os
import re
import tempfile
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from irmodels.data.io import read_matrix
from irmodels.errors import DatasetDownloadError, DatasetError, IRModelsWarning

__all__ = ["DatasetNotice", "cache_dir", "canonical_measure", "info", "list", "load", "path"]

_REGISTRY = Path(__file__).with_name("registry.json")
MIRROR_VARIABLE = "IRM_DATA_MIRROR"
CACHE_VARIABLE = "IRM_CACHE_DIR"

_ALIASES = {
    "map": "ap",
    "averageprecision": "ap",
    "reciprank": "rr",
    "mrr": "rr",
    "ndcgcut20": "ndcg20",
    "precision10": "p10",
    "precision20": "p20",
    "unstated": "unknown",
}


class DatasetNotice(IRModelsWarning):
    """Licence and citation of a dataset, issued once, when its file is first downloaded."""


@dataclass(frozen=True)
class _Entry:
    collection: str
    measure: str
    file: str
    topics: int
    systems: int
    topic_id_column: bool
    source_repository: str
    source_commit: str
    url: str | None
    upstream: str
    mirror_only: bool
    sha256: str
    licence: str
    citation: str


@lru_cache(maxsize=1)
def _entries() -> tuple[_Entry, ...]:
    raw = json.loads(_REGISTRY.read_text(encoding="utf-8"))
    return tuple(_Entry(**e) for e in raw["datasets"])


def _key(measure: str) -> str:
    k = re.sub(r"[\s@_.\-]", "", str(measure).lower())
    return _ALIASES.get(k, k)


def canonical_measure(measure: str) -> str:
    """The registry's name for ``measure`` (``"p10"`` -> ``"P@10"``).

    Raises :class:`DatasetError` when no dataset has that measure.

    Examples
    --------
    >>> import irmodels as irm
    >>> [irm.datasets.canonical_measure(m) for m in ["ap", "MAP", "p_10", "P@20", "ndcg@20"]]
    ['AP', 'AP', 'P@10', 'P@20', 'nDCG@20']
    """
    names = {_key(e.measure): e.measure for e in _entries()}
    found = names.get(_key(measure))
    if found is None:
        raise DatasetError(
            f"no dataset has the measure {measure!r}{_did_you_mean(measure, names.values())}; "
            f"measures: {', '.join(sorted(set(names.values())))}"
        )
    return found


def _did_you_mean(word: str, options) -> str:
    close = difflib.get_close_matches(str(word), builtins.list(options), n=3, cutoff=0.5)
    if not close:
        close = difflib.get_close_matches(str(word).lower(), [o.lower() for o in options], n=3,
                                          cutoff=0.5)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def _find(collection: str, measure: str | None) -> _Entry:
    by_coll: dict[str, builtins.list[_Entry]] = {}
    for e in _entries():
        by_coll.setdefault(e.collection, []).append(e)
    matches = [c for c in by_coll if c.lower() == str(collection).lower()]
    if not matches:
        raise DatasetError(
            f"unknown collection {collection!r}{_did_you_mean(collection, by_coll)}; "
            f"collections: {', '.join(by_coll)}. See irm.datasets.list()."
        )
    entries = by_coll[matches[0]]
    have = ", ".join(e.measure for e in entries)
    if measure is None:
        if len(entries) == 1:
            return entries[0]
        raise DatasetError(
            f"collection {matches[0]!r} has several measures ({have}); pass one, e.g. "
            f"irm.datasets.load({matches[0]!r}, {entries[0].measure!r})"
        )
    for e in entries:
        if _key(e.measure) == _key(measure):
            return e
    raise DatasetError(
        f"collection {matches[0]!r} has no measure {measure!r}"
        f"{_did_you_mean(measure, [e.measure for e in entries])}; it has: {have}"
    )


def cache_dir() -> Path:
    """Where downloaded files are kept: ``$IRM_CACHE_DIR``, else the user cache directory.

    Examples
    --------
    >>> import pathlib, irmodels as irm
    >>> isinstance(irm.datasets.cache_dir(), pathlib.Path)
    True
    """
    env = os.environ.get(CACHE_VARIABLE)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "irmodels"


def _sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _verify(p: Path, entry: _Entry, where: str) -> None:
    digest = _sha256(p)
    if digest != entry.sha256:
        raise DatasetError(
            f"{where} file {p} ({entry.collection} {entry.measure}) has sha256 {digest}, "
            f"expected {entry.sha256}: the file is corrupted or not the registered version. "
            f"Replace it with the file from {entry.upstream}"
        )


_NOTIFIED: set[str] = set()


def _notice(entry: _Entry) -> None:
    if entry.file in _NOTIFIED:
        return
    _NOTIFIED.add(entry.file)
    warnings.warn(
        f"{entry.collection} {entry.measure}: data from {entry.source_repository} (commit "
        f"{entry.source_commit[:12]}), licence {entry.licence}. Please cite: {entry.citation}",
        DatasetNotice,
        stacklevel=4,
    )


def _download(entry: _Entry, target: Path) -> None:
    """Download ``entry`` to ``target``: the bytes go to a fresh temporary file created
    beside the target with ``O_CREAT | O_EXCL`` (``tempfile.mkstemp``, mode 0600; a file or
    symbolic link planted in the cache, e.g. at ``NAME.part``, is never followed nor
    overwritten), are checked against the registered sha256 *before* the rename, and only then
    are renamed over the target."""
    if entry.url is None:  # pragma: no cover - mirror-only entries never reach here
        raise DatasetError(f"{entry.collection} {entry.measure} has no download URL")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetDownloadError(
            f"cannot create the cache directory {target.parent} ({exc.strerror}); set "
            f"{CACHE_VARIABLE} to a writable directory"
        ) from None
    try:
        with urllib.request.urlopen(entry.url, timeout=60) as response:
            data = response.read()
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DatasetDownloadError(
            f"could not download {entry.collection} {entry.measure} from {entry.url} "
            f"({reason}). Offline? Set {MIRROR_VARIABLE} to a directory holding {entry.file} "
            f"(e.g. a copy of the cache folder {cache_dir()} of a machine that downloaded it)."
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry.sha256:  # verified before anything is written
        raise DatasetError(
            f"the download of {entry.url} has sha256 {digest}, expected {entry.sha256}: "
            "the upstream file changed or the transfer was corrupted. Try again, or place the "
            f"registered file in a directory named by {MIRROR_VARIABLE}."
        )
    try:
        fd, name = tempfile.mkstemp(prefix="." + target.name + ".", suffix=".part",
                                    dir=target.parent)
    except OSError as exc:
        raise DatasetDownloadError(
            f"cannot write to the cache directory {target.parent} ({exc.strerror}); set "
            f"{CACHE_VARIABLE} to a writable directory"
        ) from None
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if _sha256(tmp) != entry.sha256:  # pragma: no cover - the bytes just written
            raise DatasetError(f"the cache file {tmp} changed while it was written")
        if target.is_symlink():  # never write through a link planted at the target
            target.unlink()
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def path(collection: str, measure: str | None = None) -> Path:
    """The local, sha256-verified file of a dataset (from the mirror, the cache or a download).

    Parameters
    ----------
    collection, measure : str
        As in :func:`load`.

    Returns
    -------
    Path
        The file in ``$IRM_DATA_MIRROR`` when set, else in :func:`cache_dir` (downloaded on
        first use, with one :class:`DatasetNotice`).

    Raises
    ------
    DatasetError
        As :func:`load`.

    Examples
    --------
    >>> import irmodels as irm
    >>> irm.datasets.path("adhoc8", "ap").name
    'adhoc8_ap.csv'
    """
    entry = _find(collection, measure)
    mirror = os.environ.get(MIRROR_VARIABLE)
    if mirror:
        p = Path(mirror).expanduser() / entry.file
        if not p.is_file():
            raise DatasetError(
                f"{MIRROR_VARIABLE}={mirror} has no file {entry.file} "
                f"({entry.collection} {entry.measure}); put it there, or unset "
                f"{MIRROR_VARIABLE} to use the cache and download it"
            )
        _verify(p, entry, "mirror")
        return p
    if entry.mirror_only:
        raise DatasetError(
            f"{entry.collection} {entry.measure} is distributed only inside the R package "
            f"gt4ireval ({entry.upstream}), which irmodels cannot read. Set {MIRROR_VARIABLE} "
            f"to a directory holding {entry.file} (in R: write.csv(gt4ireval::adhoc3, "
            f"'{entry.file}', row.names = FALSE))."
        )
    target = cache_dir() / entry.file
    if target.is_file():
        if _sha256(target) == entry.sha256:
            return target
        target.unlink()  # a stale or damaged copy: fetch it again
    _download(entry, target)
    _notice(entry)
    return target


def load(collection: str, measure: str | None = None) -> pd.DataFrame:
    """Load a public score matrix as a long frame.

    Parameters
    ----------
    collection : str
        A collection of :func:`list` (case-insensitive), e.g. ``"adhoc8"``.
    measure : str, optional
        Its measure, case-insensitive with aliases (``"ap"``, ``"P@10"``, ``"p10"``...).
        May be left out when the collection has a single measure.

    Returns
    -------
    DataFrame
        Long frame ``collection, measure, topic, system, score`` (canonical measure name).
        Topics are the TREC topic ids where the file has them (robust2004), else ``1..T``
        in file order; systems are the anonymised run names of the file.

    Raises
    ------
    DatasetError
        Unknown collection or measure (with the names that exist), a file whose sha256 does
        not match, a download that failed (naming ``IRM_DATA_MIRROR``), a mirror-only file
        without a mirror.

    Examples
    --------
    >>> import irmodels as irm
    >>> data = irm.datasets.load("adhoc8", "ap")
    >>> data.head(3)
      collection measure topic system   score
    0     adhoc8      AP     1   run1  0.0007
    1     adhoc8      AP     1   run2  0.4711
    2     adhoc8      AP     1   run3  0.1495
    >>> data["topic"].nunique(), data["system"].nunique()
    (50, 129)
    """
    entry = _find(collection, measure)
    p = path(entry.collection, entry.measure)
    data = read_matrix(
        p,
        measure=entry.measure,
        collection=entry.collection,
        topic_column="topic" if entry.topic_id_column else None,
    )
    t, s = data["topic"].nunique(), data["system"].nunique()
    if (t, s) != (entry.topics, entry.systems):  # pragma: no cover - guarded by sha256
        raise DatasetError(
            f"{p} holds {t} topics x {s} systems, the registry says "
            f"{entry.topics} x {entry.systems}"
        )
    return data


def info(collection: str, measure: str | None = None) -> dict:
    """Everything the registry knows about one dataset (file, URL, sha256, licence, ...).

    Examples
    --------
    >>> import irmodels as irm
    >>> d = irm.datasets.info("robust2004", "P@10")
    >>> d["topics"], d["systems"], d["licence"]
    (249, 110, 'CC BY-SA 4.0')
    """
    return dict(_find(collection, measure).__dict__)


def list() -> pd.DataFrame:
    """The datasets of the registry, one row per (collection, measure).

    Returns
    -------
    DataFrame
        - ``collection`` : str
        - ``measure`` : str, canonical name (``unknown`` when the source does not say)
        - ``topics``, ``systems`` : int64, the matrix shape
        - ``source`` : str, ``repository@commit`` of the public original
        - ``licence`` : str
        - ``citation`` : str, the publication to cite
        - ``mirror_only`` : bool, the original is not a CSV (adhoc3: an R data file), so
          the file is only read from ``IRM_DATA_MIRROR``

    Examples
    --------
    >>> import irmodels as irm
    >>> table = irm.datasets.list()
    >>> table.loc[table["collection"] == "adhoc8", ["collection", "measure", "topics", "systems"]]
       collection measure  topics  systems
    10     adhoc8      AP      50      129
    11     adhoc8    P@10      50      129
    12     adhoc8      RR      50      129
    """
    rows = [
        {
            "collection": e.collection,
            "measure": e.measure,
            "topics": e.topics,
            "systems": e.systems,
            "source": f"{e.source_repository}@{e.source_commit[:12]}",
            "licence": e.licence,
            "citation": e.citation,
            "mirror_only": e.mirror_only,
        }
        for e in _entries()
    ]
    out = pd.DataFrame(rows)
    return out.astype({"topics": "int64", "systems": "int64", "mirror_only": "bool"})
