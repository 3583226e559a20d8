"""Building the judging queue: depth-k pooling, one configuration's unjudged top k, pairs by hand or file."""

import pytest

from judgments import pool_keys, services
from judgments.models import Document, Pair
from judgments.rating import queue


def _pairs(pool):
    return {
        (p.query.external_id, p.document.external_id): p.priority
        for p in Pair.objects.filter(pool=pool).queued().select_related("query", "document")
    }


@pytest.fixture
def two_runs(pool, configuration, other_configuration, engineer):
    """bm25: q1 d1 d2 d3, q2 d3 d1. dense (an old run, then its current one): q1 d2 d3 d1, q2 d2."""
    Document.objects.create(pool=pool, external_id="d4", title="Title d4", body="only in an old run")
    services.record_run(configuration, {"q1": ["d1", "d2", "d3"], "q2": ["d3", "d1"]}, source="api")
    services.record_run(other_configuration, {"q1": ["d4", "d1"]}, source="api")  # superseded below
    services.record_run(other_configuration, {"q1": ["d2", "d3", "d1"], "q2": ["d2"]}, source="api")


def test_build_queue_pools_the_top_k_of_every_current_run(pool, two_runs):
    result = queue.build_queue(pool, k=2)
    p = queue.PRIORITY_PER_CONFIGURATION
    assert _pairs(pool) == {
        ("q1", "d2"): 2 * p + p - 1,  # two configurations, best rank 1
        ("q1", "d1"): p + p - 1,  # one configuration, rank 1
        ("q1", "d3"): p + p - 2,  # one configuration, rank 2 (dense)
        ("q2", "d3"): p + p - 1,
        ("q2", "d2"): p + p - 1,
        ("q2", "d1"): p + p - 2,
    }
    assert (result.considered, result.newly_queued, result.already_queued, result.complete) == (6, 6, 0, 0)


def test_more_configurations_beat_a_better_rank(pool, two_runs):
    queue.build_queue(pool, k=3)
    priorities = _pairs(pool)
    # q1 d3: bm25 rank 3 and dense rank 2 (two configurations) beats q2 d2: dense rank 1 only.
    assert priorities[("q1", "d3")] > priorities[("q2", "d2")]
    # Among pairs of one configuration each, the better best rank comes first.
    assert priorities[("q2", "d3")] > priorities[("q2", "d1")]  # bm25 ranks 1 and 2
    assert priorities[("q1", "d2")] > priorities[("q1", "d3")]


def test_old_runs_are_not_pooled(pool, two_runs):
    queue.build_queue(pool, k=10)
    assert ("q1", "d4") not in _pairs(pool)


def test_pairs_with_enough_grades_are_not_queued(pool, two_runs, rater, other_rater):
    pair = pool_keys.ensure_pairs(
        pool, [(pool.queries.get(external_id="q1").pk, pool.documents.get(external_id="d1").pk)]
    )
    graded = Pair.objects.get(pk=next(iter(pair.values())))
    services.record_judgment(graded, rater, grade=2)
    result = queue.build_queue(pool, k=2)
    assert ("q1", "d1") not in _pairs(pool)
    assert result.complete == 1 and result.newly_queued == 5


def test_cant_judge_is_not_a_grade_when_building(pool, two_runs, rater):
    q1, d1 = pool.queries.get(external_id="q1"), pool.documents.get(external_id="d1")
    pair = Pair.objects.get(pk=pool_keys.ensure_pairs(pool, [(q1.pk, d1.pk)])[(q1.pk, d1.pk)])
    services.record_judgment(pair, rater, cant_judge=True, reason="paywalled")
    queue.build_queue(pool, k=2)
    assert ("q1", "d1") in _pairs(pool)


def test_two_grades_wanted_keeps_a_once_graded_pair_queued(pool, two_runs, rater):
    pool.raters_per_pair = 2
    pool.save()
    q1, d1 = pool.queries.get(external_id="q1"), pool.documents.get(external_id="d1")
    pair = Pair.objects.get(pk=pool_keys.ensure_pairs(pool, [(q1.pk, d1.pk)])[(q1.pk, d1.pk)])
    services.record_judgment(pair, rater, grade=3)
    queue.build_queue(pool, k=2)
    assert ("q1", "d1") in _pairs(pool)


def test_a_second_build_queues_nothing_new(pool, two_runs):
    queue.build_queue(pool, k=2)
    again = queue.build_queue(pool, k=2)
    assert (again.newly_queued, again.already_queued) == (0, 6)


@pytest.mark.parametrize("k", [0, -1, 1001, "10", True])
def test_depth_must_be_1_to_1000(pool, k):
    with pytest.raises(queue.QueueError):
        queue.build_queue(pool, k=k)


def test_queue_unjudged_top_k_queues_only_that_configurations_ungraded_pairs(
    pool, configuration, other_configuration, rater
):
    services.record_run(configuration, {"q1": ["d1", "d2", "d3"], "q2": ["d3"]}, source="api")
    services.record_run(other_configuration, {"q1": ["d3"], "q2": ["d1", "d2"]}, source="api")
    q1, d1 = pool.queries.get(external_id="q1"), pool.documents.get(external_id="d1")
    done = Pair.objects.get(pk=pool_keys.ensure_pairs(pool, [(q1.pk, d1.pk)])[(q1.pk, d1.pk)])
    services.record_judgment(done, rater, grade=4)

    result = queue.queue_unjudged_top_k(configuration, 2)

    assert set(_pairs(pool)) == {("q1", "d2"), ("q2", "d3")}
    assert (result.newly_queued, result.complete) == (2, 1)


def test_queue_unjudged_top_k_never_lowers_a_priority(pool, configuration, other_configuration):
    services.record_run(configuration, {"q1": ["d1", "d2"]}, source="api")
    services.record_run(other_configuration, {"q1": ["d2", "d1"]}, source="api")
    queue.build_queue(pool, k=2)
    before = _pairs(pool)
    queue.queue_unjudged_top_k(configuration, 2)
    assert _pairs(pool) == before


def test_queue_unjudged_top_k_needs_a_run(configuration):
    with pytest.raises(queue.QueueError, match="no run"):
        queue.queue_unjudged_top_k(configuration, 10)


def test_add_pairs_by_hand(pool):
    result = queue.add_pairs(pool, [("q1", "d3"), ("q2", "d1")], priority=5)
    assert _pairs(pool) == {("q1", "d3"): 5, ("q2", "d1"): 5}
    assert result.newly_queued == 2


def test_add_pairs_is_all_or_nothing(pool):
    with pytest.raises(queue.QueueError) as error:
        queue.add_pairs(pool, [("q1", "d3"), ("q9", "d1"), ("q2", "nope")])
    assert error.value.problems == [
        (2, "unknown query id 'q9' in pool robust"),
        (3, "unknown document id 'nope' in pool robust"),
    ]
    assert not Pair.objects.exists()


def test_pair_file_reports_every_bad_line_and_queues_nothing(pool):
    data = b"# qid\tdocid\nq1\td1\n\nq1 d2\nq2\td1\textra\nq2\t\n"
    with pytest.raises(queue.QueueError) as error:
        queue.add_pairs_from_file(pool, data)
    assert [line for line, _ in error.value.problems] == [4, 5, 6]
    assert "expected 2 tab-separated fields" in error.value.problems[0][1]
    assert not Pair.objects.exists()


def test_pair_file_with_unknown_ids_queues_nothing(pool):
    with pytest.raises(queue.QueueError) as error:
        queue.add_pairs_from_file(pool, "q1\td1\nq1\td9\n")
    assert error.value.problems == [(2, "unknown document id 'd9' in pool robust")]
    assert not Pair.objects.exists()


def test_pair_file_queues_its_pairs(pool):
    result = queue.add_pairs_from_file(pool, "\ufeffq1\td1\r\nq2\td2\r\nq2\td2\r\n")
    assert set(_pairs(pool)) == {("q1", "d1"), ("q2", "d2")}
    assert result.considered == 2


def test_pair_file_must_be_utf8(pool):
    with pytest.raises(queue.QueueError, match="UTF-8"):
        queue.add_pairs_from_file(pool, b"q1\t\xff\n")


def test_pairs_without_content_are_queued_but_listed_apart(pool, configuration):
    services.record_run(configuration, {"q1": ["d1", "new-doc"]}, source="api")  # new-doc: no content yet
    result = queue.build_queue(pool, k=10)
    assert result.without_content == 1
    assert [str(p) for p in queue.pairs_without_content(pool)] == ["q1 / new-doc"]


def test_top_k_coverage_counts_complete_open_and_unqueued(pool, configuration, rater):
    services.record_run(configuration, {"q1": ["d1", "d2", "d3"]}, source="api")
    queue.add_pairs(pool, [("q1", "d2")])
    q1, d1 = pool.queries.get(external_id="q1"), pool.documents.get(external_id="d1")
    done = Pair.objects.get(pk=pool_keys.ensure_pairs(pool, [(q1.pk, d1.pk)])[(q1.pk, d1.pk)])
    services.record_judgment(done, rater, grade=1)
    [row] = queue.top_k_coverage(pool, 3)
    assert (row["pairs"], row["complete"], row["queued_open"], row["unqueued"]) == (3, 1, 1, 1)
