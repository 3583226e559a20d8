"""Property test: random and mutated files fed to every import service, on the database, end in either
a clean import or a clean error (FormatError with line, field and message), never another exception;
and after an error nothing at all has been written."""

import json
import os

import pytest
from django.contrib.auth import get_user_model
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from judgments.exchange.formats import FormatError
from judgments.exchange.imports import import_qrels, import_queries, import_run
from judgments.exchange.imports.documents import import_documents
from judgments.exchange.imports.judgments import import_judgments
from judgments.models import Document, Judgment, JudgmentChange, Pair, Pool, Query, Ranking, Run

SEEDS = {
    "documents": (
        b'{"id": "d1", "title": "First", "body": "text", "url": "https://example.org/1", "lang": "en"}\n'
        b'{"id": "d7", "title": "Seven", "tags": ["a", {"b": 1}], "score": 2.5}\n'
    ),
    "judgments-csv": b"query,docid,rating\nq1,d1,3\nquery q2,d2,0\nq1,d9,4\n",
    "judgments-rater-csv": b"query_id,doc_id,rita_rater,newcomer\nq1,d1,3,X\nq2,d2,,1\nq7,d3,0,4\n",
    "judgments-jsonl": (
        json.dumps(
            {"query_id": "q1", "doc_id": "d1", "rater": "rita_rater", "grade": 2, "note": "ok"}
        ).encode()
        + b"\n"
        + json.dumps(
            {
                "query_id": "q2",
                "doc_id": "d3",
                "rater": "someone",
                "grade": None,
                "cant_judge": True,
                "reason": "x",
                "created_at": "2024-01-01T00:00:00+00:00",
                "updated_at": "2024-01-02T00:00:00Z",
            }
        ).encode()
        + b"\n"
        + json.dumps(
            {"query_id": "q1", "doc_id": "d2", "rater": "ada_admin", "grade": 4, "final": True}
        ).encode()
        + b"\n"
    ),
    "queries": b"q1\tquery q1\nq8\tan eighth query\n",
    "queries-jsonl": b'{"id": "q9", "text": "ninth", "information_need": "wants nine"}\n',
    "qrels": b"q1 0 d1 2\nq1 0 d2 0\nq3 0 d9 4\n",
    "run": b"q1 Q0 d1 1 3.5 tag\nq1 Q0 d2 2 2 tag\nq2 Q0 d3 1 1e3 tag\n",
}
# Bytes that break formats in interesting ways: separators, quotes, bad UTF-8, NUL, BOM, Unicode spaces.
NASTY = [b"\t", b" ", b"\n", b"\r\n", b",", b'"', b"{", b"}", b":", b"\xff", b"\xc3", b"\x00", b"\xef\xbb\xbf",
         b"\xe2\x80\x83", b"#", b"-1", b"9", b"X", b"null", b"NaN", b"1e999", b"\\u0000", "é".encode()]  # fmt: skip


@st.composite
def mutated(draw, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "duplicate", "drop_line", "truncate"]))
        at = draw(st.integers(min_value=0, max_value=max(len(data) - 1, 0)))
        if op == "insert":
            data[at:at] = draw(st.sampled_from(NASTY) | st.binary(min_size=1, max_size=4))
        elif op == "delete" and data:
            del data[at : at + draw(st.integers(min_value=1, max_value=8))]
        elif op == "replace" and data:
            data[at : at + 1] = draw(st.sampled_from(NASTY))
        elif op in ("duplicate", "drop_line"):
            lines = bytes(data).split(b"\n")
            index = draw(st.integers(min_value=0, max_value=len(lines) - 1))
            if op == "duplicate":
                lines.insert(index, lines[index])
            else:
                del lines[index]
            data = bytearray(b"\n".join(lines))
        elif op == "truncate":
            del data[at:]
    return bytes(data)


def files(kind: str):
    return st.one_of(
        mutated(SEEDS[kind]),
        st.binary(max_size=200),
        st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.just(b""),
        st.just(SEEDS[kind]),
    )


def snapshot(pool: Pool) -> tuple:
    """Everything an import may touch, to compare before and after a refused file."""
    User = get_user_model()
    return (
        sorted(Query.objects.filter(pool=pool).values_list("external_id", "text", "information_need")),
        sorted(
            Document.objects.filter(pool=pool).values_list("external_id", "title", "body", "url", "extra"),
            key=repr,
        ),
        sorted(
            Pair.objects.filter(pool=pool).values_list(
                "query_id", "document_id", "final_grade", "final_by_id", "final_at"
            )
        ),
        sorted(
            Judgment.objects.filter(pair__pool=pool).values_list(
                "pair_id",
                "rater_id",
                "grade",
                "cant_judge",
                "cant_judge_reason",
                "note",
                "created_at",
                "updated_at",
            )
        ),
        JudgmentChange.objects.count(),
        Run.objects.count(),
        Ranking.objects.count(),
        sorted(User.objects.values_list("username", flat=True)),
    )


def check(call, pool: Pool) -> None:
    before = snapshot(pool)
    try:
        call()
        event("imported")
    except FormatError as error:
        event("refused")
        assert error.problems, "a FormatError must say what is wrong"
        for problem in error.problems:
            assert isinstance(problem.line, int) and problem.line >= 0
            assert isinstance(problem.field, str) and problem.field
            assert isinstance(problem.message, str) and problem.message
        assert str(error)
        assert snapshot(pool) == before, "a refused file wrote something"


PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("EXCHANGE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def everyone(pool, rater, other_rater, site_admin):
    return pool


@PROPERTY_SETTINGS
@given(data=files("documents"))
def test_document_import_is_clean_on_any_input(everyone, data):
    check(lambda: import_documents(everyone, data, name="docs.jsonl"), everyone)


@PROPERTY_SETTINGS
@given(data=files("judgments-csv"))
def test_quepid_csv_import_is_clean_on_any_input(everyone, rater, data):
    check(lambda: import_judgments(everyone, data, format="csv", name="r.csv", rater=rater), everyone)


@PROPERTY_SETTINGS
@given(data=files("judgments-rater-csv"))
def test_rater_csv_import_is_clean_on_any_input(everyone, data):
    check(lambda: import_judgments(everyone, data, format="rater-csv", name="r.csv"), everyone)


@PROPERTY_SETTINGS
@given(data=files("judgments-jsonl"))
def test_judgments_jsonl_import_is_clean_on_any_input(everyone, site_admin, data):
    check(
        lambda: import_judgments(everyone, data, format="jsonl", name="j.jsonl", actor=site_admin), everyone
    )


@PROPERTY_SETTINGS
@given(data=st.one_of(files("queries"), files("queries-jsonl")))
def test_query_import_is_clean_on_any_input(everyone, data):
    check(lambda: import_queries(everyone, data, name="q.tsv"), everyone)


@PROPERTY_SETTINGS
@given(data=files("qrels"), grade_map=st.sampled_from([None, "-1:skip", "-2:0,-1:skip", "5:4", "bad map"]))
def test_qrels_import_is_clean_on_any_input(everyone, rater, data, grade_map):
    check(lambda: import_qrels(everyone, data, name="x.qrels", rater=rater, grade_map=grade_map), everyone)


@PROPERTY_SETTINGS
@given(data=files("run"), order=st.sampled_from(["score", "rank"]))
def test_run_import_is_clean_on_any_input(everyone, configuration, data, order):
    check(lambda: import_run(configuration, data, name="x.run", order=order), everyone)
