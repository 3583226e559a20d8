"""Crashes leave nothing half-done: a run or grade commits together with its scoring task, so a process
that dies between the commit and the update leaves the task for a db_worker; a worker that dies while
running a task is noticed (its lock is gone), the task marked failed and shown on the leaderboard with a
Retry button for admins."""

import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from judgments import services as judgment_services
from judgments.models import Document, Pair, Query, Run
from scoring import services, tasks
from scoring.models import CellScore
from tests.scoring.conftest import tasks_but_snapshots

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def worker_signals():
    """db_worker installs its own SIGINT/SIGTERM handlers; put pytest's back afterwards."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def run_worker():
    call_command("db_worker", batch=True, startup_delay=False, reload=False, interval=0, verbosity=0)


def graded(pool, rater):
    for qid, docid, grade in (("q1", "d1", 3), ("q1", "d2", 1), ("q2", "d3", 2)):
        pair, _ = Pair.objects.get_or_create(
            pool=pool,
            query=Query.objects.get(pool=pool, external_id=qid),
            document=Document.objects.get(pool=pool, external_id=docid),
        )
        judgment_services.record_judgment(pair, rater, grade=grade)


def test_a_grade_and_its_scoring_task_are_written_in_one_transaction(pool, rater):
    """In this test's transaction nothing is committed, so the update after the commit never runs: as
    after a crash right after the commit, the task is there, due after SAFETY_DELAY."""
    pair = Pair.objects.create(
        pool=pool, query=pool.queries.get(external_id="q1"), document=pool.documents.get(external_id="d1")
    )
    before = timezone.now()
    judgment_services.record_judgment(pair, rater, grade=3)
    (task,) = tasks_but_snapshots().all()
    assert task.task_path == "scoring.tasks.rescore_queries"
    assert task.args_kwargs["args"] == [pool.pk, [pair.query_id]]
    assert task.status == "READY" and task.run_after > before + timedelta(seconds=60)


def test_a_refused_change_leaves_no_task(pool, rater):
    pair = Pair.objects.create(
        pool=pool, query=pool.queries.get(external_id="q1"), document=pool.documents.get(external_id="d1")
    )
    with pytest.raises(judgment_services.JudgmentError):
        judgment_services.record_judgment(pair, rater, grade=9)
    assert not tasks_but_snapshots().exists()


@pytest.mark.django_db(transaction=True)
def test_after_the_commit_the_update_is_done_and_its_task_deleted(pool, rater, configuration):
    graded(pool, rater)
    run = judgment_services.record_run(configuration, {"q1": ["d2", "d1"], "q2": ["d3"]}, source="api")
    assert CellScore.objects.filter(run=run).count() == 2
    assert not tasks_but_snapshots().exists()


@pytest.mark.slow
def test_an_import_killed_after_its_commit_is_scored_by_the_worker(
    child_env, tmp_path, pool, rater, configuration, worker_signals
):
    graded(pool, rater)
    run_file = tmp_path / "bm25.run"
    run_file.write_text("q1 Q0 d2 1 9.0 crash\nq1 Q0 d1 2 8.0 crash\nq2 Q0 d3 1 5.0 crash\n")
    # The process dies as the update after the commit starts: the run is stored, its scores are not.
    crash = (
        "import os, sys, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; django.setup()\n"
        "import scoring.services\n"
        "scoring.services.rescore_run = lambda run: os._exit(9)\n"
        "from django.core.management import call_command\n"
        "call_command('import_run', '--pool', 'robust', '--configuration', 'bm25', sys.argv[1])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", crash, str(run_file)],
        cwd=ROOT,
        env=child_env,
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 9, result.stderr.decode()[-2000:]
    run = Run.objects.get(configuration=configuration, tag="crash")
    assert not CellScore.objects.filter(run=run).exists()
    (task,) = tasks_but_snapshots().all()
    assert (task.task_path, task.args_kwargs["args"], task.status) == (
        "scoring.tasks.score_run",
        [pool.pk, run.pk],
        "READY",
    )

    run_worker()  # not due yet: the update after the commit might still be running
    assert tasks_but_snapshots().get().status == "READY"
    tasks_but_snapshots().update(run_after=timezone.now())  # SAFETY_DELAY later
    run_worker()
    task = tasks_but_snapshots().get()
    assert task.status == "SUCCESSFUL", task.traceback
    assert CellScore.objects.filter(run=run).count() == 2
    again = services.rescore_pool(pool)  # the worker's scores are the right ones: nothing to change
    assert (again.inserted, again.updated, again.deleted) == (0, 0, 0)


def _lock_held(task_id) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s AND objid = %s",
            [tasks._LOCK_KEY, tasks._lock_id(task_id)],
        )
        return cursor.fetchone() is not None


@pytest.mark.slow
def test_a_task_whose_worker_was_killed_is_marked_failed_and_can_be_retried(
    child_env, client, pool, site_admin, engineer, rater, configuration, worker_signals
):
    graded(pool, rater)
    judgment_services.record_run(configuration, {"q1": ["d1", "d2"], "q2": ["d3"]}, source="api")
    result = tasks.recompute_pool.enqueue(pool.pk)
    later = timezone.now() + 2 * tasks.LOST_AFTER
    worker = None
    try:
        # Hold the pool's scoring lock, so that the worker's recompute waits inside the task.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [services._LOCK_KEY, pool.pk])
            worker = subprocess.Popen(
                [sys.executable, "manage.py", "db_worker", "--batch", "--no-reload", "--no-startup-delay"],
                cwd=ROOT,
                env=child_env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 60
            while not (tasks_but_snapshots().get(id=result.id).status == "RUNNING" and _lock_held(result.id)):
                assert time.monotonic() < deadline and worker.poll() is None, "the worker never ran the task"
                time.sleep(0.1)
            assert tasks.fail_lost_tasks(later) == 0  # running, its worker alive: left alone
            worker.kill()
            worker.wait(timeout=10)
        # The server notices the dead client once its waiting statement returns (the lock is released).
        deadline = time.monotonic() + 30
        while _lock_held(result.id):
            assert time.monotonic() < deadline, "the dead worker's lock was never released"
            time.sleep(0.1)
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
    assert tasks_but_snapshots().get(id=result.id).status == "RUNNING"
    assert tasks.fail_lost_tasks() == 0  # claimed a moment ago: may not hold its lock yet
    assert tasks.fail_lost_tasks(later) == 1
    lost = tasks_but_snapshots().get(id=result.id)
    assert lost.status == "FAILED" and lost.exception_class_path == tasks.LOST

    leaderboard = f"/pools/{pool.name}/leaderboard/"
    client.force_login(engineer)
    page = client.get(leaderboard).content.decode()
    assert "Full recompute failed (its worker stopped while running it)" in page
    assert "Retry" not in page  # engineers see the state, admins may act on it
    client.force_login(site_admin)
    page = client.get(leaderboard).content.decode()
    assert "Full recompute failed" in page and ">Retry</button>" in page
    assert client.post(f"/pools/{pool.name}/recompute/", {"next": leaderboard}).status_code == 302
    assert tasks_but_snapshots().filter(status="READY", task_path="scoring.tasks.recompute_pool").count() == 1
    assert "waiting for a task worker" in client.get(leaderboard).content.decode()
    run_worker()
    page = client.get(leaderboard).content.decode()
    assert "failed" not in page and "waiting for a task worker" not in page
