"""Background tasks (django-tasks; `manage.py db_worker` runs them, `make run` starts one)."""

from django_tasks import task

from judgments.models import Pool

from . import services


@task()
def recompute_pool(pool_id: int) -> dict:
    """Recompute every stored score of a pool (what `manage.py score` does). Returns a summary."""
    pool = Pool.objects.get(pk=pool_id)
    summary = services.rescore_pool(pool)
    return {
        "pool": pool.name,
        "runs": summary.runs,
        "queries": summary.queries,
        "rows": summary.rows,
        "seconds": round(summary.seconds, 3),
    }
