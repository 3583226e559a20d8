"""The stored counts (Pair.human_grades, the pools' and raters' tallies) equal a recount from the rows
after every kind of write that can change them, and `rebuild` restores them."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from judgments import gold, raters, services, tallies
from judgments.exchange.imports.trec import import_qrels
from judgments.models import Document, Judgment, ModelJudge, Pair, Pool, Tally
from judgments.rating import grading
from tests.judgments.rating.conftest import queued_pair


def assert_tallies_match(pool):
    recounted_pool, recounted_raters, recounted_pairs = tallies.recount(pool)
    stored_pool, stored_raters, stored_pairs = tallies.stored(pool)
    assert stored_pool == recounted_pool
    assert stored_raters == recounted_raters
    assert stored_pairs == recounted_pairs


@pytest.fixture
def three_raters(db, pool, rater, other_rater):
    third = get_user_model().objects.create_user(username="third-rater", password="x")
    pool.members.add(third)
    return rater, other_rater, third


@pytest.mark.django_db
def test_every_kind_of_write_keeps_the_tallies(pool, three_raters, site_admin):
    a, b, c = three_raters
    pool.raters_per_pair = 2
    pool.save()
    pairs = [queued_pair(pool, f"q{i // 3}", f"d{i}") for i in range(6)]
    empty = queued_pair(pool, "q9", "empty", content=False)
    assert_tallies_match(pool)
    assert tallies.pool_counts(pool).open_pairs == 6 and tallies.pool_counts(pool).queued == 7

    # grades through the queue; one completes a pair (a's "judged open" falls with it)
    grading.save_grade(pairs[0], a, grade=3)
    assert_tallies_match(pool)
    grading.save_grade(pairs[0], b, grade=1)
    assert_tallies_match(pool)
    assert tallies.pool_counts(pool).complete == 1
    # can't judge, a regrade, a can't judge turned into a grade
    grading.save_grade(pairs[1], c, cant_judge=True, reason="foreign language")
    services.record_judgment(pairs[0], a, grade=0)
    assert_tallies_match(pool)
    services.record_judgment(pairs[1], c, grade=2)
    assert_tallies_match(pool)
    mine = grading.rater_progress(c, pool)
    assert (mine["graded"], mine["cant"], mine["remaining"]) == (1, 0, 4)

    # exclusion of a rater and its reversal
    raters.set_excluded(pool, a, True, site_admin)
    assert_tallies_match(pool)
    assert Pair.objects.get(pk=pairs[0].pk).human_grades == 1
    raters.set_excluded(pool, a, False, site_admin)
    assert_tallies_match(pool)

    # adjudication, gold, content arriving and leaving, raters_per_pair
    services.set_final_grade(pairs[2], 4, site_admin)
    assert_tallies_match(pool)
    services.set_final_grade(pairs[2], None, site_admin)
    assert_tallies_match(pool)
    gold.mark_gold(pool, [("q1", "d4", 2)], site_admin)
    assert_tallies_match(pool)
    Document.objects.filter(pool=pool, external_id="empty").update(title="now it has one")
    assert_tallies_match(pool)
    Document.objects.filter(pool=pool, external_id="d5").update(title="", body="")
    assert_tallies_match(pool)
    pool.raters_per_pair = 3
    pool.save()
    assert_tallies_match(pool)
    assert tallies.pool_counts(pool).complete == 1  # only the gold pair

    # a model judge's grades do not fill pairs, whenever the user became one
    services.record_judgment(empty, b, grade=2)
    ModelJudge.objects.create(pool=pool, user=b, model="m")
    assert_tallies_match(pool)
    ModelJudge.objects.filter(user=b).delete()
    assert_tallies_match(pool)

    # deletion of judgments and of a pair, an import, a dequeued pair
    Judgment.objects.filter(pair=pairs[0], rater=a).delete()
    assert_tallies_match(pool)
    Pair.objects.filter(pk=pairs[5].pk).delete()
    assert_tallies_match(pool)
    import_qrels(pool, io.StringIO("q0 0 d0 2\nq0 0 d1 1\nq7 0 d70 3\n"), name="qrels", rater=site_admin)
    assert_tallies_match(pool)
    Pair.objects.filter(pool=pool).update(queued_at=None)
    assert_tallies_match(pool)
    assert tallies.pool_counts(pool).queued == 0


@pytest.mark.django_db
def test_fold_keeps_the_sums_and_rebuild_restores_them(pool, three_raters):
    a, b, _ = three_raters
    pairs = [queued_pair(pool, "q", f"d{i}") for i in range(5)]
    for pair in pairs:
        grading.save_grade(pair, a, grade=2)
    before = tallies.stored(pool)
    assert Tally.objects.filter(pool_id=pool.pk).count() > 2
    assert tallies.fold(pool)
    assert Tally.objects.filter(pool_id=pool.pk).count() == 2  # the pool's row and a's
    assert tallies.stored(pool) == before
    # rows written behind the triggers' back (here: the triggers' work undone) are restored by rebuild
    Tally.objects.filter(pool_id=pool.pk).delete()
    with connection.cursor() as cursor:
        cursor.execute("UPDATE judgments_pair SET human_grades = 7 WHERE pool_id = %s", [pool.pk])
    Tally.objects.filter(pool_id=pool.pk).delete()
    tallies.rebuild(pool)
    assert_tallies_match(pool)
    assert tallies.stored(pool) == before


@pytest.mark.django_db
def test_deleting_a_pool_leaves_no_tally(pool, rater):
    grading.save_grade(queued_pair(pool, "q", "d"), rater, grade=1)
    services.delete_pool_in_bulk(pool)
    assert not Tally.objects.filter(pool_id=pool.pk).exists()
    # It switched the counts' triggers off for its own deletes only: another pool's grades still count.
    other = Pool.objects.create(name="after-bulk-delete", raters_per_pair=1)
    grading.save_grade(queued_pair(other, "q", "d"), rater, grade=2)
    assert_tallies_match(other)
    assert tallies.pool_counts(other).complete == 1


@pytest.mark.django_db
def test_a_reader_folds_a_pool_with_many_rows(pool, rater, monkeypatch):
    for i in range(3):
        grading.save_grade(queued_pair(pool, "q", f"d{i}"), rater, grade=2)
    before = tallies.stored(pool)
    monkeypatch.setattr(tallies, "FOLD_AT", 2)
    assert grading.rater_progress(rater, pool)["graded"] == 3
    assert Tally.objects.filter(pool_id=pool.pk).count() == 2
    assert tallies.stored(pool) == before
