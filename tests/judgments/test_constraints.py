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
    with pytest.raises(IntegrityError, match="grade_between_minus_1_and_4"), transaction.atomic():
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


# --- The no-duplicate check in C (migration 0003) --------------------------------------------------

ARRAYS = [
    ("{1,2,3}", True),
    ("{3,2,1,12,21}", True),
    ("{7}", True),
    ("{}", True),  # an empty ranking is refused by ranking_not_empty, not by this check
    ("{1,2,2,3}", False),
    ("{5,1,5}", False),
    ("{2147483647,1,2147483647}", False),
    ("{-4,4}", True),
]


def _has_no_duplicates(function: str, array: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s::bigint[])", [array])
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_the_check_runs_on_intarray_in_its_own_schema():
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'jl_array_has_no_duplicates'")
        (body,) = cursor.fetchone()
        cursor.execute("SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'intarray'")
        (schema,) = cursor.fetchone()
        # int4[]'s own operators stay PostgreSQL's: intarray's are not on the search path.
        cursor.execute("SELECT current_schemas(true)")
        (path,) = cursor.fetchone()
    assert "jl_intarray.uniq(jl_intarray.sort(" in body
    assert schema == "jl_intarray" and "jl_intarray" not in path


@pytest.mark.django_db
@pytest.mark.parametrize(("array", "expected"), ARRAYS)
def test_c_and_sql_bodies_of_the_check_agree(array, expected):
    """Both bodies of migration 0003 (intarray, and the SQL fallback for servers without it) give the
    same answers."""
    import importlib

    migration = importlib.import_module("judgments.migrations.0003_ranking_check_in_c")
    with connection.cursor() as cursor:
        for name, body in (("c", migration.C_BODY), ("sql", migration.SQL_BODY)):
            sql = body.replace("{schema}", "jl_intarray").replace(
                "FUNCTION jl_array_has_no_duplicates", f"FUNCTION pg_temp.jl_check_{name}"
            )
            cursor.execute(sql)
    assert _has_no_duplicates("pg_temp.jl_check_c", array) is expected
    assert _has_no_duplicates("pg_temp.jl_check_sql", array) is expected
    assert _has_no_duplicates("jl_array_has_no_duplicates", array) is expected


def test_database_rejects_ranking_with_null_document(run, pool):
    """intarray refuses the array ("must not contain nulls"); the SQL body's count(DISTINCT) skips the
    null, so the check fails."""
    from django.db import DataError

    query = pool.queries.get(external_id="q1")
    with pytest.raises((IntegrityError, DataError)), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE judgments_ranking SET doc_ids = ARRAY[%s, NULL]::bigint[] WHERE run_id = %s AND query_id = %s",
            [pool.documents.get(external_id="d1").pk, run.pk, query.pk],
        )
    assert None not in Ranking.objects.get(run=run, query=query).doc_ids


def test_document_keys_stay_below_2_31(pool):
    from judgments.models import Document

    with pytest.raises(IntegrityError, match="document_key_fits_int4"), transaction.atomic():
        Document.objects.create(pool=pool, external_id="far-away", id=2**31)
    Document.objects.create(pool=pool, external_id="last-one", id=2**31 - 1)


@pytest.mark.django_db
def test_without_intarray_the_migration_keeps_the_sql_body():
    """A server where this role may not create the extension: migration 0003 leaves the SQL body and
    the transaction usable (everything here is rolled back with the test)."""
    import importlib
    from types import SimpleNamespace

    migration = importlib.import_module("judgments.migrations.0003_ranking_check_in_c")
    with connection.cursor() as cursor:
        cursor.execute(migration.SQL_BODY)
        cursor.execute("DROP EXTENSION intarray")
        cursor.execute("CREATE ROLE jl_test_no_create NOLOGIN")
        cursor.execute("GRANT USAGE, CREATE ON SCHEMA public TO jl_test_no_create")
        cursor.execute("SET LOCAL ROLE jl_test_no_create")
        assert migration.intarray_schema(cursor) is None  # CREATE SCHEMA refused, rolled back
        migration.use_intarray(None, SimpleNamespace(connection=connection))
        cursor.execute("RESET ROLE")
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = 'jl_array_has_no_duplicates'")
        assert "count(DISTINCT x)" in cursor.fetchone()[0]
    assert _has_no_duplicates("jl_array_has_no_duplicates", "{1,2,2}") is False
    assert _has_no_duplicates("jl_array_has_no_duplicates", "{1,2,3}") is True
