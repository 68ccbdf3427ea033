"""Fuzzing the readers: random bytes, and random mutations of valid files, give a result or an
irmodels error, never another exception, in bounded time."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irmodels as irm
from irmodels.errors import IRModelsError

READERS = {
    "run.txt": irm.read_run,
    "qrels.txt": irm.read_qrels,
    "treceval.txt": irm.read_trec_eval,
    "matrix.csv": irm.read_matrix,
    "frame.csv": irm.read_frame,
    "frame.parquet": irm.read_frame,
}
SEEDS = {
    "run.txt": b"301 Q0 d1 1 2.5 bm25\n301 Q0 d2 2 2.0 bm25\n302 Q0 d3 1 1.5 bm25\n",
    "qrels.txt": b"301 0 d1 1\n301 0 d2 0\n302 0 d3 2\n",
    "treceval.txt": b"map 301 0.25\nP_10 301 0.5\nmap 302 0.5\nrunid all bm25\n",
    "matrix.csv": b"topic,sysA,sysB\n1,0.1,0.2\n2,0.3,0.4\n",
    "frame.csv": b"topic,system,score\n1,a,0.1\n1,b,0.2\n2,a,0.3\n",
    "frame.parquet": b"PAR1\x15\x04\x15\x00PAR1",
}
ALPHABET = list(b" \t\r\n,.;:'\"-+eE0123456789QabdNA\x00\x1b\x7f\xa0\xc2\xe9\xff")
SETTINGS = settings(max_examples=40, deadline=2000, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def _read(name: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(content)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = READERS[name](path)
            except IRModelsError:
                return
        assert isinstance(out, pd.DataFrame) and len(out) > 0


@SETTINGS
@given(name=st.sampled_from(sorted(READERS)), content=st.binary(max_size=300))
def test_random_bytes(name: str, content: bytes) -> None:
    _read(name, content)


@SETTINGS
@given(name=st.sampled_from(sorted(READERS)),
       edits=st.lists(st.tuples(st.integers(0, 200), st.sampled_from(ALPHABET)), max_size=6))
def test_mutated_valid_files(name: str, edits: list[tuple[int, int]]) -> None:
    data = bytearray(SEEDS[name])
    for pos, byte in edits:
        data[pos % len(data)] = byte
    _read(name, bytes(data))


@SETTINGS
@given(name=st.sampled_from(["run.txt", "qrels.txt", "treceval.txt"]),
       lines=st.lists(st.lists(st.text(alphabet="0123456789.-eQxd", min_size=1, max_size=5),
                               min_size=1, max_size=7), min_size=1, max_size=8))
def test_random_token_streams(name: str, lines: list[list[str]]) -> None:
    _read(name, "\n".join(" ".join(toks) for toks in lines).encode())


_SCORE_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.complex_numbers(max_magnitude=10),
    st.datetimes(),
    st.none(),
    st.text(alphabet="0123456789.e-x ", max_size=6),
)


@SETTINGS
@given(values=st.lists(_SCORE_VALUES, min_size=1, max_size=6))
def test_frame_scores_are_exact_or_refused(values: list) -> None:
    """frame() either refuses a score column or keeps every value exactly: no complex part
    dropped, no date turned into nanoseconds, no big integer rounded, no boolean counted."""
    raw = pd.DataFrame({"topic": [str(i) for i in range(len(values))], "system": "a",
                        "score": pd.Series(values, dtype=object)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = irm.frame(raw, nan="drop")
        except IRModelsError:
            return
    kept = dict(zip(out["topic"].astype(str), out["score"]))
    for i, v in enumerate(values):
        if str(i) not in kept:
            assert v is None or (isinstance(v, float) and v != v) or (
                isinstance(v, str) and v.strip().lower() in ("", "nan"))
            continue
        got = kept[str(i)]
        assert not isinstance(v, (bool, complex)) and not hasattr(v, "year"), (v, got)
        if isinstance(v, int):
            assert got == v and int(got) == v
        elif isinstance(v, float):
            assert got == v
        else:
            assert got == float(v)
