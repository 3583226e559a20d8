"""Writing the domain: judgments (with their history) and runs. Views, the API and commands call these.

Services take model instances, raise `JudgmentError`/`RunError` with a message fit for a user, and know no
HTTP. Each one is a single transaction; scores follow through the signals in `signals.py`, sent inside it
(the scoring they start is durable with the change, and done after the commit).
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from django.db import connection, transaction
from django.utils import timezone

from . import limits
from .models import DISTRACTOR, Document, Judgment, Pair, Pool, Query, Ranking, Run, SearchConfiguration
from .pool_keys import ensure_documents, ensure_queries
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
