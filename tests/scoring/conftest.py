"""Fixtures shared with other test packages (and the task-row helper of the scoring task tests): the
try-a-query page asks the demo engine of a search pool
(the capture tests'); the scores API is tried in the API tests' world (tests/judgments/api/conftest.py)."""

from django_tasks_db.models import DBTaskResult

from tests.judgments.api.conftest import client_for, world  # noqa: F401
from tests.judgments.capture.conftest import engine, live_configuration, search_pool  # noqa: F401


def tasks_but_snapshots():
    """The task rows but the pools' snapshot refreshes (judgments.snapshots), which every grade and run
    also enqueues, and the stability re-measures a grade asks for when its pool was measured moments ago
    (scoring.stability.LIVE_INTERVAL)."""
    return DBTaskResult.objects.exclude(
        task_path__in=["judgments.snapshots.refresh_snapshots", "scoring.tasks.measure_stability"]
    )
