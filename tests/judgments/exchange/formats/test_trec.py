"""Tests of judgments.exchange.formats.trec, the readers: grade maps, qrels and runs (trec_eval's
order of ties included). Pure Python, no database."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgments.exchange import formats as F
from judgments.exchange.formats import (
    MAX_PROBLEMS,
    FormatError,
    QrelRecord,
)
from tests.judgments.exchange.formats.helpers import (
    PROPS,
    TESTDATA,
    _pytrec_scores,
    ids,
    lines,
    needs_testdata,
    problems,
    where,
)

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
# Property tests: round trips


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
@given(st.text(max_size=40))
def test_parse_grade_map_raises_only_value_error(text):
    try:
        result = F.parse_grade_map(text)
    except ValueError:
        return
    assert all(isinstance(k, int) and (v is None or v in F.GRADES) for k, v in result.items())
