"""Tests of judgments.exchange.formats.documents: documents as JSON lines, read and written.
Pure Python, no database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgments.exchange import formats as F
from judgments.exchange.formats import (
    DocumentRecord,
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
# Documents


def test_parse_documents_jsonl():
    data = lines(
        '{"id": "d1", "title": "T", "body": "B", "url": "https://example.org/x", "lang": "en", "tags": [1]}',
        '{"id": "d2"}',
        '{"id": 3, "title": null, "body": "only body"}',
    )
    assert F.parse_documents_jsonl(data) == [
        DocumentRecord(1, "d1", "T", "B", "https://example.org/x", {"lang": "en", "tags": [1]}),
        DocumentRecord(2, "d2", "", "", "", {}),
        DocumentRecord(3, "3", "", "only body", "", {}),
    ]


@pytest.mark.parametrize(
    "row, fields",
    [
        ('{"id": "d1", "title": 5}', ["title"]),
        ('{"id": "d1", "body": {"a": 1}}', ["body"]),
        ('{"id": "d1", "url": ["x"]}', ["url"]),
        ('{"id": "d1", "url": "javascript:alert(1)"}', ["url"]),
        ('{"id": "d1", "url": "http://a b"}', ["url"]),
        ('{"title": "no id"}', ["id"]),
        ('{"id": "d 1", "title": 1}', ["id", "title"]),
        ('{"id": "d1", "body": "nul\\u0000"}', ["body"]),
        ("not json", ["json"]),
    ],
)
def test_parse_documents_jsonl_errors(row, fields):
    assert where(F.parse_documents_jsonl, lines('{"id": "ok"}', row)) == [(2, f) for f in fields]


def test_parse_documents_duplicate_ids():
    [p] = problems(F.parse_documents_jsonl, lines('{"id": "d"}', '{"id": "e"}', '{"id": "d"}'))
    assert (p.line, p.field) == (3, "id") and "lines 1 and 3" in p.message


def test_write_documents_jsonl_round_trip():
    docs = [
        DocumentRecord(
            1, "d1", "Title", "Body\nwith lines", "https://x.org", {"n": 1, "nested": {"a": [1, None]}}
        ),
        DocumentRecord(2, "d#2", "", "", "", {}),
    ]
    out = list(F.write_documents_jsonl(docs))
    assert all(x.endswith("\n") and x.count("\n") == 1 for x in out)
    assert F.parse_documents_jsonl("".join(out).encode()) == docs


@pytest.mark.parametrize(
    "doc",
    [
        DocumentRecord(0, "d 1"),
        DocumentRecord(0, "d1", extra={"title": "clash"}),
        DocumentRecord(0, "d1", extra={"x": float("nan")}),
        DocumentRecord(0, "d1", url="not a url"),
    ],
)
def test_write_documents_jsonl_rejects_bad_documents(doc):
    with pytest.raises(ValueError):
        list(F.write_documents_jsonl([doc]))


# ==================================================================================================
# Property tests: round trips


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(texts, c, max_size=3),
    max_leaves=8,
)


@PROPS
@given(
    st.lists(
        st.tuples(
            ids,
            texts,
            texts,
            st.sampled_from(["", "https://example.org/a?b=c", "http://x"]),
            st.dictionaries(
                texts.filter(lambda k: k not in ("id", "title", "body", "url")), json_values, max_size=3
            ),
        ),
        min_size=1,
        max_size=6,
        unique_by=lambda x: x[0],
    )
)
def test_documents_round_trip(docs):
    records = [DocumentRecord(i, *d) for i, d in enumerate(docs, 1)]
    assert F.parse_documents_jsonl("".join(F.write_documents_jsonl(records))) == records
