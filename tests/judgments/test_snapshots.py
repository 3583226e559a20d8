"""Stored snapshots (judgments.snapshots): every write that changes a statistic marks its pool once and
queues one refresh; the refresh stores what a direct computation gives and skips an unchanged pool; a
big pool's page reads the stored figures, says how old they are, and never computes them inline; a
writer still in its transaction when the refresh begins is waited for."""

import threading

import pytest
from django.db import connection, transaction
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from judgments import raters, services, snapshots
from judgments.models import Judgment, Pair, Snapshot, SnapshotDue
from judgments.rating import adjudication
from tests.conftest import login

REFRESH = "judgments.snapshots.refresh_snapshots"


@pytest.fixture
def graded(pool, rater, other_rater):
    """Every pair of the shared pool graded by both raters (they differ on some)."""
    pairs = [
        Pair.objects.create(pool=pool, query=q, document=d)
        for q in pool.queries.all()
        for d in pool.documents.all()
    ]
    Judgment.objects.bulk_create(
        [Judgment(pair=p, rater=rater, grade=i % 5) for i, p in enumerate(pairs)]
        + [Judgment(pair=p, rater=other_rater, grade=(i * 2) % 5) for i, p in enumerate(pairs)]
    )
    return pairs


def refreshes():
    return DBTaskResult.objects.filter(task_path=REFRESH)


def stored_agreement(pool):
    return Snapshot.objects.get(pool=pool, kind="agreement", key="").value


def direct_agreement(pool):
    return snapshots.jsonable(adjudication.agreement_value(pool))


def test_refresh_stores_the_direct_computation_and_skips_an_unchanged_pool(pool, graded):
    done = snapshots.refresh(pool)  # never computed: computed although no change is marked
    assert "agreement" in done.computed and not done.skipped
    assert stored_agreement(pool) == direct_agreement(pool)
    assert snapshots.refresh(pool).skipped  # nothing changed since
    # Rebuilt from the stored value, the page's object has the direct figures.
    again = adjudication.agreement_from(stored_agreement(pool))
    direct = adjudication.pool_agreement(pool)
    assert (again.alpha, again.n_units, again.n_raters) == (direct.alpha, direct.n_units, direct.n_raters)
    assert [(k["rater_a"], k["rater_b"], k["kappa"], k["n"]) for k in again.kappas] == [
        (k["rater_a"], k["rater_b"], k["kappa"], k["n"]) for k in direct.kappas
    ]


def test_each_kind_of_write_marks_the_pool_and_queues_one_refresh(
    pool, graded, rater, other_rater, site_admin, configuration
):
    snapshots.refresh(pool)
    assert not SnapshotDue.objects.exists() and not refreshes().exists()
    writes = [
        lambda: services.record_judgment(graded[0], rater, grade=4),  # a regrade
        lambda: services.record_judgment(graded[1], other_rater, cant_judge=True, reason="no text"),
        lambda: raters.set_excluded(pool, other_rater, True, site_admin),  # an exclusion
        lambda: services.set_final_grade(graded[2], 3, site_admin),  # an adjudication
        lambda: services.record_run(configuration, {"q1": ["d1"]}, source="api"),  # a run
    ]
    for write in writes:
        write()
        assert SnapshotDue.objects.filter(pool=pool).exists()
        (task,) = refreshes()  # one refresh queued, due a little later
        assert task.args_kwargs["args"] == [pool.pk] and task.status == "READY"
        write()  # the same write again: the pool is marked already, nothing more is queued
        assert refreshes().count() == 1
        done = snapshots.refresh(pool)
        assert not done.skipped and not SnapshotDue.objects.exists()
        assert stored_agreement(pool) == direct_agreement(pool)
        refreshes().delete()  # as the worker would have run it


def test_the_task_recomputes_a_marked_pool_once(pool, graded, rater):
    snapshots.refresh(pool)
    services.record_judgment(graded[0], rater, grade=0)
    Snapshot.objects.update(seconds=0)  # cost nothing: not put off (see the next test)
    summary = snapshots.refresh_snapshots.call(pool.pk)
    assert "agreement" in summary["computed"] and not summary["skipped"]
    Snapshot.objects.update(seconds=0)
    assert snapshots.refresh_snapshots.call(pool.pk)["skipped"]
    assert stored_agreement(pool) == direct_agreement(pool)


@pytest.fixture
def big(monkeypatch):
    """Every pool counts as big: pages read stored snapshots only."""
    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)


def test_a_big_pools_page_shows_the_snapshot_and_its_age_and_never_computes_inline(
    client, pool, graded, rater, site_admin, big
):
    login(client, site_admin)
    url = reverse("rating:agreement", args=[pool.name])
    page = client.get(url).content.decode()
    assert "being computed for the first time" in page and 'id="alpha"' not in page
    assert SnapshotDue.objects.filter(pool=pool).exists() and refreshes().count() == 1

    snapshots.refresh(pool)
    page = client.get(url).content.decode()
    assert "Figures as of" in page and "the pool unchanged since" in page
    alpha = f"{adjudication.pool_agreement(pool).alpha:.3f}"
    assert f'id="alpha">{alpha}<' in page

    services.record_judgment(
        graded[0], rater, grade=4 if graded[0].judgments.get(rater=rater).grade != 4 else 0
    )
    page = client.get(url).content.decode()
    assert "the pool has changed since" in page and f'id="alpha">{alpha}<' in page  # the old figures
    snapshots.refresh(pool)
    fresh = f"{adjudication.pool_agreement(pool).alpha:.3f}"
    assert f'id="alpha">{fresh}<' in client.get(url).content.decode()


def test_a_small_pools_page_computes_inline_and_says_nothing_of_age(client, pool, graded, site_admin):
    login(client, site_admin)
    page = client.get(reverse("rating:agreement", args=[pool.name])).content.decode()
    assert f'id="alpha">{adjudication.pool_agreement(pool).alpha:.3f}<' in page
    assert "Figures as of" not in page and not Snapshot.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_refresh_waits_for_a_writer_that_saw_the_marker(pool, graded, rater):
    """A writer finds the pool marked (no insert of its own) and is still in its transaction when the
    refresh takes the marker away: the refresh waits for its commit and counts its grade."""
    snapshots.refresh(pool)
    services.record_judgment(graded[0], rater, grade=1)  # marks the pool
    inside, release = threading.Event(), threading.Event()

    def writer():
        try:
            with transaction.atomic():
                services.record_judgment(
                    graded[1], rater, grade=4 if graded[1].judgments.get(rater=rater).grade != 4 else 0
                )
                inside.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    assert inside.wait(10)
    threading.Timer(0.5, release.set).start()
    snapshots.refresh(pool)  # blocks until the writer commits
    thread.join(10)
    assert stored_agreement(pool) == direct_agreement(pool)


def test_the_task_puts_itself_off_while_the_last_refresh_is_recent_for_its_cost(pool, graded, rater):
    snapshots.refresh(pool)
    Snapshot.objects.filter(pool=pool).update(seconds=600)  # as if it had taken ten minutes
    services.record_judgment(graded[0], rater, grade=0)
    refreshes().delete()
    summary = snapshots.refresh_snapshots.call(pool.pk)
    assert "put_off_until" in summary and SnapshotDue.objects.filter(pool=pool).exists()
    (later,) = refreshes()
    assert later.run_after >= snapshots.next_refresh(pool)
    Snapshot.objects.filter(pool=pool).update(seconds=0)
    assert snapshots.refresh_snapshots.call(pool.pk)["computed"] and not SnapshotDue.objects.exists()


def test_a_failing_kind_keeps_its_last_value_and_the_others_are_computed(pool, graded, rater, monkeypatch):
    snapshots.refresh(pool)
    before = stored_agreement(pool)
    services.record_judgment(
        graded[0], rater, grade=4 if graded[0].judgments.get(rater=rater).grade != 4 else 0
    )

    def broken(pool, key):
        raise RuntimeError("boom")

    monkeypatch.setattr(adjudication, "agreement_value", broken)
    done = snapshots.refresh(pool)
    assert done.failed == ["agreement"] and "disagreements" in done.computed
    assert stored_agreement(pool) == before and not SnapshotDue.objects.exists()


def test_a_transaction_in_another_database_of_the_cluster_is_not_waited_for(pool, graded, rater, monkeypatch):
    """Only this database's transactions can have written to it: one open in another database (another
    test worker's, another app's) does not hold the refresh back for WRITERS_TIMEOUT."""
    import time

    import psycopg

    settings = connection.settings_dict
    other = psycopg.connect(
        dbname="postgres",
        user=settings["USER"] or "postgres",
        host=settings["HOST"] or None,
        port=settings["PORT"] or None,
        password=settings["PASSWORD"] or None,
    )
    try:
        other.execute("SELECT pg_current_xact_id()")  # an open transaction with an id, as a writer's
        monkeypatch.setattr(snapshots, "WRITERS_TIMEOUT", 30.0)
        services.record_judgment(graded[0], rater, grade=2)
        started = time.monotonic()
        snapshots.refresh(pool)
        assert time.monotonic() - started < 15  # the old wait ran the whole 30 s
        assert stored_agreement(pool) == direct_agreement(pool)
    finally:
        other.rollback()
        other.close()
