"""A pool's counts and its raters' counts, read from stored tallies instead of scanning the pool.

What is counted (kept by triggers, migration judgments/0020_submit_tallies; the rows: models.tallies):
- per pool: `pairs`, `queued` pairs, `complete` ones (a final grade, or the pool's `raters_per_pair` human grades),
  `open_pairs` (queued, not complete, the document has content), `documents`; derived: `unfinished`
  (queued - complete), `without_content` (unfinished - open_pairs), `cant` (can't-judge answers);
- per rater in a pool: `graded` (judgments that are grades), `cant` (can't-judge answers), `judged_open`
  (open pairs they judged), so `remaining` = open pairs - judged_open: the pairs still open to them.
- per pair: `Pair.human_grades`, the grades that fill it (the queue reads it).

API for other modules: `pool_counts(pool)`, `rater_counts(pool, rater)`, `both(pool, rater)` (one
statement), `per_rater(pool)` ({rater id: RaterCounts}), `judgments(pool)` (every judgment of the pool,
grades and can't judge), `judgments_of(rater)` (an annotation of Pool querysets: the rater's judgments), `recount(pool)` (the same counted from the rows: tests and checks),
`rebuild(pool)` (recount and store, for data written with the triggers off).

Reading sums the pool's tally rows (delta rows: each write inserts, never updates, so raters never queue
on a shared counter); when a pool has more than FOLD_AT rows, the reader folds them into one row per
rater (and one for the pool), under a transaction advisory lock that a concurrent reader skips.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import F, IntegerField, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce

from .models import Pool, Tally

FOLD_AT = 400  # tally rows of one pool before a reader folds them
_FOLD_LOCK = 0x7A11  # pg_try_advisory_xact_lock(_FOLD_LOCK, pool id): one folder per pool at a time


@dataclass(frozen=True)
class PoolCounts:
    pairs: int = 0
    queued: int = 0
    complete: int = 0
    open_pairs: int = 0
    documents: int = 0
    judgments: int = 0  # every rater's grades and can't-judge answers
    grades: int = 0  # every rater's grades (can't judge is none)

    @property
    def percent(self) -> int:
        return round(100 * self.complete / self.queued) if self.queued else 0

    @property
    def unfinished(self) -> int:
        """Queued pairs still short of grades (with or without content)."""
        return self.queued - self.complete

    @property
    def without_content(self) -> int:
        """Queued pairs still short of grades whose document has no content (held back from raters)."""
        return self.queued - self.complete - self.open_pairs

    @property
    def cant(self) -> int:
        """Every rater's can't-judge answers."""
        return self.judgments - self.grades


@dataclass(frozen=True)
class RaterCounts:
    graded: int = 0
    cant: int = 0
    judged_open: int = 0
    open_pairs: int = 0  # the pool's, to say what remains

    @property
    def done(self) -> int:
        return self.graded + self.cant

    @property
    def remaining(self) -> int:
        return max(self.open_pairs - self.judged_open, 0)


# The pool's sums and the rater's, with the number of rows summed (for `fold`). Other modules read it
# inside a larger statement (the grading queue's), then `read_sums` its first SUMS_COLUMNS columns.
SUMS = """
    SELECT COALESCE(sum(pairs), 0), COALESCE(sum(queued), 0), COALESCE(sum(complete), 0), COALESCE(sum(open_pairs), 0),
           COALESCE(sum(documents), 0), COALESCE(sum(graded + cant), 0), COALESCE(sum(graded), 0),
           COALESCE(sum(graded) FILTER (WHERE rater_id = %(rater)s), 0),
           COALESCE(sum(cant) FILTER (WHERE rater_id = %(rater)s), 0),
           COALESCE(sum(judged_open) FILTER (WHERE rater_id = %(rater)s), 0),
           count(*)
    FROM judgments_tally WHERE pool_id = %(pool)s
"""
SUMS_COLUMNS = 11


def both(pool: Pool, rater=None) -> tuple[PoolCounts, RaterCounts]:
    """The pool's counts and the rater's (zeros for no rater), in one statement."""
    rater_pk = getattr(rater, "pk", rater) or 0
    with connection.cursor() as cursor:
        cursor.execute(SUMS, {"pool": pool.pk, "rater": rater_pk})
        return read_sums(pool, cursor.fetchone())


def read_sums(pool: Pool, row) -> tuple[PoolCounts, RaterCounts]:
    """The counts from a row of SUMS; folds the pool's rows when there are too many."""
    pairs, queued, complete, open_pairs, documents, judgments, grades, graded, cant, judged_open, rows = row
    if rows > FOLD_AT:
        fold(pool)
    return (
        PoolCounts(pairs, queued, complete, open_pairs, documents, judgments, grades),
        RaterCounts(graded, cant, judged_open, open_pairs),
    )


def pool_counts(pool: Pool) -> PoolCounts:
    return both(pool)[0]


def rater_counts(pool: Pool, rater) -> RaterCounts:
    return both(pool, rater)[1]


def judgments(pool: Pool) -> int:
    """Every judgment in the pool (grades and can't judge, by anyone)."""
    return both(pool)[0].judgments


def per_rater(pool: Pool) -> dict[int, RaterCounts]:
    """Each rater's counts in the pool, for raters with a judgment (or a tally) there."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT rater_id, sum(graded), sum(cant), sum(judged_open),
                   (SELECT COALESCE(sum(open_pairs), 0) FROM judgments_tally WHERE pool_id = %(pool)s)
            FROM judgments_tally WHERE pool_id = %(pool)s AND rater_id IS NOT NULL GROUP BY rater_id
            """,
            {"pool": pool.pk},
        )
        return {
            rater_id: RaterCounts(graded, cant, judged_open, open_pairs)
            for rater_id, graded, cant, judged_open, open_pairs in cursor.fetchall()
            if graded or cant or judged_open
        }


def judgments_of(rater):
    """An annotation of Pool querysets: the rater's judgments (grades and can't judge) in each pool."""
    sums = (
        Tally.objects.filter(pool_id=OuterRef("pk"), rater_id=getattr(rater, "pk", rater))
        .values("pool_id")
        .annotate(n=Sum(F("graded") + F("cant")))
        .values("n")
    )
    return Coalesce(Subquery(sums, output_field=IntegerField()), 0)


def fold(pool: Pool) -> bool:
    """Replace the pool's tally rows by their sums (one row per rater, one for the pool), unless another
    transaction is folding it now. Rows written meanwhile by others are not seen, so they stay."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [_FOLD_LOCK, pool.pk])
        if not cursor.fetchone()[0]:
            return False
        cursor.execute(
            """
            WITH gone AS (DELETE FROM judgments_tally WHERE pool_id = %(pool)s RETURNING *)
            INSERT INTO judgments_tally
                (pool_id, rater_id, pairs, queued, complete, open_pairs, documents, graded, cant, judged_open)
            SELECT %(pool)s, rater_id, sum(pairs), sum(queued), sum(complete), sum(open_pairs), sum(documents),
                   sum(graded), sum(cant), sum(judged_open)
            FROM gone GROUP BY rater_id
            """,
            {"pool": pool.pk},
        )
    return True


def rebuild(pool: Pool) -> None:
    """Recount the pool's pairs' human grades and its tallies from its rows, and store them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT jl_tally_rebuild(%s)", [pool.pk])


def recount(pool: Pool) -> tuple[PoolCounts, dict[int, RaterCounts], dict[int, int]]:
    """The pool's counts, each rater's, and each pair's human grades, counted from the rows (not from
    anything stored): what the tallies must equal."""
    human = """NOT j.cant_judge AND NOT j.excluded
               AND NOT EXISTS (SELECT 1 FROM judgments_modeljudge mj WHERE mj.user_id = j.rater_id)"""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            CREATE TEMP TABLE tally_recount AS
            SELECT p.id, p.queued_at IS NOT NULL AS queued,
                   p.queued_at IS NOT NULL AND (p.final_grade IS NOT NULL OR COALESCE(g.n, 0) >= pl.raters_per_pair)
                       AS complete,
                   p.queued_at IS NOT NULL AND p.final_grade IS NULL AND COALESCE(g.n, 0) < pl.raters_per_pair
                       AND NOT EXISTS (SELECT 1 FROM judgments_document e WHERE e.id = p.document_id
                                       AND e.title = '' AND e.body = '') AS open,
                   COALESCE(g.n, 0) AS n
            FROM judgments_pair p JOIN judgments_pool pl ON pl.id = p.pool_id
            LEFT JOIN (SELECT j.pair_id, count(*) AS n FROM judgments_judgment j WHERE {human} GROUP BY j.pair_id) g
                 ON g.pair_id = p.id
            WHERE p.pool_id = %(pool)s
            """,
            {"pool": pool.pk},
        )
        cursor.execute(
            """
            SELECT count(*), count(*) FILTER (WHERE queued), count(*) FILTER (WHERE complete), count(*) FILTER (WHERE open),
                   (SELECT count(*) FROM judgments_document WHERE pool_id = %(pool)s),
                   (SELECT count(*) FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id
                    WHERE p.pool_id = %(pool)s),
                   (SELECT count(*) FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id
                    WHERE p.pool_id = %(pool)s AND NOT j.cant_judge)
            FROM tally_recount
            """,
            {"pool": pool.pk},
        )
        pool_row = PoolCounts(*cursor.fetchone())
        cursor.execute(
            """
            SELECT j.rater_id, count(*) FILTER (WHERE NOT j.cant_judge), count(*) FILTER (WHERE j.cant_judge),
                   count(*) FILTER (WHERE r.open)
            FROM judgments_judgment j JOIN tally_recount r ON r.id = j.pair_id GROUP BY j.rater_id
            """
        )
        raters = {
            rater_id: RaterCounts(graded, cant, judged_open, pool_row.open_pairs)
            for rater_id, graded, cant, judged_open in cursor.fetchall()
        }
        cursor.execute("SELECT id, n FROM tally_recount")
        pairs = dict(cursor.fetchall())
        cursor.execute("DROP TABLE tally_recount")
    return pool_row, raters, pairs


def stored(pool: Pool) -> tuple[PoolCounts, dict[int, RaterCounts], dict[int, int]]:
    """The stored counterparts of `recount` (pool counts, each rater's, each pair's human_grades)."""
    pool_row = pool_counts(pool)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, human_grades FROM judgments_pair WHERE pool_id = %s", [pool.pk])
        pairs = dict(cursor.fetchall())
    return pool_row, per_rater(pool), pairs
