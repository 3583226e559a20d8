"""`manage.py db_worker`: django-tasks-db's worker, kept alive while the database goes away.

The library's worker exits on the first database error: a PostgreSQL restart, a failover or a network blip
killed every worker for good, and background scoring, recomputes, captures and judge runs silently stopped.
This command (the same name and options; settings.INSTALLED_APPS lists django_tasks_db after the app so
this one is found first) runs the same worker, but when the database cannot be reached it logs one warning,
waits with a growing pause (`FIRST_PAUSE` doubling up to `MAX_PAUSE`, with jitter so workers do not come
back at once), tries again until the database answers, logs once that it is back, and carries on. It never
exits for that; SIGINT/SIGTERM still stop it as before (at once while it waits).

A task the outage interrupted cannot be marked failed while the database is down: it is marked failed as
soon as the database is back (status FAILED, its error and traceback, as the library would have), so the
pages show it with its Retry button instead of a task that looks running forever.
"""

from __future__ import annotations

import logging
import random
import time
import traceback

from django.db import DatabaseError, InterfaceError, OperationalError, connections
from django.utils import timezone
from django_tasks_db.management.commands import db_worker
from django_tasks_db.models import DBTaskResult

logger = logging.getLogger("django_tasks_db")

FIRST_PAUSE, MAX_PAUSE = 0.5, 30.0  # seconds between tries while the database is away
# Errors that mean "no database connection" (refused, closed, shutting down, starting up), not a bug.
DATABASE_GONE = (OperationalError, InterfaceError)


def database_answers() -> bool:
    """Whether a fresh connection to the default database answers a query."""
    connections.close_all()
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        connections.close_all()
        return False


class ResilientWorker(db_worker.Worker):
    """The library's Worker, restarted in place whenever the database goes away."""

    first_pause, max_pause = FIRST_PAUSE, MAX_PAUSE

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.interrupted: tuple[DBTaskResult, BaseException] | None = None

    def run(self) -> None:
        while True:
            try:
                self.fail_interrupted()
                return super().run()
            except DATABASE_GONE as error:
                if not self.running:  # asked to stop: nothing to wait for
                    return None
                self.wait_for_database(error)
                self.startup_delay = False

    def run_task(self, db_task_result: DBTaskResult) -> None:
        try:
            super().run_task(db_task_result)
        except DATABASE_GONE as error:  # the task failed, and marking it failed did too
            self.interrupted = (db_task_result, error)
            raise

    def wait_for_database(self, error: BaseException) -> None:
        """Log the outage once, then try again with a growing pause until the database answers."""
        started = time.monotonic()
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        logger.warning(
            "Database unavailable (%s): worker_id=%s waits and retries, up to %.0f s apart.",
            reason,
            self.worker_id,
            self.max_pause,
        )
        pause = self.first_pause
        while True:  # a pause first, even when the database answers at once: never a busy loop
            time.sleep(pause * random.uniform(0.75, 1.25))  # noqa: S311 - jitter, not security
            if database_answers():
                break
            pause = min(pause * 2, self.max_pause)
        logger.warning(
            "Database back after %.1f s: worker_id=%s resumes.", time.monotonic() - started, self.worker_id
        )

    def fail_interrupted(self) -> None:
        """Mark failed the task the outage interrupted, if it still says it is running (forgotten only once
        that is written: the database may go away again first)."""
        if self.interrupted is None:
            return
        task, error = self.interrupted
        DBTaskResult.objects.filter(id=task.id, status="RUNNING").update(
            status="FAILED",
            finished_at=timezone.now(),
            exception_class_path=f"{type(error).__module__}.{type(error).__qualname__}",
            traceback="The database went away while this task ran.\n"
            + "".join(traceback.format_exception(error)),
            return_value=None,
        )
        self.interrupted = None


class Command(db_worker.Command):
    help = "Run a database background worker that waits for the database when it goes away (never exits for that)"

    def handle(self, *args, **options):
        # The library builds its Worker in handle(); this is the one place to swap it for ours.
        original = db_worker.Worker
        db_worker.Worker = ResilientWorker
        try:
            return super().handle(*args, **options)
        finally:
            db_worker.Worker = original
