"""Tests of judgments.exchange.formats.read: what every parser accepts as a stream (bytes, text, lines,
files), the encoding rules and the empty file. Pure Python, no database."""

from __future__ import annotations

import io

import pytest

from judgments.exchange import formats as F
from judgments.exchange.formats import (
    QrelRecord,
)
from tests.judgments.exchange.formats.helpers import (
    lines,
    problems,
    where,
)

# ==================================================================================================
# Input handling common to every parser


@pytest.mark.parametrize(
    "make",
    [
        lambda s: s.encode(),
        lambda s: s,
        lambda s: io.BytesIO(s.encode()),
        lambda s: io.StringIO(s),
        lambda s: io.TextIOWrapper(io.BytesIO(s.encode()), encoding="utf-8"),
        lambda s: s.encode().splitlines(keepends=True),
        lambda s: s.splitlines(),
        lambda s: bytearray(s.encode()),
    ],
    ids=[
        "bytes",
        "str",
        "binary-stream",
        "text-stream",
        "text-wrapper",
        "bytes-lines",
        "str-lines",
        "bytearray",
    ],
)
def test_every_kind_of_stream(make):
    text = "q1 0 d1 2\r\nq1 0 d2 0\n"
    assert F.parse_qrels(make(text)) == [QrelRecord(1, "q1", "d1", 2), QrelRecord(2, "q1", "d2", 0)]


def test_file_on_disk(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(lines("q1 Q0 d1 1 2.0 t", "q1 Q0 d2 2 1.0 t"))
    with path.open("rb") as f:
        assert F.parse_run(f, path.name).rankings == {"q1": ["d1", "d2"]}
    with path.open(encoding="utf-8") as f:
        assert F.parse_run(f, path.name).rankings == {"q1": ["d1", "d2"]}


def test_utf8_bom_is_tolerated_everywhere():
    bom = "\ufeff"
    assert F.parse_qrels((bom + "q1 0 d1 1\n").encode())[0].query_id == "q1"
    assert F.parse_qrels(bom + "q1 0 d1 1\n")[0].query_id == "q1"
    assert F.parse_run((bom + "q1 Q0 d1 1 1 t\n").encode()).rankings == {"q1": ["d1"]}
    assert F.parse_queries_tsv((bom + "q1\thello\n").encode())[0].query_id == "q1"
    assert F.parse_queries((bom + '{"id": "q1", "text": "hi"}\n').encode())[0].query_id == "q1"
    assert F.parse_documents_jsonl((bom + '{"id": "d1"}\n').encode())[0].doc_id == "d1"
    assert F.parse_judgments_csv((bom + "query,docid,rating\nfoo,d1,3\n").encode())[0].query == "foo"
    assert F.parse_rater_csv((bom + "query_id,doc_id,ann\nq1,d1,3\n").encode()).raters == ["ann"]


def test_bom_in_the_middle_is_not_tolerated():
    assert where(F.parse_queries_tsv, "q1\tx\n\ufeffq2\ty\n".encode()) == [(2, "qid")]


def test_non_utf8_bytes_are_named_by_line_and_the_rest_is_still_checked():
    data = b"q1 0 d1 1\nq1 0 d\xff2 1\nq1 0 d3 9\n"
    found = problems(F.parse_qrels, data)
    assert [(p.line, p.field) for p in found] == [(2, "encoding"), (3, "grade")]
    assert "0xff" in found[0].message


def test_latin1_file_is_reported_per_line():
    data = "q1\tcafé\nq2\tnaïve\n".encode("latin-1")
    assert where(F.parse_queries_tsv, data) == [(1, "encoding"), (2, "encoding")]


def test_text_stream_that_cannot_decode_reports_encoding():
    stream = io.TextIOWrapper(io.BytesIO(b"q1 0 d1 1\n" + b"\xff\xfe garbage\n" * 3), encoding="utf-8")
    found = problems(F.parse_qrels, stream)
    assert found[0].field == "encoding"


@pytest.mark.parametrize(
    "fn, data",
    [
        (F.parse_qrels, b""),
        (F.parse_qrels, b"# only a comment\n\n   \n"),
        (F.parse_run, b""),
        (F.parse_run, b"\n# nothing\n"),
        (F.parse_queries_tsv, b""),
        (F.parse_queries_jsonl, b"\n\n"),
        (F.parse_queries, b""),
        (F.parse_documents_jsonl, b""),
        (F.parse_judgments_csv, b""),
        (F.parse_judgments_csv, b"query,docid,rating\n"),
        (F.parse_rater_csv, b""),
        (F.parse_rater_csv, b"query_id,doc_id,ann\n"),
        (F.parse_judgments_jsonl, b""),
        (F.parse_qrels, b"\xef\xbb\xbf"),
    ],
)
def test_empty_file_is_a_problem(fn, data):
    found = problems(fn, data)
    assert len(found) == 1
    assert found[0].field == "file" and found[0].line == 0
    assert "empty" in found[0].message
