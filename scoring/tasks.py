"""Background tasks (django-tasks with its database backend; `manage.py db_worker` runs them, `make run`
starts one), and what the leaderboard says about them.

Every task takes the pool's id first, so a pool's tasks can be found (`pool_tasks`):
- `recompute_pool(pool_id)`: every score of the pool (the Recompute / Retry button, a new combine rule);
- `score_run(pool_id, run_id)` and `rescore_queries(pool_id, query_ids)`: the safety net of the update
  that follows a new run or changed grades (scoring.receivers): enqueued in the same transaction, due a
  little later, and deleted once the update done right after the commit has succeeded.

A running task holds a session advisory lock (`_LOCK_KEY`, a hash of its id) on its worker's database
connection. PostgreSQL drops it when that connection dies with the worker (`kill -9`, out of memory, a
lost machine), so `fail_lost_tasks` can tell a task that is still running from one whose worker is gone,
and marks the latter failed; the leaderboard shows it with a Retry button for admins.
"""

from __future__ import annotations

import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone
from django_tasks import task
from django_tasks_db.models import DBTaskResult

from judgments.models import Pool, Run

from . import services, stability

# First key of the session advisory lock a running task holds (second key: _lock_id of the task's id).
_LOCK_KEY = 0x7A5C
# A task claimed this recently may not hold its lock yet: it is never judged lost.
LOST_AFTER = timedelta(minutes=1)
PATHS = ("scoring.tasks.recompute_pool", "scoring.tasks.score_run", "scoring.tasks.rescore_queries")
LOST = "scoring.tasks.WorkerLost"


def _lock_id(task_id) -> int:
    return zlib.crc32(str(task_id).encode()) & 0x7FFFFFFF


@contextmanager
def _held_while_running(context):
    """Hold the task's advisory lock on this connection while the task runs (see the module docstring)."""
    key = _lock_id(context.task_result.id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_KEY, key])
    try:
        yield
    finally:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_KEY, key])
        except Exception:  # a broken connection has dropped the lock already
            pass


def _summary(pool_name: str, summary: services.RescoreSummary) -> dict:
    return {
        "pool": pool_name,
        "runs": summary.runs,
        "queries": summary.queries,
        "rows": summary.rows,
        "seconds": round(summary.seconds, 3),
    }


@task(takes_context=True)
def recompute_pool(context, pool_id: int) -> dict:
    """Recompute every stored score of a pool (what `manage.py score` does). Returns a summary."""
    with _held_while_running(context):
        pool = Pool.objects.get(pk=pool_id)
        return _summary(pool.name, services.rescore_pool(pool))


@task(takes_context=True)
def score_run(context, pool_id: int, run_id: int) -> dict:
    """Score a new run on every graded query of its pool (when the update after its commit did not)."""
    with _held_while_running(context):
        run = Run.objects.filter(pk=run_id, configuration__pool_id=pool_id).first()
        if run is None:  # deleted since: nothing to score
            return {"pool": pool_id, "run": run_id, "deleted": True}
        return _summary(run.configuration.pool.name, services.score_new_run(run))


@task(takes_context=True)
def rescore_queries(context, pool_id: int, query_ids: list[int]) -> dict:
    """Rescore these queries of a pool for every run (when the update after a grade change did not)."""
    with _held_while_running(context):
        pool = Pool.objects.filter(pk=pool_id).first()
        if pool is None:
            return {"pool": pool_id, "deleted": True}
        summary = services.rescore_queries(pool, query_ids)
        stability.after_grades(pool)
        return _summary(pool.name, summary)


STABILITY_PATH = "scoring.tasks.measure_stability"


@task(takes_context=True)
def measure_stability(context, pool_id: int) -> dict:
    """Measure and store a pool's stability (scoring.stability.measure), for the leaderboard's panel."""
    with _held_while_running(context):
        pool = Pool.objects.filter(pk=pool_id).first()
        if pool is None:
            return {"pool": pool_id, "deleted": True}
        result = stability.measure(pool)
        return {"pool": pool.name, "expected_tau": round(result.expected_tau, 4), "settled": result.settled}


def request_stability(pool: Pool, due: datetime | None = None) -> None:
    """Ask for a measure_stability of the pool, due now (`due` None) or at `due`.

    Due now: enqueued unless one is waiting or running already (one that runs may have read the scores
    before the latest grade, but a waiting one has not). At `due` (a rater's grade too soon after the
    last measurement, stability.after_grades): the waiting one, if any, is made due then (it has not run,
    so it will read every grade made until then, even when it was due earlier and no worker has taken it
    yet); otherwise one is enqueued for then."""
    statuses = ("READY", "RUNNING") if due is None else ("READY",)
    pending = DBTaskResult.objects.filter(
        task_path=STABILITY_PATH, args_kwargs__args__0=pool.pk, status__in=statuses
    )
    if due is None:
        if not pending.exists():
            measure_stability.enqueue(pool.pk)
    elif not pending.update(run_after=due):
        measure_stability.using(run_after=due).enqueue(pool.pk)


# --- Status and lost workers ----------------------------------------------------------------------------


def pool_tasks(pool: Pool):
    """The scoring tasks of a pool, newest first."""
    return DBTaskResult.objects.filter(task_path__in=PATHS, args_kwargs__args__0=pool.pk).order_by(
        "-enqueued_at"
    )


def fail_lost_tasks(now: datetime | None = None) -> int:
    """Mark failed every scoring task that is RUNNING (for over LOST_AFTER) but whose lock nobody holds:
    its worker died. Returns how many. Cheap: one query when nothing runs."""
    now = now or timezone.now()
    running = list(
        DBTaskResult.objects.running()
        .filter(task_path__in=PATHS, started_at__lt=now - LOST_AFTER)
        .values_list("id", "worker_ids")
    )
    if not running:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT objid::bigint FROM pg_locks
            WHERE locktype = 'advisory' AND granted AND classid = %s AND objsubid = 2
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """,
            [_LOCK_KEY],
        )
        held = {row[0] for row in cursor.fetchall()}
    lost = 0
    for task_id, workers in running:
        if _lock_id(task_id) in held:
            continue
        worker = workers[-1] if workers else "?"
        lost += DBTaskResult.objects.filter(id=task_id, status="RUNNING").update(
            status="FAILED",
            finished_at=now,
            exception_class_path=LOST,
            traceback=f"The worker {worker} stopped while running this task (its database connection is gone).",
        )
    return lost


@dataclass
class PoolStatus:
    """What the leaderboard says about a pool's background scoring."""

    waiting: int = 0  # due and not started: is a db_worker running?
    running: int = 0
    failed: list = field(default_factory=list)  # failed DBTaskResults no later full recompute covers

    @property
    def quiet(self) -> bool:
        return not (self.waiting or self.running or self.failed)


def pool_status(pool: Pool, now: datetime | None = None) -> PoolStatus:
    """Scoring tasks of the pool that are due, running, or failed and not made good by a later recompute."""
    now = now or timezone.now()
    fail_lost_tasks(now)
    tasks = pool_tasks(pool)
    status = PoolStatus(
        waiting=tasks.ready().count(),  # READY and due (a task with no run_after is due at once)
        running=tasks.filter(status="RUNNING").count(),
    )
    last_full = (
        tasks.filter(task_path="scoring.tasks.recompute_pool", status="SUCCESSFUL")
        .values_list("started_at", flat=True)
        .first()
    )
    failed = tasks.filter(status="FAILED")
    if last_full is not None:  # a full recompute that began after a task was enqueued covers its work
        failed = failed.filter(enqueued_at__gte=last_full)
    status.failed = list(failed[:5])
    return status


def describe_failure(task: DBTaskResult) -> str:
    """One line for a failed task: what it was and why it stopped (no traceback)."""
    what = {
        "scoring.tasks.recompute_pool": "Full recompute",
        "scoring.tasks.score_run": "Scoring of a new run",
        "scoring.tasks.rescore_queries": "Update after changed grades",
    }.get(task.task_path, task.task_path)
    if task.exception_class_path == LOST:
        why = "its worker stopped while running it"
    else:
        why = f"it raised {task.exception_class_path.rsplit('.', 1)[-1] or 'an error'}"
    return f"{what} failed ({why})"
