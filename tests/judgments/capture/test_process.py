"""capture_run as a real process, stopped mid-way: killed (SIGKILL) or interrupted (Ctrl-C, SIGTERM).
Nothing is written either way; an interrupted capture says so and exits 1 without a traceback."""

import signal
import time

import pytest

from judgments.capture import services
from judgments.models import Document, Query, Ranking, Run, SearchConfiguration
from judgments.models.capture import STALE_AFTER, CaptureJob

from .conftest import es_answer, json_response

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def slow_configuration(search_pool, team, httpserver):
    """40 more queries, and an engine that takes 0.1 s a query."""
    Query.objects.bulk_create(
        [Query(pool=search_pool, external_id=f"x{i:02}", text=f"slow {i}") for i in range(40)]
    )

    def slow(request):
        time.sleep(0.1)
        return json_response(es_answer([("brand-new-doc", 2.0), ("solar-1", 1.0)]))

    httpserver.expect_request("/docs/_search").respond_with_handler(slow)
    configuration = SearchConfiguration.objects.create(pool=search_pool, team=team, name="es")
    services.set_endpoint(configuration, kind="elasticsearch", url=httpserver.url_for("/docs/_search"))
    return configuration


def _start_and_wait_until_midway(configuration):
    process = manage_py_capture()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job = CaptureJob.objects.filter(configuration=configuration).first()
        if job is not None and job.done >= 5:
            return process, job
        if process.poll() is not None:
            pytest.fail(f"capture_run ended early: {process.communicate()}")
        time.sleep(0.05)
    process.kill()
    pytest.fail("the capture made no progress")


def manage_py_capture():
    from .conftest import manage_py

    return manage_py("capture_run", "--pool", "search", "--configuration", "es", "--concurrency", "1")


def test_a_capture_killed_midway_writes_nothing(slow_configuration):
    documents = Document.objects.count()
    process, job = _start_and_wait_until_midway(slow_configuration)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    assert not Run.objects.exists() and not Ranking.objects.exists()
    assert Document.objects.count() == documents  # not even the engine's unknown documents
    job.refresh_from_db()
    assert job.status == CaptureJob.Status.RUNNING and 5 <= job.done < job.total  # left as it died
    CaptureJob.objects.filter(pk=job.pk).update(updated_at=job.updated_at - STALE_AFTER * 2)
    job.refresh_from_db()
    assert job.stale and not job.active  # shown as interrupted; a new capture may start
    services.start_capture(slow_configuration, trigger=CaptureJob.Trigger.WEB)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_capture_is_cancelled_and_writes_nothing(slow_configuration, sig):
    process, job = _start_and_wait_until_midway(slow_configuration)
    process.send_signal(sig)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 1
    assert "Cancelled after" in err and "nothing was stored" in err and "Traceback" not in err
    assert out == "" and not Run.objects.exists() and not Ranking.objects.exists()
    job.refresh_from_db()
    assert job.status == CaptureJob.Status.CANCELLED and job.finished_at is not None
