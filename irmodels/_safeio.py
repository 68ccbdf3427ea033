"""Safe outputs: nothing a user owns is lost, no output is ever half written.

Every writer of irmodels (the ``write_*`` functions, ``Standardizer.save``, the report and every
CLI command that writes) goes through this module:

* a file is written to a temporary file beside its target (same directory, hence same file
  system), flushed and ``fsync``-ed, then renamed over the target with :func:`os.replace`,
  which is atomic: a reader sees the old file or the new one, never a truncated one;
* a directory is built as a temporary directory beside its target and renamed into place when
  complete; with ``force=True`` an existing directory is replaced *whole* (never mixed with
  the new files: no stale file of an older output survives);
* an existing target is refused with :class:`~irmodels.errors.OutputExistsError` unless
  ``force=True`` (``--force`` on the command line); only a regular file is ever replaced: a
  named pipe, a device or a socket is refused even with ``force=True``, and a symbolic link
  to a regular file is followed (the file it points to is replaced, the link stays a link);
* on any exception, ``KeyboardInterrupt`` included, the temporary file or directory is
  removed and the target is left as it was;
* operating-system errors (a directory where a file is expected, a read-only directory, a
  full disk) become :class:`~irmodels.errors.OutputError` naming the target.

Examples
--------
>>> import pathlib, tempfile
>>> from irmodels._safeio import atomic_file, write_text
>>> from irmodels.errors import OutputExistsError
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> write_text(d / "a.txt", "one\\n").read_text()
'one\\n'
>>> try:
...     write_text(d / "a.txt", "two\\n")
... except OutputExistsError as exc:
...     print("refused")
refused
>>> with atomic_file(d / "a.txt", force=True) as tmp:
...     _ = tmp.write_text("three\\n")
>>> (d / "a.txt").read_text(), sorted(p.name for p in d.iterdir())
('three\\n', ['a.txt'])
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from irmodels.errors import OutputError, OutputExistsError

__all__ = [
    "atomic_dir",
    "atomic_file",
    "check_target",
    "output_error",
    "write_bytes",
    "write_text",
]

PathLike = str | os.PathLike

_TMP_PREFIX = ".irmodels-tmp-"


def output_error(exc: OSError, target: PathLike) -> OutputError:
    """An :class:`OutputError` for an operating-system error met while writing ``target``."""
    reason = {
        errno.ENOSPC: "the disk is full",
        errno.EDQUOT: "the disk quota is exceeded",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EROFS: "the file system is read-only",
        errno.EISDIR: "a directory is in the way",
        errno.ENOTDIR: "a file is in the way where a directory is needed",
        errno.ENAMETOOLONG: "the name is too long",
    }.get(exc.errno or -1, exc.strerror or str(exc))
    return OutputError(
        f"cannot write {target}: {reason}. Nothing was changed there; choose another "
        "location (or free space / fix permissions) and run again."
    )


def check_target(path: PathLike, *, force: bool = False, kind: str = "file") -> Path:
    """Refuse an existing ``path`` unless ``force``; refuse the wrong kind even with ``force``.

    ``kind`` is ``"file"`` or ``"dir"``. Returns the path.
    """
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise OutputExistsError(
            f"{p} is a dangling symbolic link; remove it or choose another name"
        )
    if not p.exists():
        parent = p.parent
        if parent.exists() and not parent.is_dir():
            raise OutputError(
                f"cannot write {p}: {parent} is a file, not a directory; choose another location"
            )
        return p
    if kind == "file" and p.is_dir():
        raise OutputExistsError(
            f"cannot write the file {p}: it is an existing directory; give a file name"
        )
    if kind == "file" and not p.is_file():  # a FIFO, a device, a socket (or a link to one)
        what = _special_kind(p)
        raise OutputExistsError(
            f"cannot write the file {p}: it is {what}, not a regular file; irmodels only "
            "replaces regular files (even with --force); give a file name"
        )
    if kind == "dir" and not p.is_dir():
        raise OutputExistsError(
            f"cannot write the directory {p}: it is an existing file, not a directory; give "
            "a directory name"
        )
    if not force:
        what = "directory" if kind == "dir" else "file"
        raise OutputExistsError(
            f"{p} already exists; irmodels does not overwrite a {what} it did not just write. "
            "Choose a new name, or pass force=True (--force on the command line) to replace it "
            "whole."
        )
    return p


def make_dir(path: PathLike) -> Path:
    """Create the output directory ``path`` (and its parents) or reuse it when it exists;
    a file, a dangling link or a file among its parents in the way, or a folder that cannot
    be written, is an :class:`OutputError` that says so (never a bare ``OSError``).

    Writers that put several files into one folder (``Report.save``) call it first.
    """
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise OutputExistsError(
            f"cannot write into {p}: it is a dangling symbolic link (to "
            f"{os.readlink(p)}); remove it or choose another directory")
    if p.exists() and not p.is_dir():
        raise OutputExistsError(
            f"cannot write into {p}: it is an existing file, not a directory; give a "
            "directory name")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(
                    f"cannot write into {p}: {parent} is a file, not a directory; choose "
                    "another location")
            break
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise output_error(exc, p) from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise output_error(OSError(errno.EACCES, os.strerror(errno.EACCES)), p)
    return p


def _special_kind(p: Path) -> str:
    """What an existing path that is not a regular file nor a directory is, in words."""
    try:
        mode = p.stat().st_mode
    except OSError:  # pragma: no cover - vanished meanwhile
        return "not a regular file"
    for test, what in ((stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return ("a symbolic link to " if p.is_symlink() else "") + what
    return "a special file"


def _resolved(p: Path) -> Path:
    """The file a symbolic link ``p`` leads to (``p`` itself when it is not a link): replacing
    an output through a link writes the file it points to and leaves the link a link."""
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def _mkparent(p: Path) -> None:
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise output_error(exc, p) from None


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _fsync_file(p: Path) -> None:
    fd = os.open(p, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(path: PathLike, *, force: bool = False) -> Iterator[Path]:
    """Context manager: yields a fresh temporary path beside ``path``; write the whole output
    there. On success it is fsync-ed and renamed over ``path``; on any exception (also
    ``KeyboardInterrupt``) it is removed and ``path`` is untouched."""
    target = _resolved(check_target(path, force=force, kind="file"))
    _mkparent(target)
    try:
        fd, name = tempfile.mkstemp(
            prefix=_TMP_PREFIX + target.name + ".", suffix=target.suffix, dir=target.parent
        )
    except OSError as exc:
        raise output_error(exc, target) from None
    os.close(fd)
    tmp = Path(name)
    try:
        try:
            yield tmp
            os.chmod(tmp, 0o666 & ~_umask())
            _fsync_file(tmp)
            if target.exists() or target.is_symlink():  # appeared or changed meanwhile
                check_target(target, force=force)
            os.replace(tmp, _resolved(target))
        except OSError as exc:
            raise output_error(exc, target) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(target.parent)


@contextlib.contextmanager
def atomic_dir(path: PathLike, *, force: bool = False) -> Iterator[Path]:
    """Context manager: yields a fresh temporary directory beside ``path``; build the whole
    output there. On success it is renamed into place (an existing ``path`` is replaced whole
    with ``force=True``, refused otherwise); on any exception it is removed."""
    target = _resolved(check_target(path, force=force, kind="dir"))
    _mkparent(target)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX + target.name + ".", dir=target.parent))
    except OSError as exc:
        raise output_error(exc, target) from None
    old: Path | None = None
    try:
        try:
            yield tmp
            os.chmod(tmp, 0o777 & ~_umask())
            if target.exists():
                check_target(target, force=force, kind="dir")
                old = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX + target.name + ".old.",
                                            dir=target.parent))
                os.rmdir(old)
                os.rename(target, old)
            try:
                os.rename(tmp, target)
            except BaseException:
                if old is not None:  # put the old output back
                    os.rename(old, target)
                    old = None
                raise
        except OSError as exc:
            raise output_error(exc, target) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    _fsync_dir(target.parent)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: PathLike, text: str, *, force: bool = False, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_file`); returns the path."""
    with atomic_file(path, force=force) as tmp:
        tmp.write_text(text, encoding=encoding, newline="")
    return Path(path)


def write_bytes(path: PathLike, data: bytes, *, force: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_file`); returns the path."""
    with atomic_file(path, force=force) as tmp:
        tmp.write_bytes(data)
    return Path(path)
