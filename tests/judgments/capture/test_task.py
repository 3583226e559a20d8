"""The background capture: started from the page, run by a real db_worker, the run stored and scored."""

import signal

import pytest
from django.core.management import call_command
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from judgments.models import Run
from judgments.models.capture import CaptureJob
from scoring.models import CellScore
from tests.conftest import login


def tasks_but_snapshots():
    """The task rows but the pools' snapshot refreshes (judgments.snapshots), which every grade and run
    also enqueues."""
    return DBTaskResult.objects.exclude(task_path="judgments.snapshots.refresh_snapshots")


@pytest.fixture
def worker_signals():
    """db_worker installs its own SIGINT/SIGTERM handlers; put pytest's back afterwards."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.django_db(transaction=True)
def test_the_capture_button_runs_in_the_worker_and_stores_a_scored_run(
    client, engineer, rater, live_configuration, worker_signals
):
    from judgments.models import Document, Pair, Query
    from judgments.services import record_judgment

    pair = Pair.objects.create(
        pool=live_configuration.pool,
        query=Query.objects.get(external_id="q3"),
        document=Document.objects.get(external_id="bike-1"),
    )
    record_judgment(pair, rater, grade=4)
    login(client, engineer)
    client.post(
        reverse("capture:capture-start", args=[live_configuration.pk]), {"depth": "10", "concurrency": "4"}
    )
    job = CaptureJob.objects.get()
    assert job.status == "queued" and not Run.objects.exists()
    call_command("db_worker", batch=True, startup_delay=False, reload=False, interval=0, verbosity=0)

    task = tasks_but_snapshots().get()
    assert task.status == "SUCCESSFUL", task.traceback
    job.refresh_from_db()
    assert job.status == "succeeded" and task.return_value["run"] == job.run_id
    assert job.run.source == "endpoint" and job.run.submitted_by == engineer
    assert CellScore.objects.filter(run=job.run, query__external_id="q3").exists()
