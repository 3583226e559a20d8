"""Judging runs in the background (django-tasks; `manage.py db_worker` runs them, `make run` starts one).

The page creates the run's JudgeRun row (status queued) and enqueues `judge_run` with its id once the
row is committed; the worker fills the row in as it goes (services.judge_pool), so the judge's page
shows the progress whichever process does the work.
"""

from django.db import transaction
from django_tasks import task

from judgments.models import JudgeRun, ModelJudge

from . import services


def start_run(
    judge: ModelJudge,
    selection: str,
    *,
    limit: int | None = None,
    max_calls: int | None = None,
    max_tokens: int | None = None,
    user=None,
) -> JudgeRun:
    """Queue a judging run of `judge` for the worker (the page checks first that none is active)."""
    run = JudgeRun.objects.create(
        judge=judge,
        selection=selection,
        limit=limit,
        max_calls=max_calls,
        max_tokens=max_tokens,
        started_by=user,
        source="page",
    )
    transaction.on_commit(lambda: judge_run.enqueue(run.pk))
    return run


@task()
def judge_run(run_id: int) -> dict:
    """Do a queued judging run (see services.judge_pool). Returns its counts."""
    run = JudgeRun.objects.select_related("judge__pool", "judge__user", "started_by").get(pk=run_id)
    if run.status != JudgeRun.Status.QUEUED:  # cancelled while it waited
        return {"run": run.pk, "status": run.status, "skipped": True}
    run = services.judge_pool(
        run.judge,
        run.selection,
        limit=run.limit,
        max_calls=run.max_calls,
        max_tokens=run.max_tokens,
        run=run,
        started_by=run.started_by,
    )
    return {
        "run": run.pk,
        "status": run.status,
        "total": run.total,
        "graded": run.graded,
        "cant_judge": run.cant_judge,
        "failures": run.failures,
        "calls": run.calls,
        "tokens": run.tokens,
        "message": run.message,
    }
