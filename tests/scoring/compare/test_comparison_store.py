"""Stored comparison figures (scoring.comparison_store): a stored result equals the direct computation, and
is not reused once either run's scores change."""

import numpy as np

from scoring import comparison
from scoring.models import StoredComparison
from scoring.stats import compare_many

from .conftest import insert_scores

METRICS = ("ndcg@5", "ndcg@10", "ap")


def _direct(result: comparison.PairComparison) -> list:
    columns = [result.metrics.index(row.metric) for row in result.rows]
    return compare_many(
        result.values_a[:, columns],
        result.values_b[:, columns],
        n_resamples=result.n_resamples,
        n_bootstrap=result.n_bootstrap,
    )


def _figures(result: comparison.PairComparison) -> list:
    return [row.result for row in result.rows]


def test_a_stored_comparison_equals_the_direct_computation(scored):
    first = comparison.compare_pair(scored.bm25, scored.dense, "exp", metrics=METRICS)
    assert StoredComparison.objects.count() == 1
    assert _figures(first) == _direct(first)
    stored = StoredComparison.objects.get()
    stored.figures = [0.5] * len(stored.figures)  # proves the next read comes from the row
    stored.save()
    again = comparison.compare_pair(scored.bm25, scored.dense, "exp", metrics=METRICS)
    assert again.headline.result.mean_a == 0.5
    stored.figures = comparison.comparison_store.flatten(_direct(first))
    stored.save()
    again = comparison.compare_pair(scored.bm25, scored.dense, "exp", metrics=METRICS)
    assert _figures(again) == _direct(again) == _figures(first)
    assert np.array_equal(again.values_b, first.values_b)


def test_a_stored_comparison_is_not_reused_after_either_run_changes(scored):
    pks = [q.pk for q in scored.queries]
    for changed in (scored.bm25_run, scored.dense_run):
        before = comparison.compare_pair(scored.bm25, scored.dense, "exp", metrics=METRICS)
        insert_scores(changed, pks[:10], "exp", np.random.default_rng(changed.pk), effect=0.3)  # a rescore
        after = comparison.compare_pair(scored.bm25, scored.dense, "exp", metrics=METRICS)
        assert _figures(after) == _direct(after) != _figures(before)
    assert StoredComparison.objects.count() == 1  # one row per (runs, flavour, settings), replaced


def test_each_flavour_metric_set_and_seed_is_stored_apart(scored):
    comparison.compare_pair(scored.bm25, scored.dense, "exp", metrics=METRICS)
    comparison.compare_pair(scored.bm25, scored.dense, "trec", metrics=METRICS)
    comparison.compare_pair(scored.bm25, scored.dense, "exp", metrics=("ndcg@10",))
    comparison.compare_pair(scored.bm25, scored.dense, "exp", metrics=METRICS, seed=None)  # not stored
    comparison.compare_pair(scored.bm25, scored.hybrid, "exp", metrics=METRICS, stored=False)  # not stored
    assert StoredComparison.objects.count() == 3


def test_stored_comparisons_go_with_runs_deleted_in_sql(scored):
    """delete_pool_in_bulk and the benchmarks delete runs in SQL, not through the ORM's cascade."""
    from django.db import connection

    comparison.compare_pair(scored.bm25, scored.dense, "exp", metrics=METRICS)
    assert StoredComparison.objects.count() == 1
    run = scored.bm25.runs.order_by("-pk").first()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM judgments_ranking WHERE run_id = %s", [run.pk])
        cursor.execute("DELETE FROM judgments_run WHERE id = %s", [run.pk])
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the foreign keys are checked now, not at the end
    assert StoredComparison.objects.count() == 0
