"""The dataset registry: every manifest file from the mirror, sha256 checks, cache, offline errors.

No test touches the network: urllib.request.urlopen is replaced in every test that could reach it.
"""

from __future__ import annotations

import csv
import hashlib
import io
import shutil
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import irmodels as irm
from irmodels.data import datasets
from irmodels.errors import DatasetError

MEASURE_NAMES = {"ap": "AP", "p10": "P@10", "p20": "P@20", "rr": "RR", "ndcg20": "nDCG@20",
                 "err20": "ERR@20", "ndcg": "nDCG", "unstated": "unknown"}


def _manifest(shared_data: Path) -> list[dict]:
    with open(shared_data / "ir-scores" / "MANIFEST.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    calls: list[str] = []

    def refuse(url, *args, **kwargs):
        calls.append(url)
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setenv("IRM_CACHE_DIR", str(tmp_path / "cache"))
    datasets._NOTIFIED.clear()
    return calls


@pytest.fixture
def mirror(shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = shared_data / "ir-scores"
    monkeypatch.setenv("IRM_DATA_MIRROR", str(d))
    return d


def test_registry_matches_manifest(shared_data: Path) -> None:
    rows = _manifest(shared_data)
    table = irm.datasets.list()
    assert list(table.columns) == ["collection", "measure", "topics", "systems", "source",
                                   "licence", "citation", "mirror_only"]
    assert len(table) == len(rows) == 51
    for row, (_, t) in zip(rows, table.iterrows()):
        assert t["collection"] == row["collection"]
        assert t["measure"] == MEASURE_NAMES[row["measure"]]
        assert (t["topics"], t["systems"]) == (int(row["topics"]), int(row["systems"]))
        assert t["licence"] == row["license"]
        assert t["source"] == f"{row['source_repository']}@{row['source_commit'][:12]}"
        assert t["citation"]
        info = irm.datasets.info(row["collection"], t["measure"])
        data = (shared_data / "ir-scores" / row["file"]).read_bytes()
        assert info["sha256"] == hashlib.sha256(data).hexdigest()
        assert info["topic_id_column"] == (row["topic_id_column"] == "yes")
        if row["collection"] == "adhoc3":
            assert info["url"] is None and info["mirror_only"]
            assert info["upstream"].endswith("/8ec8ebb/data/adhoc3.rda")
        else:
            assert info["url"] == (
                f"https://raw.githubusercontent.com/{row['source_repository']}/"
                f"{row['source_commit']}/data/{row['file']}"
            )


@pytest.mark.parametrize("row", range(51))
def test_every_manifest_file_loads_from_mirror(shared_data: Path, mirror: Path, row: int,
                                               no_network: list[str]) -> None:
    entry = _manifest(shared_data)[row]
    measure = MEASURE_NAMES[entry["measure"]]
    data = irm.datasets.load(entry["collection"], measure)
    assert list(data.columns) == ["collection", "measure", "topic", "system", "score"]
    assert data["topic"].nunique() == int(entry["topics"])
    assert data["system"].nunique() == int(entry["systems"])
    assert len(data) == int(entry["topics"]) * int(entry["systems"])
    assert set(data["collection"].astype(str)) == {entry["collection"]}
    assert set(data["measure"].astype(str)) == {measure}
    assert irm.balance(data).balanced
    # the values are the file's, cell for cell
    raw = pd.read_csv(mirror / entry["file"])
    if entry["topic_id_column"] == "yes":
        raw = raw.set_index(raw.columns[0])
    np.testing.assert_array_equal(irm.to_wide(data).to_numpy(), raw.to_numpy())
    assert no_network == []


def test_measure_and_collection_names(mirror: Path) -> None:
    a = irm.datasets.load("adhoc8", "AP")
    for alias in ["ap", "Ap", "map", "AP"]:
        pd.testing.assert_frame_equal(irm.datasets.load("ADHOC8", alias), a)
    p10 = irm.datasets.load("web2010", "p10")
    assert set(p10["measure"].astype(str)) == {"P@10"}
    assert irm.datasets.load("web2010", "P@10").equals(p10)
    assert irm.datasets.load("web2010", "P_10").equals(p10)
    assert set(irm.datasets.load("web2011", "ndcg@20")["measure"].astype(str)) == {"nDCG@20"}
    assert set(irm.datasets.load("web2012", "err20")["measure"].astype(str)) == {"ERR@20"}
    assert set(irm.datasets.load("terabyte2006", "NDCG")["measure"].astype(str)) == {"nDCG"}
    assert set(irm.datasets.load("web2013", "recip_rank")["measure"].astype(str)) == {"RR"}
    # a single-measure collection needs no measure; its measure is 'unknown'
    r3 = irm.datasets.load("robust2003")
    assert set(r3["measure"].astype(str)) == {"unknown"}
    assert r3.shape == (100 * 78, 5)
    rb = irm.datasets.load("robust2004", "ap")
    assert rb["topic"].cat.categories[0] == "301" and rb["topic"].cat.categories[-1] == "700"


def test_unknown_names_list_what_exists(mirror: Path) -> None:
    with pytest.raises(DatasetError, match=r"unknown collection 'adhoc9' \(did you mean 'adhoc8' or 'adhoc7' or 'adhoc6'\?\); collections: adhoc3, adhoc5"):
        irm.datasets.load("adhoc9", "AP")
    with pytest.raises(DatasetError, match=r"collection 'adhoc8' has no measure 'P@20'.*it has: AP, P@10, RR"):
        irm.datasets.load("adhoc8", "P@20")
    with pytest.raises(DatasetError, match=r"did you mean 'nDCG@20'"):
        irm.datasets.load("web2010", "nDCG@2")
    with pytest.raises(DatasetError, match=r"several measures \(AP, P@10, RR\)"):
        irm.datasets.load("adhoc8")
    with pytest.raises(DatasetError, match=r"no dataset has the measure 'bpref'"):
        irm.datasets.canonical_measure("bpref")


def test_sha256_mismatch_in_mirror(shared_data: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "mirror"
    bad.mkdir()
    text = (shared_data / "ir-scores" / "adhoc8_ap.csv").read_text()
    (bad / "adhoc8_ap.csv").write_text(text.replace("0.4711", "0.4712", 1))
    monkeypatch.setenv("IRM_DATA_MIRROR", str(bad))
    with pytest.raises(DatasetError, match=r"mirror file .*adhoc8_ap.csv \(adhoc8 AP\) has sha256 [0-9a-f]{64}, expected [0-9a-f]{64}"):
        irm.datasets.load("adhoc8", "AP")
    with pytest.raises(DatasetError, match=r"IRM_DATA_MIRROR=.* has no file adhoc8_p10.csv"):
        irm.datasets.load("adhoc8", "P@10")


def test_offline_without_mirror(monkeypatch: pytest.MonkeyPatch, no_network: list[str]) -> None:
    monkeypatch.delenv("IRM_DATA_MIRROR", raising=False)
    with pytest.raises(DatasetError, match=r"could not download adhoc8 AP from https://raw.githubusercontent.com/julian-urbano/sigir2019-statistical/dc9f891cfed783daf0d655316a7d69906010bfed/data/adhoc8_ap.csv \(network disabled in tests\)\. Offline\? Set IRM_DATA_MIRROR"):
        irm.datasets.load("adhoc8", "AP")
    assert len(no_network) == 1
    with pytest.raises(DatasetError, match=r"only inside the R package gt4ireval.*Set IRM_DATA_MIRROR"):
        irm.datasets.load("adhoc3", "AP")
    assert len(no_network) == 1  # mirror-only files are never fetched


class _Response(io.BytesIO):
    pass


def test_download_cache_and_notice(shared_data: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IRM_DATA_MIRROR", raising=False)
    monkeypatch.delenv("IRM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    payload = (shared_data / "ir-scores" / "web2014_p20.csv").read_bytes()
    urls: list[str] = []

    def fake(url, *args, **kwargs):
        urls.append(url)
        return _Response(payload)

    monkeypatch.setattr(urllib.request, "urlopen", fake)
    with pytest.warns(datasets.DatasetNotice, match=r"web2014 P@20: data from julian-urbano/sigir2018-simulation .*licence CC BY-SA 4\.0\. Please cite: J\. Urbano, T\. Nagler"):
        first = irm.datasets.load("web2014", "p20")
    cached = tmp_path / "xdg" / "irmodels" / "web2014_p20.csv"
    assert cached.read_bytes() == payload
    assert urls == [irm.datasets.info("web2014", "P@20")["url"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = irm.datasets.load("web2014", "P@20")  # from the cache, silently
    assert urls == [urls[0]]
    pd.testing.assert_frame_equal(first, second)
    assert first.shape == (50 * 30, 5)
    # a damaged cached copy is fetched again
    cached.write_bytes(payload[:-10])
    irm.datasets.load("web2014", "P@20")
    assert len(urls) == 2 and cached.read_bytes() == payload


def test_download_with_wrong_checksum(shared_data: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IRM_DATA_MIRROR", raising=False)
    payload = (shared_data / "ir-scores" / "web2014_rr.csv").read_bytes() + b"\n"
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, *a, **k: _Response(payload))
    with pytest.raises(DatasetError, match=r"the download of .*web2014_rr.csv has sha256 [0-9a-f]{64}, expected"):
        irm.datasets.load("web2014", "RR")
    cache = Path(irm.datasets.cache_dir())
    assert not (cache / "web2014_rr.csv").exists()
    assert not (cache / "web2014_rr.csv.part").exists()


def test_cache_dir_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRM_CACHE_DIR", str(tmp_path / "c"))
    assert irm.datasets.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("IRM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert irm.datasets.cache_dir() == tmp_path / "x" / "irmodels"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert irm.datasets.cache_dir() == tmp_path / "home" / ".cache" / "irmodels"


def test_mirror_copy_is_used(shared_data: Path, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    m = tmp_path / "m"
    m.mkdir()
    shutil.copy(shared_data / "ir-scores" / "adhoc3_ap.csv", m)
    monkeypatch.setenv("IRM_DATA_MIRROR", str(m))
    assert irm.datasets.path("adhoc3", "AP") == m / "adhoc3_ap.csv"
    assert irm.datasets.load("adhoc3").shape == (50 * 40, 5)
