"""Serving the judging queue to raters and saving their grades (the queue itself is built in `queue`).

Serving (`serve`; `next_pair_for` is its pair): a pair is *open* to a rater when it is queued, has no final
grade, its document has content, the rater has not judged it, it has fewer than the pool's `raters_per_pair`
grades, and nobody else holds it (or their hold expired). "Can't judge" answers do not count as grades: the
pair still needs `raters_per_pair` real grades from other raters, but the rater who could not judge it is
not asked again.

Order: raters work query by query so the information need stays in mind. They finish the query of their
latest judgment first; otherwise the query holding the highest-priority open pair comes next. Within a
query the order is a per-rater deterministic shuffle (md5 of rater and pair id), so it reveals no rank.
In an `adaptive` pool (see `adaptive`) the priorities are probabilities of relevance re-decided after
every grade: a rater stays on their query while its best open pair is worth at least `STAY` of the best
open pair of the pool (else moves to that pair's query), and within a query pairs are served by tiers of
`TIER` (a tenth of probability), shuffled per rater within a tier, so the order reveals no rank either.
A pool set to stop when settled (`Pool.queue_stopped`) serves nothing while its leaderboard is settled.

Gold pairs (judgments.gold): when a rater asks for a new pair, with probability `Pool.gold_rate` they are
served a gold pair they have not answered (if one is free), held like any other. A gold pair has a final
grade, so it is never open in the queue's sense; `save_grade` lets its holder (and anyone who answered
it) grade it whatever its grade count, and the answer stays out of the combined grade.
A rater holds one pair at a time for `HOLD` (refreshed whenever it is served again); the row is claimed
with `SELECT ... FOR UPDATE SKIP LOCKED`, so two raters asking at once never get the same pair.

Model judges' grades do not count toward `raters_per_pair` (see `queue`): only human grades fill a pair.

Saving (`save_grade`) locks the pair row and re-checks these rules before calling
`services.record_judgment`, so a pair never gets more grades than wanted, even after an expired hold.
Every rater's write goes through it: the grading page, its fragments and `POST /api/judgments/`. Only an
admin's import (and an admin's final grade) writes judgments outside the queue.
Progress (`progress`, `rater_progress`, `pool_progress`): a rater's judgments and the queue's completion.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from judgments import services, tallies
from judgments.models import Judgment, Pair, Pool, QueueStrategy, RaterStatus

from . import adaptive
from .queue import QueueError

HOLD = timedelta(minutes=5)
TIER = adaptive.SCALE // 10  # adaptive pools serve a query's pairs by tiers of this many priority points
STAY = 0.5  # adaptive pools: stay on the query while its best open pair is worth this share of the pool's


# --- Serving the queue -------------------------------------------------------------------------------

# The pair's document has content. Said as "not one of the documents without content": an anti-join on
# the small partial index document_without_content, where a join would read every document's title and
# body (most of the table) in a scan of the whole queue.
_HAS_CONTENT = """
    NOT EXISTS (SELECT 1 FROM judgments_document e WHERE e.pool_id = p.pool_id AND e.id = p.document_id
                AND e.title = '' AND e.body = '')
"""

_OPEN_SQL = f"""
    p.pool_id = %(pool)s
    AND p.queued_at IS NOT NULL
    AND p.final_grade IS NULL
    AND {_HAS_CONTENT}
    AND (p.held_by_id IS NULL OR p.held_by_id = %(rater)s OR p.held_until <= %(now)s)
    AND NOT EXISTS (SELECT 1 FROM judgments_judgment mine WHERE mine.pair_id = p.id AND mine.rater_id = %(rater)s)
    AND p.human_grades < %(wanted)s
    AND NOT (p.id = ANY(%(skip)s::bigint[]))
"""


# `p.human_grades` is the pair's human grades ("can't judge" is none, a model judge's grade does not count),
# kept by database triggers in the transaction of every write (judgments.tallies): the queue's statements
# read it from the pair row instead of counting the pair's judgments, so every plan is a walk of the pool's
# pairs by index, whatever the planner believes about a new pool (issue 23: before the next ANALYZE a new
# pool looks like one pair, and a per-pool aggregate of judgments was re-run for every pair: 19 s).
_MINE = (
    "EXISTS (SELECT 1 FROM judgments_judgment mine WHERE mine.pair_id = p.id AND mine.rater_id = %(rater)s)"
)


# The rater's current query: that of their latest judgment in the pool.
_CURRENT_QUERY = """
    SELECT p.query_id FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id
    WHERE j.rater_id = %(rater)s AND p.pool_id = %(pool)s ORDER BY j.id DESC LIMIT 1
"""

# The query holding the best open pair for the rater, and that pair's priority (the same conditions as
# _OPEN_SQL), leaving out the queries in %(tried)s.
_BEST_OPEN_QUERY = f"""
    SELECT p.query_id, p.priority
    FROM judgments_pair p
    WHERE p.pool_id = %(pool)s AND p.queued_at IS NOT NULL AND p.final_grade IS NULL
      AND {_HAS_CONTENT}
      AND (p.held_by_id IS NULL OR p.held_by_id = %(rater)s OR p.held_until <= %(now)s)
      AND p.human_grades < %(wanted)s AND NOT {_MINE}
      AND NOT (p.id = ANY(%(skip)s::bigint[])) AND NOT (p.query_id = ANY(%(tried)s::bigint[]))
    ORDER BY p.priority DESC, p.query_id
    LIMIT 1
"""


@dataclass(frozen=True)
class Served:
    """What `serve` found: the pair held for the rater (None: nothing open to them), the pool's and the
    rater's counts (read in the same statement as the rest, for the progress bar), and whether an admin
    has paused the rater in this pool."""

    pair: Pair | None
    counts: tuple[tallies.PoolCounts, tallies.RaterCounts]
    paused: bool = False


_GOLD_SQL = """
    p.pool_id = %(pool)s AND p.gold_grade IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM judgments_judgment mine WHERE mine.pair_id = p.id AND mine.rater_id = %(rater)s)
    AND NOT EXISTS (SELECT 1 FROM judgments_document e WHERE e.pool_id = p.pool_id AND e.id = p.document_id
                    AND e.title = '' AND e.body = '')
    AND NOT (p.id = ANY(%(skip)s::bigint[]))
"""


# What the rater's next pair depends on, in one statement: the pool's and the rater's counts, the
# rater's pause, the open pair they hold, the gold pair they hold, and their current query (and the
# transaction told not to wait for the disk at its commit).
_SITUATION = f"""
    SELECT t.*,
        EXISTS (SELECT 1 FROM judgments_raterstatus s
                WHERE s.pool_id = %(pool)s AND s.rater_id = %(rater)s AND s.paused),
        (SELECT p.id FROM judgments_pair p
         WHERE {_OPEN_SQL} AND p.held_by_id = %(rater)s AND p.held_until > %(now)s
         ORDER BY p.held_until DESC LIMIT 1),
        (SELECT p.id FROM judgments_pair p
         WHERE {_GOLD_SQL} AND p.held_by_id = %(rater)s AND p.held_until > %(now)s LIMIT 1),
        ({_CURRENT_QUERY}),
        {services.WITHOUT_WAITING_COLUMN}
    FROM ({tallies.SUMS}) t
"""


def next_pair_for(rater, pool: Pool, *, skip: Iterable[int] = (), now: datetime | None = None) -> Pair | None:
    """Hold and return the pair `rater` should grade next in `pool`, or None when nothing is open to them
    (`serve`, without the counts)."""
    return serve(rater, pool, skip=skip, now=now).pair


@transaction.atomic
def serve(rater, pool: Pool, *, skip: Iterable[int] = (), now: datetime | None = None) -> Served:
    """Hold the pair `rater` should grade next in `pool` and return it (None when nothing is open to them),
    with the pool's and the rater's counts.

    A pair the rater holds already (and has not skipped) is returned again with a fresh hold; otherwise a
    new pair is claimed with FOR UPDATE SKIP LOCKED and the rater's other holds in the pool are released.
    `skip`: pair ids the rater skipped in this session, not served again.
    """
    now = now or timezone.now()
    tiers = pool.queue_strategy == QueueStrategy.ADAPTIVE
    params = {
        "pool": pool.pk,
        "rater": rater.pk,
        "now": now,
        "wanted": pool.raters_per_pair,
        "skip": sorted({int(s) for s in skip}),
        "seed": f"{rater.pk}:",
        "tier": TIER if tiers else adaptive.SCALE * 1000,  # depth: one tier, the plain shuffle
        # Holds are worth no disk wait: lost in a crash, a rater asks again (services.commit_without_waiting).
        "without_waiting": services.is_transaction_itself(),
    }
    chosen = None
    with connection.cursor() as cursor:
        cursor.execute(_SITUATION, params)
        row = cursor.fetchone()
        counts = tallies.read_sums(pool, row[: tallies.SUMS_COLUMNS])
        paused, held, held_gold, current, _ = row[tallies.SUMS_COLUMNS :]
        if pool.queue_stopped or paused:
            chosen = None
        elif held is not None and _lock_open(cursor, params, held):
            chosen = held
        elif held_gold is not None:
            chosen = held_gold
        elif (
            pool.gold_rate > 0 and random.random() < pool.gold_rate and (gold := _claim_gold(cursor, params))
        ):
            chosen = gold
        elif counts[1].remaining == 0:
            chosen = None  # the stored counts say no pair is open to the rater: no walk of the queue
        elif tiers:
            chosen = _claim_adaptive(cursor, params, current)
        else:
            chosen = _claim(cursor, params, current)
        # The rater's other holds released, the chosen pair held: one statement.
        cursor.execute(
            """
            UPDATE judgments_pair
            SET held_by_id = CASE WHEN id = %(chosen)s THEN %(rater)s::bigint END,
                held_until = CASE WHEN id = %(chosen)s THEN %(until)s::timestamptz END
            WHERE (pool_id = %(pool)s AND held_by_id = %(rater)s) OR id = %(chosen)s
            """,
            {"chosen": chosen, "rater": rater.pk, "until": now + HOLD, "pool": pool.pk},
        )
    pair = None
    if chosen is not None:
        pair = Pair.objects.select_related("query", "document").get(pk=chosen)
        pair.pool = pool
    return Served(pair, counts, paused)


def _lock_open(cursor, params: dict, pair_id: int) -> bool:
    """Lock the pair if it is still open to the rater. Under READ COMMITTED a row changed by a commit
    since the statement began is re-checked in its latest version before it is returned (the pair's
    grade count and hold live on its row; the rest, the rater's own judgment and the document's content,
    only the rater or an import change)."""
    cursor.execute(
        f"SELECT p.id FROM judgments_pair p WHERE {_OPEN_SQL} AND p.id = %(pair)s FOR UPDATE OF p",
        {**params, "pair": pair_id},
    )
    return cursor.fetchone() is not None


def _claim(cursor, params: dict, current: int | None, attempts: int = 25) -> int | None:
    """Lock an open pair of the rater's current query (`current`: that of their latest judgment) if it has
    one; otherwise of the query holding the highest-priority open pair."""
    params = {**params, "tried": []}
    if current is not None:  # the common case, a query in progress: no scan of the whole pool
        pair_id = _claim_in_query(cursor, params, current)
        if pair_id is not None:
            return pair_id
        params["tried"].append(current)
    for _ in range(attempts):
        # The same conditions as _OPEN_SQL: this walks the whole queue, the per-query claim below does not.
        cursor.execute(_BEST_OPEN_QUERY, params)
        row = cursor.fetchone()
        if row is None:
            return None
        pair_id = _claim_in_query(cursor, params, row[0])
        if pair_id is not None:
            return pair_id
        params["tried"].append(row[0])
    return None


def _claim_gold(cursor, params: dict) -> int | None:
    """Lock a random gold pair the rater has not answered and nobody else holds now."""
    cursor.execute(
        f"""
        SELECT p.id FROM judgments_pair p
        WHERE {_GOLD_SQL} AND (p.held_by_id IS NULL OR p.held_by_id = %(rater)s OR p.held_until <= %(now)s)
        ORDER BY random() LIMIT 1
        FOR UPDATE OF p SKIP LOCKED
        """,
        params,
    )
    row = cursor.fetchone()
    return row[0] if row else None


def _claim_adaptive(cursor, params: dict, current: int | None, attempts: int = 25) -> int | None:
    """Adaptive pools: stay on the rater's query (`current`) while its best open pair is worth STAY of the
    pool's best open pair; otherwise lock a pair of the query holding the best one."""
    params = {**params, "tried": []}
    for _ in range(attempts):
        cursor.execute(_BEST_OPEN_QUERY, params)
        best = cursor.fetchone()
        if best is None:
            return None
        query_id = best[0]
        if current is not None and current != query_id and current not in params["tried"]:
            cursor.execute(
                f"SELECT max(p.priority) FROM judgments_pair p WHERE {_OPEN_SQL} AND p.query_id = %(query)s",
                {**params, "query": current},
            )
            mine = cursor.fetchone()[0]
            if mine is not None and mine >= STAY * best[1]:
                query_id = current
        pair_id = _claim_in_query(cursor, params, query_id)
        if pair_id is not None:
            return pair_id
        params["tried"].append(query_id)
    return None


def _claim_in_query(cursor, params: dict, query_id: int) -> int | None:
    """Lock the first open pair of the query in the rater's shuffled order, skipping rows that other
    transactions are claiming right now (SKIP LOCKED: no waiting). A row taken or completed by a commit
    since the statement began is re-checked in its latest version once locked (READ COMMITTED), and left
    out if no longer open: no second look is needed (see `_lock_open`)."""
    cursor.execute(
        f"""
        SELECT p.id FROM judgments_pair p
        WHERE {_OPEN_SQL} AND p.query_id = %(query)s
        ORDER BY p.priority / %(tier)s DESC, md5(%(seed)s || p.id::text), p.id
        LIMIT 1
        FOR UPDATE OF p SKIP LOCKED
        """,
        {**params, "query": query_id},
    )
    row = cursor.fetchone()
    return row[0] if row else None


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
    pair: Pair | int,
    rater,
    *,
    pool: Pool | None = None,
    grade: int | None = None,
    cant_judge: bool = False,
    reason: str = "",
    note: str = "",
    now: datetime | None = None,
) -> Judgment:
    """Store `rater`'s grade (or can't judge) of `pair` (a Pair or its id) through services.record_judgment.

    `pool`: the pool the pair must be in (Pair.DoesNotExist otherwise), as the caller has it already.
    Changing one's own judgment is always allowed, except turning a "can't judge" into a grade when the
    pair has its grades already. A new grade needs the pair open to the rater (see the module docstring);
    otherwise QueueError, and nothing is stored. The judgment's `pair` is the locked pair, with its query
    and document.
    """
    now = now or timezone.now()
    # The pair's row only (OF self): locking the joined pool row as well made every submit in a pool wait
    # for the one before it. The rater's pause is read in the same statement.
    locked = Pair.objects.select_for_update(of=("self",)).annotate(
        rater_paused=Exists(RaterStatus.objects.filter(pool_id=OuterRef("pool_id"), rater=rater, paused=True))
    )
    pair_id = getattr(pair, "pk", pair)
    if pool is None:
        locked = locked.select_related("pool", "query", "document").get(pk=pair_id)
    else:
        locked = locked.select_related("query", "document").get(pk=pair_id, pool=pool)
        locked.pool = pool
    # The locked row is the pair's latest version, so its human_grades counts every grade committed by
    # whoever held the lock before us; the rater's own judgment is a statement after the lock.
    n_grades = locked.human_grades
    own = Judgment.objects.filter(pair_id=locked.pk, rater=rater).values_list("cant_judge", flat=True).first()
    judged, judged_cant = own is not None, bool(own)
    adds_a_grade = not cant_judge and (not judged or judged_cant)
    if adds_a_grade and locked.rater_paused:
        raise QueueError("An admin has paused your grading in this pool; nothing was saved.")
    holds_it = locked.held_by_id == rater.pk and locked.held_until is not None and locked.held_until > now
    if locked.gold_grade is not None and not (judged or holds_it):
        raise QueueError("This pair is not in the judging queue.")  # never says "gold"
    if locked.gold_grade is None and (not judged or adds_a_grade):
        held_by_other = (
            locked.held_by_id not in (None, rater.pk)
            and locked.held_until is not None
            and locked.held_until > now
        )
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
    served_at = None
    if locked.held_by_id == rater.pk and locked.held_until is not None:
        served_at = locked.held_until - HOLD  # the hold began when the pair was (last) served
    judgment = services.record_judgment(
        locked, rater, grade=grade, cant_judge=cant_judge, reason=reason, note=note, served_at=served_at
    )
    if locked.pool.queue_strategy == QueueStrategy.ADAPTIVE and locked.queued_at is not None:
        adaptive.refresh_query(locked.pool, locked.query_id)  # re-decide the query with this grade
    return judgment


# --- Progress ----------------------------------------------------------------------------------------


def progress(rater, pool: Pool, counts: tuple | None = None) -> tuple[dict, dict]:
    """(rater_progress, pool_progress) from the stored tallies (judgments.tallies): one statement, none
    when `counts` (the pool's and the rater's, as `serve` read them) are given."""
    overall, own = counts if counts is not None else tallies.both(pool, rater)
    total = own.done + own.remaining
    percent = round(100 * own.done / total) if total else 100
    mine = {
        "graded": own.graded,
        "cant": own.cant,
        "done": own.done,
        "remaining": own.remaining,
        "percent": percent,
    }
    return mine, overall_progress(overall)


def overall_progress(counts: tallies.PoolCounts) -> dict:
    """Queued, complete and percent complete, from a pool's stored counts."""
    return {"queued": counts.queued, "complete": counts.complete, "percent": counts.percent}


def rater_progress(rater, pool: Pool) -> dict:
    """The rater's judgments in the pool (graded, can't judge) and the pairs still open to them."""
    return progress(rater, pool)[0]


def pool_progress(pool: Pool) -> dict:
    """Queued pairs of the pool and how many have their grades (or a final grade)."""
    return overall_progress(tallies.pool_counts(pool))
