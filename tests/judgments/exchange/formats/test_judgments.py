"""Tests of judgments.exchange.formats.judgments: judgments as Quepid-style CSV, per-rater CSV and
JSON lines, read and written. Pure Python, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgments.exchange import formats as F
from judgments.exchange.formats import (
    JudgmentCsvRecord,
    JudgmentJsonRecord,
)
from tests.judgments.exchange.formats.helpers import (
    PROPS,
    grades,
    ids,
    lines,
    problems,
    texts,
    where,
)

# ==================================================================================================
# Quepid CSV


def test_parse_judgments_csv():
    data = lines(
        "query,docid,rating",
        "star wars,d1,3",
        '"rock, paper, scissors",d2,0',
        '"a ""quoted"" query",d3,4',
        "",
        "  padded  ,d4, 2 ",
    )
    assert F.parse_judgments_csv(data) == [
        JudgmentCsvRecord(2, "star wars", "d1", 3),
        JudgmentCsvRecord(3, "rock, paper, scissors", "d2", 0),
        JudgmentCsvRecord(4, 'a "quoted" query', "d3", 4),
        JudgmentCsvRecord(6, "padded", "d4", 2),
    ]


def test_parse_judgments_csv_flexible_header():
    data = lines("Rating,Doc_ID,Query,Notes", "1,d1,q,whatever")
    assert F.parse_judgments_csv(data) == [JudgmentCsvRecord(2, "q", "d1", 1)]


def test_parse_judgments_csv_multiline_field_reports_the_record_start_line():
    data = lines("query,docid,rating", '"two', 'lines",d1,9', "q,d2,1")
    [p] = problems(F.parse_judgments_csv, data)
    assert (p.line, p.field) == (2, "rating")
    rows = F.parse_judgments_csv(lines("query,docid,rating", '"two', 'lines",d1,1', "q,d2,1"))
    assert [(r.line, r.query) for r in rows] == [(2, "two\nlines"), (4, "q")]


@pytest.mark.parametrize(
    "row, field",
    [
        ("q,d1,", "rating"),
        ("q,d1,5", "rating"),
        ("q,d1,-1", "rating"),
        ("q,d1,2.5", "rating"),
        ("q,d1,high", "rating"),
        (",d1,1", "query"),
        ("q,d 1,1", "docid"),
        ("q,,1", "docid"),
        ("q,d1", "line"),
        ("q,d1,1,extra", "line"),
        ('"q,d1,1', "csv"),
        ('"q"x,d1,1', "csv"),
    ],
)
def test_parse_judgments_csv_errors(row, field):
    assert where(F.parse_judgments_csv, lines("query,docid,rating", "ok,d0,1", row)) == [(3, field)]


def test_parse_judgments_csv_bad_header():
    [p] = problems(F.parse_judgments_csv, lines("q;d;r", "a;b;1"))
    assert (p.line, p.field) == (1, "header")
    [p] = problems(F.parse_judgments_csv, lines("query,docid,rating,rating", "a,b,1,2"))
    assert p.field == "header"


def test_parse_judgments_csv_duplicate():
    [p] = problems(F.parse_judgments_csv, lines("query,docid,rating", "q,d,1", "q,d,2"))
    assert (p.line, p.field) == (3, "docid") and "lines 2 and 3" in p.message


def test_write_judgments_csv_round_trip():
    rows = [
        ("star wars", "d1", 3),
        ("rock, paper", "d2", 0),
        ('say "hi"', "d3", 4),
        ("multi\nline", "d4", 1),
        ("cr\rhere", "d5", 2),
    ]
    out = list(F.write_judgments_csv(rows))
    assert out[0] == "query,docid,rating\n" and out[1] == "star wars,d1,3\n"
    parsed = F.parse_judgments_csv("".join(out).encode())
    assert [(r.query, r.doc_id, r.grade) for r in parsed] == rows
    with pytest.raises(ValueError):
        list(F.write_judgments_csv([("q", "d", 5)]))


# ==================================================================================================
# Per-rater CSV


def test_parse_rater_csv():
    data = lines("query_id,doc_id,ann,bob,cy", "q1,d1,3,,X", "q1,d2,x, 0 ,4")
    parsed = F.parse_rater_csv(data)
    assert parsed.raters == ["ann", "bob", "cy"]
    assert parsed.rows == [
        F.RaterCsvRecord(2, "q1", "d1", {"ann": 3, "bob": None, "cy": "X"}),
        F.RaterCsvRecord(3, "q1", "d2", {"ann": "X", "bob": 0, "cy": 4}),
    ]


@pytest.mark.parametrize(
    "row, field",
    [
        ("q1,d2,7,1", "ann"),
        ("q1,d2,1,-2", "bob"),
        ("q1,d2,1,can't", "bob"),
        ("q1,d2,1", "line"),
        ("q1,d2,1,2,3", "line"),
        ("q 1,d2,1,2", "query_id"),
        ("q1,,1,2", "doc_id"),
        ("q1,d1,1,2", "doc_id"),  # duplicate pair
    ],
)
def test_parse_rater_csv_errors(row, field):
    assert where(F.parse_rater_csv, lines("query_id,doc_id,ann,bob", "q1,d1,,", row)) == [(3, field)]


@pytest.mark.parametrize(
    "header",
    ["qid,docid,ann", "query_id,doc_id,ann,ann", "query_id,doc_id,a b", "query_id,doc_id,,x", "doc_id"],
)
def test_parse_rater_csv_bad_header(header):
    found = problems(F.parse_rater_csv, lines(header, "q,d,1"))
    assert found[0].line == 1 and found[0].field == "header"


def test_write_rater_csv_round_trip():
    raters = ["ann", "bob@example.org", "c,y"]
    rows = [
        ("q1", "d1", {"ann": 3, "bob@example.org": None, "c,y": "X"}),
        ("q1", "d2", {"ann": 0}),
        ("q2", "d1", {}),
    ]
    out = list(F.write_rater_csv(raters, rows))
    assert out[0] == 'query_id,doc_id,ann,bob@example.org,"c,y"\n'
    assert out[1] == "q1,d1,3,,X\n"
    parsed = F.parse_rater_csv("".join(out).encode())
    assert parsed.raters == raters
    assert [(r.query_id, r.doc_id, r.grades) for r in parsed.rows] == [
        (q, d, {r: g.get(r) for r in raters}) for q, d, g in rows
    ]


@pytest.mark.parametrize(
    "raters, rows",
    [
        (["ann"], [("q", "d", {"ann": 5})]),
        (["ann"], [("q", "d", {"zed": 1})]),
        (["ann"], [("q", "d", {"ann": True})]),
        (["ann", "ann"], []),
        (["a n"], []),
        (["ann"], [("q 1", "d", {})]),
    ],
)
def test_write_rater_csv_rejects(raters, rows):
    with pytest.raises(ValueError):
        list(F.write_rater_csv(raters, rows))


# ==================================================================================================
# Judgments JSON lines


def test_parse_judgments_jsonl():
    data = lines(
        '{"query_id": "q1", "doc_id": "d1", "rater": "ann", "grade": 3, "cant_judge": false, "reason": "", "note": "ok",'
        ' "created_at": "2024-05-01T10:00:00+00:00", "updated_at": "2024-05-02T11:30:00Z"}',
        '{"query_id": "q1", "doc_id": "d2", "rater": "ann", "grade": null, "cant_judge": true, "reason": "page empty", "final": true}',
        '{"query_id": 7, "doc_id": "d1", "rater": "bob", "grade": 0, "extra_key": 1}',
    )
    parsed = F.parse_judgments_jsonl(data)
    assert parsed[0] == JudgmentJsonRecord(
        1,
        "q1",
        "d1",
        "ann",
        3,
        False,
        "",
        "ok",
        datetime(2024, 5, 1, 10, tzinfo=UTC),
        datetime(2024, 5, 2, 11, 30, tzinfo=UTC),
        False,
    )
    assert parsed[1] == JudgmentJsonRecord(
        2, "q1", "d2", "ann", None, True, "page empty", "", None, None, True
    )
    assert parsed[2] == JudgmentJsonRecord(3, "7", "d1", "bob", 0)


BASE = '"query_id": "q", "doc_id": "d", "rater": "r"'


@pytest.mark.parametrize(
    "row, fields",
    [
        ("{" + BASE + ', "grade": null}', ["grade"]),
        ("{" + BASE + ', "grade": 2, "cant_judge": true, "reason": "x"}', ["grade"]),
        ("{" + BASE + ', "grade": null, "cant_judge": true}', ["reason"]),
        ("{" + BASE + ', "grade": null, "cant_judge": true, "reason": "  "}', ["reason"]),
        ("{" + BASE + ', "grade": 5}', ["grade"]),
        ("{" + BASE + ', "grade": -2}', ["grade"]),
        ("{" + BASE + ', "grade": 2.5}', ["grade"]),
        ("{" + BASE + ', "grade": 2.0}', ["grade"]),
        ("{" + BASE + ', "grade": true}', ["grade"]),
        ("{" + BASE + ', "grade": "3"}', ["grade"]),
        ("{" + BASE + "}", ["grade"]),
        ("{" + BASE + ', "grade": 1, "cant_judge": "no"}', ["cant_judge"]),
        ("{" + BASE + ', "grade": 1, "final": 1}', ["final"]),
        ("{" + BASE + ', "grade": 1, "note": 3}', ["note"]),
        ("{" + BASE + ', "grade": 1, "created_at": "2024-05-01T10:00:00"}', ["created_at"]),
        ("{" + BASE + ', "grade": 1, "updated_at": "yesterday"}', ["updated_at"]),
        ("{" + BASE + ', "grade": 1, "updated_at": 1714557600}', ["updated_at"]),
        ('{"doc_id": "d", "rater": "r", "grade": 1}', ["query_id"]),
        ('{"query_id": "q", "doc_id": "d d", "rater": "r", "grade": 1}', ["doc_id"]),
        ('{"query_id": "q", "doc_id": "d", "grade": 1}', ["rater"]),
        ('{"query_id": "q", "doc_id": "d", "rater": "", "grade": 1}', ["rater"]),
        ('{"query_id": "q", "doc_id": "d", "rater": "r", "grade": 1, "rater": "s"}', ["json"]),
    ],
)
def test_parse_judgments_jsonl_errors(row, fields):
    ok = "{" + BASE.replace('"d"', '"ok"') + ', "grade": 1}'
    assert where(F.parse_judgments_jsonl, lines(ok, row)) == [(2, f) for f in fields]


def test_parse_judgments_jsonl_duplicate():
    row = "{" + BASE + ', "grade": 1}'
    [p] = problems(F.parse_judgments_jsonl, lines(row, row.replace('"r"', '"s"'), row))
    assert (p.line, p.field) == (3, "rater") and "lines 1 and 3" in p.message


def test_parse_judgments_jsonl_final_grades():
    own = "{" + BASE + ', "grade": 1}'
    final = "{" + BASE + ', "grade": 3, "final": true}'
    other_admin = final.replace('"r"', '"admin2"')
    parsed = F.parse_judgments_jsonl(lines(own, final))  # the adjudicator also judged the pair: fine
    assert [(r.rater, r.grade, r.final) for r in parsed] == [("r", 1, False), ("r", 3, True)]
    [p] = problems(F.parse_judgments_jsonl, lines(own, final, other_admin))
    assert (
        (p.line, p.field) == (3, "final") and "two final grades" in p.message and "lines 2 and 3" in p.message
    )


def test_write_judgments_jsonl_round_trip():
    cet = timezone(timedelta(hours=1))
    records = [
        JudgmentJsonRecord(
            1,
            "q1",
            "d1",
            "ann",
            4,
            False,
            "",
            "great",
            datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=cet),
            datetime(2024, 1, 3, tzinfo=UTC),
            True,
        ),
        JudgmentJsonRecord(2, "q1", "d2", "bob", None, True, "paywall", "", None, None, False),
    ]
    out = list(F.write_judgments_jsonl(records))
    assert len(out) == 2 and all(x.endswith("\n") for x in out)
    assert F.parse_judgments_jsonl("".join(out).encode()) == records


@pytest.mark.parametrize(
    "record",
    [
        JudgmentJsonRecord(0, "q", "d", "r", None),
        JudgmentJsonRecord(0, "q", "d", "r", 1, cant_judge=True, reason="x"),
        JudgmentJsonRecord(0, "q", "d", "r", None, cant_judge=True),
        JudgmentJsonRecord(0, "q", "d", "r", 5),
        JudgmentJsonRecord(0, "q", "d", "r", 1, created_at=datetime(2024, 1, 1)),
        JudgmentJsonRecord(0, "q d", "d", "r", 1),
    ],
)
def test_write_judgments_jsonl_rejects_invalid(record):
    with pytest.raises(ValueError):
        list(F.write_judgments_jsonl([record]))


# ==================================================================================================
# Property tests: round trips


@PROPS
@given(
    st.lists(
        st.tuples(texts.map(str.strip).filter(bool), ids, grades),
        min_size=1,
        max_size=10,
        unique_by=lambda x: (x[0], x[1]),
    )
)
def test_judgments_csv_round_trip(rows):
    parsed = F.parse_judgments_csv("".join(F.write_judgments_csv(rows)).encode())
    assert [(r.query, r.doc_id, r.grade) for r in parsed] == rows


@PROPS
@given(
    st.lists(ids, max_size=4, unique=True).filter(
        lambda rs: not {r.lower() for r in rs} & {"query_id", "doc_id"}
    ),
    st.data(),
)
def test_rater_csv_round_trip(raters, data):
    cell = st.one_of(st.none(), grades, st.just("X"))
    rows = data.draw(
        st.lists(
            st.tuples(ids, ids, st.fixed_dictionaries({r: cell for r in raters})),
            min_size=1,
            max_size=8,
            unique_by=lambda x: (x[0], x[1]),
        )
    )
    parsed = F.parse_rater_csv("".join(F.write_rater_csv(raters, rows)).encode())
    assert parsed.raters == raters
    assert [(r.query_id, r.doc_id, r.grades) for r in parsed.rows] == rows


timestamps = st.none() | st.datetimes(
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))])
)


@st.composite
def judgment_records(draw):
    cant = draw(st.booleans())
    return JudgmentJsonRecord(
        0,
        draw(ids),
        draw(ids),
        draw(ids),
        None if cant else draw(grades),
        cant,
        draw(texts.filter(lambda t: t.strip())) if cant else draw(texts),
        draw(texts),
        draw(timestamps),
        draw(timestamps),
        draw(st.booleans()),
    )


@PROPS
@given(
    st.lists(
        judgment_records(),
        min_size=1,
        max_size=6,
        unique_by=lambda r: (r.query_id, r.doc_id, "" if r.final else r.rater),
    )
)
def test_judgments_jsonl_round_trip(records):
    for i, r in enumerate(records, 1):
        r.line = i
    assert F.parse_judgments_jsonl("".join(F.write_judgments_jsonl(records)).encode()) == records
