"""Captures in the background (django-tasks; `manage.py db_worker` runs them, `make run` starts one)."""

from __future__ import annotations

from django.db import transaction
from django_tasks import task

from judgments.models import SearchConfiguration
from judgments.models.capture import CaptureJob

from . import services


@task()
def capture_configuration(job_id: int) -> dict:
    """Run a queued capture (services.run_capture) and return its outcome."""
    job = CaptureJob.objects.select_related("configuration__pool", "endpoint").get(pk=job_id)
    if job.status == CaptureJob.Status.QUEUED:
        services.run_capture(job)
    return {
        "capture": job.pk,
        "status": job.status,
        "run": job.run_id,
        "done": job.done,
        "failed": job.failed,
        "message": job.message,
    }


def enqueue_capture(configuration: SearchConfiguration, **options) -> CaptureJob:
    """Start a capture (services.start_capture options) and hand it to the worker once committed."""
    job = services.start_capture(configuration, **options)
    transaction.on_commit(lambda: capture_configuration.enqueue(job.pk))
    return job
