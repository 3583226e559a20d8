"""The database itself enforces the rules: no code path can store a grade of 5, a second judgment by
the same rater for a pair, or a document twice in one ranking."""

import pytest
from django.db import IntegrityError, connection, transaction

from judgments import services
from judgments.models import Judgment, JudgmentChange, Pair, Ranking


@pytest.fixture
def pair(pool):
    query = pool.queries.get(external_id="q1")
    document = pool.documents.get(external_id="d1")
    return Pair.objects.create(pool=pool, query=query, document=document)


def test_database_rejects_grade_of_5(pair, rater):
    with pytest.raises(IntegrityError, match="grade_between_0_and_4"), transaction.atomic():
        Judgment.objects.create(pair=pair, rater=rater, grade=5)
    assert not Judgment.objects.exists()


def test_database_rejects_grade_of_5_even_through_raw_sql(pair, rater):
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO judgments_judgment (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note, created_at, updated_at)"
            " VALUES (%s, %s, 5, false, '', '', now(), now())",
            [pair.pk, rater.pk],
        )


def test_database_rejects_second_judgment_by_same_rater_for_pair(pair, rater):
    Judgment.objects.create(pair=pair, rater=rater, grade=2)
    with pytest.raises(IntegrityError, match="one_judgment_per_rater_and_pair"), transaction.atomic():
        Judgment.objects.create(pair=pair, rater=rater, grade=3)
    assert Judgment.objects.get().grade == 2


def test_two_raters_may_grade_the_same_pair(pair, rater, other_rater):
    Judgment.objects.create(pair=pair, rater=rater, grade=2)
    Judgment.objects.create(pair=pair, rater=other_rater, grade=3)
    assert Judgment.objects.filter(pair=pair).count() == 2


def test_cant_judge_needs_a_reason_and_no_grade(pair, rater):
    with pytest.raises(IntegrityError), transaction.atomic():
        Judgment.objects.create(pair=pair, rater=rater, cant_judge=True, cant_judge_reason="")
    with pytest.raises(IntegrityError), transaction.atomic():
        Judgment.objects.create(pair=pair, rater=rater, grade=2, cant_judge=True, cant_judge_reason="x")
    Judgment.objects.create(pair=pair, rater=rater, cant_judge=True, cant_judge_reason="page is in Finnish")


def test_database_rejects_duplicate_document_within_a_ranking(run, pool):
    query = pool.queries.get(external_id="q1")
    d1 = pool.documents.get(external_id="d1")
    with pytest.raises(IntegrityError, match="ranking_no_duplicate_documents"), transaction.atomic():
        Ranking.objects.filter(run=run, query=query).update(doc_ids=[d1.pk, d1.pk])
    assert len(Ranking.objects.get(run=run, query=query).doc_ids) == 3


def test_record_run_refuses_duplicate_document_and_writes_nothing(configuration):
    with pytest.raises(services.RunError) as error:
        services.record_run(configuration, {"q1": ["d1", "d2"], "q2": ["d3", "d3"]}, source="api")
    assert error.value.problems == [("q2", "document 'd3' appears twice (again at rank 2)")]
    assert not configuration.runs.exists()
    assert not Ranking.objects.exists()


def test_ids_with_whitespace_are_rejected_by_the_database(pool):
    from judgments.models import Query

    with pytest.raises(IntegrityError, match="query_id_no_whitespace"), transaction.atomic():
        Query.objects.create(pool=pool, external_id="q 1")


def test_judgment_change_leaves_history(pair, rater, site_admin):
    services.record_judgment(pair, rater, grade=1)
    services.record_judgment(pair, rater, grade=3, note="read it again")
    services.record_judgment(pair, rater, grade=3, note="read it again", actor=rater)  # no change, no row
    judgment = Judgment.objects.get()
    with transaction.atomic():
        services.set_actor(site_admin)
        Judgment.objects.filter(pk=judgment.pk).update(grade=4)  # even a bulk update is traced
    changes = list(
        JudgmentChange.objects.filter(pair=pair)
        .order_by("id")
        .values_list("action", "old_grade", "new_grade", "changed_by")
    )
    assert changes == [
        ("created", None, 1, rater.pk),
        ("changed", 1, 3, rater.pk),
        ("changed", 3, 4, site_admin.pk),
    ]


def test_deleting_a_judgment_is_traced(pair, rater):
    judgment = services.record_judgment(pair, rater, grade=2)
    judgment.delete()
    assert JudgmentChange.objects.filter(pair=pair).latest("id").action == "deleted"


def test_deleting_a_pool_deletes_its_history(pool, pair, rater):
    services.record_judgment(pair, rater, grade=2)
    pool.delete()
    assert not JudgmentChange.objects.exists()
