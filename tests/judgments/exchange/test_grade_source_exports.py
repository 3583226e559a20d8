"""Combined-grade exports follow the pool's grade source (humans / fill / all), agree with scoring for
every rule and source, and name the source: file names, the export page's note, the RankLib header; the
per-rater and JSON exports keep the model judges' judgments like anyone's."""

import pytest

from judgments import services
from judgments.exchange.exports.catalog import POOL_EXPORTS
from judgments.exchange.exports.files import judgments_csv_lines, judgments_jsonl_lines, rater_csv_lines
from judgments.exchange.exports.grades import (
    combined_grades,
    combined_note,
    qrels_chunks,
    qrels_filename,
    ranklib_lines,
)
from judgments.judges.services import create_or_update_judge
from judgments.models import CombineRule, Document, Pair, Query
from tests.scoring.test_grade_source import SOURCES, mixed_pool  # noqa: F401 (fixture)


def pair(pool, qid, docid):
    return Pair.objects.get_or_create(
        pool=pool,
        query=Query.objects.get(pool=pool, external_id=qid),
        document=Document.objects.get(pool=pool, external_id=docid),
    )[0]


@pytest.fixture
def small(pool, rater):
    """q1/d1: human 1, model 4; q1/d2: model 3 only; q2/d3: human 2."""
    model = create_or_update_judge(pool, "gpt-judge", base_url="http://127.0.0.1:9/v1", model="m")[0].user
    services.record_judgment(pair(pool, "q1", "d1"), rater, grade=1)
    services.record_judgment(pair(pool, "q1", "d1"), model, grade=4, note="looks perfect")
    services.record_judgment(pair(pool, "q1", "d2"), model, grade=3)
    services.record_judgment(pair(pool, "q2", "d3"), rater, grade=2)
    return pool


def text(chunks) -> str:
    return "".join(c.decode() if isinstance(c, bytes) else c for c in chunks)


@pytest.mark.parametrize(
    ("source", "qrels", "filename"),
    [
        ("humans", ["q1 0 d1 1", "q2 0 d3 2"], "robust.mean.qrels"),
        ("fill", ["q1 0 d1 1", "q1 0 d2 3", "q2 0 d3 2"], "robust.mean.fill.qrels"),
        ("all", ["q1 0 d1 2.5", "q1 0 d2 3", "q2 0 d3 2"], "robust.mean.all-exact.qrels"),
    ],
)
def test_qrels_follow_and_name_the_grade_source(small, source, qrels, filename):
    small.grade_source = source
    small.save()
    rounding = "exact" if source == "all" else "round"
    assert sorted(text(qrels_chunks(small, rounding=rounding)).splitlines()) == qrels
    assert qrels_filename(small, rounding) == filename
    note = combined_note(small, rounding)
    assert f"grades from {source} (" in note


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("rule", list(CombineRule))
def test_combined_grades_agree_with_scoring_for_every_rule_and_source(mixed_pool, rule, source):  # noqa: F811
    from scoring.grades import pool_grades

    pool, _ = mixed_pool
    pool.combine_rule, pool.grade_source = rule, source
    pool.save()
    ours = combined_grades(pool)
    grades = pool_grades(pool)
    query_ids = dict(Query.objects.values_list("pk", "external_id"))
    doc_ids = dict(Document.objects.values_list("pk", "external_id"))
    theirs = {
        (query_ids[q], doc_ids[d]): g for q, d, g in zip(grades.query, grades.doc, grades.grade, strict=True)
    }
    assert ours == pytest.approx(theirs)
    assert len(ours) > 30


def test_ranklib_and_quepid_name_the_source(small):
    small.grade_source = "fill"
    small.save()
    header = text(ranklib_lines(small)).splitlines()[0]
    assert header.startswith("# Combined grades of pool robust: rule mean")
    assert "grades from fill (Humans; a model judge fills pairs no human graded)" in header
    assert POOL_EXPORTS["judgments-csv"].filename(small) == "robust.mean.fill.ratings.csv"
    assert POOL_EXPORTS["ranklib"].filename(small) == "robust.mean.fill.ranklib.txt"
    assert text(judgments_csv_lines(small)).splitlines()[1:] == [
        "query q1,d1,1",
        "query q1,d2,3",
        "query q2,d3,2",
    ]


def test_per_rater_and_jsonl_exports_keep_the_judge_like_any_rater(small):
    assert text(rater_csv_lines(small)).splitlines() == [
        "query_id,doc_id,gpt-judge,rita_rater",
        "q1,d1,4,1",
        "q1,d2,3,",
        "q2,d3,,2",
    ]
    assert '"rater": "gpt-judge"' in text(judgments_jsonl_lines(small))
    assert '"note": "looks perfect"' in text(judgments_jsonl_lines(small))


def test_the_export_page_names_the_source(client, site_admin, small):
    small.grade_source = "all"
    small.save()
    client.force_login(site_admin)
    page = client.get("/pools/robust/export/").content.decode()
    assert "grades: all" in page and "robust.mean.all.qrels" in page
    assert "grades from all (Everyone, model judges included)" in page
    response = client.get("/pools/robust/export/qrels/")
    assert response["Content-Disposition"] == 'attachment; filename="robust.mean.all.qrels"'
