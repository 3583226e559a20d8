"""A queued pool written with set-based SQL, fast: what a database holds after a campaign, for the tests
and benchmarks that need a big pool beside the one they measure (tests/judgments/rating/
test_fresh_pool_plans.py, `bench_grading --busy-database`).

`build(name, queries, docs, raters, graded)`: `queries` queries of `docs` documents each (with title and
body), every pair queued with priority 0; the first `graded` fraction of each query's pairs graded by every
rater of `raters` (the history trigger logs those judgments, as it does for real ones).
"""

from __future__ import annotations

from django.db import connection, transaction

from judgments.models import Pool


def build(
    name: str, *, queries: int, docs: int, raters=(), graded: float = 0.0, members=(), queued: bool = True
) -> Pool:
    """Create the pool `name` (see the module docstring). `members`: users added to the pool; queued=False
    leaves the pairs out of the queue."""
    pool = Pool.objects.create(name=name, description="a queued pool written in bulk", raters_per_pair=2)
    pool.members.add(*members, *raters)
    per_query = round(docs * graded)
    with transaction.atomic(), connection.cursor() as cursor:
        # The joins below are on computed ids of tables just written: whatever the statistics say, hash them.
        cursor.execute("SET LOCAL enable_nestloop = off")
        cursor.execute(
            "INSERT INTO judgments_query (pool_id, external_id, text, information_need)"
            " SELECT %s, 'q' || i, 'query ' || i || ' about things', '' FROM generate_series(0, %s) i",
            [pool.pk, queries - 1],
        )
        cursor.execute(
            "INSERT INTO judgments_document (pool_id, external_id, title, body, url, extra)"
            " SELECT %s, 'd' || i, 'Document ' || i, 'words of document ' || i, '', '{}'"
            " FROM generate_series(0, %s) i",
            [pool.pk, queries * docs - 1],
        )
        # Document 'd<k>' belongs to query 'q<k / docs>'; its position in the query is k % docs.
        cursor.execute(
            "INSERT INTO judgments_pair (pool_id, query_id, document_id, queued_at, priority)"
            " SELECT %(pool)s, q.id, d.id, CASE WHEN %(queued)s THEN now() END, 0 FROM judgments_document d"
            " JOIN judgments_query q ON q.pool_id = %(pool)s"
            " AND q.external_id = 'q' || (substr(d.external_id, 2)::int / %(docs)s)"
            " WHERE d.pool_id = %(pool)s ORDER BY q.id, d.id",
            {"pool": pool.pk, "docs": docs, "queued": queued},
        )
        for n, rater in enumerate(raters):
            cursor.execute("SELECT set_config('judgments.actor', %s, true)", [str(rater.pk)])
            cursor.execute(
                "INSERT INTO judgments_judgment (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note,"
                " created_at, updated_at)"
                " SELECT p.id, %(rater)s, (p.id + %(n)s) %% 5, false, '', '', now(), now()"
                " FROM judgments_pair p JOIN judgments_document d ON d.id = p.document_id"
                " WHERE p.pool_id = %(pool)s AND substr(d.external_id, 2)::int %% %(docs)s < %(graded)s"
                " ORDER BY p.id",
                {"rater": rater.pk, "n": n, "pool": pool.pk, "docs": docs, "graded": per_query},
            )
    return pool


def analyze() -> None:
    """Fresh planner statistics of the tables the queue reads: what autovacuum gives a table after a
    tenth of it changed (a big pool's bulk insert), and never gives it after a small pool's."""
    with connection.cursor() as cursor:
        for table in ("judgments_pair", "judgments_judgment", "judgments_document", "judgments_query"):
            cursor.execute(f"ANALYZE {table}")
