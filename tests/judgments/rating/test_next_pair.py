"""Which pair a rater gets next: not their own, still short of grades, not held by another, grouped by query."""

import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone

from judgments import pool_keys, services
from judgments.models import Document, Judgment, Pair
from judgments.rating import grading, queue


def test_rater_gets_a_queued_pair_and_holds_it(pool, rater, queued):
    pair = queued(pool, "q1", "d1")
    now = timezone.now()
    served = grading.next_pair_for(rater, pool, now=now)
    assert served == pair
    pair.refresh_from_db()
    assert pair.held_by == rater and pair.held_until == now + grading.HOLD


def test_unqueued_pairs_are_not_served(pool, rater):
    pool_keys.ensure_pairs(
        pool, [(pool.queries.get(external_id="q1").pk, pool.documents.get(external_id="d1").pk)]
    )
    assert grading.next_pair_for(rater, pool) is None


def test_rater_is_not_served_a_pair_they_judged(pool, rater, queued):
    pool.raters_per_pair = 3
    pool.save()
    pair = queued(pool, "q1", "d1")
    services.record_judgment(pair, rater, grade=1)
    assert grading.next_pair_for(rater, pool) is None


def test_pair_with_enough_grades_is_not_served(pool, rater, other_rater, queued):
    pair = queued(pool, "q1", "d1")
    services.record_judgment(pair, other_rater, grade=2)
    assert grading.next_pair_for(rater, pool) is None
    pool.raters_per_pair = 2
    pool.save()
    assert grading.next_pair_for(rater, pool) == pair


def test_cant_judge_is_no_grade_but_the_rater_is_not_asked_again(pool, rater, other_rater, queued):
    pair = queued(pool, "q1", "d1")
    services.record_judgment(pair, other_rater, cant_judge=True, reason="in Finnish")
    assert grading.next_pair_for(other_rater, pool) is None
    assert grading.next_pair_for(rater, pool) == pair


def test_adjudicated_pair_is_not_served(pool, rater, site_admin, queued):
    pair = queued(pool, "q1", "d1")
    services.set_final_grade(pair, 3, site_admin)
    assert grading.next_pair_for(rater, pool) is None


def test_pair_held_by_another_rater_is_not_served_until_the_hold_expires(pool, rater, other_rater, queued):
    pair = queued(pool, "q1", "d1")
    now = timezone.now()
    assert grading.next_pair_for(rater, pool, now=now) == pair
    assert grading.next_pair_for(other_rater, pool, now=now + grading.HOLD - timedelta(seconds=1)) is None
    assert grading.next_pair_for(other_rater, pool, now=now + grading.HOLD + timedelta(seconds=1)) == pair
    pair.refresh_from_db()
    assert pair.held_by == other_rater


def test_another_free_pair_is_served_while_one_is_held(pool, rater, other_rater, queued):
    first, second = queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    a = grading.next_pair_for(rater, pool)
    b = grading.next_pair_for(other_rater, pool)
    assert {a, b} == {first, second}


def test_asking_again_returns_the_held_pair_with_a_fresh_hold(pool, rater, queued):
    for doc in ("d1", "d2", "d3"):
        queued(pool, "q1", doc)
    now = timezone.now()
    first = grading.next_pair_for(rater, pool, now=now)
    again = grading.next_pair_for(rater, pool, now=now + timedelta(minutes=2))
    assert again == first
    again.refresh_from_db()
    assert again.held_until == now + timedelta(minutes=2) + grading.HOLD


def test_a_rater_holds_one_pair_at_a_time(pool, rater, queued):
    queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    first = grading.next_pair_for(rater, pool)
    second = grading.next_pair_for(rater, pool, skip=[first.pk])
    assert second != first
    assert list(Pair.objects.filter(held_by=rater)) == [second]


def test_pairs_without_content_are_held_back_until_content_arrives(pool, rater, queued):
    pair = queued(pool, "q1", "blank", content=False)
    assert grading.next_pair_for(rater, pool) is None
    assert list(queue.pairs_without_content(pool)) == [pair]
    Document.objects.filter(pk=pair.document_id).update(body="now it has text")
    assert grading.next_pair_for(rater, pool) == pair
    assert not queue.pairs_without_content(pool).exists()


def test_queries_come_by_priority_and_a_started_query_is_finished_first(pool, rater, queued):
    for doc in ("d1", "d2", "d3"):
        queued(pool, "q1", doc, priority=10)
    Pair.objects.filter(query__external_id="q1", document__external_id="d2").update(priority=30_000)
    queued(pool, "q2", "d1", priority=20_000)

    order = []
    while (pair := grading.next_pair_for(rater, pool)) is not None:
        order.append(str(pair))
        services.record_judgment(pair, rater, grade=1)

    # q1 holds the best pair, so it comes first and is finished although q2's pair outranks q1's others.
    assert [o.split(" / ")[0] for o in order] == ["q1", "q1", "q1", "q2"]


def test_order_within_a_query_is_a_shuffle_per_rater_not_the_rank(pool, rater, other_rater, queued):
    pool.raters_per_pair = 2
    pool.save()
    pairs = [queued(pool, "q1", f"doc{i:02d}", priority=1000 - i) for i in range(12)]

    def served_order(user):
        order = []
        while (pair := grading.next_pair_for(user, pool)) is not None:
            order.append(pair.pk)
            services.record_judgment(pair, user, grade=0)
        return order

    a, b = served_order(rater), served_order(other_rater)

    def expected(user):
        return sorted(
            (p.pk for p in pairs), key=lambda pk: hashlib.md5(f"{user.pk}:{pk}".encode()).hexdigest()
        )

    assert a == expected(rater) and b == expected(other_rater)
    assert a != b
    assert a != [p.pk for p in pairs]  # not the priority (rank) order


def test_skipped_pairs_are_not_served_again(pool, rater, queued):
    first, second = queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    served = grading.next_pair_for(rater, pool)
    other = grading.next_pair_for(rater, pool, skip=[served.pk])
    assert {served, other} == {first, second}
    assert grading.next_pair_for(rater, pool, skip=[first.pk, second.pk]) is None


# --- Saving: the rules are checked again under the pair's row lock ----------------------------------


def test_save_grade_refuses_a_pair_taken_over_after_an_expired_hold(pool, rater, other_rater, queued):
    pair = queued(pool, "q1", "d1")
    now = timezone.now()
    grading.next_pair_for(rater, pool, now=now)
    later = now + grading.HOLD + timedelta(minutes=1)
    assert grading.next_pair_for(other_rater, pool, now=later) == pair
    with pytest.raises(queue.QueueError, match="another rater"):
        grading.save_grade(pair, rater, grade=3, now=later)
    grading.save_grade(pair, other_rater, grade=1, now=later)
    assert list(Judgment.objects.values_list("rater__username", "grade")) == [("ray_rater", 1)]


def test_save_grade_refuses_a_grade_beyond_the_wanted_number(pool, rater, other_rater, queued):
    pair = queued(pool, "q1", "d1")
    grading.save_grade(pair, other_rater, grade=2)
    with pytest.raises(queue.QueueError, match="all the grades"):
        grading.save_grade(pair, rater, grade=3)
    assert Judgment.objects.count() == 1


def test_save_grade_lets_a_rater_change_their_grade_and_history_keeps_it(pool, rater, queued):
    pair = queued(pool, "q1", "d1")
    grading.save_grade(pair, rater, grade=1)
    grading.save_grade(pair, rater, grade=4, note="read it twice")
    judgment = Judgment.objects.get()
    assert (judgment.grade, judgment.note) == (4, "read it twice")
    changes = list(
        pair.judgment_changes.order_by("changed_at").values_list("action", "old_grade", "new_grade")
    )
    assert changes == [("created", None, 1), ("changed", 1, 4)]


def test_cant_judge_cannot_become_a_grade_once_the_pair_is_complete(pool, rater, other_rater, queued):
    pair = queued(pool, "q1", "d1")
    grading.save_grade(pair, rater, cant_judge=True, reason="broken page")
    grading.next_pair_for(other_rater, pool)
    grading.save_grade(pair, other_rater, grade=2)
    with pytest.raises(queue.QueueError):
        grading.save_grade(pair, rater, grade=3)
    assert Judgment.objects.get(rater=rater).cant_judge


def test_save_grade_refuses_unqueued_pairs(pool, rater):
    q1, d1 = pool.queries.get(external_id="q1"), pool.documents.get(external_id="d1")
    pair = Pair.objects.create(pool=pool, query=q1, document=d1)
    with pytest.raises(queue.QueueError, match="not in the judging queue"):
        grading.save_grade(pair, rater, grade=3)
    assert not Judgment.objects.exists()


def test_grading_releases_the_hold(pool, rater, queued):
    pair = queued(pool, "q1", "d1")
    grading.next_pair_for(rater, pool)
    grading.save_grade(pair, rater, grade=2)
    pair.refresh_from_db()
    assert pair.held_by is None and pair.held_until is None


def test_progress_counts_mine_and_the_pools(pool, rater, other_rater, queued):
    a, b, _ = queued(pool, "q1", "d1"), queued(pool, "q1", "d2"), queued(pool, "q2", "d1")
    grading.save_grade(a, rater, grade=2)
    grading.save_grade(b, other_rater, cant_judge=True, reason="x")
    assert grading.rater_progress(rater, pool) == {
        "graded": 1,
        "cant": 0,
        "done": 1,
        "remaining": 2,
        "percent": 33,
    }
    assert grading.pool_progress(pool) == {"queued": 3, "complete": 1, "percent": 33}


def test_serving_commits_without_waiting_only_in_a_transaction_of_its_own(
    transactional_db, pool, rater, queued, monkeypatch
):
    """The hold is worth no disk wait: serve's first statement says so when serve is the transaction
    (services.WITHOUT_WAITING_COLUMN), and leaves a caller's larger transaction as it is."""
    from django.db import connection, transaction

    from judgments import tallies

    queued(pool, "q1", "d1")
    seen = []
    read_sums = tallies.read_sums

    def spy(pool, row):
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            seen.append(cursor.fetchone()[0])
        return read_sums(pool, row)

    monkeypatch.setattr(tallies, "read_sums", spy)
    assert grading.serve(rater, pool).pair is not None
    with transaction.atomic():
        assert grading.serve(rater, pool).pair is not None
    assert seen == ["off", "on"]
