"""Tests of judgments.exchange.formats: pure Python, no database, no Django."""

from __future__ import annotations

import io
import math
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from judgments.exchange import formats as F
from judgments.exchange.formats import (
    MAX_PROBLEMS,
    DocumentRecord,
    FormatError,
    JudgmentCsvRecord,
    JudgmentJsonRecord,
    Problem,
    QrelRecord,
    QueryRecord,
)

TESTDATA = Path(__file__).resolve().parents[5] / "shared" / "testdata" / "trec_eval"
if not TESTDATA.is_dir():  # a clone elsewhere: shared/ sits beside the work tree
    TESTDATA = Path("/work/shared/testdata/trec_eval")
needs_testdata = pytest.mark.skipif(not TESTDATA.is_dir(), reason="trec_eval test data not available")


def lines(*rows: str) -> bytes:
    return "".join(r + "\n" for r in rows).encode()


def problems(fn, data, **kwargs) -> list[Problem]:
    with pytest.raises(FormatError) as info:
        fn(data, "f.txt", **kwargs)
    return info.value.problems


def where(fn, data, **kwargs) -> list[tuple[int, str]]:
    return [(p.line, p.field) for p in problems(fn, data, **kwargs)]


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


# ==================================================================================================
# Grade map


def test_parse_grade_map():
    assert F.parse_grade_map("-2:0,-1:skip") == {-2: 0, -1: None}
    assert F.parse_grade_map(" 5 : 4 , 6:SKIP ") == {5: 4, 6: None}
    assert F.parse_grade_map("") == {}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("-1", "must look like"),
        ("-1:0:1", "must look like"),
        ("x:0", "not an integer"),
        ("1.5:1", "not an integer"),
        ("-1:5", "grade 0-4 or 'skip'"),
        ("-1:drop", "grade 0-4 or 'skip'"),
        ("-1:0,,2:1", "entry 2 is empty"),
        ("-1:0,-1:skip", "mapped twice"),
    ],
)
def test_parse_grade_map_errors(text, fragment):
    with pytest.raises(ValueError, match=fragment):
        F.parse_grade_map(text)


def test_bad_grade_map_dict_is_a_value_error():
    with pytest.raises(ValueError):
        F.parse_qrels(b"q 0 d 1\n", grade_map={-1: 7})


# ==================================================================================================
# TREC qrels


def test_parse_qrels_basic_with_comments_and_blank_lines():
    data = lines("# header", "", "301 0 d1 0", "  301\t0   d2 4  ", "# 302 0 d3 1", "302 Q0 d1 3")
    assert F.parse_qrels(data) == [
        QrelRecord(3, "301", "d1", 0),
        QrelRecord(4, "301", "d2", 4),
        QrelRecord(6, "302", "d1", 3),
    ]


@pytest.mark.parametrize("grade", ["7", "5", "-2", "1.5", "x", "", "1_0", "٣", "+-1", "1e0"])
def test_qrels_bad_grades(grade):
    data = lines("q1 0 d0 1", f"q1 0 d1 {grade}".rstrip(), "q1 0 d2 2")
    expected_field = "line" if grade == "" else "grade"
    assert where(F.parse_qrels, data) == [(2, expected_field)]


def test_qrels_grade_7_message():
    [p] = problems(F.parse_qrels, b"q1 0 d1 7\n")
    assert (p.line, p.field) == (1, "grade")
    assert "0-4" in p.message and "'7'" in p.message


def test_qrels_negative_grade_with_and_without_grade_map():
    # -1 is read (the distractor grade: whether the pool takes it is the importer's business); -2 is not.
    data = lines("q1 0 d1 -1", "q1 0 d2 -2", "q1 0 d3 2")
    assert where(F.parse_qrels, data) == [(2, "grade")]
    gm = F.parse_grade_map("-2:0,-1:skip")
    assert F.parse_qrels(data, grade_map=gm) == [QrelRecord(2, "q1", "d2", 0), QrelRecord(3, "q1", "d3", 2)]
    # a map only covers what it names
    assert where(F.parse_qrels, data, grade_map={-1: None}) == [(2, "grade")]
    assert F.parse_qrels(data, grade_map={-2: -1})[:2] == [
        QrelRecord(1, "q1", "d1", -1),
        QrelRecord(2, "q1", "d2", -1),
    ]


def test_qrels_grade_map_can_remap_valid_grades():
    assert [r.grade for r in F.parse_qrels(b"q 0 a 4\nq 0 b 3\n", grade_map={4: 3})] == [3, 3]


def test_qrels_all_lines_skipped_is_a_problem():
    [p] = problems(F.parse_qrels, b"q 0 a -1\nq 0 b -1\n", grade_map={-1: None})
    assert p.field == "file" and "skipped" in p.message


@pytest.mark.parametrize("row", ["q1 0 d1", "q1 0 d1 1 extra", "q1", "q1 0 d 1 2 3 4"])
def test_qrels_wrong_field_count(row):
    [p] = problems(F.parse_qrels, lines("q 0 ok 1", row))
    assert (p.line, p.field) == (2, "line")
    assert "4" in p.message


def test_qrels_duplicate_pair_names_both_lines():
    [p] = problems(F.parse_qrels, lines("q1 0 d1 1", "q1 0 d2 1", "q1 0 d1 2"))
    assert (p.line, p.field) == (3, "docid")
    assert "lines 1 and 3" in p.message


@pytest.mark.parametrize(
    "row, field",
    [
        ("q\x011 0 d 1", "line"),  # control character
        ("q1 0 d\xa0x 1", "line"),  # no-break space: Python would split there, trec_eval would not
        ("q1 0 d\x0bx 1", "line"),  # vertical tab
        ("q1\u30000 d 1", "line"),  # ideographic space
        ("q1 0 " + "d" * 201 + " 1", "docid"),
        ("q" * 201 + " 0 d 1", "qid"),
    ],
)
def test_qrels_whitespace_and_control_characters_in_ids(row, field):
    [p] = problems(F.parse_qrels, lines("q 0 ok 1", row))
    assert (p.line, p.field) == (2, field)


def test_qrels_max_length_id_is_fine():
    qid, docid = "q" * 200, "d" * 200
    assert F.parse_qrels(f"{qid} 0 {docid} 1\n") == [QrelRecord(1, qid, docid, 1)]


def test_qrels_hash_inside_docid_is_not_a_comment():
    assert F.parse_qrels(b"301 0 CR#93E-1860 0\n")[0].doc_id == "CR#93E-1860"


@needs_testdata
def test_qrels_trec_eval_test_files():
    plain = F.parse_qrels((TESTDATA / "qrels.test").read_bytes(), "qrels.test")
    assert len(plain) == 3681
    with_comments = F.parse_qrels((TESTDATA / "qrels.test.with-comments").read_bytes())
    assert len(with_comments) == 3681
    assert "CR#93E-1860" in {r.doc_id for r in with_comments}
    assert len(F.parse_qrels((TESTDATA / "qrels.comment.test").read_bytes())) == 5890
    level = (TESTDATA / "qrels.rel_level").read_bytes()
    assert sum(r.grade == -1 for r in F.parse_qrels(level)) == 304  # read as distractors
    found = problems(F.parse_qrels, level.replace(b" -1\n", b" -2\n"))
    assert len(found) == MAX_PROBLEMS + 1 and "254 more" in found[-1].message
    kept = F.parse_qrels(level, grade_map=F.parse_grade_map("-1:skip"))
    assert len(kept) == 3681 - 304
    assert {r.grade for r in kept} == {0, 1, 2, 3, 4}
    assert len(F.parse_qrels(level, grade_map={-1: 0})) == 3681


# ==================================================================================================
# TREC run


def test_parse_run_orders_by_score_descending_ignoring_rank():
    data = lines("q1 Q0 a 1 1.0 t", "q1 Q0 b 2 3.5 t", "q2 Q0 x 1 0 t", "q1 Q0 c 3 2 t")
    run = F.parse_run(data)
    assert run.rankings == {"q1": ["b", "c", "a"], "q2": ["x"]}
    assert list(run.rankings) == ["q1", "q2"]
    assert run.tag == "t" and run.tags == ["t"]
    assert run.num_entries == 4


def test_parse_run_ties_broken_by_docid_descending():
    data = lines("q Q0 d1 1 5 t", "q Q0 d10 2 5 t", "q Q0 d2 3 5 t", "q Q0 top 4 6 t", "q Q0 D9 5 5 t")
    assert F.parse_run(data).rankings["q"] == ["top", "d2", "d10", "d1", "D9"]


def test_parse_run_ties_compare_utf8_bytes():
    ids = ["z", "é", "\ue000", "😀", "a", "Z", "\u00ff", "\u0100"]
    data = "".join(f"q Q0 {d} 1 1.0 t\n" for d in ids).encode()
    expected = sorted(ids, key=lambda d: d.encode(), reverse=True)
    assert F.parse_run(data).rankings["q"] == expected


def test_parse_run_scores_compare_as_float64():
    data = lines(
        "q Q0 a 1 1 t",
        "q Q0 b 1 1.0 t",
        "q Q0 c 1 1e0 t",
        "q Q0 d 1 0.30000000000000004 t",
        "q Q0 e 1 0.3 t",
        "q Q0 f 1 -0.0 t",
        "q Q0 g 1 0 t",
        "q Q0 h 1 1.00000000000000001 t",  # == 1.0 as a double
    )
    assert F.parse_run(data).rankings["q"] == ["h", "c", "b", "a", "d", "e", "g", "f"]


def test_parse_run_rank_order():
    data = lines("q Q0 a 3 9 t", "q Q0 b 1 1 t", "q Q0 c 2 5 t", "r Q0 x 10 0 t")
    assert F.parse_run(data, order="rank").rankings == {"q": ["b", "c", "a"], "r": ["x"]}
    assert F.parse_run(data).rankings == {"q": ["a", "c", "b"], "r": ["x"]}


def test_parse_run_rank_order_duplicate_rank_is_a_problem():
    data = lines("q Q0 a 1 9 t", "q Q0 b 1 1 t", "r Q0 b 1 1 t")
    [p] = problems(F.parse_run, data, order="rank")
    assert (p.line, p.field) == (2, "rank") and "lines 1 and 2" in p.message
    assert F.parse_run(data).rankings == {"q": ["a", "b"], "r": ["b"]}  # fine for score order


def test_parse_run_bad_order_argument():
    with pytest.raises(ValueError):
        F.parse_run(b"q Q0 a 1 1 t\n", order="docid")


def test_parse_run_duplicate_docid_names_both_lines():
    data = lines("q Q0 a 1 3 t", "q Q0 b 2 2 t", "r Q0 a 1 1 t", "q Q0 a 3 1 t")
    [p] = problems(F.parse_run, data)
    assert (p.line, p.field) == (4, "docid")
    assert "lines 1 and 4" in p.message


@pytest.mark.parametrize(
    "score", ["nan", "NaN", "inf", "-Infinity", "1e400", "abc", "1_0", "１", "0x10", "--1"]
)
def test_parse_run_bad_scores(score):
    [p] = problems(F.parse_run, lines("q Q0 a 1 1 t", f"q Q0 b 2 {score} t"))
    assert (p.line, p.field) == (2, "score")


@pytest.mark.parametrize("rank", ["1.5", "x", "1_0", "一"])
def test_parse_run_rank_must_be_an_integer_even_in_score_order(rank):
    [p] = problems(F.parse_run, lines(f"q Q0 a {rank} 1 t"))
    assert (p.line, p.field) == (1, "rank")


@pytest.mark.parametrize("row", ["q Q0 a 1 1", "q Q0 a 1 1 t junk", "q a 1 1 t", "q"])
def test_parse_run_wrong_field_count(row):
    [p] = problems(F.parse_run, lines("q Q0 ok 1 1 t", row))
    assert (p.line, p.field) == (2, "line") and "6" in p.message


def test_parse_run_whitespace_and_long_ids():
    data = lines(
        "q Q0 a\xa0b 1 1 t", "q Q0 " + "d" * 201 + " 1 1 t", "q Q0 c 1 1 " + "t" * 201, "q\x00 Q0 e 1 1 t"
    )
    assert where(F.parse_run, data) == [(1, "line"), (2, "docid"), (3, "tag"), (4, "line")]


def test_parse_run_several_tags_keeps_the_first():
    run = F.parse_run(lines("q Q0 a 1 1 alpha", "q Q0 b 2 0 beta", "r Q0 a 1 1 alpha"))
    assert run.tag == "alpha" and run.tags == ["alpha", "beta"]


def test_parse_run_collects_several_problems_in_line_order():
    data = lines("q Q0 a 1 x t", "q Q0 b y 1 t", "bad", "q Q0 c 1 1 t", "q Q0 c 2 1 t")
    assert where(F.parse_run, data) == [(1, "score"), (2, "rank"), (3, "line"), (5, "docid")]


def test_parse_run_columns_matches_parse_run():
    data = lines("q1 Q0 a 1 1.0 t", "q1 Q0 b 2 3.5 t", "q2 Q0 x 1 0 t", "q1 Q0 c 3 2 t")
    cols = F.parse_run_columns(data)
    assert cols.query_ids == ["q1", "q1", "q1", "q2"]
    assert cols.doc_ids == ["b", "c", "a", "x"]
    assert cols.ranks == [1, 2, 3, 1]
    assert cols.scores == [3.5, 2.0, 1.0, 0.0]
    assert cols.lines == [2, 4, 1, 3]
    assert cols.tag == "t" and len(cols) == 4
    by_rank = F.parse_run_columns(data, order="rank")
    assert by_rank.doc_ids == ["a", "b", "c", "x"] and by_rank.scores == [1.0, 3.5, 2.0, 0.0]
    with pytest.raises(FormatError):
        F.parse_run_columns(b"q Q0 a 1 nan t\n")


@needs_testdata
def test_run_results_test_rank_column_agrees_with_trec_eval_order():
    data = (TESTDATA / "results.test").read_bytes()
    run = F.parse_run(data, "results.test")
    assert run.tag == "STANDARD" and run.num_entries == 1500
    assert run.rankings == F.parse_run(data, order="rank").rankings


def _pytrec_scores(qrels_text: str, run_text: str) -> dict:
    qrel = pytrec_eval.parse_qrel(io.StringIO(qrels_text))
    run = pytrec_eval.parse_run(io.StringIO(run_text))
    measures = {"map", "P", "recip_rank", "ndcg", "ndcg_cut", "bpref", "Rprec"}
    return pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)


@needs_testdata
def test_run_tie_breaking_matches_trec_eval_on_results_comment_test():
    data = (TESTDATA / "results.comment.test").read_bytes()
    qrels = (TESTDATA / "qrels.comment.test").read_text()
    ours = F.parse_run(data, "results.comment.test")
    by_rank = F.parse_run(data, order="rank")
    assert ours.rankings != by_rank.rankings  # the rank column disagrees with trec_eval's order
    # Writing our order with strictly decreasing scores must score exactly like the original file.
    original = _pytrec_scores(qrels, data.decode())
    rewritten = _pytrec_scores(qrels, "".join(F.write_run(ours.rankings.items(), "comment.test")))
    assert rewritten == original
    # ... and trec_eval's own numbers (out.comment.test) are reproduced.
    expected = {}
    for row in (TESTDATA / "out.comment.test").read_text().splitlines():
        measure, qid, value = (c.strip() for c in row.split("\t"))
        expected[measure] = value
    for measure in ("map", "P_5", "P_10", "recip_rank", "bpref", "Rprec"):
        mean = sum(r[measure] for r in rewritten.values()) / len(rewritten)
        assert f"{mean:.4f}" == expected[measure], measure
    # Following the rank column instead gives different scores: the test has teeth.
    wrong = _pytrec_scores(qrels, "".join(F.write_run(by_rank.rankings.items(), "comment.test")))
    assert wrong != original


@needs_testdata
def test_run_with_junk_after_the_tag_is_rejected():
    data = (TESTDATA / "results.trunc").read_bytes()
    found = problems(F.parse_run, data)
    assert found and all(p.field in ("line", "file") for p in found)
    assert all("expected 6" in p.message for p in found if p.field == "line")


def test_parse_run_reads_500k_lines():
    """Size, not speed: the 500,000-line import is timed against psql \\copy in bench_exchange."""
    n_queries, per_query = 500, 1000
    rows = []
    for q in range(n_queries):
        for r in range(per_query):
            rows.append(
                f"q{q} Q0 doc{(q * 7919 + r * 104729) % 10_000_019}x{r} {r + 1} {((r * 37) % 1000) / 7:.6f} bm25\n"
            )
    run = F.parse_run(io.BytesIO("".join(rows).encode()))
    assert run.num_entries == n_queries * per_query
    assert len(run.rankings) == n_queries


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
        ("301\ta\tb", "line"),
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
# TREC writers


def test_write_qrels():
    out = list(F.write_qrels([("q1", "d1", 2), ("q1", "d2", 2.5), ("q2", "d#1", 3.0), ("q2", "d3", 0.1)]))
    assert out == ["q1 0 d1 2\n", "q1 0 d2 2.5\n", "q2 0 d#1 3\n", "q2 0 d3 0.1\n"]


def test_write_qrels_header_only_when_given():
    out = list(F.write_qrels([("q", "d", 1)], header="made by judgments\n\npool x"))
    assert out == ["# made by judgments\n", "#\n", "# pool x\n", "q 0 d 1\n"]
    assert list(F.write_qrels([("q", "d", 1)]))[0] == "q 0 d 1\n"
    assert F.parse_qrels("".join(out)) == [QrelRecord(4, "q", "d", 1)]


@pytest.mark.parametrize(
    "row",
    [
        ("q 1", "d", 1),
        ("q", "", 1),
        ("#q", "d", 1),
        ("q", "d", True),
        ("q", "d", "1"),
        ("q", "d", math.nan),
        ("q", "d\n", 1),
    ],
)
def test_write_qrels_rejects(row):
    with pytest.raises(ValueError):
        list(F.write_qrels([row]))


def test_write_run_format_and_strictly_decreasing_scores():
    out = list(F.write_run([("q1", ["a", "b", "c"]), ("q2", ["z"]), ("q3", [])], "mytag"))
    assert out == ["q1 Q0 a 1 3 mytag\n", "q1 Q0 b 2 2 mytag\n", "q1 Q0 c 3 1 mytag\n", "q2 Q0 z 1 1 mytag\n"]


@pytest.mark.parametrize(
    "rankings, tag",
    [
        ([("q", ["a", "a"])], "t"),
        ([("q", ["a"]), ("q", ["b"])], "t"),
        ([("q", ["a b"])], "t"),
        ([("q", ["a"])], "my tag"),
        ([("q", "abc")], "t"),
        ([("q", ["a"])], ""),
    ],
)
def test_write_run_rejects(rankings, tag):
    with pytest.raises(ValueError):
        list(F.write_run(rankings, tag))


def test_write_run_order_is_kept_by_trec_eval_even_against_docid_ties():
    # Reverse-alphabetical would be trec_eval's choice for equal scores: we write the opposite.
    rankings = {"q1": ["a", "b", "c", "d"], "q2": ["d9", "d10", "d1"]}
    text = "".join(F.write_run(rankings.items(), "t"))
    assert F.parse_run(text).rankings == rankings
    assert F.parse_run(text, order="rank").rankings == rankings
    qrels = "q1 0 a 1\nq1 0 b 0\nq2 0 d9 1\n"
    scores = _pytrec_scores(qrels, text)
    assert scores["q1"]["recip_rank"] == 1.0 and scores["q2"]["recip_rank"] == 1.0


def test_write_ranklib():
    out = list(
        F.write_ranklib([(3, 1, "d1", "star wars"), (0.5, 2, "d2", "multi\nline\ttext "), (1, 3, "d3", "")])
    )
    assert out == ["3 qid:1 # d1 star wars\n", "0.5 qid:2 # d2 multi line text\n", "1 qid:3 # d3\n"]
    for bad in [
        (1, -1, "d", "q"),
        (1, True, "d", "q"),
        (1, 1, "d d", "q"),
        (1, "1", "d", "q"),
        (math.inf, 1, "d", "q"),
    ]:
        with pytest.raises(ValueError):
            list(F.write_ranklib([bad]))


def test_write_trec_eval_q_format():
    out = list(
        F.write_trec_eval_q(
            [
                ("runid", "all", "STANDARD"),
                ("num_ret", "301", 500.0),
                ("num_q", "all", 3),
                ("map", "301", 0.03242534480374725),
                ("utility", "301", -358.0),
                ("ndcg_cut_10", "all", 1),
            ]
        )
    )
    assert out == [
        "runid                 \tall\tSTANDARD\n",
        "num_ret               \t301\t500\n",
        "num_q                 \tall\t3\n",
        "map                   \t301\t0.0324\n",
        "utility               \t301\t-358.0000\n",
        "ndcg_cut_10           \tall\t1\n",
    ]
    with pytest.raises(ValueError):
        list(F.write_trec_eval_q([("map", "q 1", 0.5)]))


@needs_testdata
def test_write_trec_eval_q_mirrors_trec_eval_output():
    qrels = (TESTDATA / "qrels.test").read_text()
    run = (TESTDATA / "results.test").read_text()
    results = pytrec_eval.RelevanceEvaluator(
        pytrec_eval.parse_qrel(io.StringIO(qrels)), pytrec_eval.supported_measures
    ).evaluate(pytrec_eval.parse_run(io.StringIO(run)))
    # gm_*: pytrec_eval gives per-query logs; relstring/runid are text; iprec_at_recall: the bundled
    # trec_eval predates 10.0's interpolation rounding fix, so a few values differ by design.
    skip = {"gm_map", "gm_bpref", "relstring", "runid", "num_q"}
    expected, rows = [], []
    for line in (TESTDATA / "out.test.aq").read_text().splitlines(keepends=True):
        measure, qid, _value = line.split("\t")
        measure = measure.rstrip()
        if measure.startswith("iprec_at_recall") or measure == "11pt_avg":
            continue
        if qid in results and measure in results[qid] and measure not in skip:
            expected.append(line)
            rows.append((measure, qid, results[qid][measure]))
    assert len(rows) > 200
    assert list(F.write_trec_eval_q(rows)) == expected
    # the header lines too
    head = (TESTDATA / "out.test").read_text().splitlines(keepends=True)
    assert list(
        F.write_trec_eval_q([("runid", "all", "STANDARD"), ("num_q", "all", 3.0), ("map", "all", 0.17852)])
    ) == [head[0], head[1], head[5]]


# ==================================================================================================
# Other tools read what we write


def test_exported_qrels_and_run_are_read_by_pytrec_eval_and_ir_measures():
    qrels_rows = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d#3", 4), ("q2", "ü-doc", 1)]
    rankings = [("q1", ["d2", "d1", "d9"]), ("q2", ["ü-doc", "d#3"])]
    qrels_text = "".join(F.write_qrels(qrels_rows))
    run_text = "".join(F.write_run(rankings, "sys1"))

    qrel = pytrec_eval.parse_qrel(io.StringIO(qrels_text))
    assert qrel == {"q1": {"d1": 2, "d2": 0}, "q2": {"d#3": 4, "ü-doc": 1}}
    run = pytrec_eval.parse_run(io.StringIO(run_text))
    assert {q: sorted(d, key=d.get, reverse=True) for q, d in run.items()} == dict(rankings)
    scores = pytrec_eval.RelevanceEvaluator(qrel, {"ndcg_cut.3", "recip_rank"}).evaluate(run)
    assert scores["q1"]["recip_rank"] == 0.5 and scores["q2"]["recip_rank"] == 1.0

    assert [tuple(q) for q in ir_measures.read_trec_qrels(qrels_text)] == [
        (q, d, g, "0") for q, d, g in qrels_rows
    ]
    scored = list(ir_measures.read_trec_run(run_text))
    assert [(s.query_id, s.doc_id) for s in scored] == [(q, d) for q, docs in rankings for d in docs]
    agg = ir_measures.calc_aggregate([ir_measures.RR], list(ir_measures.read_trec_qrels(qrels_text)), scored)
    assert agg[ir_measures.RR] == 0.75

    # and our own parsers read them back
    assert [(r.query_id, r.doc_id, r.grade) for r in F.parse_qrels(qrels_text)] == qrels_rows
    assert F.parse_run(run_text).rankings == dict(rankings)


# ==================================================================================================
# Property tests: round trips

ID_CHARS = st.characters(
    blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp"), blacklist_characters="\u200b\ufeff"
)
ids = st.text(ID_CHARS, min_size=1, max_size=12).filter(
    lambda s: not any(c.isspace() for c in s) and not s.startswith("#")
)
grades = st.integers(0, 4)
texts = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=0, max_size=30
)
PROPS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)


@PROPS
@given(st.dictionaries(st.tuples(ids, ids), grades, min_size=1, max_size=20))
def test_qrels_round_trip(judged):
    rows = [(q, d, g) for (q, d), g in judged.items()]
    text = "".join(F.write_qrels(rows))
    assert [(r.query_id, r.doc_id, r.grade) for r in F.parse_qrels(text.encode())] == rows
    assert pytrec_eval.parse_qrel(io.StringIO(text)) is not None
    assert len(list(ir_measures.read_trec_qrels(text))) == len(rows)


@PROPS
@given(st.dictionaries(ids, st.lists(ids, min_size=1, max_size=15, unique=True), min_size=1, max_size=5), ids)
def test_run_round_trip(rankings, tag):
    text = "".join(F.write_run(rankings.items(), tag))
    assert F.parse_run(text.encode()).rankings == rankings
    assert F.parse_run(text.encode(), order="rank").rankings == rankings
    assert F.parse_run(text.encode()).tag == tag
    run = pytrec_eval.parse_run(io.StringIO(text))
    assert {q: sorted(d, key=d.get, reverse=True) for q, d in run.items()} == rankings
    assert len(list(ir_measures.read_trec_run(text))) == sum(map(len, rankings.values()))


@PROPS
@given(st.lists(ids, min_size=1, max_size=30, unique=True), st.data())
def test_run_ties_follow_trec_eval_rule(docids, data):
    scores = data.draw(
        st.lists(st.sampled_from([0.0, 1.0, -2.5, 1e-300]), min_size=len(docids), max_size=len(docids))
    )
    text = "".join(f"q Q0 {d} {i + 1} {s!r} t\n" for i, (d, s) in enumerate(zip(docids, scores, strict=True)))
    got = F.parse_run(text.encode()).rankings["q"]
    expected = [
        d
        for s, d in sorted(
            zip(scores, docids, strict=True), key=lambda p: (p[0], p[1].encode()), reverse=True
        )
    ]
    assert got == expected


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


@PROPS
@given(st.text(max_size=40))
def test_parse_grade_map_raises_only_value_error(text):
    try:
        result = F.parse_grade_map(text)
    except ValueError:
        return
    assert all(isinstance(k, int) and (v is None or v in F.GRADES) for k, v in result.items())
