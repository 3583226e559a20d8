"""Signal receivers (connected in ScoringConfig.ready): grades and runs in, rescoring out."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from contextlib import contextmanager

from django.db import connection, transaction

from judgments.models import Pool, Run

from . import services, tasks

logger = logging.getLogger(__name__)
# From this many changed pairs on (a big import), grades_changed recomputes the whole pool.
MANY_PAIRS = 100_000


# --- Signal receivers (connected in ScoringConfig.ready) ---------------------------------------------


def on_grades_changed(sender, pool: Pool, pair_ids: Iterable[int], **kwargs) -> None:
    """judgments.signals.grades_changed: rescore every run on the queries of the changed pairs. After
    a big import (MANY_PAIRS or more), the whole pool: looking the queries up from a million pair ids
    took 1.7 s, and most queries have changed anyway (the recompute writes only rows that differ)."""
    ids = list(pair_ids)
    with _or_recompute_later(pool.pk):
        if len(ids) >= MANY_PAIRS:
            services.rescore_pool(pool)
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT DISTINCT query_id FROM judgments_pair WHERE id = ANY(%s)", [ids])
            query_ids = [row[0] for row in cursor.fetchall()]
        services.rescore_queries(pool, query_ids)


def on_run_submitted(sender, run: Run, **kwargs) -> None:
    """judgments.signals.run_submitted: score the new run on every graded query of its pool."""
    with _or_recompute_later(run.configuration.pool_id):
        services.rescore_run(run)


@contextmanager
def _or_recompute_later(pool_id: int):
    """The grade or run that triggered an update is already committed: if the update fails, log it and
    queue a full recompute of the pool (tasks.recompute_pool) rather than fail the user's request."""
    try:
        yield
    except Exception:
        logger.exception("incremental scoring of pool %s failed; queueing a full recompute", pool_id)
        tasks.recompute_pool.enqueue(pool_id)


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
    whole pool is recomputed, in the background (tasks.recompute_pool) once the change is committed."""
    before = instance.__dict__.pop("_stored_grade_settings", None)
    now = tuple(getattr(instance, name) for name in GRADE_SETTINGS)
    if created or before is None or tuple(before) == now:
        return
    pool_id = instance.pk
    transaction.on_commit(lambda: tasks.recompute_pool.enqueue(pool_id))
