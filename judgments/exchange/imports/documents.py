"""Import documents from JSON lines: create or update by id, all or nothing.

Each line is ``{"id", "title"?, "body"?, "url"?, ...}``; keys other than those four are kept in the
document's ``extra``. A line replaces the content of the document with that id (title, body, url and
extra), so re-importing a corrected file fixes every document in it. The rows go through COPY into a
temporary table and one ``INSERT ... ON CONFLICT DO UPDATE``: one statement however large the file.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import DatabaseError, connection, transaction

from judgments import bulk
from judgments.exchange.formats import MAX_PROBLEMS, FormatError, Problem, parse_documents_jsonl
from judgments.models import Pool

from .checks import database_refused
from .trec import ImportSummary

MAX_EXTRA_DEPTH = 64


def _extra_problem(value: Any, depth: int = 0) -> str | None:
    """What PostgreSQL's jsonb would refuse in `extra`: NUL characters (in keys or strings) and
    absurd nesting."""
    if depth > MAX_EXTRA_DEPTH:
        return f"is nested more than {MAX_EXTRA_DEPTH} levels deep"
    if isinstance(value, str):
        return (
            "contains a NUL character (\\u0000), which the database cannot store" if "\x00" in value else None
        )
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _extra_problem(key, depth + 1) or _extra_problem(item, depth + 1)
            if problem:
                return problem
    elif isinstance(value, list):
        for item in value:
            problem = _extra_problem(item, depth + 1)
            if problem:
                return problem
    return None


def import_documents(pool: Pool, stream, *, name: str) -> ImportSummary:
    """Create the file's documents in `pool` or replace the content of those that exist."""
    records = parse_documents_jsonl(stream, name)
    problems = []
    for record in records:
        for key, value in record.extra.items():
            problem = _extra_problem(key) or _extra_problem(value)
            if problem:
                problems.append(Problem(record.line, key, f"{key} {problem}"))
                break
        if len(problems) >= MAX_PROBLEMS:
            break
    if problems:
        raise FormatError(name, problems)
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            bulk.lock_pool(cursor, pool.pk)  # one writer of the pool's documents at a time
            cursor.execute(
                "CREATE TEMP TABLE IF NOT EXISTS jl_import_docs (external_id text PRIMARY KEY, title text,"
                " body text, url text, extra jsonb) ON COMMIT DROP"
            )
            cursor.execute("TRUNCATE jl_import_docs")
            with cursor.copy("COPY jl_import_docs (external_id, title, body, url, extra) FROM STDIN") as copy:
                for r in records:
                    copy.write_row(
                        (r.doc_id, r.title, r.body, r.url, json.dumps(r.extra, ensure_ascii=False))
                    )
            # Unchanged documents are not rewritten (and not counted as updated).
            cursor.execute(
                """
                INSERT INTO judgments_document AS d (pool_id, external_id, title, body, url, extra)
                SELECT %s, i.external_id, i.title, i.body, i.url, i.extra FROM jl_import_docs i
                ON CONFLICT (pool_id, external_id) DO UPDATE
                    SET title = EXCLUDED.title, body = EXCLUDED.body, url = EXCLUDED.url, extra = EXCLUDED.extra,
                        introduced_by_id = NULL  -- pool material now (access.documents_for)
                    WHERE (d.title, d.body, d.url, d.extra) IS DISTINCT FROM
                          (EXCLUDED.title, EXCLUDED.body, EXCLUDED.url, EXCLUDED.extra)
                       OR d.introduced_by_id IS NOT NULL
                RETURNING (xmax = 0)
                """,
                [pool.pk],
            )
            written = [inserted for (inserted,) in cursor.fetchall()]
    except DatabaseError as exc:
        raise database_refused(name, exc) from None
    created = sum(written)
    return ImportSummary(
        name, "documents", len(records), created, len(written) - created, len(records) - len(written)
    )
