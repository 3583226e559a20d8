"""A pool's queries, documents and pairs by external id: looked up, and created when missing, in bulk.

Imports, runs and the judging queue call these (through `services.record_run` too). Each takes the
pool's import lock (judgments.bulk) before creating anything, so that two imports into one pool do not
create the same query, document or pair twice.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence

from django.db import connection, transaction

from . import bulk
from .models import Document, Pool, Query, SearchConfiguration


class Keys(dict):
    """{external id: primary key}; `created`: how many of them were created."""

    created: int = 0


def _lock_pool(pool: Pool) -> None:
    """The pool's import lock (judgments.bulk), taken before creating its queries, documents or pairs."""
    with connection.cursor() as cursor:
        bulk.lock_pool(cursor, pool.pk)


@transaction.atomic
def ensure_queries(pool: Pool, external_ids: Iterable[str]) -> Keys:
    """Map external query ids to primary keys, creating the missing ones (text unknown yet)."""
    wanted = set(external_ids)
    found = Keys(Query.objects.filter(pool=pool, external_id__in=wanted).values_list("external_id", "pk"))
    missing = wanted - found.keys()
    if missing:
        _lock_pool(pool)
        before = len(found)
        Query.objects.bulk_create(
            [Query(pool=pool, external_id=q) for q in sorted(missing)], ignore_conflicts=True
        )
        found = Keys(Query.objects.filter(pool=pool, external_id__in=wanted).values_list("external_id", "pk"))
        found.created = len(found) - before
    return found


@transaction.atomic
def ensure_documents(
    pool: Pool, external_ids: Iterable[str], *, introduced_by: SearchConfiguration | None = None
) -> Keys:
    """Map external document ids to primary keys, creating the missing ones (no content yet).
    `introduced_by`: the configuration whose run names them (new ones stay private to its team's
    eyes where rankings are private, access.documents_for).

    Large sets go through a temporary table: one round trip instead of a giant IN list.
    """
    wanted = set(external_ids)
    if len(wanted) < 5000:
        found = Keys(
            Document.objects.filter(pool=pool, external_id__in=wanted).values_list("external_id", "pk")
        )
        missing = wanted - found.keys()
        if missing:
            _lock_pool(pool)
            before = len(found)
            Document.objects.bulk_create(
                [Document(pool=pool, external_id=d, introduced_by=introduced_by) for d in sorted(missing)],
                ignore_conflicts=True,
                batch_size=5000,
            )
            found = Keys(
                Document.objects.filter(pool=pool, external_id__in=wanted).values_list("external_id", "pk")
            )
            found.created = len(found) - before
        return found
    names, keys, created = copy_documents(
        pool,
        # COPY's text format: ids hold no whitespace (the parsers and a CHECK refuse it); escape "\\".
        lambda copy: copy.write("".join(d.replace("\\", "\\\\") + "\n" for d in wanted)),
        introduced_by=introduced_by,
    )
    found = (
        Keys(zip(names.split("\n"), struct.unpack(f">{len(keys) // 8}q", keys), strict=True))
        if names
        else Keys()
    )
    found.created = created
    return found


def copy_documents(
    pool: Pool,
    write_ids: Callable,
    *,
    introduced_by: SearchConfiguration | None = None,
    in_written_order: bool = False,
) -> tuple[str, bytes, int]:
    """The keys of the document ids that `write_ids(copy)` writes to a COPY (text format, one id a
    line, each once), creating the missing ones without content: (the ids, joined by newlines; their
    keys, as big-endian int8s in the same order; how many were created). With `in_written_order`,
    the keys come in the order the ids were written and the ids are not sent back (""): no Python
    object per id, and nothing to match, for the fast run import (fastrun), which streams millions
    of ids in and reads the keys with numpy."""
    with transaction.atomic(), connection.cursor() as cursor:
        # Hash joins of a million ids stay in memory (bulk.WORK_MEM; 4MB spills them to disk: 2x slower),
        # and never a nested loop: with statistics that say the pool's documents are few (a fresh
        # database), the planner picked one whose inner scan re-read the rows the INSERT was adding,
        # quadratic in the ids (a million of them ran for over 15 minutes).
        # `ord`: the order the ids were written in (COPY inserts its rows in order).
        cursor.execute(
            "CREATE TEMP TABLE IF NOT EXISTS jl_wanted_docs"
            " (external_id text, ord bigint GENERATED ALWAYS AS IDENTITY) ON COMMIT DROP"
        )
        cursor.execute("TRUNCATE jl_wanted_docs RESTART IDENTITY")
        with cursor.copy("COPY jl_wanted_docs (external_id) FROM STDIN") as copy:
            write_ids(copy)
        cursor.execute("ANALYZE jl_wanted_docs")
        # Only the missing ones are inserted, by a plain INSERT: every writer of a pool's documents
        # holds its import lock, so none is inserted meanwhile. ON CONFLICT for 500,000 existing ids
        # took 2.8 s, the anti-join 0.3 s; and ON CONFLICT's speculative insertion of 1,000,000 new
        # ones 1.8x the time of a plain INSERT. The new ones' keys come back from the INSERT itself
        # (a join of the wanted ids with the document table afterwards took 3-9 s for a million).
        bulk.lock_pool(cursor, pool.pk)
        with bulk.local_settings(cursor, work_mem=bulk.WORK_MEM, enable_nestloop="off"):
            cursor.execute(
                """
                WITH existing AS (
                    SELECT d.external_id, d.id FROM judgments_document d
                    JOIN jl_wanted_docs w ON w.external_id = d.external_id WHERE d.pool_id = %s
                ), created AS (
                    INSERT INTO judgments_document (pool_id, external_id, title, body, url, extra, introduced_by_id)
                    SELECT %s, w.external_id, '', '', '', '{}'::jsonb, %s FROM jl_wanted_docs w
                    WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.external_id = w.external_id)
                    ORDER BY w.external_id
                    RETURNING external_id, id
                ), found AS (SELECT * FROM existing UNION ALL SELECT * FROM created)
                -- One row back: the ids run together and their keys as bytes (one aggregate pass, so
                -- the same order): two values, however many ids.
                """
                + (
                    # Back in the written order: one hash join with the wanted ids, on the server.
                    "SELECT '', string_agg(int8send(f.id), ''::bytea ORDER BY w.ord), (SELECT count(*) FROM created)"
                    " FROM found f JOIN jl_wanted_docs w ON w.external_id = f.external_id"
                    if in_written_order
                    else "SELECT string_agg(external_id, E'\\n'), string_agg(int8send(id), ''::bytea),"
                    " (SELECT count(*) FROM created) FROM found"
                ),
                [pool.pk, pool.pk, introduced_by.pk if introduced_by is not None else None],
            )
            names, keys, created = cursor.fetchone()
    return names or "", bytes(keys or b""), created


def insert_pairs(cursor, pool: Pool, source: str, params: Sequence = ()) -> None:
    """Create the pairs of `pool` that `source` (a table, or a parenthesised query with `params`, with
    columns query_id and document_id, each pair once) names and the pool lacks: one set-based INSERT, no per-pair map in
    Python. Pairs that exist are left alone. Every writer of pairs holds the pool's import lock
    (judgments.bulk), so a plain INSERT of the missing ones suffices (no speculative insertion)."""
    bulk.lock_pool(cursor, pool.pk)
    cursor.execute("SELECT EXISTS (SELECT 1 FROM judgments_pair WHERE pool_id = %s)", [pool.pk])
    # A pool without pairs yet (a first import) has none of them: no anti-join (1,000,000 probes).
    missing = (
        "WHERE NOT EXISTS (SELECT 1 FROM judgments_pair p WHERE p.query_id = w.query_id"
        " AND p.document_id = w.document_id)"
        if cursor.fetchone()[0]
        else ""
    )
    cursor.execute(
        f"""
        INSERT INTO judgments_pair (pool_id, query_id, document_id, priority)
        SELECT %s::bigint, w.query_id, w.document_id, 0 FROM {source} w {missing}
        ORDER BY w.query_id, w.document_id
        """,
        [pool.pk, *params],
    )


def ensure_pairs(pool: Pool, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """Map (query pk, document pk) to pair pks, creating the missing pairs."""
    wanted = set(keys)
    if not wanted:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMP TABLE IF NOT EXISTS jl_wanted_pairs (query_id bigint, document_id bigint) ON COMMIT DROP"
        )
        cursor.execute("TRUNCATE jl_wanted_pairs")
        with cursor.copy("COPY jl_wanted_pairs (query_id, document_id) FROM STDIN") as copy:
            for row in wanted:
                copy.write_row(row)
        insert_pairs(cursor, pool, "jl_wanted_pairs")
        cursor.execute(
            """
            SELECT p.query_id, p.document_id, p.id FROM judgments_pair p
            JOIN jl_wanted_pairs w ON w.query_id = p.query_id AND w.document_id = p.document_id
            """
        )
        return {(q, d): pk for q, d, pk in cursor.fetchall()}
