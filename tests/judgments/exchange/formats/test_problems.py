"""Tests of judgments.exchange.formats.problems: Problem, FormatError and the promise every parser
keeps (garbage in, FormatError out, never any other exception). Pure Python, no database."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgments.exchange import formats as F
from judgments.exchange.formats import (
    MAX_PROBLEMS,
    FormatError,
    Problem,
)
from tests.judgments.exchange.formats.helpers import (
    PROPS,
    lines,
    problems,
)

# ==================================================================================================
# Problems and FormatError


def test_format_error_str_lists_file_line_field_message():
    err = FormatError(
        "q.txt", [Problem(3, "grade", "grade must be 0-4"), Problem(0, "file", "file is empty")]
    )
    assert str(err) == "q.txt:3: grade: grade must be 0-4\nq.txt: file: file is empty"
    assert err.name == "q.txt" and len(err.problems) == 2
    assert isinstance(err, Exception)


def test_format_error_pickles():
    import pickle

    err = FormatError("x", [Problem(1, "a", "b")])
    again = pickle.loads(pickle.dumps(err))
    assert again.problems == err.problems and str(again) == str(err)


def test_problems_are_capped_with_a_final_note():
    data = lines(*(f"q{i} 0 d{i} 9" for i in range(1, 61)))
    found = problems(F.parse_qrels, data)
    assert len(found) == MAX_PROBLEMS + 1
    assert all(p.field == "grade" for p in found[:MAX_PROBLEMS])
    assert [p.line for p in found[:MAX_PROBLEMS]] == list(range(1, 51))
    last = found[-1]
    assert last.field == "file" and last.line == 51
    assert "10 more problems" in last.message


def test_parser_reads_whole_file_before_raising():
    stream = io.BytesIO(lines("q1 0 d1 9", *(f"q1 0 d{i} 1" for i in range(2, 1000))))
    with pytest.raises(FormatError):
        F.parse_qrels(stream)
    assert stream.read() == b""


# ==================================================================================================
# Property tests: garbage in, FormatError out (never any other exception)

PARSERS = {
    "qrels": lambda s: F.parse_qrels(s, "x"),
    "qrels+map": lambda s: F.parse_qrels(s, "x", grade_map={-1: None, 5: 4}),
    "run": lambda s: F.parse_run(s, "x"),
    "run-rank": lambda s: F.parse_run(s, "x", order="rank"),
    "run-columns": lambda s: F.parse_run_columns(s, "x"),
    "queries": lambda s: F.parse_queries(s, "x"),
    "queries-tsv": lambda s: F.parse_queries_tsv(s, "x"),
    "queries-jsonl": lambda s: F.parse_queries_jsonl(s, "x"),
    "documents": lambda s: F.parse_documents_jsonl(s, "x"),
    "judgments-csv": lambda s: F.parse_judgments_csv(s, "x"),
    "rater-csv": lambda s: F.parse_rater_csv(s, "x"),
    "judgments-jsonl": lambda s: F.parse_judgments_jsonl(s, "x"),
}

SAMPLES = {
    "qrels": b"# c\n301 0 d1 0\n301 0 d2 4\n302 0 d#1 2\n",
    "run": b"301 Q0 d1 1 2.5 t\n301 Q0 d2 2 2.5 t\n302 Q0 d1 1 -1e3 t\n",
    "queries-tsv": "301\tcaf\u00e9 cr\u00e8me\n302\tother\n".encode(),
    "queries-jsonl": b'{"id": "q1", "text": "a", "information_need": "b"}\n{"id": 2, "text": "c"}\n',
    "documents": b'{"id": "d1", "title": "t", "body": "b", "url": "https://x.org", "k": [1, {"a": null}]}\n{"id": "d2"}\n',
    "judgments-csv": b'query,docid,rating\n"a, b",d1,3\nc,d2,0\n',
    "rater-csv": b"query_id,doc_id,ann,bob\nq1,d1,3,X\nq1,d2,,0\n",
    "judgments-jsonl": (
        b'{"query_id": "q", "doc_id": "d", "rater": "r", "grade": 2, "cant_judge": false, "reason": "", "note": "",'
        b' "created_at": "2024-01-01T00:00:00+00:00", "updated_at": null, "final": false}\n'
        b'{"query_id": "q", "doc_id": "e", "rater": "r", "grade": null, "cant_judge": true, "reason": "x"}\n'
    ),
}


def _check_parser(parser, data):
    try:
        parser(data)
    except FormatError as exc:
        assert exc.problems
        assert len(exc.problems) <= MAX_PROBLEMS + 1
        assert all(isinstance(p.line, int) and p.line >= 0 and p.field and p.message for p in exc.problems)
        str(exc)


def test_samples_are_valid():
    for name, data in SAMPLES.items():
        for pname, parser in PARSERS.items():
            if (
                pname.startswith(name)
                or (name.startswith("queries") and pname == "queries")
                or (name == "run" and pname.startswith("run"))
            ):
                parser(data)


@PROPS
@given(st.binary(max_size=400))
def test_random_bytes_never_crash(data):
    for parser in PARSERS.values():
        _check_parser(parser, data)


@PROPS
@given(st.text(max_size=300))
def test_random_text_never_crash(text):
    for parser in PARSERS.values():
        _check_parser(parser, text)
        _check_parser(parser, io.StringIO(text))


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(sorted(SAMPLES.values()))))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(
            st.sampled_from(
                ["flip", "insert", "delete", "drop-line", "dup-line", "add-field", "swap-lines", "truncate"]
            )
        )
        rows = bytes(data).split(b"\n")
        if op == "flip" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            i = draw(st.integers(0, len(data)))
            data[i:i] = draw(
                st.sampled_from(
                    [
                        b"\t",
                        b" ",
                        b",",
                        b'"',
                        b"{",
                        b"}",
                        b"\n",
                        b"\r",
                        b"#",
                        b"\xff",
                        b"\xc3",
                        b"\x00",
                        b"-1",
                        b"nan",
                        b"X",
                        b"\xef\xbb\xbf",
                        b"\xc2\xa0",
                    ]
                )
            )
        elif op == "delete" and data:
            i = draw(st.integers(0, len(data) - 1))
            del data[i : i + draw(st.integers(1, 5))]
        elif op == "drop-line" and rows:
            del rows[draw(st.integers(0, len(rows) - 1))]
            data = bytearray(b"\n".join(rows))
        elif op == "dup-line" and rows:
            i = draw(st.integers(0, len(rows) - 1))
            rows.insert(i, rows[i])
            data = bytearray(b"\n".join(rows))
        elif op == "add-field" and rows:
            i = draw(st.integers(0, len(rows) - 1))
            rows[i] += draw(st.sampled_from([b" extra", b"\textra", b",extra", b', "k": 1}', b" 1 2"]))
            data = bytearray(b"\n".join(rows))
        elif op == "swap-lines" and len(rows) > 1:
            i, j = draw(st.integers(0, len(rows) - 1)), draw(st.integers(0, len(rows) - 1))
            rows[i], rows[j] = rows[j], rows[i]
            data = bytearray(b"\n".join(rows))
        elif op == "truncate":
            del data[draw(st.integers(0, len(data))) :]
    return bytes(data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_files_never_crash(data):
    for parser in PARSERS.values():
        _check_parser(parser, data)
        _check_parser(parser, data.splitlines(keepends=True))
        _check_parser(parser, io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=""))
