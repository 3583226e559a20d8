"""The judging queue: which pairs raters are asked to grade, in which order, and who holds which pair.

Building the queue (admins, and the scoring/comparison pages):
- `build_queue(pool, k)`: depth-k pooling over every configuration's current run. The union of their
  top-k documents is queued; a pair ranked in the top k by more configurations comes first, ties broken by
  the better best rank: priority = 10,000 x configurations + (10,000 - best rank), so k is at most 1,000.
  Rebuilding recomputes the priority of every pooled pair.
- `queue_unjudged_top_k(configuration, k)`: queue exactly the pairs of that configuration's current run
  top k that are still short of grades ("send the unjudged top-k of this configuration to the raters").
- `add_pairs(pool, [(qid, docid)])` and `add_pairs_from_file(pool, data)` (TSV `qid<TAB>docid`): by hand.
Pairs that already have their grades (or an admin's final grade) are never queued again. Queueing only ever
raises a pair's priority, except a full rebuild, which sets it from the current runs.

Serving the queue (`next_pair_for`): a pair is *open* to a rater when it is queued, has no final grade,
its document has content, the rater has not judged it, it has fewer than the pool's `raters_per_pair`
grades, and nobody else holds it (or their hold expired). "Can't judge" answers do not count as grades:
the pair still needs `raters_per_pair` real grades from other raters, but the rater who could not judge it
is not asked again. Pairs whose document has no content stay queued and are listed for admins
(`pairs_without_content`); they reach raters as soon as their content is imported.

Order: raters work query by query so the information need stays in mind. They finish the query of their
latest judgment first; otherwise the query holding the highest-priority open pair comes next. Within a
query the order is a per-rater deterministic shuffle (md5 of rater and pair id), so it reveals no rank.
A rater holds one pair at a time for `HOLD` (refreshed whenever it is served again); the row is claimed
with `SELECT ... FOR UPDATE SKIP LOCKED`, so two raters asking at once never get the same pair.

Saving (`save_grade`) locks the pair row and re-checks these rules before calling
`services.record_judgment`, so a pair never gets more grades than wanted, even after an expired hold.
Every rater's write goes through it: the grading page, its fragments and `POST /api/judgments/`. Only an
admin's import (and an admin's final grade) writes judgments outside the queue.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from judgments import services
from judgments.models import EXTERNAL_ID_MAX, Judgment, Pair, Pool, Query, Run, SearchConfiguration

HOLD = timedelta(minutes=5)
DEFAULT_DEPTH = 10
MAX_DEPTH = 1000
PRIORITY_PER_CONFIGURATION = 10_000  # > MAX_DEPTH, so more configurations always beat a better rank
MAX_FILE_ERRORS = 50


class QueueError(ValueError):
    """A queue request that cannot be done; `problems` lists (line number, message) for files."""

    def __init__(self, message: str, problems: Sequence[tuple[int, str]] = ()):
        super().__init__(message)
        self.problems = list(problems)


@dataclass(frozen=True)
class QueueResult:
    """What a queueing call did. `considered` pairs = newly_queued + already_queued + complete."""

    considered: int = 0
    newly_queued: int = 0  # were not in the queue before
    already_queued: int = 0  # were queued already (priority updated)
    complete: int = 0  # had their grades (or a final grade) already: not queued
    without_content: int = 0  # queued, but their document has no content yet: held back from raters

    @property
    def queued(self) -> int:
        return self.newly_queued + self.already_queued


def _check_depth(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_DEPTH:
        raise QueueError(f"k must be an integer from 1 to {MAX_DEPTH}, not {k!r}.")
    return k


# --- Building the queue ------------------------------------------------------------------------------


def _top_k(run_ids: list[int], k: int) -> list[tuple[int, int, int, int]]:
    """(query pk, document pk, number of runs ranking it in their top k, best rank) over `run_ids`."""
    if not run_ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT r.query_id, t.doc_id, count(*), min(t.rank)
            FROM judgments_ranking r
            CROSS JOIN LATERAL unnest(r.doc_ids[1:%s]) WITH ORDINALITY AS t(doc_id, rank)
            WHERE r.run_id = ANY(%s)
            GROUP BY r.query_id, t.doc_id
            """,
            [k, run_ids],
        )
        return cursor.fetchall()


def _priority(n_configurations: int, best_rank: int) -> int:
    return PRIORITY_PER_CONFIGURATION * n_configurations + (PRIORITY_PER_CONFIGURATION - best_rank)


def _queue(
    pool: Pool, priorities: dict[int, int], *, keep_higher: bool, now: datetime | None = None
) -> QueueResult:
    """Queue the pairs {pair pk: priority} that are short of grades. With keep_higher, a queued pair keeps
    its priority when it is higher than the new one; otherwise the new one replaces it."""
    if not priorities:
        return QueueResult()
    now = now or timezone.now()
    ids = list(priorities)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH wanted AS (SELECT * FROM unnest(%(ids)s::bigint[], %(prios)s::int[]) AS w(id, priority)),
            state AS (
                SELECT p.id, w.priority, p.queued_at IS NOT NULL AS was_queued,
                       (p.final_grade IS NOT NULL OR (
                           SELECT count(*) FROM judgments_judgment j WHERE j.pair_id = p.id AND NOT j.cant_judge
                       ) >= %(wanted)s) AS complete,
                       (d.title = '' AND d.body = '') AS no_content
                FROM judgments_pair p JOIN wanted w ON w.id = p.id
                JOIN judgments_document d ON d.id = p.document_id
                WHERE p.pool_id = %(pool)s
            ),
            updated AS (
                UPDATE judgments_pair p
                SET queued_at = COALESCE(p.queued_at, %(now)s),
                    priority = CASE WHEN %(keep)s THEN GREATEST(p.priority, s.priority) ELSE s.priority END
                FROM state s WHERE s.id = p.id AND NOT s.complete
                RETURNING p.id
            )
            SELECT count(*),
                   count(*) FILTER (WHERE NOT complete AND NOT was_queued),
                   count(*) FILTER (WHERE NOT complete AND was_queued),
                   count(*) FILTER (WHERE complete),
                   count(*) FILTER (WHERE NOT complete AND no_content),
                   (SELECT count(*) FROM updated)
            FROM state
            """,
            {
                "ids": ids,
                "prios": [priorities[i] for i in ids],
                "wanted": pool.raters_per_pair,
                "pool": pool.pk,
                "now": now,
                "keep": keep_higher,
            },
        )
        considered, new, already, complete, no_content, _ = cursor.fetchone()
    return QueueResult(considered, new, already, complete, no_content)


def _pooled_priorities(pool: Pool, run_ids: list[int], k: int) -> dict[int, int]:
    rows = _top_k(run_ids, k)
    pair_pks = services.ensure_pairs(pool, ((q, d) for q, d, _, _ in rows))
    return {pair_pks[(q, d)]: _priority(n, best) for q, d, n, best in rows}


@transaction.atomic
def build_queue(pool: Pool, k: int = DEFAULT_DEPTH) -> QueueResult:
    """Depth-k pooling: queue the union of the top-k documents of every configuration's current run."""
    _check_depth(k)
    run_ids = list(Run.objects.filter(configuration__pool=pool).current().values_list("pk", flat=True))
    return _queue(pool, _pooled_priorities(pool, run_ids, k), keep_higher=False)


@transaction.atomic
def queue_unjudged_top_k(configuration: SearchConfiguration, k: int = DEFAULT_DEPTH) -> QueueResult:
    """Send the unjudged top-k of `configuration` to the raters.

    Queues the pairs of the configuration's current run, top k of every query, that are still short of
    the pool's `raters_per_pair` grades and have no final grade; pairs with their grades are counted in
    `complete` and left alone. Returns a QueueResult; raises QueueError when k is not 1–1000 or the
    configuration has no run yet. Safe to call repeatedly (it never lowers a queued pair's priority).
    """
    _check_depth(k)
    run = Run.objects.filter(configuration=configuration).current().first()
    if run is None:
        raise QueueError(f"Configuration {configuration.name} has no run yet.")
    return _queue(configuration.pool, _pooled_priorities(configuration.pool, [run.pk], k), keep_higher=True)


def top_k_coverage(pool: Pool, k: int = DEFAULT_DEPTH) -> list[dict]:
    """Per configuration with a current run: pairs in its top k, how many have their grades, how many are
    queued and still open, how many are neither (candidates for `queue_unjudged_top_k`)."""
    _check_depth(k)
    runs = list(Run.objects.filter(configuration__pool=pool).current().select_related("configuration"))
    rows = []
    with connection.cursor() as cursor:
        for run in sorted(runs, key=lambda r: r.configuration.name):
            cursor.execute(
                """
                WITH top AS (
                    SELECT DISTINCT r.query_id, t.doc_id
                    FROM judgments_ranking r CROSS JOIN LATERAL unnest(r.doc_ids[1:%(k)s]) AS t(doc_id)
                    WHERE r.run_id = %(run)s
                ),
                state AS (
                    SELECT p.queued_at IS NOT NULL AS queued,
                           COALESCE(p.final_grade IS NOT NULL OR (
                               SELECT count(*) FROM judgments_judgment j WHERE j.pair_id = p.id AND NOT j.cant_judge
                           ) >= %(wanted)s, false) AS complete
                    FROM top LEFT JOIN judgments_pair p ON p.query_id = top.query_id AND p.document_id = top.doc_id
                )
                SELECT count(*), count(*) FILTER (WHERE complete),
                       count(*) FILTER (WHERE queued AND NOT complete),
                       count(*) FILTER (WHERE NOT queued AND NOT complete)
                FROM state
                """,
                {"k": k, "run": run.pk, "wanted": pool.raters_per_pair},
            )
            total, complete, queued_open, unqueued = cursor.fetchone()
            rows.append(
                {
                    "configuration": run.configuration,
                    "run": run,
                    "pairs": total,
                    "complete": complete,
                    "queued_open": queued_open,
                    "unqueued": unqueued,
                }
            )
    return rows


def _resolve_pairs(
    pool: Pool, lines: Sequence[tuple[int, str, str]]
) -> tuple[dict[int, tuple[int, int]], list]:
    """Map (line number, qid, docid) to (query pk, document pk); problems for unknown ids."""
    query_pks = dict(
        Query.objects.filter(pool=pool, external_id__in={q for _, q, _ in lines}).values_list(
            "external_id", "pk"
        )
    )
    doc_pks = dict(
        pool.documents.filter(external_id__in={d for _, _, d in lines}).values_list("external_id", "pk")
    )
    problems, keys = [], {}
    for number, qid, docid in lines:
        if qid not in query_pks:
            problems.append((number, f"unknown query id {qid!r} in pool {pool.name}"))
        elif docid not in doc_pks:
            problems.append((number, f"unknown document id {docid!r} in pool {pool.name}"))
        else:
            keys[number] = (query_pks[qid], doc_pks[docid])
    return keys, problems


@transaction.atomic
def add_pairs(pool: Pool, pairs: Iterable[tuple[str, str]], *, priority: int = 0) -> QueueResult:
    """Queue (query id, document id) pairs by external id, by hand. All or nothing: unknown ids raise
    QueueError listing every problem (numbered from 1 in the given order)."""
    lines = [(n, q.strip(), d.strip()) for n, (q, d) in enumerate(pairs, start=1)]
    return _add_lines(pool, lines, priority)


def _add_lines(pool: Pool, lines: list[tuple[int, str, str]], priority: int) -> QueueResult:
    if not lines:
        raise QueueError("No pair given.")
    keys, problems = _resolve_pairs(pool, lines)
    if problems:
        raise QueueError(f"{len(problems)} problem(s); nothing was queued.", problems[:MAX_FILE_ERRORS])
    pair_pks = services.ensure_pairs(pool, keys.values())
    return _queue(pool, {pair_pks[key]: priority for key in keys.values()}, keep_higher=True)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # as Python's universal newlines: old Mac files end lines with CR


def _id_problem(value: str) -> str | None:
    if not value:
        return "is empty"
    if len(value) > EXTERNAL_ID_MAX:
        return f"is {len(value)} characters long (at most {EXTERNAL_ID_MAX})"
    for position, ch in enumerate(value, start=1):
        if ch.isspace() or not ch.isprintable():
            return f"contains U+{ord(ch):04X} at position {position} (whitespace and control characters are not allowed)"
    return None


def parse_pair_file(data: bytes | str) -> list[tuple[int, str, str]]:
    """Parse `qid<TAB>docid` lines into (line number, qid, docid). Lines end with LF, CRLF or CR. Blank
    lines and lines starting with '#' are ignored; anything else that is not two non-empty fields free of
    whitespace and control characters is a problem. Raises QueueError, and nothing else, for any input."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise QueueError(f"The file is not UTF-8 text (byte {exc.start}).") from None
    data = data.removeprefix("\ufeff")
    lines, problems = [], []
    for number, line in enumerate(_LINE_BREAK.split(data), start=1):
        if len(problems) >= MAX_FILE_ERRORS:
            break
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            problems.append((number, f"expected 2 tab-separated fields (qid, docid), found {len(fields)}"))
            continue
        qid, docid = (f.strip() for f in fields)
        problem = next(
            (f"{name} {why}" for name, value in (("query id", qid), ("document id", docid))
             if (why := _id_problem(value)) is not None),
            None,
        )  # fmt: skip
        if problem is not None:
            problems.append((number, problem))
            continue
        lines.append((number, qid, docid))
    if problems:
        raise QueueError(f"{len(problems)} line(s) could not be read; nothing was queued.", problems)
    if not lines:
        raise QueueError("The file has no pair in it.")
    return lines


@transaction.atomic
def add_pairs_from_file(pool: Pool, data: bytes | str, *, priority: int = 0) -> QueueResult:
    """Queue the pairs of a `qid<TAB>docid` file. All or nothing: QueueError lists the bad lines."""
    return _add_lines(pool, parse_pair_file(data), priority)


# --- What is open ------------------------------------------------------------------------------------


def _grade_count():
    return (
        Judgment.objects.filter(pair=OuterRef("pk"), cant_judge=False)
        .values("pair")
        .annotate(n=Count("pk"))
        .values("n")
    )


def open_pairs(pool: Pool) -> QuerySet:
    """Queued pairs still short of grades and without a final grade (with or without content)."""
    return (
        Pair.objects.in_pool(pool)
        .queued()
        .filter(final_grade__isnull=True)
        .annotate(n_grades=Coalesce(Subquery(_grade_count(), output_field=IntegerField()), 0))
        .filter(n_grades__lt=pool.raters_per_pair)
    )


def pairs_without_content(pool: Pool) -> QuerySet:
    """Open queued pairs whose document has no content yet: held back from raters, listed for admins."""
    return (
        open_pairs(pool)
        .filter(document__title="", document__body="")
        .select_related("query", "document")
        .order_by("-priority", "query__external_id", "document__external_id")
    )


def open_to(rater, pool: Pool, now: datetime | None = None) -> QuerySet:
    """Pairs that `rater` could be served now or later (ignoring holds): the rater's remaining work."""
    mine = Judgment.objects.filter(pair=OuterRef("pk"), rater=rater)
    return open_pairs(pool).exclude(document__title="", document__body="").exclude(Exists(mine))


# --- Serving the queue -------------------------------------------------------------------------------

_OPEN_SQL = """
    p.pool_id = %(pool)s
    AND p.queued_at IS NOT NULL
    AND p.final_grade IS NULL
    AND (d.title <> '' OR d.body <> '')
    AND (p.held_by_id IS NULL OR p.held_by_id = %(rater)s OR p.held_until <= %(now)s)
    AND NOT EXISTS (SELECT 1 FROM judgments_judgment mine WHERE mine.pair_id = p.id AND mine.rater_id = %(rater)s)
    AND (SELECT count(*) FROM judgments_judgment g WHERE g.pair_id = p.id AND NOT g.cant_judge) < %(wanted)s
    AND NOT (p.id = ANY(%(skip)s::bigint[]))
"""


def _open_for(cursor, params: dict, pair_id: int) -> bool:
    """Re-check one pair with a fresh snapshot (READ COMMITTED: each statement sees the latest commits)."""
    cursor.execute(
        f"SELECT 1 FROM judgments_pair p JOIN judgments_document d ON d.id = p.document_id WHERE {_OPEN_SQL} AND p.id = %(pair)s",
        {**params, "pair": pair_id},
    )
    return cursor.fetchone() is not None


@transaction.atomic
def next_pair_for(rater, pool: Pool, *, skip: Iterable[int] = (), now: datetime | None = None) -> Pair | None:
    """Hold and return the pair `rater` should grade next in `pool`, or None when nothing is open to them.

    A pair the rater holds already (and has not skipped) is returned again with a fresh hold; otherwise a
    new pair is claimed with FOR UPDATE SKIP LOCKED and the rater's other holds in the pool are released.
    `skip`: pair ids the rater skipped in this session, not served again.
    """
    now = now or timezone.now()
    params = {
        "pool": pool.pk,
        "rater": rater.pk,
        "now": now,
        "wanted": pool.raters_per_pair,
        "skip": sorted({int(s) for s in skip}),
        "seed": f"{rater.pk}:",
    }
    chosen = None
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT p.id FROM judgments_pair p JOIN judgments_document d ON d.id = p.document_id
            WHERE {_OPEN_SQL} AND p.held_by_id = %(rater)s AND p.held_until > %(now)s
            ORDER BY p.held_until DESC LIMIT 1
            FOR UPDATE OF p
            """,
            params,
        )
        row = cursor.fetchone()
        if row and _open_for(cursor, params, row[0]):
            chosen = row[0]
        else:
            chosen = _claim(cursor, params)
    Pair.objects.filter(pool=pool, held_by=rater).exclude(pk=chosen).update(held_by=None, held_until=None)
    if chosen is None:
        return None
    Pair.objects.filter(pk=chosen).update(held_by=rater, held_until=now + HOLD)
    return Pair.objects.select_related("query", "document", "pool").get(pk=chosen)


def _claim(cursor, params: dict, attempts: int = 25) -> int | None:
    """Lock an open pair of the rater's current query (that of their latest judgment) if it has one;
    otherwise of the query holding the highest-priority open pair."""
    cursor.execute(
        """
        SELECT p.query_id FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id
        WHERE j.rater_id = %(rater)s AND p.pool_id = %(pool)s ORDER BY j.id DESC LIMIT 1
        """,
        params,
    )
    row = cursor.fetchone()
    params = {**params, "tried": []}
    if row is not None:  # the common case, a query in progress: no scan of the whole pool
        pair_id = _claim_in_query(cursor, params, row[0])
        if pair_id is not None:
            return pair_id
        params["tried"].append(row[0])
    for _ in range(attempts):
        # The same conditions as _OPEN_SQL, with the judgments aggregated once (a hash join) rather than
        # counted per pair: this scans the whole queue, the per-query claim below does not.
        cursor.execute(
            """
            WITH g AS (
                SELECT j.pair_id, count(*) FILTER (WHERE NOT j.cant_judge) AS n, bool_or(j.rater_id = %(rater)s) AS mine
                FROM judgments_judgment j JOIN judgments_pair jp ON jp.id = j.pair_id
                WHERE jp.pool_id = %(pool)s AND jp.queued_at IS NOT NULL
                GROUP BY j.pair_id
            )
            SELECT p.query_id
            FROM judgments_pair p JOIN judgments_document d ON d.id = p.document_id LEFT JOIN g ON g.pair_id = p.id
            WHERE p.pool_id = %(pool)s AND p.queued_at IS NOT NULL AND p.final_grade IS NULL
              AND (d.title <> '' OR d.body <> '')
              AND (p.held_by_id IS NULL OR p.held_by_id = %(rater)s OR p.held_until <= %(now)s)
              AND NOT COALESCE(g.mine, false) AND COALESCE(g.n, 0) < %(wanted)s
              AND NOT (p.id = ANY(%(skip)s::bigint[])) AND NOT (p.query_id = ANY(%(tried)s::bigint[]))
            ORDER BY p.priority DESC, p.query_id
            LIMIT 1
            """,
            params,
        )
        row = cursor.fetchone()
        if row is None:
            return None
        pair_id = _claim_in_query(cursor, params, row[0])
        if pair_id is not None:
            return pair_id
        params["tried"].append(row[0])
    return None


def _claim_in_query(cursor, params: dict, query_id: int) -> int | None:
    """Lock the first open pair of the query in the rater's shuffled order, skipping rows that other
    transactions are claiming right now (SKIP LOCKED: no waiting)."""
    skip = list(params["skip"])
    while True:
        cursor.execute(
            f"""
            SELECT p.id FROM judgments_pair p JOIN judgments_document d ON d.id = p.document_id
            WHERE {_OPEN_SQL} AND p.query_id = %(query)s
            ORDER BY md5(%(seed)s || p.id::text), p.id
            LIMIT 1
            FOR UPDATE OF p SKIP LOCKED
            """,
            {**params, "skip": skip, "query": query_id},
        )
        row = cursor.fetchone()
        if row is None:
            return None
        if _open_for(cursor, params, row[0]):
            return row[0]
        # Taken or completed between our snapshot and the lock: leave it out and look again.
        skip.append(row[0])


def release_hold(pair: Pair, rater) -> None:
    """Give a held pair back to the queue (the rater skipped it)."""
    Pair.objects.filter(pk=pair.pk, held_by=rater).update(held_by=None, held_until=None)


def may_view(pair: Pair, rater, now: datetime | None = None) -> bool:
    """A rater may open a pair they judged, or one they hold right now. Nothing else (404 otherwise)."""
    now = now or timezone.now()
    if pair.held_by_id == rater.pk and pair.held_until and pair.held_until > now:
        return True
    return Judgment.objects.filter(pair=pair, rater=rater).exists()


@transaction.atomic
def save_grade(
    pair: Pair,
    rater,
    *,
    grade: int | None = None,
    cant_judge: bool = False,
    reason: str = "",
    note: str = "",
    now: datetime | None = None,
) -> Judgment:
    """Store `rater`'s grade (or can't judge) of `pair` through services.record_judgment.

    Changing one's own judgment is always allowed, except turning a "can't judge" into a grade when the
    pair has its grades already. A new grade needs the pair open to the rater (see the module docstring);
    otherwise QueueError, and nothing is stored.
    """
    now = now or timezone.now()
    locked = Pair.objects.select_for_update().select_related("pool", "document").get(pk=pair.pk)
    existing = Judgment.objects.filter(pair=locked, rater=rater).first()
    adds_a_grade = not cant_judge and (existing is None or existing.cant_judge)
    if existing is None or adds_a_grade:
        held_by_other = (
            locked.held_by_id not in (None, rater.pk)
            and locked.held_until is not None
            and locked.held_until > now
        )
        n_grades = Judgment.objects.filter(pair=locked, cant_judge=False).count()
        if locked.queued_at is None or not locked.document.has_content:
            raise QueueError("This pair is not in the judging queue.")
        if locked.final_grade is not None:
            raise QueueError("An admin has settled this pair already; it needs no more grades.")
        if adds_a_grade and n_grades >= locked.pool.raters_per_pair:
            raise QueueError("This pair has all the grades it needs by now; nothing was saved.")
        if held_by_other:
            raise QueueError(
                "Your hold on this pair expired (or you never held it) and another rater is grading it; "
                "nothing was saved."
            )
    return services.record_judgment(
        locked, rater, grade=grade, cant_judge=cant_judge, reason=reason, note=note
    )


# --- Progress ----------------------------------------------------------------------------------------


def _queue_counts(pool: Pool, rater_pk: int = 0) -> tuple[int, int, int]:
    """(queued pairs, complete ones, ones still open to the rater ignoring holds) in one pass."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH g AS (
                SELECT j.pair_id, count(*) FILTER (WHERE NOT j.cant_judge) AS n, bool_or(j.rater_id = %(rater)s) AS mine
                FROM judgments_judgment j JOIN judgments_pair jp ON jp.id = j.pair_id
                WHERE jp.pool_id = %(pool)s AND jp.queued_at IS NOT NULL
                GROUP BY j.pair_id
            )
            SELECT count(*),
                   count(*) FILTER (WHERE p.final_grade IS NOT NULL OR COALESCE(g.n, 0) >= %(wanted)s),
                   count(*) FILTER (WHERE p.final_grade IS NULL AND COALESCE(g.n, 0) < %(wanted)s
                                    AND NOT COALESCE(g.mine, false) AND (d.title <> '' OR d.body <> ''))
            FROM judgments_pair p JOIN judgments_document d ON d.id = p.document_id
            LEFT JOIN g ON g.pair_id = p.id
            WHERE p.pool_id = %(pool)s AND p.queued_at IS NOT NULL
            """,
            {"pool": pool.pk, "rater": rater_pk, "wanted": pool.raters_per_pair},
        )
        return cursor.fetchone()


def _overall(queued: int, complete: int) -> dict:
    return {
        "queued": queued,
        "complete": complete,
        "percent": round(100 * complete / queued) if queued else 0,
    }


def progress(rater, pool: Pool) -> tuple[dict, dict]:
    """(rater_progress, pool_progress) with one pass over the queue."""
    queued, complete, remaining = _queue_counts(pool, rater.pk)
    mine = Judgment.objects.filter(pair__pool=pool, rater=rater).aggregate(
        graded=Count("pk", filter=Q(cant_judge=False)), cant=Count("pk", filter=Q(cant_judge=True))
    )
    done = mine["graded"] + mine["cant"]
    total = done + remaining
    percent = round(100 * done / total) if total else 100
    return {**mine, "done": done, "remaining": remaining, "percent": percent}, _overall(queued, complete)


def rater_progress(rater, pool: Pool) -> dict:
    """The rater's judgments in the pool (graded, can't judge) and the pairs still open to them."""
    return progress(rater, pool)[0]


def pool_progress(pool: Pool) -> dict:
    """Queued pairs of the pool and how many have their grades (or a final grade)."""
    queued, complete, _ = _queue_counts(pool)
    return _overall(queued, complete)
