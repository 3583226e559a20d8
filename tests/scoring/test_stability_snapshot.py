"""The leaderboard's stability panel on a big pool: the stored measurement is shown while the current runs'
scores are those it was measured from; once they change it is shown as stale and one background task
(scoring.tasks.measure_stability) measures it again, equal to measuring it directly."""

import pytest
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from scoring import stability, tasks
from scoring.models import PoolStability
from tests.scoring.test_stability import _grade_all, clear_winner  # noqa: F401

# ruff: noqa: F811 (clear_winner is test_stability's fixture)


def _page(client, engineer) -> str:
    client.force_login(engineer)
    return client.get("/pools/robust/leaderboard/").content.decode()


def _pending() -> int:
    return DBTaskResult.objects.filter(task_path=tasks.STABILITY_PATH, status="READY").count()


def _worker() -> None:
    """What `manage.py db_worker` does, once."""
    call_command("db_worker", batch=True, startup_delay=False, reload=False, interval=0, verbosity=0)
    # Every task the worker could run succeeded (the snapshots' refresh waits a minute: judgments.snapshots).
    ran = DBTaskResult.objects.exclude(task_path="judgments.snapshots.refresh_snapshots")
    assert not ran.exclude(status="SUCCESSFUL").exists()


@pytest.mark.django_db(transaction=True)
def test_the_stored_measurement_equals_a_direct_one_and_goes_stale(
    clear_winner, client, engineer, rater, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(stability, "LIVE_CELLS", -1)  # a big pool: never measured on a page load
    PoolStability.objects.all().delete()  # (the fixture's runs measured it: it was small then)
    page = _page(client, engineer)
    assert "being measured in the background" in page and _pending() == 1
    _page(client, engineer)
    assert _pending() == 1  # asked once, not once per load

    _worker()
    shown = stability.for_leaderboard(clear_winner, cells=12)
    direct = stability.measure(clear_winner)
    assert not shown.stale and shown.measured_at is not None
    assert shown.as_json() == direct.as_json()
    assert "Expected Kendall" in _page(client, engineer)

    _grade_all(clear_winner, rater, django_capture_on_commit_callbacks)  # the scores change
    stale = stability.for_leaderboard(clear_winner, cells=12)
    assert stale.stale and stale.expected_tau == shown.expected_tau
    DBTaskResult.objects.filter(task_path=tasks.STABILITY_PATH).delete()
    assert "a new measurement is under way" in _page(client, engineer) and _pending() == 1
    _worker()
    fresh = stability.for_leaderboard(clear_winner, cells=12)
    assert not fresh.stale and fresh.as_json() == stability.measure(clear_winner).as_json()
    assert fresh.expected_tau != shown.expected_tau


def test_a_small_pool_is_measured_on_the_page(clear_winner, client, engineer):
    assert not PoolStability.objects.filter(pool=clear_winner).exists()
    assert "Not settled yet" in _page(client, engineer)
    assert PoolStability.objects.filter(pool=clear_winner).exists() and _pending() == 0
    assert stability.for_leaderboard(clear_winner, cells=12).measured_at is not None  # stored, current


@pytest.mark.django_db(transaction=True)
def test_a_stale_measurement_over_no_query_is_not_shown(clear_winner, client, engineer, monkeypatch):
    """Seen on the realistic pool after the migration: "bootstrap over 0 queries", "Why not: ." while a new
    measurement was due. A big pool whose stored row is stale and over no query says it is being measured."""
    monkeypatch.setattr(stability, "LIVE_CELLS", -1)
    PoolStability.objects.all().delete()
    _page(client, engineer)
    _worker()
    PoolStability.objects.filter(pool=clear_winner).update(
        queries=0, basis={"0": -1}
    )  # stale: marks no run has
    assert stability.for_leaderboard(clear_winner, cells=12) is None
    page = _page(client, engineer)
    assert "being measured in the background" in page and "over 0 queries" not in page
