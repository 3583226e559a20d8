"""Combined grades of a pool, read in bulk and combined by the pool's rule with numpy.

Whose grades count follows the pool's grade source (judgments.models.GradeSource): "humans" leaves
out the judgments of model judges, "fill" uses a pair's model grades only when no human graded it,
"all" counts everyone. Model raters' ids are read first (a tiny table); when there are none, or the
source is "all", the reading is exactly what it was without model judges. Otherwise the whole-pool read
leaves the models' rows out in the database (humans), or reads them apart by the rater index (fill), so
a pool with a judge reads no more than before (200,000 human grades plus 100,000 of a judge: humans
0.48 s, fill 0.56 s, all 0.62 s, on a loaded 2-core machine); the per-query read (a few queries) ships
the rater of each grade and masks in numpy (`counted`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction

from judgments import pgcopy
from judgments.models import CombineRule, GradeSource, Pool
from judgments.pgcopy.rows import array_rows, read_array_rows, read_columns

from . import metrics

# "No grade" in the int2 columns read from the database (a pair with only a final grade, no final grade):
# below every grade, the distractor's -1 included.
NO_GRADE = -32768

# Memory for the joins and aggregates over a whole pool (per transaction), so they do not spill to disk.
WORK_MEM = "256MB"


class ScoringError(RuntimeError):
    pass


@dataclass(frozen=True)
class Grades:
    """Combined grades of a pool: parallel arrays, one entry per graded pair, sorted by query."""

    query: np.ndarray  # int64 query pk
    doc: np.ndarray  # int64 document pk
    grade: np.ndarray  # float64 combined grade

    def __len__(self) -> int:
        return len(self.query)

    @property
    def queries(self) -> np.ndarray:
        """Sorted pks of the graded queries."""
        return np.unique(self.query)

    def relevant_queries(self) -> np.ndarray:
        """Sorted pks of the queries with at least one document of grade >= 1."""
        return np.unique(self.query[self.grade >= metrics.RELEVANCE_LEVEL])

    def between(self, low: int | None, high: int | None) -> Grades:
        """The grades of queries low <= pk < high (None: unbounded); they are sorted by query."""
        start = 0 if low is None else int(np.searchsorted(self.query, low))
        stop = len(self.query) if high is None else int(np.searchsorted(self.query, high))
        return Grades(self.query[start:stop], self.doc[start:stop], self.grade[start:stop])


# --- Reading -------------------------------------------------------------------------------------------

_GRADES_SQL = """
    SELECT array_agg(p.id), array_agg(p.query_id), array_agg(p.document_id),
           array_agg(COALESCE(p.final_grade, {none})::int2), array_agg(COALESCE(j.grade, {none})::int2) {raters}
    FROM judgments_pair p
    LEFT JOIN judgments_judgment j ON j.pair_id = p.id AND NOT j.cant_judge AND NOT j.excluded
    WHERE p.pool_id = %s {where} AND (p.final_grade IS NOT NULL OR j.grade IS NOT NULL)
"""


def pool_grades(pool: Pool, query_ids: Iterable[int] | None = None) -> Grades:
    """Combined grades of `pool` (restricted to `query_ids` when given), by the pool's combine rule."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('work_mem', %s, true)", [WORK_MEM])
        return read_grades(cursor, pool.pk, pool.combine_rule, query_ids, pool.grade_source)


MODEL_RATERS_SQL = "SELECT COALESCE(array_agg(user_id ORDER BY user_id), '{}') FROM judgments_modeljudge"


def model_raters(cursor) -> np.ndarray:
    """Sorted user ids of every model judge (their judgments are a model's, not a human's)."""
    cursor.execute(MODEL_RATERS_SQL)
    return np.asarray(cursor.fetchone()[0], dtype=np.int64)


def counted(pair: np.ndarray, rater: np.ndarray, models: np.ndarray, source: str) -> np.ndarray:
    """Which judgments (parallel arrays: pair and rater of each grade) count under `source`:
    humans only, humans and the models of pairs no human graded ("fill"), or all of them."""
    if source == GradeSource.ALL or not len(models):
        return np.ones(len(pair), dtype=bool)
    human = ~np.isin(rater, models)
    if source == GradeSource.HUMANS:
        return human
    return human | ~np.isin(pair, pair[human])


def read_grades(
    cursor,
    pool_id: int,
    rule: str,
    query_ids: Iterable[int] | None,
    source: str = GradeSource.HUMANS,
    models: np.ndarray | None = None,
) -> Grades:
    """`models`: model_raters(cursor), when the caller has read them already."""
    if source == GradeSource.ALL:
        models = np.zeros(0, np.int64)
    elif models is None:
        models = model_raters(cursor)
    if query_ids is None:
        return _read_pool_grades(cursor, pool_id, rule, models, source)
    params = [pool_id, sorted({int(q) for q in query_ids})]
    with_raters = len(models) > 0
    columns = read_columns(
        cursor,
        _GRADES_SQL.format(
            none=NO_GRADE,
            where="AND p.query_id = ANY(%s)",
            raters=", array_agg(COALESCE(j.rater_id, 0)::int8)" if with_raters else "",
        ),
        params,
        [">i8", ">i8", ">i8", ">i2", ">i2"] + [">i8"] * with_raters,
    )
    if with_raters:
        pair, query, doc, final, grade, rater = columns
        # A pair's entry without a grade (rater 0: only a final grade) counts as no grade either way.
        keep = counted(pair, rater, models, source) | (grade == NO_GRADE)
        columns = [pair, query, doc, final, np.where(keep, grade, NO_GRADE).astype(grade.dtype)]
    return combine_grades(*columns, rule=rule)


def read_pool_pairs(cursor, pool_id: int) -> list[np.ndarray]:
    """The pool's pairs in one statement, as arrays: id, query, document, final grade (NO_GRADE if none)."""
    return read_columns(
        cursor,
        "SELECT array_agg(id), array_agg(query_id), array_agg(document_id),"
        f" array_agg(COALESCE(final_grade, {NO_GRADE})::int2) FROM judgments_pair WHERE pool_id = %s",
        [pool_id],
        [">i8", ">i8", ">i8", ">i2"],
    )


def _read_pool_grades(
    cursor, pool_id: int, rule: str, models: np.ndarray | None = None, source: str = GradeSource.HUMANS
) -> Grades:
    """Every grade of a pool without joining in SQL (the join is most of the cost): the pool's pairs,
    then the judgments of the pairs' id range, matched to the pairs in numpy. When the pool's pairs are
    scattered over a much wider id range (pools filled at the same time), a semi-join reads instead."""
    pair, query, doc, final = read_pool_pairs(cursor, pool_id)
    if not len(pair):
        return combine_grades(pair, query, doc, final, np.zeros(0, dtype=np.int16), rule=rule)
    low, high = int(pair.min()), int(pair.max())
    if high - low + 1 <= 2 * len(pair):
        where, params = "j.pair_id BETWEEN %s AND %s", [low, high]
    else:
        where, params = "j.pair_id IN (SELECT id FROM judgments_pair WHERE pool_id = %s)", [pool_id]
    judged, grade = _read_judged(cursor, where, params, models, source)
    order = np.argsort(pair)
    pair, query, doc, final = pair[order], query[order], doc[order], final[order]
    at = np.minimum(np.searchsorted(pair, judged), len(pair) - 1)
    mine = pair[at] == judged  # the id range may hold other pools' pairs
    at, grade = at[mine], grade[mine]
    if rule == CombineRule.MEAN:  # the default rule needs no sort within pairs: sums per pair
        count = np.bincount(at, minlength=len(pair))
        total = np.bincount(at, weights=grade.astype(np.float64), minlength=len(pair))
        mean = np.divide(total, count, out=np.zeros(len(pair)), where=count > 0)
        combined = np.where(final > NO_GRADE, final, mean)
        keep = np.flatnonzero((count > 0) | (final > NO_GRADE))
        keep = keep[np.argsort(query[keep], kind="stable")]
        return Grades(query[keep].astype(np.int64), doc[keep].astype(np.int64), combined[keep])
    # A pair with a final grade and no rater grade still counts: one entry with grade NO_GRADE.
    ungraded = np.ones(len(pair), dtype=bool)
    ungraded[at] = False
    only_final = np.flatnonzero(ungraded & (final > NO_GRADE))
    rows = np.concatenate([at, only_final])
    grade = np.concatenate([grade, np.full(len(only_final), NO_GRADE, dtype=grade.dtype)])
    return combine_grades(pair[rows], query[rows], doc[rows], final[rows], grade, rule=rule)


def _read_judged(
    cursor, where: str, params: list, models: np.ndarray | None, source: str
) -> tuple[np.ndarray, np.ndarray]:
    """(pair, grade) of the grades that count under `source`, among the judgments `where` selects.
    With model judges, the database leaves their rows out of the humans' read (no rater column to
    ship), and for "fill" reads theirs apart (through the rater index) to keep the pairs no human graded."""
    sql = f"SELECT array_agg(j.pair_id), array_agg(j.grade) FROM judgments_judgment j WHERE {where} AND NOT j.cant_judge AND NOT j.excluded"
    kinds = [">i8", ">i2"]
    if models is None or not len(models) or source == GradeSource.ALL:
        return tuple(read_columns(cursor, sql, params, kinds))
    ids = [int(m) for m in models]
    judged, grade = read_columns(cursor, sql + " AND j.rater_id <> ALL(%s)", [*params, ids], kinds)
    if source == GradeSource.HUMANS:
        return judged, grade
    by_model, model_grade = read_columns(cursor, sql + " AND j.rater_id = ANY(%s)", [*params, ids], kinds)
    alone = ~np.isin(by_model, judged)  # pairs no human graded
    return np.concatenate([judged, by_model[alone]]), np.concatenate([grade, model_grade[alone]])


def combine_grades(
    pair: np.ndarray, query: np.ndarray, doc: np.ndarray, final: np.ndarray, grade: np.ndarray, *, rule: str
) -> Grades:
    """One combined grade per pair, from one entry per rater grade of the pair (grade NO_GRADE: none,
    for a pair that only has a final grade; final NO_GRADE: no final grade). Sorted by query.

    The rule works on the ordinal scale -1..4: the distractor grade -1 is the lowest grade, below 0,
    and enters the mean, median, majority, min and max as the number -1 (the combined-grade exports
    do the same in SQL). A negative combined grade makes the pair a distractor (UDCG); every other
    metric counts it as unjudged, as trec_eval does with a negative qrels grade."""
    rule = CombineRule(rule)
    if not len(pair):
        return Grades(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    order = np.lexsort((grade, pair, query))  # pairs grouped within queries, grades ascending
    pair, query, doc, final, grade = (a[order] for a in (pair, query, doc, final, grade))
    starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
    ends = np.r_[starts[1:], len(pair)]
    group = np.repeat(np.arange(len(starts)), ends - starts)
    valid = grade > NO_GRADE
    count = np.bincount(group[valid], minlength=len(starts))
    has_grade = count > 0
    first = np.minimum(ends - count, len(pair) - 1)  # valid grades (> NO_GRADE) sort last in a pair
    last = ends - 1
    values = grade.astype(np.float64)
    if rule == CombineRule.MEAN:
        total = np.bincount(group[valid], weights=values[valid], minlength=len(starts))
        combined = np.divide(total, count, out=np.zeros(len(starts)), where=has_grade)
    elif rule == CombineRule.MEDIAN:
        low = np.minimum(first + (count - 1) // 2, last)
        high = np.minimum(first + count // 2, last)
        combined = (values[low] + values[high]) / 2
    elif rule == CombineRule.MIN:
        combined = values[first]
    elif rule == CombineRule.MAX:
        combined = values[last]
    else:  # majority: the most frequent grade, ties to the lower one
        g, v = group[valid], grade[valid]
        combined = np.zeros(len(starts))
        if len(g):
            run_starts = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (v[1:] != v[:-1])])
            run_counts = np.diff(np.r_[run_starts, len(g)])
            run_group, run_grade = g[run_starts], v[run_starts]
            best = np.lexsort((run_grade, -run_counts, run_group))  # per pair: most frequent, then lowest
            first_of_group = best[np.r_[True, run_group[best][1:] != run_group[best][:-1]]]
            combined[run_group[first_of_group]] = run_grade[first_of_group]
    pair_final = final[starts]
    combined = np.where(pair_final > NO_GRADE, pair_final, combined)
    keep = has_grade | (pair_final > NO_GRADE)
    return Grades(query[starts][keep].astype(np.int64), doc[starts][keep].astype(np.int64), combined[keep])


# --- The cache of combined grades (models.PoolGrades, QueryGrades) ---------------------------------------


def _cache_key(cursor, rule: str, source: str) -> tuple[str, str, list[int]]:
    return rule, source, model_raters(cursor).tolist()


def history_mark(cursor) -> int:
    """The newest judgment history id: take it before reading grades that the cache will keep."""
    cursor.execute("SELECT COALESCE(max(id), 0) FROM judgments_judgmentchange")
    return cursor.fetchone()[0]


def cached_grades(cursor, pool_id: int, rule: str, source: str) -> Grades | None:
    """The pool's combined grades as its scores were last computed from them (models.PoolGrades), or
    None when there are none under this combine rule, grade source and set of model raters, or a
    judgment changed since they were read."""
    cursor.execute(
        "SELECT combine_rule, grade_source, model_raters, history_mark FROM scoring_poolgrades"
        " WHERE pool_id = %s",
        [pool_id],
    )
    row = cursor.fetchone()
    if row is None or (row[0], row[1], sorted(row[2])) != _cache_key(cursor, rule, source):
        return None
    if row[3] != history_mark(cursor):  # a judgment changed since: they may be stale
        return None
    (queries,), [(docs, counts), (grades, _)] = read_array_rows(
        cursor,
        "SELECT query_id, doc_ids, grades FROM scoring_querygrades WHERE pool_id = %s ORDER BY query_id",
        [pool_id],
        [">i8"],
        [">i8", ">f8"],
    )
    # counts as int64: with no graded query the arrays are empty float64, which np.repeat refuses
    return Grades(
        np.repeat(queries.astype(np.int64), counts.astype(np.int64)),
        docs.astype(np.int64),
        grades.astype(np.float64),
    )


def remember_grades(
    cursor, pool_id: int, rule: str, source: str, grades: Grades, scope=None, mark: int | None = None
) -> None:
    """Store the grades scoring has just read from the judgments: of the whole pool (scope None; the
    pool's cache is replaced and labelled with the rule, source and model raters), or of the queries in
    `scope` (those rows only, and only when the pool has a cache under the same label). `mark`: the
    history_mark taken before the whole pool's grades were read (scope None). Call it under the
    pool's scoring lock, in the transaction that writes the scores."""
    if scope is None:
        key = _cache_key(cursor, rule, source)
        if mark is None:
            raise ValueError("the whole pool's grades need the history mark taken before reading them")
        cursor.execute("DELETE FROM scoring_querygrades WHERE pool_id = %s", [pool_id])
        cursor.execute(
            "INSERT INTO scoring_poolgrades (pool_id, combine_rule, grade_source, model_raters, history_mark,"
            " written_at) VALUES (%s, %s, %s, %s, %s, now()) ON CONFLICT (pool_id) DO UPDATE SET combine_rule ="
            " EXCLUDED.combine_rule, grade_source = EXCLUDED.grade_source, model_raters = EXCLUDED.model_raters,"
            " history_mark = EXCLUDED.history_mark, written_at = now()",
            [pool_id, *key, mark],
        )
    else:
        cursor.execute(  # the cache's label and the model raters now, in one statement
            f"SELECT combine_rule, grade_source, model_raters, ({MODEL_RATERS_SQL}) FROM scoring_poolgrades"
            " WHERE pool_id = %s",
            [pool_id],
        )
        row = cursor.fetchone()
        if row is None or (row[0], row[1], sorted(row[2])) != (rule, source, list(row[3])):
            return
        cursor.execute(
            "DELETE FROM scoring_querygrades WHERE pool_id = %s AND query_id = ANY(%s)",
            [pool_id, [int(q) for q in scope]],
        )
    if not len(grades):
        return
    starts = np.flatnonzero(np.r_[True, grades.query[1:] != grades.query[:-1]])
    rows = array_rows(
        [(np.full(len(starts), pool_id), ">i8"), (grades.query[starts], ">i8")],
        [(grades.doc, ">i8"), (grades.grade, ">f8")],
        starts,
    )
    columns = ["pool_id", "query_id", "doc_ids", "grades"]
    with pgcopy.copy_in(getattr(cursor, "cursor", cursor), "scoring_querygrades", columns) as copy:
        copy.write(rows)


def human_grades(pool: Pool, query_ids: Iterable[int]) -> Grades:
    """The humans' combined grades of the queries `query_ids`, by the pool's rule (an admin's final grade
    wins; model judges' grades never count), whatever the pool's grade source."""
    with transaction.atomic(), connection.cursor() as cursor:
        return read_grades(cursor, pool.pk, pool.combine_rule, query_ids, GradeSource.HUMANS)


def rater_grades(pool: Pool, rater_id: int) -> Grades:
    """One rater's (or model judge's) own grades in the pool, can't judge left out, sorted by query."""
    with connection.cursor() as cursor:
        query, doc, grade = read_columns(
            cursor,
            "SELECT array_agg(p.query_id ORDER BY p.query_id, p.document_id),"
            " array_agg(p.document_id ORDER BY p.query_id, p.document_id),"
            " array_agg(j.grade ORDER BY p.query_id, p.document_id)"
            " FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id"
            " WHERE p.pool_id = %s AND j.rater_id = %s AND NOT j.cant_judge",
            [pool.pk, rater_id],
            [">i8", ">i8", ">i2"],
        )
    return Grades(query.astype(np.int64), doc.astype(np.int64), grade.astype(np.float64))
