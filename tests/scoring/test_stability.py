"""Has the leaderboard settled (scoring.stability): measured from the stored scores after every grade,
`manage.py stability`, the leaderboard's panel, and a pool that stops serving once settled."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from judgments import services
from judgments.models import Document, Pair, Pool, Query
from judgments.rating import grading, queue
from scoring import stability
from scoring.models import PoolStability


@pytest.fixture
def clear_winner(db, pool, configuration, other_configuration):
    """6 queries: bm25 ranks the relevant document first, dense ranks it second; top 2 of each."""
    for i in range(3, 7):
        Query.objects.create(pool=pool, external_id=f"q{i}", text=f"query {i}")
    for i in range(1, 7):
        Document.objects.create(pool=pool, external_id=f"good{i}", title="good", body="good")
        Document.objects.create(pool=pool, external_id=f"bad{i}", title="bad", body="bad")
    services.record_run(configuration, {f"q{i}": [f"good{i}", f"bad{i}"] for i in range(1, 7)}, source="api")
    services.record_run(
        other_configuration, {f"q{i}": [f"bad{i}", f"good{i}"] for i in range(1, 7)}, source="api"
    )
    pool.raters_per_pair = 1
    pool.save()
    queue.build_queue(pool, 2, "depth")
    return pool


@pytest.fixture
def every_grade(monkeypatch):
    """Measured after every grade, however close together (the settled rule under test, not the pace)."""
    monkeypatch.setattr(stability, "LIVE_INTERVAL", timedelta(0))


def _grade_all(pool, rater, django_capture_on_commit_callbacks):
    truth = {"good": 3, "bad": 0}
    n = 0
    while (pair := grading.next_pair_for(rater, pool)) is not None:
        with django_capture_on_commit_callbacks(execute=True):
            grading.save_grade(pair, rater, grade=truth[pair.document.external_id.rstrip("0123456789")])
        n += 1
        pool.refresh_from_db()
    return n


def test_nothing_graded_is_not_settled(clear_winner):
    result = stability.measure(clear_winner)
    assert not result.settled and result.expected_tau == 0.0
    assert result.judged == {"bm25": 0.0, "dense": 0.0}
    assert result.queries == 6


def test_a_clear_ordering_settles_after_it_stays(
    clear_winner, rater, monkeypatch, django_capture_on_commit_callbacks, every_grade
):
    monkeypatch.setattr(stability, "STAY_GRADES", 4)
    _grade_all(clear_winner, rater, django_capture_on_commit_callbacks)
    stored = PoolStability.objects.get(pool=clear_winner)
    assert stored.grades == 12  # measured after every grade (a small pool)
    result = stability.measure(clear_winner)
    assert result.ordering == ["bm25", "dense"]
    assert result.expected_tau == pytest.approx(1.0)
    assert result.judged == {"bm25": 1.0, "dense": 1.0}
    assert result.settled and result.grades_since_change >= 4
    assert Pool.objects.get(pk=clear_winner.pk).settled_at is not None


def test_a_pool_set_to_stop_stops_serving_once_settled(
    clear_winner, rater, monkeypatch, django_capture_on_commit_callbacks, every_grade
):
    monkeypatch.setattr(stability, "STAY_GRADES", 2)
    monkeypatch.setattr("scoring.settling.SETTLED_JUDGED", 0.5)
    clear_winner.stop_when_settled = True
    clear_winner.save()
    graded = _grade_all(clear_winner, rater, django_capture_on_commit_callbacks)
    assert graded < 12  # stopped before the queue ran out
    assert queue.open_pairs(clear_winner).exists()
    assert Pool.objects.get(pk=clear_winner.pk).queue_stopped


def test_grades_close_together_are_measured_once_now_and_once_by_a_task_shortly_after(
    clear_winner, rater, django_capture_on_commit_callbacks
):
    """A small pool is measured after a grade, but not again within LIVE_INTERVAL: the grades in between
    ask for one measurement at the end of the interval (a task), which counts all of them."""
    from django_tasks_db.models import DBTaskResult

    from scoring import tasks

    pending = DBTaskResult.objects.filter(task_path=tasks.STABILITY_PATH, status="READY")
    pairs = list(queue.open_pairs(clear_winner).select_related("document")[:3])
    for pair in pairs:
        with django_capture_on_commit_callbacks(execute=True):
            grading.save_grade(pair, rater, grade=3 if "good" in pair.document.external_id else 0)
    stored = PoolStability.objects.get(pool=clear_winner)
    assert stored.grades == 1  # measured after the first grade only
    (task,) = pending  # one task for the two grades after it, due when the interval ends
    assert task.run_after == stored.measured_at + stability.LIVE_INTERVAL
    assert task.args_kwargs["args"] == [clear_winner.pk]
    stability.measure(clear_winner)  # what the task runs (a worker runs it: test_stability_snapshot)
    assert PoolStability.objects.get(pool=clear_winner).grades == 3


def _graded_statements(pair, rater, django_capture_on_commit_callbacks) -> list[str]:
    """Grade the pair (good documents 3, bad ones 0), running what follows the commit; its statements."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
        grading.save_grade(pair, rater, grade=3 if "good" in pair.document.external_id else 0)
    return [q["sql"] for q in captured.captured_queries]


def test_grades_while_a_measurement_task_waits_ask_nothing_about_stability(
    clear_winner, rater, django_capture_on_commit_callbacks
):
    """Once a process has seen the stability task waiting (scoring.receivers), the grades before it is due
    read and write nothing about stability: the task measures them. After it is due, a grade checks again."""
    from django_tasks_db.models import DBTaskResult

    from scoring import receivers, tasks

    pending = DBTaskResult.objects.filter(task_path=tasks.STABILITY_PATH, status="READY")
    pairs = list(queue.open_pairs(clear_winner).select_related("document")[:4])

    def grade(pair):
        return _graded_statements(pair, rater, django_capture_on_commit_callbacks)

    grade(pairs[0])  # measured now
    asked = grade(pairs[1])  # too soon: asks for the task, and remembers when it is due
    assert any("scoring_poolstability" in sql for sql in asked)  # when it was measured last
    (task,) = pending
    assert receivers._MEASUREMENT_DUE[clear_winner.pk] == task.run_after

    quiet = grade(pairs[2])
    assert not [sql for sql in quiet if "scoring_poolstability" in sql or 'FROM "judgments_query"' in sql]
    assert pending.count() == 1 and PoolStability.objects.get(pool=clear_winner).grades == 1

    receivers._MEASUREMENT_DUE[clear_winner.pk] = timezone.now() - timedelta(seconds=1)  # due: check again
    assert any("scoring_poolstability" in sql for sql in grade(pairs[3]))
    stability.measure(clear_winner)  # what the task runs: every grade counted
    assert PoolStability.objects.get(pool=clear_winner).grades == 4


def test_a_measurement_no_worker_has_taken_yet_is_made_due_again_and_still_spares_the_grades(
    clear_winner, rater, django_capture_on_commit_callbacks
):
    """A waiting task past its time (no worker has taken it yet: a busy worker, or none, as in
    bench_grading) is made due at the end of the new interval rather than left in the past: the grades
    before then still ask nothing, and exactly one task waits."""
    from django_tasks_db.models import DBTaskResult

    from scoring import receivers, tasks

    pending = DBTaskResult.objects.filter(task_path=tasks.STABILITY_PATH, status="READY")
    pairs = list(queue.open_pairs(clear_winner).select_related("document")[:4])

    def grade(pair):
        return _graded_statements(pair, rater, django_capture_on_commit_callbacks)

    grade(pairs[0])
    grade(pairs[1])
    measured_at = PoolStability.objects.get(pool=clear_winner).measured_at
    pending.update(run_after=timezone.now() - timedelta(minutes=1))  # overdue, nobody took it
    receivers._MEASUREMENT_DUE[clear_winner.pk] = timezone.now() - timedelta(seconds=1)

    grade(pairs[2])
    (task,) = pending
    assert task.run_after == measured_at + stability.LIVE_INTERVAL
    assert receivers._MEASUREMENT_DUE[clear_winner.pk] == task.run_after
    assert not [sql for sql in grade(pairs[3]) if "scoring_poolstability" in sql]


def test_stability_command_prints_json_last(clear_winner):
    out = StringIO()
    call_command("stability", "--pool", "robust", "--measure", "nDCG@10", stdout=out)
    last = json.loads(out.getvalue().strip().splitlines()[-1])
    assert last["settled"] is False and "expected_tau" in last
    assert last["measure"] == "ndcg@10"
    out = StringIO()
    call_command("stability", "--pool", "robust", "--measure", "ndcg_cut_10", stdout=out)
    assert json.loads(out.getvalue().splitlines()[-1])["measure"] == "ndcg@10"
    out = StringIO()
    call_command("stability", "--pool", "robust", "--measure", "P@10", stdout=out)  # ir_measures syntax
    assert json.loads(out.getvalue().splitlines()[-1])["measure"] == "p@10"
    with pytest.raises(CommandError, match="^Measure 'nDCG@7' is not among the stored scores"):
        call_command("stability", "--pool", "robust", "--measure", "nDCG@7", stdout=StringIO())
    with pytest.raises(CommandError, match="^--measure: "):
        call_command("stability", "--pool", "robust", "--measure", "nDCG@@", stdout=StringIO())


def test_the_leaderboard_shows_the_panel(clear_winner, client, engineer):
    client.force_login(engineer)
    page = client.get("/pools/robust/leaderboard/").content.decode()
    assert (
        "Not settled yet" in page and "Expected Kendall" in page and "since the ordering last changed" in page
    )


def test_the_grading_page_says_complete_for_now(clear_winner, client, rater):
    Pool.objects.filter(pk=clear_winner.pk).update(stop_when_settled=True, settled_at=timezone.now())
    client.force_login(rater)
    page = client.get("/pools/robust/grade/").content.decode()
    assert "This pool is complete for now" in page
    assert not Pair.objects.filter(held_by=rater).exists()
