"""A task for the worker tests (tests/judgments/test_db_worker.py): importable by the db_worker child
processes they start, as `tests.worker_tasks`."""

import time

from django.db import connection
from django_tasks import task


@task()
def pause_and_query(seconds: float) -> int:
    """Sleep, then ask the database something (so an outage reaches the tasks running through it)."""
    time.sleep(seconds)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM django_tasks_database_dbtaskresult")
        return cursor.fetchone()[0]
