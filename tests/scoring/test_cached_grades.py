"""The combined grades scoring keeps (scoring.models.PoolGrades, QueryGrades): a new run scored from
them scores what it scores from the judgments, a changed grade refreshes its query's row, and a new
combine rule or grade source, or any changed judgment, leaves them unused until read again."""

import numpy as np
import pytest
from django.db import connection

from judgments import pool_keys
from judgments import services as judgment_services
from judgments.models import CombineRule, Judgment, Pair, SearchConfiguration
from scoring import grades, services
from scoring.models import CellScore, PoolGrades, QueryGrades

RANKINGS = {"q1": ["d1", "d2", "d3"], "q2": ["d3", "d1", "d2"]}


@pytest.fixture
def graded(pool, rater, other_rater):
    """Grades by two raters (so the combined grade is a mean), and every pair of the pool."""
    queries = pool_keys.ensure_queries(pool, ["q1", "q2"])
    docs = pool_keys.ensure_documents(pool, ["d1", "d2", "d3"])
    pairs = pool_keys.ensure_pairs(pool, [(queries[q], docs[d]) for q in queries for d in docs])
    for n, (_, pk) in enumerate(sorted(pairs.items())):
        pair = Pair.objects.get(pk=pk)
        judgment_services.record_judgment(pair, rater, grade=n % 5)
        if n % 2:
            judgment_services.record_judgment(pair, other_rater, grade=(n + 2) % 5)
    return pool


def _scores(run) -> list[tuple]:
    return sorted(
        CellScore.objects.filter(run=run).values_list("query_id", "exp_ndcg_10", "trec_ndcg_3", "ap")
    )


def _new_run(pool, team, name):
    configuration = SearchConfiguration.objects.create(pool=pool, team=team, name=name)
    return judgment_services.record_run(configuration, RANKINGS, source="api")


def _read(pool):
    with connection.cursor() as cursor:
        return grades.cached_grades(cursor, pool.pk, pool.combine_rule, pool.grade_source)


def _assert_same(cached, fresh) -> None:
    assert np.array_equal(np.unique(cached.query), np.unique(fresh.query))
    order_c, order_f = np.lexsort((cached.doc, cached.query)), np.lexsort((fresh.doc, fresh.query))
    assert np.array_equal(cached.query[order_c], fresh.query[order_f])
    assert np.array_equal(cached.doc[order_c], fresh.doc[order_f])
    assert np.allclose(cached.grade[order_c], fresh.grade[order_f])


def test_a_new_run_scored_from_the_cache_scores_what_the_judgments_give(graded, team):
    first = _new_run(graded, team, "first")
    services.rescore_run(first)  # no cache yet: the judgments are read, and kept
    assert PoolGrades.objects.filter(pool=graded).exists()
    assert QueryGrades.objects.filter(pool=graded).count() == 2
    fresh = grades.pool_grades(graded)
    _assert_same(_read(graded), fresh)
    assert (fresh.grade % 1 != 0).any()  # means of two raters: fractional grades survive the cache

    second = _new_run(graded, team, "second")
    services.rescore_run(second)  # from the cache
    services.rescore_pool(graded)  # from the judgments: nothing to change
    assert _scores(second) == _scores(first)


def test_a_changed_grade_refreshes_its_query_and_the_next_run_sees_it(graded, team, rater):
    first = _new_run(graded, team, "first")
    services.rescore_run(first)
    before = _scores(first)
    pair = Pair.objects.get(pool=graded, query__external_id="q2", document__external_id="d3")
    judgment_services.record_judgment(pair, rater, grade=4, notify=False)
    services.rescore_queries(graded, [pair.query_id])  # what the grades_changed receiver does
    row = QueryGrades.objects.get(pool=graded, query_id=pair.query_id)
    assert dict(zip(row.doc_ids, row.grades, strict=True))[pair.document_id] == (4 + 2) / 2
    assert _read(graded) is None  # a judgment changed since the whole pool was read: read it again
    run = _new_run(graded, team, "after")
    services.rescore_run(run)
    expected = _new_run(graded, team, "fresh")
    PoolGrades.objects.filter(pool=graded).delete()  # no cache: from the judgments
    services.rescore_run(expected)
    assert _scores(run) == _scores(expected)
    assert _scores(run) != before


def test_a_new_combine_rule_leaves_the_cache_unused(graded, team):
    services.rescore_run(_new_run(graded, team, "first"))
    assert _read(graded) is not None
    graded.combine_rule = CombineRule.MAX
    assert _read(graded) is None
    graded.combine_rule = CombineRule.MEAN
    graded.grade_source = "all"
    assert _read(graded) is None


def test_deleting_a_query_deletes_its_cached_grades(graded, team):
    services.rescore_run(_new_run(graded, team, "first"))
    with connection.cursor() as cursor:  # by SQL, as delete_pool_in_bulk: the trigger, not Django's cascade
        q1 = "(SELECT id FROM judgments_query WHERE pool_id = %s AND external_id = 'q1')"
        pairs = f"(SELECT id FROM judgments_pair WHERE query_id = {q1})"
        for sql in (
            f"DELETE FROM judgments_judgmentchange WHERE pair_id IN {pairs}",
            f"DELETE FROM judgments_judgment WHERE pair_id IN {pairs}",
            f"DELETE FROM judgments_pair WHERE query_id = {q1}",
            f"DELETE FROM judgments_ranking WHERE query_id = {q1}",
            f"DELETE FROM judgments_query WHERE id = {q1}",
        ):
            cursor.execute(sql, [graded.pk])
    assert QueryGrades.objects.filter(pool=graded).count() == 1


def test_a_judgment_changed_without_the_signal_is_seen_by_the_next_run(graded, team, rater):
    first = _new_run(graded, team, "first")
    services.rescore_run(first)
    pair = Pair.objects.get(pool=graded, query__external_id="q1", document__external_id="d1")
    Judgment.objects.filter(pair=pair).delete()  # no signal; the history logs it
    assert _read(graded) is None
    run = _new_run(graded, team, "after")
    services.rescore_run(run)  # reads the judgments, and keeps them again
    _assert_same(_read(graded), grades.pool_grades(graded))


def test_runs_of_a_pool_with_no_grades_score_cleanly(pool, team):
    """A new campaign: the first run stores an empty cache, and the second run reads it back (an empty
    COPY stream once gave float element counts, and np.repeat raised TypeError)."""
    first = _new_run(pool, team, "first")
    services.rescore_run(first)
    assert PoolGrades.objects.filter(pool=pool).exists()
    assert not QueryGrades.objects.filter(pool=pool).exists()
    cached = _read(pool)
    assert cached is not None and len(cached) == 0
    assert cached.query.dtype == np.int64
    second = _new_run(pool, team, "second")
    services.rescore_run(second)  # from the empty cache
    assert _scores(second) == _scores(first)
    assert {score[1] for score in _scores(second)} <= {0.0, None}
