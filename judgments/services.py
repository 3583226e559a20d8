"""Writing the domain: judgments (with their history) and runs. Views, the API and commands call these.

Services take model instances, raise `JudgmentError`/`RunError` with a message fit for a user, and know no
HTTP. Each one is a single transaction; scores follow through the signals in `signals.py`, sent inside it
(the scoring they start is durable with the change, and done after the commit).
"""

from __future__ import annotations

import io
import itertools
import re
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence

from django.db import connection, transaction
from django.utils import timezone

from . import bulk, limits
from .models import DISTRACTOR, Document, Judgment, Pair, Pool, Query, Ranking, Run, SearchConfiguration
from .signals import grades_changed, run_submitted


class JudgmentError(ValueError):
    pass


class RunError(ValueError):
    """A run that cannot be stored; `problems` lists (query id, message) pairs when there are several."""

    def __init__(self, message: str, problems: Sequence[tuple[str, str]] = ()):
        super().__init__(message)
        self.problems = list(problems)


def set_actor(user) -> None:
    """Record `user` as the author of judgment changes in this transaction (read by the history trigger)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('judgments.actor', %s, true)", [str(user.pk) if user else ""])


def commit_without_waiting() -> None:
    """Let the current transaction's commit return before its WAL reaches the disk (synchronous_commit
    off, this transaction only). For writes that can be lost in a crash of the database server without
    harm: they are redone (a grade's rescoring: its task row commits durably with the grade) or need no
    redoing (a rater's hold on a pair). Never for a grade or a run themselves: so only when the caller's
    atomic block is the transaction itself, not part of a larger one that may hold such writes."""
    if not is_transaction_itself():
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('synchronous_commit', 'off', true)")


def is_transaction_itself() -> bool:
    """Is the current atomic block the transaction itself, not part of a caller's larger one?"""
    return len(connection.atomic_blocks) == 1


# commit_without_waiting as a column of a statement the caller runs anyway (a round trip fewer), with the
# parameter %(without_waiting)s set to is_transaction_itself(); otherwise the setting stays as it is.
WITHOUT_WAITING_COLUMN = (
    "set_config('synchronous_commit',"
    " CASE WHEN %(without_waiting)s THEN 'off' ELSE current_setting('synchronous_commit') END, true)"
)


def notify_grades(pool: Pool, pair_ids: Iterable[int], query_ids: Iterable[int] | None = None) -> None:
    """Send grades_changed for `pair_ids` (inside the current transaction: see signals). `query_ids`: their
    queries, when the caller knows them (saves the receiver looking them up)."""
    ids = list(pair_ids)
    if ids:
        extra = {} if query_ids is None else {"query_ids": sorted(set(query_ids))}
        grades_changed.send(sender=Pool, pool=pool, pair_ids=ids, **extra)


# One round trip: the judgment inserted or changed (the history triggers see an INSERT or an UPDATE, as
# they would from update_or_create) and, in a data-modifying CTE, the pair released from the rater's hold.
_UPSERT_JUDGMENT = """
    WITH released AS (
        UPDATE judgments_pair SET held_by_id = NULL, held_until = NULL
        WHERE id = %(pair)s AND held_by_id = %(rater)s
    )
    INSERT INTO judgments_judgment
        (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note, served_at, created_at, updated_at, excluded)
    VALUES (%(pair)s, %(rater)s, %(grade)s, %(cant_judge)s, %(reason)s, %(note)s, %(served)s, %(now)s, %(now)s,
            EXISTS (SELECT 1 FROM judgments_raterstatus s  -- an excluded rater's new grades are excluded too
                    WHERE s.pool_id = %(pool)s AND s.rater_id = %(rater)s AND s.excluded))
    ON CONFLICT (pair_id, rater_id) DO UPDATE SET
        served_at = COALESCE(judgments_judgment.served_at, EXCLUDED.served_at),
        grade = EXCLUDED.grade, cant_judge = EXCLUDED.cant_judge,
        cant_judge_reason = EXCLUDED.cant_judge_reason, note = EXCLUDED.note, updated_at = EXCLUDED.updated_at
    RETURNING id, created_at
"""


def record_judgment(
    pair: Pair,
    rater,
    *,
    grade: int | None = None,
    cant_judge: bool = False,
    reason: str = "",
    note: str = "",
    actor=None,
    notify: bool = True,
    served_at=None,
) -> Judgment:
    """Create or change `rater`'s judgment of `pair`, and release the pair from the rater's hold.
    served_at: when the queue served the pair to the rater (kept from the first answer on a change).
    A grade 0–4 (or -1, a distractor, when the pool enables it), or can't judge with a reason. The
    judgment's `created` says which it was.
    notify=False: the caller sends grades_changed itself (`notify_grades`), once for many judgments."""
    if cant_judge:
        reason = (reason or "").strip()
        if not reason:
            raise JudgmentError("Say why you can't judge this pair.")
        grade = None
    else:
        if isinstance(grade, float) and grade.is_integer():
            grade = int(grade)
        problem = pair.pool.grade_problem(grade)
        if problem:
            raise JudgmentError(problem)
        reason = ""
    for what, value in (("reason", reason), ("note", note or "")):
        if problem := limits.too_long(what, value, limits.NOTE):
            raise JudgmentError(problem)
    # One transaction; inside a caller's (the queue's save_grade, a judge's batch) no savepoint of its
    # own: a failed statement aborts the caller's transaction anyway, and the checks above ran before it.
    with transaction.atomic(savepoint=False):
        return _write_judgment(pair, rater, grade, cant_judge, reason, note, actor, notify, served_at)


def _write_judgment(pair, rater, grade, cant_judge, reason, note, actor, notify, served_at=None) -> Judgment:
    set_actor(actor or rater)
    judgment = Judgment(
        pair=pair, rater=rater, grade=grade, cant_judge=cant_judge, cant_judge_reason=reason, note=note or ""
    )
    judgment.updated_at = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _UPSERT_JUDGMENT,
            {
                "pair": pair.pk,
                "pool": pair.pool_id,
                "rater": rater.pk,
                "grade": grade,
                "cant_judge": cant_judge,
                "reason": reason,
                "note": judgment.note,
                "served": served_at,
                "now": judgment.updated_at,
            },
        )
        judgment.pk, judgment.created_at = cursor.fetchone()
    judgment._state.adding, judgment._state.db = False, connection.alias
    # Inserted now (both times from the one clock reading above), not changed: callers say "Changed."
    judgment.created = judgment.created_at == judgment.updated_at
    if notify:
        notify_grades(pair.pool, [pair.pk], [pair.query_id])
    return judgment


@transaction.atomic
def set_final_grade(pair: Pair, grade: int | None, admin) -> Pair:
    """Adjudicate: an admin's final grade wins over the raters' combined grade (None clears it)."""
    problem = None if grade is None else pair.pool.grade_problem(grade)
    if problem:
        raise JudgmentError(problem.replace("A grade", "A final grade"))
    if pair.gold_grade is not None:
        raise JudgmentError("This is a gold pair: its final grade is its gold grade (change that instead).")
    pair.final_grade = grade
    pair.final_by = admin if grade is not None else None
    pair.final_at = timezone.now() if grade is not None else None
    pair.save(update_fields=["final_grade", "final_by", "final_at"])
    notify_grades(pair.pool, [pair.pk], [pair.query_id])
    return pair


def distractor_uses(pool: Pool) -> int:
    """How many judgments and final grades of `pool` use the distractor grade (-1)."""
    return (
        Judgment.objects.in_pool(pool).filter(grade=DISTRACTOR).count()
        + Pair.objects.in_pool(pool).filter(final_grade=DISTRACTOR).count()
    )


def distractors_problem(pool: Pool, enabled: bool) -> str | None:
    """Why the pool's distractor grade cannot be set to `enabled` (None: it can)."""
    if enabled or not pool.pk or not Pool.objects.filter(pk=pool.pk, distractors_enabled=True).exists():
        return None
    used = distractor_uses(pool)
    if used:
        return (
            f"{used} judgment{'s' if used != 1 else ''} or final grade{'s' if used != 1 else ''} of pool "
            f"{pool.name} use the distractor grade (-1): change them before turning it off."
        )
    return None


@transaction.atomic
def set_distractors(pool: Pool, enabled: bool) -> Pool:
    """Turn the pool's distractor grade on or off (off only while no judgment or final grade uses it;
    a database trigger holds that too). Scores do not change: no grade changes."""
    problem = distractors_problem(pool, enabled)
    if problem:
        raise JudgmentError(problem)
    pool.distractors_enabled = enabled
    pool.save(update_fields=["distractors_enabled"])
    return pool


# --- Queries, documents, pairs by external id ------------------------------------------------------


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


# --- Runs ------------------------------------------------------------------------------------------


_WHITESPACE = re.compile(r"\s")  # the characters str.isspace() finds


def _plain_ranking(docs: Sequence[str]) -> bool:
    """True when a ranking surely has no problem: non-empty strings, no whitespace, no repeat. A few calls
    in C per ranking instead of a Python loop per character."""
    return (
        bool(docs)
        and set(map(type, docs)) == {str}
        and "" not in docs
        and _WHITESPACE.search("".join(docs)) is None
        and len(set(docs)) == len(docs)
    )


def validate_rankings(rankings: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """Problems with a run given as {query id: [doc id, ...]}: empty run, duplicates, bad ids."""
    problems: list[tuple[str, str]] = []
    if not rankings:
        return [("", "the run has no ranking")]
    for qid, docs in rankings.items():
        if not qid or any(ch.isspace() for ch in qid):
            problems.append((qid, "query id is empty or contains whitespace"))
        if _plain_ranking(docs):
            continue
        if not docs:
            problems.append((qid, "ranking is empty"))
            continue
        seen: set[str] = set()
        for position, doc in enumerate(docs, start=1):
            if not isinstance(doc, str) or not doc or any(ch.isspace() for ch in doc):
                problems.append(
                    (qid, f"document id at rank {position} is empty or contains whitespace: {doc!r}")
                )
            elif doc in seen:
                problems.append((qid, f"document {doc!r} appears twice (again at rank {position})"))
            seen.add(doc)
        if len(problems) >= 50:
            break
    return problems


@transaction.atomic
def record_run(
    configuration: SearchConfiguration,
    rankings: Mapping[str, Sequence[str]],
    *,
    source: str,
    submitted_by=None,
    tag: str = "",
    filename: str = "",
    create_missing_queries: bool = True,
    endpoint=None,
) -> Run:
    """Store a new run of `configuration`: {query id: [doc ids, best first]}. All or nothing.

    Unknown documents are created without content (raters cannot grade them until content arrives);
    unknown queries are created too, unless create_missing_queries is False, when they are an error.
    `endpoint`: the SearchEndpoint version a captured run came from.
    """
    problems = validate_rankings(rankings)
    if problems:
        raise RunError(f"The run has {len(problems)} problem(s); nothing was stored.", problems)
    pool = configuration.pool
    if create_missing_queries:
        query_pks = ensure_queries(pool, rankings.keys())
    else:
        query_pks = dict(
            Query.objects.filter(pool=pool, external_id__in=list(rankings)).values_list("external_id", "pk")
        )
        unknown = [q for q in rankings if q not in query_pks]
        if unknown:
            raise RunError(
                f"{len(unknown)} query id(s) are not in pool {pool.name}; nothing was stored.",
                [(q, "unknown query") for q in unknown[:50]],
            )
    doc_pks = ensure_documents(
        pool, itertools.chain.from_iterable(rankings.values()), introduced_by=configuration
    )
    keys = {doc: str(pk) for doc, pk in doc_pks.items()}.__getitem__

    def write_rankings(cursor, run: Run) -> None:
        buffer = io.StringIO()
        for qid, docs in rankings.items():
            buffer.write(f"{run.pk}\t{query_pks[qid]}\t{{{','.join(map(keys, docs))}}}\n")
        with cursor.copy("COPY judgments_ranking (run_id, query_id, doc_ids) FROM STDIN") as copy:
            copy.write(buffer.getvalue())

    return store_run(
        configuration,
        write_rankings,
        source=source,
        submitted_by=submitted_by,
        tag=tag,
        filename=filename,
        endpoint=endpoint,
    )


def store_run(
    configuration: SearchConfiguration,
    write_rankings: Callable,
    *,
    source: str,
    submitted_by=None,
    tag: str = "",
    filename: str = "",
    endpoint=None,
) -> Run:
    """The end every run writer shares (`record_run`, the fast path of run files, a capture's staged
    run: judgments.run_staging): the run row, its rankings written by `write_rankings(cursor, run)`,
    and `run_submitted` (which scores it after the commit). In the caller's transaction."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("store_run runs inside the transaction that writes the run's documents")
    run = Run.objects.create(
        configuration=configuration,
        source=source,
        submitted_by=submitted_by,
        tag=tag[:200],
        filename=filename[:255],
        endpoint=endpoint,
    )
    with connection.cursor() as cursor:
        write_rankings(cursor, run)
    run_submitted.send(sender=Run, run=run)  # inside the transaction (see signals)
    return run


def ranking_external_ids(run: Run) -> dict[str, list[str]]:
    """A run back as {query id: [doc ids]} with external ids (for exports and comparisons)."""
    rows = list(
        Ranking.objects.filter(run=run)
        .values_list("query__external_id", "doc_ids")
        .order_by("query__external_id")
    )
    doc_pks = {pk for _, docs in rows for pk in docs}
    names = dict(Document.objects.filter(pk__in=doc_pks).values_list("pk", "external_id"))
    return {qid: [names[pk] for pk in docs] for qid, docs in rows}


# (table, trigger) of the stored counts (migration 0020_submit_tallies) that delete_pool_in_bulk skips.
_TALLY_TRIGGERS_OFF = [
    ("judgments_judgment", "jl_tally_judgment_deletes"),
    ("judgments_pair", "jl_tally_pair_updates"),
    ("judgments_pair", "jl_tally_pair_deletes"),
    ("judgments_document", "jl_tally_document_deletes"),
]


def delete_pool_in_bulk(pool: Pool) -> None:
    """Delete a pool and everything in it with one statement per table, in one transaction: the ORM's
    cascade would first load every row (millions in the benchmarks' pools). The judgment history goes
    before the pairs, in one statement, so the per-pair history cleanup trigger finds nothing to do;
    scores go with their runs and queries (the scoring app's delete triggers)."""
    in_pool = "pair_id IN (SELECT id FROM judgments_pair WHERE pool_id = %s)"
    of_runs = (
        "run_id IN (SELECT r.id FROM judgments_run r"
        " JOIN judgments_searchconfiguration c ON c.id = r.configuration_id WHERE c.pool_id = %s)"
    )
    of_pool = "SELECT id FROM judgments_searchconfiguration WHERE pool_id = %s"
    with transaction.atomic(), connection.cursor() as cursor:
        # The stored counts of a pool that goes entirely need no updating (the pool's delete drops its tally
        # rows): their statement triggers on 1M+ judgments and pairs cost minutes. Switched off for this
        # transaction only (a rollback switches them back); it locks the two tables meanwhile, which is what
        # a benchmark's clean-up, the only caller, can afford.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # ALTER TABLE refuses pending deferred checks
        for table, trigger in _TALLY_TRIGGERS_OFF:
            cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER {trigger}")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")  # the history's cleanup runs before the pairs' check
        for sql in (
            f"DELETE FROM judgments_judgmentchange WHERE {in_pool}",
            f"DELETE FROM judgments_judgment WHERE {in_pool}",
            f"DELETE FROM judgments_ranking WHERE {of_runs}",
            f"DELETE FROM judgments_capturejob WHERE configuration_id IN ({of_pool})",
            f"DELETE FROM judgments_run WHERE configuration_id IN ({of_pool})",
            f"DELETE FROM judgments_searchendpoint WHERE configuration_id IN ({of_pool})",
            "DELETE FROM judgments_searchconfiguration WHERE pool_id = %s",
            "DELETE FROM judgments_pair WHERE pool_id = %s",
            "DELETE FROM judgments_query WHERE pool_id = %s",
            "DELETE FROM judgments_document WHERE pool_id = %s",
        ):
            cursor.execute(sql, [pool.pk])
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for table, trigger in _TALLY_TRIGGERS_OFF:
            cursor.execute(f"ALTER TABLE {table} ENABLE ALWAYS TRIGGER {trigger}")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        Pool.objects.filter(pk=pool.pk).delete()  # members, uploads and the rest through the ORM
