"""Shared by the capture commands (capture_run, capture_due): run a capture in this process with a
progress bar on a terminal, Ctrl-C or SIGTERM cancelling it, and its outcome written out."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

from django.core.management.base import BaseCommand
from tqdm import tqdm

from judgments.models.capture import CaptureJob

from . import services

MAX_PRINTED = 50  # failed queries printed with their error (the job keeps up to services.MAX_LISTED)


@contextmanager
def cancel_on_signals():
    """An Event set by Ctrl-C or SIGTERM (in the main thread) for as long as the block runs."""
    cancel = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield cancel
        return
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in saved:
        signal.signal(sig, lambda *_: cancel.set())
    try:
        yield cancel
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def run_with_progress(
    command: BaseCommand, job: CaptureJob, cancel: threading.Event, **options
) -> CaptureJob:
    """services.run_capture with a progress bar (queries done, failures, queries/s) on a terminal."""
    bar = None
    if getattr(command.stderr, "isatty", lambda: False)():  # a terminal: not a pipe, a log or cron
        bar = tqdm(
            total=job.total, unit="q", desc=job.configuration.name, file=command.stderr._out, leave=False
        )

    def progress(current: CaptureJob) -> None:
        bar.total = current.total
        bar.update(current.done - bar.n)
        bar.set_postfix(failed=current.failed, refresh=False)

    try:
        return services.run_capture(job, cancel=cancel, on_progress=progress if bar else None, **options)
    finally:
        if bar is not None:
            bar.close()


def report(command: BaseCommand, job: CaptureJob) -> bool:
    """Write the outcome: the run on stdout, notes and failed queries on stderr. True if a run was stored."""
    for note in job.notes:
        command.stderr.write(f"note: {note}")
    if job.failures:
        command.stderr.write(f"{job.failed} failed {'query' if job.failed == 1 else 'queries'}:")
        for failure in job.failures[:MAX_PRINTED]:
            command.stderr.write(f"  {failure['query_id']}: {failure['error']}")
        if job.failed > MAX_PRINTED:
            command.stderr.write(
                f"  ... and {job.failed - MAX_PRINTED} more (the capture #{job.pk} page lists them)"
            )
    if job.status == CaptureJob.Status.SUCCEEDED:
        config = job.configuration
        command.stdout.write(
            f"{config.pool.name}/{config.name}: {job.message} Captured in {_seconds(job)} "
            f"({job.rate:g} queries/s, capture #{job.pk}, endpoint v{job.endpoint.version}); scored."
        )
        return True
    return False


def _seconds(job: CaptureJob) -> str:
    if job.started_at and job.finished_at:
        return f"{(job.finished_at - job.started_at).total_seconds():.1f} s"
    return "?"
