"""The judging queue: which pairs raters are asked to grade, and in which order of priority.

Building the queue (admins, and the scoring/comparison pages):
- `build_queue(pool, k, strategy)`: depth-k pooling over every configuration's current run. The union of
  their top-k documents is queued. Strategy `depth` (the default): a pair ranked in the top k by more
  configurations comes first, ties broken by the better best rank: priority = 10,000 x configurations +
  (10,000 - best rank), so k is at most 1,000. Strategy `adaptive` (`adaptive`): the priority is the
  pair's probability of relevance from a bandit over the runs, re-decided as every grade arrives.
  Rebuilding recomputes the priority of every pooled pair and stores the strategy and k on the pool;
  grades are never touched (a complete pair stays out of the queue).
- `queue_unjudged_top_k(configuration, k)`: queue exactly the pairs of that configuration's current run
  top k that are still short of grades ("send the unjudged top-k of this configuration to the raters").
- `add_pairs(pool, [(qid, docid)])` and `add_pairs_from_file(pool, data)` (TSV `qid<TAB>docid`): by hand.
Pairs that already have their grades (or an admin's final grade) are never queued again. Queueing only ever
raises a pair's priority, except a full rebuild, which sets it from the current runs.

What is open (`open_pairs`): queued pairs still short of the pool's `raters_per_pair` grades and without
a final grade. Pairs whose document has no content stay queued and are listed for admins
(`pairs_without_content`); they reach raters as soon as their content is imported. Serving the queue to
raters and saving their grades is `grading`.
Every rater's write goes through `grading.save_grade`: the grading page, its fragments and
`POST /api/judgments/`. Only an admin's import (and an admin's final grade) writes judgments outside the queue.

Model judges (judgments.judges) are not raters of the queue: their grades never count toward
`raters_per_pair`, so a pair a model graded still waits for its human grades, whatever the pool's grade
source (which only decides what the combined grade uses).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import connection, transaction
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils import timezone

from judgments import pool_keys
from judgments.models import (
    EXTERNAL_ID_MAX,
    Pair,
    Pool,
    Query,
    QueueStrategy,
    Run,
    SearchConfiguration,
    human_grade_count,
)

from . import adaptive, planner

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

    def message(self, subject: str = "", of: str = "") -> str:
        """What the call did, for the page that asked (the one "n newly queued" message): `subject` says
        what was queued ("bm25, top 10: "), `of` whose pairs (" of q1")."""
        text = (
            f"{subject}{self.newly_queued} pair(s){of} newly queued for rating, "
            f"{self.already_queued} already queued, {self.complete} already graded."
        )
        if self.without_content:
            text += f" {self.without_content} queued pair(s) wait for their document's content."
        return text


def _check_depth(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_DEPTH:
        raise QueueError(f"k must be an integer from 1 to {MAX_DEPTH}, not {k!r}.")
    return k


def check_strategy(strategy: str) -> str:
    """The strategy's name, or QueueError naming the known ones."""
    if strategy not in QueueStrategy.values:
        raise QueueError(
            f"Unknown queue strategy {strategy!r}: use one of {', '.join(QueueStrategy.values)}."
        )
    return strategy


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
                           SELECT count(*) FROM judgments_judgment j WHERE j.pair_id = p.id AND NOT j.cant_judge AND NOT j.excluded
                             AND NOT EXISTS (SELECT 1 FROM judgments_modeljudge mj WHERE mj.user_id = j.rater_id)
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
    transaction.on_commit(lambda: planner.refresh_after_queueing(pool.pk, new))
    return QueueResult(considered, new, already, complete, no_content)


def _pooled_priorities(pool: Pool, run_ids: list[int], k: int) -> dict[int, int]:
    rows = _top_k(run_ids, k)
    pair_pks = pool_keys.ensure_pairs(pool, ((q, d) for q, d, _, _ in rows))
    return {pair_pks[(q, d)]: _priority(n, best) for q, d, n, best in rows}


@transaction.atomic
def build_queue(pool: Pool, k: int | None = None, strategy: str | None = None) -> QueueResult:
    """Depth-k pooling: queue the union of the top-k documents of every configuration's current run,
    ordered by `strategy` (default: the pool's; k likewise). Both are checked before anything is written
    and are stored on the pool. Grades are never touched."""
    k = _check_depth(pool.queue_depth if k is None else k)
    strategy = check_strategy(pool.queue_strategy if strategy is None else strategy)
    run_ids = list(Run.objects.filter(configuration__pool=pool).current().values_list("pk", flat=True))
    if (pool.queue_strategy, pool.queue_depth) != (strategy, k):
        pool.queue_strategy, pool.queue_depth = strategy, k
        pool.save(update_fields=["queue_strategy", "queue_depth"])
    priorities = _pooled_priorities(pool, run_ids, k)
    if strategy == QueueStrategy.ADAPTIVE:
        priorities = {**dict.fromkeys(priorities, 0), **adaptive.pool_priorities(pool, k)}
    return _queue(pool, priorities, keep_higher=False)


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
    pool = configuration.pool
    priorities = _pooled_priorities(pool, [run.pk], k)
    if pool.queue_strategy == QueueStrategy.ADAPTIVE:  # the adaptive scale, not depth's
        estimated = adaptive.pool_priorities(pool, max(k, pool.queue_depth))
        priorities = {pk: estimated.get(pk, 0) for pk in priorities}
    return _queue(pool, priorities, keep_higher=True)


def top_k_coverage(pool: Pool, k: int = DEFAULT_DEPTH) -> list[dict]:
    """Per configuration with a current run: pairs in its top k, how many have their grades, how many are
    queued and still open, how many are neither (candidates for `queue_unjudged_top_k`)."""
    _check_depth(k)
    runs = list(Run.objects.filter(configuration__pool=pool).current().select_related("configuration"))
    # One statement for every run (a statement per configuration made 50 on a pool of 50): each pair of
    # any run's top k is looked up, and its grades counted, once.
    counts = {}
    if runs:
        with connection.cursor() as cursor:
            cursor.execute(
                """
                WITH top AS (
                    SELECT DISTINCT r.run_id, r.query_id, t.doc_id
                    FROM judgments_ranking r CROSS JOIN LATERAL unnest(r.doc_ids[1:%(k)s]) AS t(doc_id)
                    WHERE r.run_id = ANY(%(runs)s)
                ),
                state AS (
                    SELECT c.query_id, c.doc_id, p.queued_at IS NOT NULL AS queued,
                           COALESCE(p.final_grade IS NOT NULL OR (
                               SELECT count(*) FROM judgments_judgment j WHERE j.pair_id = p.id AND NOT j.cant_judge AND NOT j.excluded
                                 AND NOT EXISTS (SELECT 1 FROM judgments_modeljudge mj WHERE mj.user_id = j.rater_id)
                           ) >= %(wanted)s, false) AS complete
                    FROM (SELECT DISTINCT query_id, doc_id FROM top) c
                    LEFT JOIN judgments_pair p ON p.query_id = c.query_id AND p.document_id = c.doc_id
                )
                SELECT top.run_id, count(*), count(*) FILTER (WHERE complete),
                       count(*) FILTER (WHERE queued AND NOT complete),
                       count(*) FILTER (WHERE NOT queued AND NOT complete)
                FROM top JOIN state ON state.query_id = top.query_id AND state.doc_id = top.doc_id
                GROUP BY top.run_id
                """,
                {"k": k, "runs": [run.pk for run in runs], "wanted": pool.raters_per_pair},
            )
            counts = {run_id: rest for run_id, *rest in cursor.fetchall()}
    rows = []
    for run in sorted(runs, key=lambda r: r.configuration.name):
        total, complete, queued_open, unqueued = counts.get(run.pk, (0, 0, 0, 0))
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
    pair_pks = pool_keys.ensure_pairs(pool, keys.values())
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


def open_pairs(pool: Pool) -> QuerySet:
    """Queued pairs still short of grades and without a final grade (with or without content)."""
    return (
        Pair.objects.in_pool(pool)
        .queued()
        .filter(final_grade__isnull=True)
        .annotate(n_grades=human_grade_count())
        .filter(n_grades__lt=pool.raters_per_pair)
    )


def pairs_without_content(pool: Pool) -> QuerySet:
    """Open queued pairs whose document has no content yet: held back from raters, listed for admins,
    highest priority first (newest first among equals). Counted from the pairs' judgments: the definition
    that `pairs_without_content_page` (which reads the stored `Pair.human_grades`) must agree with."""
    return (
        open_pairs(pool)
        .filter(document__title="", document__body="")
        .select_related("query", "document")
        .order_by("-priority", "-id")
    )


# One index scan per grade count below the pool's raters_per_pair (pair_open_by_grades_idx: pool, human_grades,
# priority desc, id desc, over queued pairs without a final grade), merged: complete pairs (human_grades at
# raters_per_pair or more) are never read, however many there are.
_WITHOUT_CONTENT_WALK = """
    SELECT w.id FROM generate_series(0, %s - 1) AS g(n)
    CROSS JOIN LATERAL (
        SELECT p.id, p.priority FROM judgments_pair p
        WHERE p.pool_id = %s AND p.queued_at IS NOT NULL AND p.final_grade IS NULL AND p.human_grades = g.n
          AND {after}
          AND EXISTS (SELECT 1 FROM judgments_document d WHERE d.id = p.document_id AND d.title = '' AND d.body = '')
        ORDER BY p.priority DESC, p.id DESC LIMIT %s
    ) w
    ORDER BY w.priority DESC, w.id DESC LIMIT %s
"""


def pairs_without_content_page(pool: Pool, size: int, after: str | None = None) -> tuple[list, str | None]:
    """A page of `pairs_without_content` after the cursor `after` ("priority:id" of the last pair of the
    previous page; None: the first page), and the cursor of the next page (None: the last page). A keyset
    on pair_open_by_grades_idx that reads each pair's stored human_grades: page 5,000 of a queue of a
    million pairs costs what page 1 does, and complete pairs are skipped without reading a judgment."""
    condition, keyset = "TRUE", []
    if after:
        try:
            keyset = [int(part) for part in after.split(":")]
        except ValueError:
            keyset = []
        if len(keyset) == 2:
            condition = "(p.priority, p.id) < (%s, %s)"
        else:
            keyset = []
    walk = RawSQL(
        _WITHOUT_CONTENT_WALK.format(after=condition),
        (pool.raters_per_pair, pool.pk, *keyset, size + 1, size + 1),
    )
    pairs = Pair.objects.filter(pk__in=walk).select_related("query", "document").order_by("-priority", "-id")
    rows = list(pairs)
    more = len(rows) > size
    rows = rows[:size]
    return rows, f"{rows[-1].priority}:{rows[-1].pk}" if more else None


# --- A random sample of queries for the humans -------------------------------------------------------

SAMPLE_PRIORITY = 100_000_000  # above any pooling priority: a sample's pairs are served first


@transaction.atomic
def queue_queries(pool: Pool, query_ids: Sequence[int], k: int = DEFAULT_DEPTH) -> QueueResult:
    """Queue every pair of `query_ids` for the human raters, ahead of everything else: the top k of every
    configuration's current run for those queries (pairs made as needed) and every pair the pool already
    has for them. Pairs that have their grades are left alone (counted in `complete`)."""
    _check_depth(k)
    run_ids = list(Run.objects.filter(configuration__pool=pool).current().values_list("pk", flat=True))
    wanted = {int(q) for q in query_ids}
    rows = [row for row in _top_k(run_ids, k) if row[0] in wanted]
    pair_pks = pool_keys.ensure_pairs(pool, ((q, d) for q, d, _, _ in rows))
    priorities = {pair_pks[(q, d)]: SAMPLE_PRIORITY + _priority(n, best) for q, d, n, best in rows}
    for pk in Pair.objects.in_pool(pool).filter(query_id__in=wanted).values_list("pk", flat=True):
        priorities.setdefault(pk, SAMPLE_PRIORITY)
    return _queue(pool, priorities, keep_higher=True)
