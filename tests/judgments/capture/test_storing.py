"""RunWriter: a captured run staged as it arrives, then stored in one transaction (judgments.run_staging)."""

import pytest
from django.db import connection

from judgments import run_staging as storing
from judgments.models import Document, Pair, Query, Ranking, Run
from judgments.services import RunError, ranking_external_ids, record_judgment
from scoring.models import QueryScore


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(storing, "BATCH", 2)  # several flushes for a handful of rankings


def _query_pks(pool, *names):
    for name in names:
        Query.objects.get_or_create(pool=pool, external_id=name, defaults={"text": name})
    return dict(Query.objects.filter(pool=pool).values_list("external_id", "pk"))


def _staging_tables():
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relname LIKE 'jl_capture_stage_%%'")
        return [row[0] for row in cursor.fetchall()]


def test_a_staged_run_is_stored_as_given_with_unknown_documents_created(configuration, small_batches):
    pool = configuration.pool
    rankings = {
        "q1": ["d1", "new-a", "d2"],
        "q2": ["new-b", "d3"],
        "q3": ["d2", "d1"],
        "q4": ["new-a", "new-c", "new-b", "d1"],
        "q5": ["d3"],
    }
    writer = storing.RunWriter(configuration, _query_pks(pool, "q3", "q4", "q5"), checked=True)
    known = dict(Document.objects.filter(pool=pool).values_list("external_id", "pk"))
    for qid, docs in rankings.items():
        writer.add(qid, docs)
    assert writer.staged == 4 and _staging_tables() == [writer.table]
    # Staged, not stored: no run, no ranking, no new document yet.
    assert not Run.objects.exists() and not Ranking.objects.exists()
    assert not Document.objects.filter(external_id__startswith="new-").exists()

    run = writer.store(source=Run.Source.ENDPOINT, tag="bm25-v1")
    writer.close()
    assert ranking_external_ids(run) == rankings
    assert (
        dict(Document.objects.filter(pool=pool, external_id__in=known).values_list("external_id", "pk"))
        == known
    )
    created = Document.objects.filter(pool=pool, external_id__startswith="new-")
    assert sorted(created.values_list("external_id", flat=True)) == ["new-a", "new-b", "new-c"]
    assert all(doc.title == "" for doc in created)
    assert _staging_tables() == []


def test_the_stored_run_is_scored_after_its_commit(configuration, rater, django_capture_on_commit_callbacks):
    pool = configuration.pool
    pair = Pair.objects.create(
        pool=pool, query=pool.queries.get(external_id="q1"), document=pool.documents.get(external_id="d2")
    )
    record_judgment(pair, rater, grade=3)
    writer = storing.RunWriter(configuration, _query_pks(pool), checked=True)
    writer.add("q1", ["d2", "d1"])
    with django_capture_on_commit_callbacks(execute=True):
        run = writer.store(source=Run.Source.ENDPOINT)
    writer.close()
    scores = QueryScore.objects.filter(run=run, flavor="exp")
    assert [(s.query.external_id, s.has_ranking, s.ndcg_10) for s in scores] == [("q1", True, 1.0)]


def test_a_bad_ranking_stores_nothing(configuration, small_batches):
    writer = storing.RunWriter(configuration, _query_pks(configuration.pool))
    writer.add("q1", ["d1", "d2"])
    writer.add("q2", ["d3", "d3"])  # unchecked ids: the import's rules apply
    writer.add("q1 ", ["d1"])
    with pytest.raises(RunError) as raised:
        writer.store(source=Run.Source.ENDPOINT)
    writer.close()
    assert ("q2", "document 'd3' appears twice (again at rank 2)") in raised.value.problems
    assert ("q1 ", "unknown query") in raised.value.problems
    assert not Run.objects.exists() and not Ranking.objects.exists() and _staging_tables() == []


def test_nothing_staged_is_no_run(configuration):
    writer = storing.RunWriter(configuration, _query_pks(configuration.pool), checked=True)
    with pytest.raises(RunError, match="no ranking"):
        writer.store(source=Run.Source.ENDPOINT)
    writer.close()
    assert not Run.objects.exists() and _staging_tables() == []
