"""Signal receivers (connected in ScoringConfig.ready): grades and runs in, rescoring out.

judgments sends grades_changed and run_submitted inside the transaction that made the change. Each
receiver there enqueues the update as a task (the task queue lives in the same database, so the task
row commits or rolls back with the grade or run), due `SAFETY_DELAY` later; right after the commit it
does the update itself and deletes the task (a grade's, in a request: once its response is sent,
judgments.after_response) (in one transaction for a grade's few queries). A process that dies between the commit and the update
leaves the task behind, and a db_worker runs it; an update that fails makes the task due at once.

`services` (numpy) and `tasks` are imported when a receiver runs, not when the app registry connects
the receivers: a command that changes no grade (an export) starts without numpy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from judgments import after_response, snapshots
from judgments.models import Pool, Run
from judgments.services import commit_without_waiting

logger = logging.getLogger(__name__)
# From this many changed pairs on (a big import), grades_changed recomputes the whole pool.
MANY_PAIRS = 100_000
# How long the enqueued safety net waits for the update done after the commit (normally milliseconds;
# a big run takes seconds). Past it a db_worker runs it as well, which is harmless, only redundant.
SAFETY_DELAY = timedelta(minutes=2)
# Pools whose stability this process has seen a measurement task waiting for, and when it is due: until
# then a grade asks nothing of the database about stability, since that task measures it too (it reads
# the scores once due, after the grade's commit). Only a shortcut: a process that has not seen the task
# checks the database, and a lost entry costs one check.
_MEASUREMENT_DUE: dict[int, datetime] = {}


# --- Signal receivers (connected in ScoringConfig.ready) ---------------------------------------------


def on_grades_changed(
    sender, pool: Pool, pair_ids: Iterable[int], query_ids: Iterable[int] | None = None, **kwargs
) -> None:
    """judgments.signals.grades_changed: rescore every run on the queries of the changed pairs (looked up
    unless the sender gave them), then re-measure the leaderboard's stability where it is measured live.
    After a big import (MANY_PAIRS or more), the whole pool: looking the
    queries up from a million pair ids took 1.7 s, and most queries have changed anyway (the recompute
    writes only rows that differ)."""
    from . import services, stability, tasks

    ids = list(pair_ids)
    if len(ids) >= MANY_PAIRS:
        _update_after_commit(tasks.recompute_pool, [pool.pk], lambda: services.rescore_pool(pool))
        return
    if query_ids is not None:
        query_ids = sorted(set(query_ids))
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT DISTINCT query_id FROM judgments_pair WHERE id = ANY(%s)", [ids])
            query_ids = sorted(row[0] for row in cursor.fetchall())

    def update() -> None:
        services.rescore_queries(pool, query_ids)
        # Pools measured live: settled or not, after this grade (or in a task shortly after).
        due = _MEASUREMENT_DUE.get(pool.pk)
        if due is None or timezone.now() >= due:
            stability.after_grades(pool, later=lambda due: _measure_later(pool, due))

    _update_after_commit(
        tasks.rescore_queries, [pool.pk, query_ids], update, small=len(query_ids) <= services.FEW_QUERIES
    )


def _measure_later(pool: Pool, due: datetime) -> None:
    """Ask for the pool's stability measurement at `due` (a task), and remember it once this transaction
    commits."""
    from . import tasks

    tasks.request_stability(pool, due)
    transaction.on_commit(lambda: _MEASUREMENT_DUE.__setitem__(pool.pk, due))


def on_run_submitted(sender, run: Run, **kwargs) -> None:
    """judgments.signals.run_submitted: score the new run on every graded query of its pool, then
    re-measure the leaderboard's stability where it is measured live."""
    from . import services, stability, tasks

    pool_id = run.configuration.pool_id

    def update() -> None:
        services.score_new_run(run)
        stability.after_grades(run.configuration.pool)  # a new run may unsettle the ordering

    _update_after_commit(tasks.score_run, [pool_id, run.pk], update)


def on_capture_failed(sender, job, **kwargs) -> None:
    """judgments.signals.capture_failed: tell the pool's webhooks (a delivery row and a queued task)."""
    from .webhooks import events

    events.safely(events.capture_failed, job)


def _update_after_commit(task, args: list, update: Callable[[], object], *, small: bool = False) -> None:
    """Enqueue `task(*args)` in the current transaction, due SAFETY_DELAY later; after the commit, run
    `update()` and delete the task; if it fails, log it and make the task due now. `small`: a few
    queries' cells (a rater's grade), done in one transaction with the task's deletion."""
    backend = task.get_backend()
    if not backend.supports_defer:  # e.g. the immediate backend in a development setting: no safety net
        transaction.on_commit(lambda: _guarded(update, None, small))
        return
    result = task.using(run_after=timezone.now() + SAFETY_DELAY).enqueue(*args)
    if small:  # a grade's few queries: in a request, after its response is sent (nothing on it changes)
        transaction.on_commit(lambda: after_response.defer(lambda: _guarded(update, result.id, small)))
    else:
        transaction.on_commit(lambda: _guarded(update, result.id, small))


def _delete_task(task_id) -> None:
    """The task's work is done: delete it (unless a worker has taken it meanwhile)."""
    DBTaskResult.objects.filter(id=task_id, status="READY").delete()


def _guarded(update: Callable[[], object], task_id, small: bool = False) -> None:
    """The grade or run is committed already: a failed update must not fail the user's request.

    A small update (a grade's few queries) and its task's deletion commit together, without waiting for
    the disk: lost in a crash of the database server, both are, and the task (committed durably with the
    grade) is run by a db_worker. A big one (a new run, a whole pool) runs in its own transaction at the
    top level, where it reads ahead on a second connection; the task is deleted afterwards, also without
    waiting (lost, the task runs again: harmless)."""
    try:
        if small:
            with transaction.atomic():
                commit_without_waiting()
                update()
                if task_id:
                    _delete_task(task_id)
        else:
            update()
            if task_id:
                with transaction.atomic():
                    commit_without_waiting()
                    _delete_task(task_id)
    except Exception:
        logger.exception("incremental scoring failed; its task %s is due now", task_id)
        if task_id is None:
            return
        try:
            DBTaskResult.objects.filter(id=task_id, status="READY").update(run_after=timezone.now())
        except Exception:  # the database went away: the task stays, due at its time
            logger.exception("could not update scoring task %s", task_id)


# What a pool's combined grades depend on: changing one of these changes every combined grade.
GRADE_SETTINGS = ("combine_rule", "grade_source")


def remember_combine_rule(sender, instance: Pool, update_fields=None, **kwargs) -> None:
    """pre_save of Pool: note the stored combine rule and grade source, to see in post_save whether
    either changed."""
    if instance.pk and (update_fields is None or set(GRADE_SETTINGS) & set(update_fields)):
        instance._stored_grade_settings = (
            Pool.objects.filter(pk=instance.pk).values_list(*GRADE_SETTINGS).first()
        )


def on_pool_saved(sender, instance: Pool, created: bool = False, **kwargs) -> None:
    """post_save of Pool: a new combine rule or grade source changes every combined grade, so the
    whole pool is recomputed in the background (tasks.recompute_pool), enqueued with the change."""
    before = instance.__dict__.pop("_stored_grade_settings", None)
    now = tuple(getattr(instance, name) for name in GRADE_SETTINGS)
    if created or before is None or tuple(before) == now:
        return
    from . import tasks

    tasks.recompute_pool.enqueue(instance.pk)  # in the saving transaction, if any: durable with it
    snapshots.mark_changed(instance.pk)  # agreement, trust and estimates follow the grade rule too
