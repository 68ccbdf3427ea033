"""Nothing a user owns is lost, no output is half written: atomic files and directories,
existing targets refused without force, clean-up on errors and on Ctrl-C, a full disk mapped to
one clear error, a dataset cache that never follows a planted link."""

from __future__ import annotations

import errno
import os
import stat
import urllib.request
import warnings
from pathlib import Path

import pandas as pd
import pytest

import irmodels as irm
from irmodels import _safeio
from irmodels.cli import main
from irmodels.data import datasets
from irmodels.errors import OutputError, OutputExistsError

F = irm.frame(pd.DataFrame({"topic": ["1", "2"], "system": ["a", "a"], "score": [0.1, 0.2]}))


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.startswith(".irmodels-tmp-")]


def test_atomic_file_replaces_only_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "scores.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError, match="boom"):
        with _safeio.atomic_file(target, force=True) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert target.read_text() == "old\n" and not _leftovers(tmp_path)
    with _safeio.atomic_file(target, force=True) as tmp:
        tmp.write_text("new\n")
    assert target.read_text() == "new\n" and not _leftovers(tmp_path)


def test_keyboard_interrupt_mid_write_leaves_no_partial_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "scores.csv"
    target.write_text("old\n")
    real = pd.DataFrame.to_csv

    def interrupted(self, path, *args, **kwargs):
        real(self.head(1), path, *args, **kwargs)  # a partial file, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_csv", interrupted)
    with pytest.raises(KeyboardInterrupt):
        irm.write_frame(F, target, force=True)
    with pytest.raises(KeyboardInterrupt):
        irm.write_frame(F, tmp_path / "new.csv")
    assert target.read_text() == "old\n"
    assert not (tmp_path / "new.csv").exists() and not _leftovers(tmp_path)


def test_existing_targets_are_refused_and_kept(tmp_path: Path) -> None:
    runs = pd.DataFrame({"system": ["a", "b"], "topic": ["1", "1"], "docid": ["d1", "d1"],
                         "score": [1.0, 2.0]})
    (tmp_path / "b").write_text("keep")
    with pytest.raises(OutputExistsError, match="already exists"):
        irm.write_run(runs, tmp_path)
    # nothing was written, not even the file of system a
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]
    assert (tmp_path / "b").read_text() == "keep"
    written = irm.write_run(runs, tmp_path, force=True)
    assert [p.name for p in written] == ["a", "b"]
    assert (tmp_path / "b").read_text() == "1 Q0 d1 1 2.0 b\n"


def test_full_disk_is_one_clear_error_and_the_old_file_stays(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "scores.csv"
    target.write_text("old\n")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OutputError, match=r"cannot write .*scores\.csv: the disk is full"):
        irm.write_frame(F, target, force=True)
    assert target.read_text() == "old\n" and not _leftovers(tmp_path)


def test_cli_full_disk_exits_3_and_keeps_the_old_output(tmp_path: Path, monkeypatch, capsys,
                                                        shared_data: Path) -> None:
    d = shared_data / "trec_eval"
    out = tmp_path / "scores.csv"
    out.write_text("old\n")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    code = main(["evaluate", str(d / "results.test"), "--qrels", str(d / "qrels.test"),
                 "-m", "AP", "-o", str(out), "--force"])
    err = capsys.readouterr().err
    assert code == 3 and "the disk is full" in err and "Traceback" not in err
    assert out.read_text() == "old\n" and not _leftovers(tmp_path)


def test_written_files_have_ordinary_permissions(tmp_path: Path) -> None:
    mask = os.umask(0)
    os.umask(mask)
    path = irm.write_frame(F, tmp_path / "f.csv")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_atomic_dir_force_replaces_whole_never_mixes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("from an older run")
    with pytest.raises(OutputExistsError), _safeio.atomic_dir(out) as tmp:
        (tmp / "new.txt").write_text("x")  # pragma: no cover - refused before
    with _safeio.atomic_dir(out, force=True) as tmp:
        (tmp / "new.txt").write_text("x")
    assert sorted(p.name for p in out.iterdir()) == ["new.txt"]
    assert not _leftovers(tmp_path)


def test_atomic_dir_interrupted_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt), _safeio.atomic_dir(out) as tmp:
        (tmp / "half.txt").write_text("x")
        raise KeyboardInterrupt
    assert not out.exists() and not _leftovers(tmp_path)
    out.mkdir()
    (out / "old.txt").write_text("keep")
    with pytest.raises(KeyboardInterrupt), _safeio.atomic_dir(out, force=True) as tmp:
        raise KeyboardInterrupt
    assert [p.name for p in out.iterdir()] == ["old.txt"] and not _leftovers(tmp_path)


def test_demo_interrupted_leaves_no_partial_collection(tmp_path: Path, monkeypatch,
                                                      capsys) -> None:
    from irmodels.data import collection

    def interrupted(self, directory):
        (Path(directory) / "qrels.txt").write_text("partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(collection.DemoCollection, "write", interrupted)
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--preset", "tiny"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert not out.exists() and not _leftovers(tmp_path)


def test_demo_force_replaces_an_older_collection_whole(tmp_path: Path, capsys) -> None:
    out = tmp_path / "demo"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / "stale_run.txt").write_text("1 Q0 d 1 1.0 stale\n")
    assert main(["demo", "--out", str(out), "--preset", "tiny"]) == 2
    assert (out / "runs" / "stale_run.txt").exists()
    assert main(["demo", "--out", str(out), "--preset", "tiny", "--force"]) == 0
    assert not (out / "runs" / "stale_run.txt").exists()
    assert len(list((out / "runs").iterdir())) == 4 and (out / "scores.csv").is_file()
    assert str(out) in capsys.readouterr().err


def test_report_out_existing_dir_is_kept(tmp_path: Path, shared_data: Path, capsys) -> None:
    data = shared_data / "ir-scores" / "adhoc3_ap.csv"
    out = tmp_path / "rep"
    out.mkdir()
    (out / "report.html").write_text("my older report")
    assert main(["report", str(data), "--out", str(out)]) == 2
    assert (out / "report.html").read_text() == "my older report"
    assert "already exists" in capsys.readouterr().err


class _Response:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self) -> bytes:
        return self.data

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def test_dataset_download_never_follows_a_planted_symlink(shared_data: Path, tmp_path: Path,
                                                          monkeypatch) -> None:
    monkeypatch.delenv("IRM_DATA_MIRROR", raising=False)
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("IRM_CACHE_DIR", str(cache))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (cache / "web2014_p20.csv.part").symlink_to(victim)  # the old fixed temporary name
    payload = (shared_data / "ir-scores" / "web2014_p20.csv").read_bytes()
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, *a, **k: _Response(payload))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", datasets.DatasetNotice)
        got = irm.datasets.path("web2014", "P@20")
    assert victim.read_text() == "precious"
    assert got.read_bytes() == payload and not got.is_symlink()
    assert [p.name for p in cache.iterdir() if p.name.endswith(".part") and not p.is_symlink()] == []


def test_dataset_checksum_is_verified_before_anything_is_written(shared_data: Path,
                                                                 tmp_path: Path,
                                                                 monkeypatch) -> None:
    monkeypatch.delenv("IRM_DATA_MIRROR", raising=False)
    cache = tmp_path / "cache"
    monkeypatch.setenv("IRM_CACHE_DIR", str(cache))
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, *a, **k: _Response(b"tampered"))
    with pytest.raises(irm.errors.DatasetError, match="expected"):
        irm.datasets.path("web2014", "P@20")
    assert list(cache.iterdir()) == []


def test_main_restores_formatwarning(tmp_path: Path, capsys) -> None:
    before = warnings.formatwarning
    main(["power", "--n", "50"])
    assert warnings.formatwarning is before
