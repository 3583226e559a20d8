"""Tests of judgments.exchange.formats.queries: queries as TSV and JSON lines, read and written.
Pure Python, no database."""

from __future__ import annotations

import io

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from judgments.exchange import formats as F
from judgments.exchange.formats import (
    FormatError,
    QueryRecord,
)
from tests.judgments.exchange.formats.helpers import (
    PROPS,
    ids,
    lines,
    problems,
    texts,
    where,
)

# ==================================================================================================
# Queries


def test_parse_queries_tsv():
    data = lines(
        "# comment", "", "301\tinternational organized crime", "302\t  spaced  text ", "q3\ttext with ümlauts"
    )
    assert F.parse_queries_tsv(data) == [
        QueryRecord(3, "301", "international organized crime", ""),
        QueryRecord(4, "302", "  spaced  text ", ""),
        QueryRecord(5, "q3", "text with ümlauts", ""),
    ]


@pytest.mark.parametrize(
    "row, field",
    [
        ("301 no tab here", "line"),
        ("301\ta\tb\tc", "line"),  # a third cell is tags (test_query_tags.py), a fourth is too many
        ("301\ta\tb c,", "tags"),
        ("301\t", "text"),
        ("301\t   ", "text"),
        ("30 1\ttext", "qid"),
        ("\ttext", "qid"),
        ("q" * 201 + "\ttext", "qid"),
        ("q\x00\ttext", "qid"),
    ],
)
def test_parse_queries_tsv_errors(row, field):
    assert where(F.parse_queries_tsv, lines("ok\tfine", row)) == [(2, field)]


def test_parse_queries_tsv_duplicate_ids():
    [p] = problems(F.parse_queries_tsv, lines("a\tx", "b\ty", "a\tz"))
    assert (p.line, p.field) == (3, "qid") and "lines 1 and 3" in p.message


def test_parse_queries_jsonl():
    data = lines(
        '{"id": "q1", "text": "hello", "information_need": "find greetings"}',
        "",
        '{"id": 2, "text": "numeric id", "unknown": [1, 2]}',
        '{"id": "q3", "text": "null need", "information_need": null}',
    )
    assert F.parse_queries_jsonl(data) == [
        QueryRecord(1, "q1", "hello", "find greetings"),
        QueryRecord(3, "2", "numeric id", ""),
        QueryRecord(4, "q3", "null need", ""),
    ]


@pytest.mark.parametrize(
    "row, field",
    [
        ('{"id": "q1", "text": "x"', "json"),
        ("[1, 2]", "json"),
        ('"just a string"', "json"),
        ('{"id": "q1", "id": "q2", "text": "x"}', "json"),
        ('{"id": "q1", "text": NaN}', "json"),
        ('{"text": "x"}', "id"),
        ('{"id": null, "text": "x"}', "id"),
        ('{"id": "a b", "text": "x"}', "id"),
        ('{"id": true, "text": "x"}', "id"),
        ('{"id": "#q", "text": "x"}', "id"),
        ('{"id": "q1"}', "text"),
        ('{"id": "q1", "text": ""}', "text"),
        ('{"id": "q1", "text": 5}', "text"),
        ('{"id": "q1", "text": "x", "information_need": ["a"]}', "information_need"),
        ("# comment lines are not JSON", "json"),
        ("[" * 100000, "json"),
    ],
)
def test_parse_queries_jsonl_errors(row, field):
    assert where(F.parse_queries_jsonl, lines('{"id": "ok", "text": "fine"}', row)) == [(2, field)]


def test_parse_queries_jsonl_duplicate_ids():
    [p] = problems(F.parse_queries_jsonl, lines('{"id": "a", "text": "x"}', '{"id": "a", "text": "y"}'))
    assert (p.line, p.field) == (2, "id") and "lines 1 and 2" in p.message


def test_parse_queries_sniffs_the_format():
    tsv = lines("", "# queries", "q1\thello")
    jsonl = b"\xef\xbb\xbf\n  \n" + lines('  {"id": "q1", "text": "hello"}')
    assert F.parse_queries(tsv) == [QueryRecord(3, "q1", "hello", "")]
    assert F.parse_queries(jsonl) == [QueryRecord(3, "q1", "hello", "")]
    assert F.parse_queries(io.BytesIO(jsonl), "q.jsonl")[0].line == 3
    assert F.parse_queries(io.StringIO("q1\thello\n"), name="q.tsv")[0].text == "hello"
    with pytest.raises(FormatError) as info:
        F.parse_queries(b'{"id": "q1"}\n', "q.jsonl")
    assert info.value.name == "q.jsonl" and info.value.problems[0].field == "text"


def test_write_queries_tsv_and_jsonl_round_trip():
    records = [
        QueryRecord(1, "q1", "hello world", "need one"),
        QueryRecord(2, "q2", "ünïcode “quotes” \\ / \u2028", ""),
    ]
    tsv = list(F.write_queries_tsv(records))
    assert tsv[0] == "q1\thello world\n" and all(x.endswith("\n") for x in tsv)
    assert [(r.query_id, r.text) for r in F.parse_queries("".join(tsv).encode())] == [
        (r.query_id, r.text) for r in records
    ]
    jsonl = "".join(F.write_queries_jsonl(records))
    assert F.parse_queries(jsonl.encode()) == records
    assert list(F.write_queries_tsv([("a", "b")])) == ["a\tb\n"]
    assert F.parse_queries_jsonl("".join(F.write_queries_jsonl([("a", "b", "c")]))) == [
        QueryRecord(1, "a", "b", "c")
    ]


@pytest.mark.parametrize(
    "record",
    [("q1", "tab\there"), ("q1", "new\nline"), ("q1", ""), ("q 1", "x"), ("#q", "x"), ("", "x"), (1, "x")],
)
def test_write_queries_tsv_rejects_what_it_cannot_write(record):
    with pytest.raises(ValueError):
        list(F.write_queries_tsv([record]))


def test_write_queries_jsonl_keeps_newlines_in_text():
    rec = QueryRecord(1, "q1", "line one\nline\ttwo\r\n", "")
    assert F.parse_queries_jsonl("".join(F.write_queries_jsonl([rec]))) == [rec]


# ==================================================================================================
# Property tests: round trips


@PROPS
@given(
    st.lists(
        st.tuples(ids, texts.filter(lambda t: t.strip()), texts), max_size=10, unique_by=lambda x: x[0]
    ).filter(bool)
)
def test_queries_jsonl_round_trip(queries):
    records = [QueryRecord(i, q, t, n) for i, (q, t, n) in enumerate(queries, 1)]
    assert F.parse_queries("".join(F.write_queries_jsonl(records)).encode()) == records


@PROPS
@given(
    st.lists(
        st.tuples(ids, texts.filter(lambda t: t.strip() and not set(t) & set("\t\r\n"))),
        min_size=1,
        max_size=10,
        unique_by=lambda x: x[0],
    )
)
def test_queries_tsv_round_trip(queries):
    text = "".join(F.write_queries_tsv(queries))
    assume(not text.lstrip().startswith("{"))
    assert [(r.query_id, r.text) for r in F.parse_queries(text.encode())] == queries
