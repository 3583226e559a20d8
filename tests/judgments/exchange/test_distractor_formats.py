"""The distractor grade (-1) through the files: TREC qrels carry it as a negative grade, the per-rater CSV
and JSON lines carry it as -1; Quepid's CSV and RRE cannot (their scales start at 0): importing a -1 is
refused, exporting writes a distractor as 0. A pool without the distractor grade refuses a -1 in any file,
naming the line, and stores nothing."""

import io

import pytest

from judgments import services
from judgments.exchange import formats
from judgments.exchange.exports.files import (
    judgments_jsonl_lines,
    judgments_lines,
    quepid_csv_lines,
    rater_csv_lines,
    rre_lines,
)
from judgments.exchange.exports.grades import qrels_chunks
from judgments.exchange.formats import FormatError
from judgments.exchange.imports.judgments import import_judgments
from judgments.exchange.imports.trec import import_qrels
from judgments.models import Judgment, Pair, Pool

QRELS = "q1 0 d1 2\nq1 0 d2 -1\nq2 0 d1 0\nq2 0 d3 -1\n"


def _pool(name: str, enabled: bool = True) -> Pool:
    return Pool.objects.create(name=name, distractors_enabled=enabled)


def _text(chunks) -> str:
    return "".join(chunks)


def _grades(pool: Pool) -> set[tuple[str, str, str, int | None]]:
    return set(
        Judgment.objects.in_pool(pool).values_list(
            "pair__query__external_id", "pair__document__external_id", "rater__username", "grade"
        )
    )


def test_parse_qrels_reads_minus_1_and_still_refuses_other_negative_grades():
    records = formats.parse_qrels(io.StringIO(QRELS))
    assert [r.grade for r in records] == [2, -1, 0, -1]
    with pytest.raises(FormatError) as refused:
        formats.parse_qrels(io.StringIO("q1 0 d1 -2\n"))
    assert "line 1" in str(refused.value) or refused.value.problems[0].line == 1
    assert formats.parse_qrels(io.StringIO("q1 0 d1 -2\n"), grade_map={-2: -1})[0].grade == -1


@pytest.mark.parametrize(
    "parse, text, message",
    [
        (formats.parse_qrels, "q1 0 d1 7\n", "grade must be an integer 0-4 or -1 (a distractor), got '7'"),
        (
            formats.parse_rater_csv,
            "query_id,doc_id,r1\nq1,d1,7\n",
            "grade of r1 must be 0-4 or -1 (a distractor), empty or X, got '7'",
        ),
        (
            formats.parse_judgments_jsonl,
            '{"query_id": "q1", "doc_id": "d1", "rater": "r1", "grade": 7}\n',
            "grade must be an integer 0-4 or -1 (a distractor), or null, got '7'",
        ),
    ],
)
def test_the_parsers_that_read_minus_1_say_so_when_they_refuse_a_grade(parse, text, message):
    with pytest.raises(FormatError) as refused:
        parse(io.StringIO(text))
    assert any(problem.message.startswith(message) for problem in refused.value.problems)


def test_qrels_round_trip_keeps_minus_1_as_a_negative_grade(db):
    source = _pool("source")
    import_qrels(source, io.StringIO(QRELS), name="robust.qrels")
    assert Judgment.objects.in_pool(source).filter(grade=-1).count() == 2
    exported = _text(qrels_chunks(source))
    assert sorted(exported.splitlines()) == sorted(QRELS.splitlines())
    copy = _pool("copy")
    import_qrels(copy, io.StringIO(exported), name="source.mean.qrels")
    assert {(q, d, g) for q, d, _, g in _grades(copy)} == {(q, d, g) for q, d, _, g in _grades(source)}


def test_a_pool_without_the_grade_refuses_a_qrels_minus_1_naming_the_lines_and_stores_nothing(db):
    plain = _pool("plain", enabled=False)
    with pytest.raises(FormatError) as refused:
        import_qrels(plain, io.StringIO(QRELS), name="robust.qrels")
    problems = refused.value.problems
    assert [p.line for p in problems] == [2, 4]
    assert "Grade -1 (distractor) is not enabled for pool plain" in problems[0].message
    assert "--map-grades=-1:0" in problems[0].message
    assert not Judgment.objects.exists() and not Pair.objects.exists()
    import_qrels(plain, io.StringIO(QRELS), name="robust.qrels", grade_map="-1:0")  # mapped: accepted
    assert sorted(Judgment.objects.values_list("grade", flat=True)) == [0, 0, 0, 2]


def test_per_rater_csv_and_json_lines_round_trip_minus_1_final_grades_included(
    db, rater, other_rater, site_admin
):
    source = _pool("source")
    import_qrels(source, io.StringIO(QRELS), name="robust.qrels", rater=rater)
    pair = Pair.objects.get(pool=source, query__external_id="q1", document__external_id="d1")
    services.record_judgment(pair, other_rater, grade=-1)
    services.set_final_grade(pair, -1, site_admin)

    rater_csv = _text(rater_csv_lines(source))
    assert "q1,d1,-1,2" in rater_csv.replace("\r", "")
    copy = _pool("csv-copy")
    import_judgments(copy, io.StringIO(rater_csv), format="rater-csv", name="source.csv")
    assert _grades(copy) == _grades(source)

    jsonl = _text(judgments_jsonl_lines(source))
    assert '"grade": -1' in jsonl
    copy = _pool("jsonl-copy")
    import_judgments(copy, io.StringIO(jsonl), format="jsonl", name="source.jsonl")
    assert _grades(copy) == _grades(source)
    assert Pair.objects.get(pool=copy, query__external_id="q1", document__external_id="d1").final_grade == -1

    plain = _pool("plain", enabled=False)
    for fmt, text in (("rater-csv", rater_csv), ("jsonl", jsonl)):
        with pytest.raises(FormatError) as refused:
            import_judgments(plain, io.StringIO(text), format=fmt, name=f"source.{fmt}")
        assert all("Grade -1 (distractor) is not enabled" in p.message for p in refused.value.problems)
    assert not Judgment.objects.in_pool(plain).exists()


def test_quepid_csv_refuses_minus_1_and_quepid_and_rre_exports_write_a_distractor_as_0(db, rater):
    pool = _pool("robust")
    with pytest.raises(FormatError) as refused:
        import_judgments(pool, io.StringIO("query,docid,rating\nq1,d1,-1\n"), format="csv", name="q.csv")
    assert "has no distractor grade" in refused.value.problems[0].message
    import_qrels(pool, io.StringIO(QRELS), name="robust.qrels", rater=rater)
    quepid = _text(judgments_lines(pool, "csv", query_column="id")).replace("\r", "")
    assert "q1,d2,0\n" in quepid and "-1" not in quepid
    assert "-1" not in _text(quepid_csv_lines(pool))
    rre = _text(rre_lines(pool, keep_zero=True))
    assert '"d2"' in rre and "-1" not in rre


def test_a_negative_combined_grade_is_exported_as_a_distractor_not_rounded_to_0(db):
    """Scoring counts a combined grade below 0 as a distractor; the rounded qrels say the same (-1), so
    trec_eval on the export agrees with the stored scores. A mean of -1 and 0 is -0.5: -1, not 0."""
    from django.contrib.auth.models import User

    pool = _pool("mixed")
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")
    import_qrels(pool, io.StringIO("q1 0 d1 -1\nq1 0 d2 -1\n"), name="a.qrels", rater=ann)
    import_qrels(pool, io.StringIO("q1 0 d1 0\nq1 0 d2 2\n"), name="b.qrels", rater=bob)
    lines = sorted(_text(qrels_chunks(pool)).splitlines())
    assert lines == ["q1 0 d1 -1", "q1 0 d2 1"]  # -0.5 stays a distractor; 0.5 rounds half up to 1
    exact = sorted(_text(qrels_chunks(pool, rounding="exact")).splitlines())
    assert exact == ["q1 0 d1 -0.5", "q1 0 d2 0.5"]
