"""Planner statistics of the judging queue, kept right when a pool's queue grows.

PostgreSQL plans from statistics that autovacuum refreshes after a tenth of a table changed. A new pool in a
database that holds bigger ones never gets there: until someone runs ANALYZE, the planner takes the new
pool for about one pair. The queue statements are written to stay linear in the pool whatever the planner
believes (`grading`); the statistics refreshed here let it pick the cheap index for the per-pair checks as
well (a pair by its id rather than by a scan of its pool). Queueing calls `refresh_after_queueing` once its
transaction commits.
"""

from __future__ import annotations

import json
import logging

from django.db import DatabaseError, connection

logger = logging.getLogger(__name__)

# Fewer newly queued pairs than this are not worth an ANALYZE: a plan over a few hundred rows is cheap
# whichever way the planner goes.
MIN_NEW_PAIRS = 200


def estimated_queue(pool_id: int) -> float:
    """The planner's estimate of the pool's queued pairs (what the queue statements start from)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM judgments_pair WHERE pool_id = %s AND queued_at IS NOT NULL",
            [pool_id],
        )
        (plan,) = cursor.fetchone()
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return float(plan[0]["Plan"]["Plan Rows"])


def refresh_after_queueing(pool_id: int, new: int) -> bool:
    """ANALYZE the pairs table when `new` pairs were just queued in the pool and the planner believes it
    holds fewer than half of them. Returns whether it ran. ANALYZE reads a fixed sample (not the table) and
    takes no lock that readers or writers wait for; a database user that does not own the table gets a
    warning from PostgreSQL and no error. A failure is logged, never raised: the queue is built already."""
    if new < MIN_NEW_PAIRS:
        return False
    try:
        if estimated_queue(pool_id) >= new / 2:
            return False
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE judgments_pair")
    except DatabaseError:
        logger.warning("could not refresh the planner statistics of judgments_pair", exc_info=True)
        return False
    logger.info(
        "planner statistics of judgments_pair refreshed: %d pairs newly queued in pool %d", new, pool_id
    )
    return True
