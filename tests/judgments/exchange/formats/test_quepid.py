"""Quepid's CSV (judgments.exchange.formats.quepid): pure Python, no database.

Built from the format's published examples under tests/data/quepid (see its README). What it cannot
hold, so a round trip is identical only up to it: query ids (queries are known by text), raters,
can't-judge, notes, timestamps, fractional grades, spaces around a query text; ratings are written as
Quepid's floats (``3.0``), so a file written with ``3`` comes back as ``3.0``; Quepid leaves out the
last line feed, we write it. Quepid CSV and RRE read into each other: test_rre.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgments.exchange.formats import FormatError, JudgmentCsvRecord
from judgments.exchange.formats.quepid import UnratedRow, parse_quepid_csv, write_quepid_csv
from tests.judgments.exchange.formats.examples import FUZZ, QUEPID, messages, triples, where

# ==================================================================================================
# Quepid CSV: reading the published examples


def test_quepid_import_example_reads_the_rating_and_skips_and_counts_unrated_rows():
    parsed = parse_quepid_csv((QUEPID / "import_modal_example.csv").read_bytes(), "example.csv")
    assert parsed.records == [JudgmentCsvRecord(2, "star wars", "3574597", 3)]
    assert parsed.unrated == [UnratedRow(3, "star wars", "3557771"), UnratedRow(4, "star trek", "")]


def test_quepid_case_export_float_ratings_are_grades_and_the_formula_space_is_stripped():
    parsed = parse_quepid_csv((QUEPID / "case_export.csv").read_bytes(), "case_1_judgements.csv")
    assert triples(parsed.records) == [("Second Query", "doca", 3), ("Second Query", "docb", 1)]
    assert [(u.line, u.query, u.doc_id) for u in parsed.unrated] == [
        (2, "=cmd", ""),
        (3, "First Query", ""),
        (6, "Third Query", ""),
        (7, "Fourth Query", ""),
        (8, "BLOWUP_QUERY", ""),
    ]


def test_quepid_export_of_unrated_queries_only_is_a_file_with_nothing_to_import():
    parsed = parse_quepid_csv((QUEPID / "export_with_comma.csv").read_text(), "x.csv")
    assert parsed.records == []
    assert [u.query for u in parsed.unrated] == ["I like, commas!", "one"]


@pytest.mark.parametrize("rating", ["3", "3.0", "3.00", " 3.0 ", "+3", "3e0", "30e-1", "3."])
def test_quepid_whole_number_ratings_in_any_spelling_are_accepted(rating):
    parsed = parse_quepid_csv(f"query,docid,rating\nq,d,{rating}\n", "f")
    assert triples(parsed.records) == [("q", "d", 3)]


def test_quepid_columns_in_another_order_and_short_rows_are_read():
    parsed = parse_quepid_csv("Rating,DOC_ID,Query,extra\n2.0,d1,q1,x\n,,q2\n", "f")
    assert triples(parsed.records) == [("q1", "d1", 2)]
    assert parsed.unrated == [UnratedRow(3, "q2", "")]


def test_quepid_the_same_pair_repeated_with_the_same_rating_is_read_once():
    parsed = parse_quepid_csv("query,docid,rating\nq,d,2.0\nq,d,2\n", "f")
    assert triples(parsed.records) == [("q", "d", 2)]


# --- Refusals: the line and field of every problem -------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected", "says"),
    [
        ("q,d,2.5", [(2, "rating")], "rating 2.5 is not a whole number"),
        ("q,d,3.0001", [(2, "rating")], "not a whole number"),
        ("q,d,7.0", [(2, "rating")], "outside 0-4"),
        ("q,d,-1", [(2, "rating")], "outside 0-4"),
        ("q,d,high", [(2, "rating")], "must be a number"),
        ("q,d,NaN", [(2, "rating")], "must be a number"),
        ("q,,3.0", [(2, "docid")], "has no docid"),
        (",d,3.0", [(2, "query")], "query is empty"),
        ("q,d e,3.0", [(2, "docid")], "whitespace"),
        ("q,d,3.0,more", [(2, "line")], "at most 3 columns"),
        ("q,d,3.0\nq,ok,1\nq,d,2.0", [(4, "rating")], "rated 3 on line 2 and 2 here"),
        ("q,d,1\nr,e,2.5\ns,f,9", [(3, "rating"), (4, "rating")], "f:3: rating:"),
    ],
)
def test_quepid_bad_rows_are_refused_naming_line_and_field(body, expected, says):
    data = "query,docid,rating\n" + body + "\n"
    assert where(parse_quepid_csv, data) == expected
    assert says in messages(parse_quepid_csv, data)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", [(0, "file")]),
        (b"query,docid,rating\n", [(0, "file")]),
        (b"query,doc,grade\nq,d,1\n", [(1, "header")]),
        (b"query,docid,rating\nq\xff,d,1\n", [(2, "encoding")]),
        (b'query,docid,rating\n"q,d,1\n', [(2, "csv")]),
    ],
)
def test_quepid_bad_files_are_refused(data, expected):
    assert where(parse_quepid_csv, data) == expected


# --- Writing and round trips -----------------------------------------------------------------------


def test_quepid_writer_writes_quepids_export_shape():
    rows = [
        JudgmentCsvRecord(0, "star wars", "3574597", 3),
        ("star wars", "3557771", None),
        UnratedRow(0, "star trek"),
        ("-minus", "d", 0),
        ("@at", "d", 4),
        ("a, b", "d", 1),
        ('say "hi"', "d", 2),
    ]
    assert "".join(write_quepid_csv(rows)) == (
        "query,docid,rating\n"
        "star wars,3574597,3.0\n"
        "star wars,3557771,\n"
        "star trek,,\n"
        " -minus,d,0.0\n"
        " @at,d,4.0\n"
        '"a, b",d,1.0\n'
        '"say ""hi""",d,2.0\n'
    )


@pytest.mark.parametrize(
    "row",
    [
        ("q", "d", 5),
        ("q", "d", 2.5),
        ("q", "d", True),
        ("q", "d e", 1),
        ("q", None, 2),
        (" q", "d", 1),
        ("", "d", 1),
    ],
)
def test_quepid_writer_refuses_what_the_parser_would_not_read_back(row):
    with pytest.raises(ValueError):
        list(write_quepid_csv([row]))


@pytest.mark.parametrize("name", ["case_export.csv", "export_with_comma.csv"])
def test_quepid_export_round_trips_byte_for_byte_up_to_the_last_line_feed(name):
    original = (QUEPID / name).read_text()
    written = "".join(write_quepid_csv(parse_quepid_csv(original, name).rows()))
    assert written == original.rstrip("\n") + "\n"


def test_quepid_import_example_round_trips_its_values_with_float_ratings():
    original = (QUEPID / "import_modal_example.csv").read_text()
    parsed = parse_quepid_csv(original, "x")
    written = "".join(write_quepid_csv(parsed.rows()))
    assert written == original.replace(",3\n", ",3.0\n") + "\n"
    again = parse_quepid_csv(written, "x")
    assert again.records == parsed.records and again.unrated == parsed.unrated


def test_quepid_written_header_is_the_one_quepids_import_checks_exactly():
    # import_ratings_modal_instance_controller.js: the first line split on ',' must equal these three.
    first = next(write_quepid_csv([]))
    assert first.rstrip("\n").split(",") == ["query", "docid", "rating"]


# ==================================================================================================
# Fuzz: any input is either records or FormatError, never another exception


_cells = st.sampled_from(
    ["q", " =q", "a, b", "d1", "d 2", "", "3", "3.0", "2.5", "-1", "4.00", '"', "1e0", "\x00"]
)


@FUZZ
@given(
    st.lists(st.lists(_cells, max_size=5), max_size=8),
    st.sampled_from(["query,docid,rating", "docid,rating,query", "q,d"]),
)
def test_fuzz_csv_shaped_input_is_records_or_format_error(rows, header):
    text = header + "\n" + "\n".join(",".join(r) for r in rows)
    try:
        parsed = parse_quepid_csv(text, "fuzz")
    except FormatError:
        return
    assert all(r.grade in range(5) for r in parsed.records)
    again = parse_quepid_csv("".join(write_quepid_csv(parsed.rows())), "again")
    assert triples(again.records) == triples(parsed.records)
