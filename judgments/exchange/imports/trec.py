"""Import TREC-style files into a pool: queries (TSV or JSON lines), qrels and runs.

Every import is all or nothing: the file is parsed and checked completely first (judgments.exchange.formats
collects every problem with its line and field), then written in one transaction. A problem raises
`FormatError(name, problems)`; `str(error)` is one "file:line: field: message" line per problem.
Scores follow through the `grades_changed` / `run_submitted` signals, sent inside the transaction.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import connection, transaction

from judgments import bulk, pool_keys, services
from judgments.exchange.formats import (
    FormatError,
    Problem,
    parse_grade_map,
    parse_qrels,
    parse_queries,
    parse_run,
)
from judgments.models import Pool, Query, Run, SearchConfiguration
from judgments.signals import grades_changed
from judgments.words import counted

from . import fastrun, qrels_table
from .checks import refuse_distractors

QRELS_RATER_PREFIX = "qrels:"
ANALYZE_AFTER = 20_000  # judgments in one file


SINGULAR = {"queries": "query", "documents": "document", "judgments": "judgment"}


@dataclass(frozen=True)
class ImportSummary:
    """What an import did. `created`/`updated`/`unchanged` count queries (import_queries) or judgments
    (import_qrels); `queries_created`/`documents_created` count what a qrels file brought in."""

    name: str
    kind: str
    read: int
    created: int
    updated: int
    unchanged: int
    queries_created: int = 0
    documents_created: int = 0
    rater: str = ""
    skipped: int = 0  # rows without a grade (Quepid's unrated pairs, RRE's queries without documents)

    def __str__(self) -> str:
        one = SINGULAR.get(self.kind, self.kind)
        text = (
            f"{self.name}: {counted(self.read, one, self.kind)} read: {self.created} created, "
            f"{self.updated} updated, {self.unchanged} unchanged"
        )
        if self.kind == "judgments":
            text += (
                f"; {counted(self.queries_created, 'new query')}, "
                f"{counted(self.documents_created, 'new document')}; rater {self.rater}"
            )
            if self.skipped:
                text += f"; {counted(self.skipped, 'unrated row')} skipped"
        return text


def file_rater_username(name: str) -> str:
    """Username of the non-login account a qrels file's judgments are attributed to by default."""
    base = os.path.basename(name.replace("\\", "/")) or "file"
    return (QRELS_RATER_PREFIX + "".join("_" if ch.isspace() else ch for ch in base))[:150]


def file_rater(name: str):
    """The non-login account named after a qrels file, created (with an unusable password) if missing."""
    User = get_user_model()
    user, created = User.objects.get_or_create(username=file_rater_username(name))
    if created or user.has_usable_password():
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


# --- Queries ---------------------------------------------------------------------------------------


def import_queries(pool: Pool, stream, *, name: str) -> ImportSummary:
    """Create the file's queries in `pool`, or update the text (and information need, fields and tags, when
    the line gives them) of those that exist. TSV `qid<TAB>text[<TAB>tags]` or JSON lines `{"id", "text",
    "information_need", "fields", "tags"}`. A bad line (a bad tag too) stores nothing."""
    records = parse_queries(stream, name)
    with transaction.atomic():
        with connection.cursor() as cursor:
            bulk.lock_pool(cursor, pool.pk)  # every writer of a pool's queries holds it (see bulk)
        existing = {
            external_id: (pk, text, need, fields, tags)
            for pk, external_id, text, need, fields, tags in Query.objects.filter(pool=pool).values_list(
                "pk", "external_id", "text", "information_need", "fields", "tags"
            )
        }
        new: list[Query] = []
        changed: list[Query] = []
        unchanged = 0
        for record in records:
            found = existing.get(record.query_id)
            if found is None:
                new.append(
                    Query(
                        pool=pool,
                        external_id=record.query_id,
                        text=record.text,
                        information_need=record.information_need,
                        fields=record.fields or {},
                        tags=record.tags or [],
                    )
                )
                continue
            pk, text, need, fields, tags = found
            new_need = record.information_need or need  # TSV has no need: keep the one stored
            new_fields = fields if record.fields is None else record.fields  # a line without: kept
            new_tags = tags if record.tags is None else record.tags  # a line without: kept
            if (record.text, new_need, new_fields, new_tags) == (text, need, fields, tags):
                unchanged += 1
            else:
                changed.append(
                    Query(
                        pk=pk, text=record.text, information_need=new_need, fields=new_fields, tags=new_tags
                    )
                )
        Query.objects.bulk_create(new, batch_size=5000)
        Query.objects.bulk_update(changed, ["text", "information_need", "fields", "tags"], batch_size=5000)
    return ImportSummary(name, "queries", len(records), len(new), len(changed), unchanged)


# --- Qrels -----------------------------------------------------------------------------------------


def _grade_map(grade_map, name: str) -> dict[int, int | None] | None:
    if grade_map is None or isinstance(grade_map, Mapping):
        return dict(grade_map) if grade_map else None
    try:
        return parse_grade_map(grade_map)
    except ValueError as exc:
        raise FormatError(name, [Problem(0, "grade map", str(exc))]) from None


def import_qrels(pool: Pool, stream, *, name: str, rater=None, grade_map=None, actor=None) -> ImportSummary:
    """Store a TREC qrels file (`qid iter docid grade`) as `rater`'s judgments in `pool`.

    rater: a user; default the non-login account "qrels:<file name>" (see file_rater). Importing the
    same file again by the same rater updates the grades that changed. grade_map: {file grade: grade
    0-4, -1 or None to skip the line}, or its text form "-2:0,-1:skip"; without it, grades other than
    0-4 are problems, and so is -1 (the distractor grade) unless the pool enables it. Unknown queries and documents are created. actor: who is recorded in the judgment
    history as having made the change (default the rater).
    """
    gmap = _grade_map(grade_map, name)
    data, stream = fastrun.as_bytes(stream)
    table = qrels_table.read_common(data) if data is not None and not gmap else None
    if table is None:  # any other shape, or a problem: the general parser names it
        records = parse_qrels(stream, name, grade_map=gmap)
        refuse_distractors(pool, name, ((r.line, r.grade) for r in records))
        table = qrels_table.QrelsTable.from_records(records)
    del data, stream
    read = len(table)
    with transaction.atomic(), connection.cursor() as cursor:
        bulk.lock_pool(cursor, pool.pk)  # before anything else: imports into a pool queue up here
        if rater is None:
            rater = file_rater(name)
        actor = actor or rater
        # The rows the new ones refer to, locked as a foreign-key check would lock them; those of
        # this pool created after the import lock was taken are this import's own (every writer of a
        # pool's queries, documents and pairs holds that lock), and need none.
        cursor.execute(
            "SELECT (SELECT max(id) FROM judgments_query), (SELECT max(id) FROM judgments_document),"
            " (SELECT max(id) FROM judgments_pair)"
        )
        older = [key or 0 for key in cursor.fetchone()]
        references = [
            ("judgments_pool", "SELECT %s", [pool.pk]),
            (get_user_model()._meta.db_table, "SELECT unnest(%s::bigint[])", [[rater.pk, actor.pk]]),
            ("judgments_query", "SELECT query_id FROM jl_import_qrels WHERE query_id <= %s", [older[0]]),
            (
                "judgments_document",
                "SELECT document_id FROM jl_import_qrels WHERE document_id <= %s",
                [older[1]],
            ),
            ("judgments_pair", "SELECT pair_id FROM jl_import_written WHERE pair_id <= %s", [older[2]]),
        ]
        # Sorts and hash joins of a million rows in memory (bulk.WORK_MEM), for this import's statements only.
        with (
            bulk.local_settings(cursor, work_mem=bulk.WORK_MEM),
            bulk.rows_checked_in_bulk(cursor, references),
        ):
            query_pks = pool_keys.ensure_queries(pool, table.query_ids)
            doc_pks = pool_keys.ensure_documents(pool, table.doc_ids)
            doc_pks_created = doc_pks.created
            services.set_actor(actor)
            for sql in (
                "CREATE TEMP TABLE IF NOT EXISTS jl_import_qrels (query_id bigint, document_id bigint,"
                " grade smallint) ON COMMIT DROP",
                "CREATE TEMP TABLE IF NOT EXISTS jl_import_written (pair_id bigint, inserted boolean) ON COMMIT DROP",
                "TRUNCATE jl_import_qrels, jl_import_written",
            ):
                cursor.execute(sql)
            table.copy_rows(cursor, "jl_import_qrels", query_pks, doc_pks)
            cursor.execute("ANALYZE jl_import_qrels")  # the joins below are planned for its size
            del table, doc_pks  # a million-line file: keep the memory for the database work
            pool_keys.insert_pairs(cursor, pool, "jl_import_qrels")
            # The rater's judgments that change, then the new ones: one statement each, the history
            # triggers logging every row they write (rows already equal are left alone: no history).
            # The new ones go in by a plain INSERT (ON CONFLICT's speculative insertion costs 1.8x):
            # another import of this pool waits for the import lock; a grade the same rater saves
            # on the grading page meanwhile makes the import fail on the unique constraint, whole.
            cursor.execute("SELECT EXISTS (SELECT 1 FROM judgments_judgment WHERE rater_id = %s)", [rater.pk])
            if rater_judged := cursor.fetchone()[0]:  # else all of them are new: no join to find changes
                cursor.execute(
                    """
                    WITH written AS (
                        UPDATE judgments_judgment j
                        SET grade = g.grade, cant_judge = false, cant_judge_reason = '', updated_at = now()
                        FROM jl_import_qrels g
                        JOIN judgments_pair p ON p.query_id = g.query_id AND p.document_id = g.document_id
                        WHERE j.pair_id = p.id AND j.rater_id = %s AND (j.grade IS DISTINCT FROM g.grade OR j.cant_judge)
                        RETURNING j.pair_id
                    )
                    INSERT INTO jl_import_written SELECT pair_id, false FROM written
                    """,
                    [rater.pk],
                )
            cursor.execute(
                """
                WITH written AS (
                    INSERT INTO judgments_judgment
                        (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note, created_at, updated_at)
                    SELECT p.id, %s, g.grade, false, '', '', now(), now()
                    FROM jl_import_qrels g
                    JOIN judgments_pair p ON p.query_id = g.query_id AND p.document_id = g.document_id
                    {new}
                    ORDER BY p.id
                    RETURNING pair_id
                )
                INSERT INTO jl_import_written SELECT pair_id, true FROM written
                """.format(
                    new="WHERE NOT EXISTS (SELECT 1 FROM judgments_judgment j WHERE j.pair_id = p.id AND j.rater_id = %s)"
                    if rater_judged
                    else ""
                ),
                [rater.pk, rater.pk] if rater_judged else [rater.pk],
            )
            cursor.execute(
                "SELECT count(*) FILTER (WHERE inserted), count(*), COALESCE(array_agg(pair_id), '{}')"
                " FROM jl_import_written"
            )
            created, written, changed_pairs = cursor.fetchone()
        if read >= ANALYZE_AFTER and Run.objects.filter(configuration__pool=pool).exists():
            # Fresh statistics, so that the scoring of the pool's runs that follows plans its joins
            # well. A pool without runs has nothing to score: autovacuum's ANALYZE comes soon enough
            # (1.6 s of a 1,000,000-line import into a new pool).
            cursor.execute("ANALYZE judgments_document, judgments_pair, judgments_judgment")
        if changed_pairs:
            grades_changed.send(sender=Pool, pool=pool, pair_ids=changed_pairs)  # in the transaction
    return ImportSummary(
        name,
        "judgments",
        read,
        created,
        written - created,
        read - written,
        queries_created=query_pks.created,
        documents_created=doc_pks_created,
        rater=rater.get_username(),
    )


# --- Runs ------------------------------------------------------------------------------------------


def import_run(
    configuration: SearchConfiguration,
    stream,
    *,
    name: str,
    order: str = "score",
    submitted_by=None,
    source: str = Run.Source.FILE,
) -> Run:
    """Store a TREC run file (`qid Q0 docid rank score tag`) as a new run of `configuration`.

    order "score" (trec_eval's): score descending, ties by docid descending, rank column ignored;
    "rank": the rank column. Unknown queries and documents are created.
    """
    if order not in ("score", "rank"):
        raise ValueError(f"order must be 'score' or 'rank', not {order!r}")
    # The common shape of run file takes a faster path to the same result (see fastrun.py).
    data, stream = fastrun.as_bytes(stream)
    if data is not None:
        options = {"name": name, "order": order, "submitted_by": submitted_by, "source": source}
        run = fastrun.import_run_fast(configuration, data, **options)
        if run is not None:
            return run
        stream = data
    run_file = parse_run(stream, name, order=order)
    try:
        return services.record_run(
            configuration,
            run_file.rankings,
            source=source,
            submitted_by=submitted_by,
            tag=run_file.tag,
            filename=os.path.basename(name),
        )
    except services.RunError as exc:
        problems = [
            Problem(0, "qid", f"query {qid}: {message}" if qid else message) for qid, message in exc.problems
        ]
        raise FormatError(name, problems or [Problem(0, "file", str(exc))]) from None
