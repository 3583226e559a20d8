"""Query segments: the scores of a pool's configurations over the queries that carry some tags
(`judgments.query_tags`, stored on `Query.tags`). Nothing is recomputed: every figure is read from the stored
per-query cells (the fixed set's `QueryScore` rows, a measure set's `MeasureScore` rows) of the segment's
queries, and the statistics are those of `scoring.stats` on that subset.

- A segment is the queries of the pool that carry **every** tag asked for (`?tag=head&tag=category:shoes`:
  the head queries about shoes); one statement (`tags @> ARRAY[...]`, the GIN index) gives their keys.
- A mean over a segment is a plain average over the rows of those queries (a query the run did not rank
  counts 0, as on the whole pool); judged@k over the ranked ones, as `leaderboard.run_means`.
- The leaderboard's spread (`spread`): 95% percentile bootstrap CIs of each configuration's mean, and the
  paired randomization test of each configuration against the leader (Holm over the board), on the
  queries every run has a row for.
- The breakdown (`breakdown`): for every tag of the pool, n and each run's mean of one metric, from one
  read of that metric's cells and a (query x tag) membership matrix. On the leaderboard it reads every
  cell of the current runs (~0.8 s on 50 x 5,000), so it is read when asked for (`?breakdown=1`); the
  comparison's reads two runs' cells and is always shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from django.db import connection, transaction

from judgments.models import Pool, Query
from judgments.pgcopy.rows import read_rows, row_dtype
from judgments.query_tags import tag_problem

from . import comparison, stats
from .leaderboard import LeaderboardRow, RunMeans, plan_for_memory
from .metrics import CUTOFFS
from .models import JUDGED_FIELDS, MEAN_FIELDS, QueryScore

QUERY_TABLE = Query._meta.db_table
SCORE_TABLE = QueryScore._meta.db_table
ALPHA = 0.05
BOARD_RESAMPLES = 2_000  # sign flips per configuration on the leaderboard (50 at once): SE of p=0.05 0.005


class SegmentError(ValueError):
    """A tag that cannot name a segment (empty, whitespace, too long): one line naming it."""


def check_tags(values: Sequence[str]) -> tuple[str, ...]:
    """The tags asked for, each once, in order; SegmentError for a bad one."""
    for value in values:
        if problem := tag_problem(value):
            raise SegmentError(f"tag: {problem}")
    return tuple(dict.fromkeys(values))


@dataclass(frozen=True)
class Segment:
    """The queries of a pool carrying every tag of `tags`: their keys, ascending."""

    tags: tuple[str, ...]
    query_ids: np.ndarray

    @property
    def n(self) -> int:
        return len(self.query_ids)

    @property
    def label(self) -> str:
        return " + ".join(self.tags)


def segment(pool: Pool, tags: Sequence[str]) -> Segment:
    """The segment of `tags` in `pool` (one statement). SegmentError for a bad tag or no tag."""
    tags = check_tags(tags)
    if not tags:
        raise SegmentError("tag: give at least one tag")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {QUERY_TABLE} WHERE pool_id = %s AND tags @> %s::varchar[] ORDER BY id",
            [pool.pk, list(tags)],
        )
        ids = np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)
    return Segment(tags, ids)


def export_segment(pool: Pool, tags: Sequence[str]) -> Segment:
    """The segment of an export (`export_scores --tag`, `/api/scores/export/?tag=`): SegmentError also
    when no query of the pool carries the tags (a typo would otherwise export nothing)."""
    seg = segment(pool, tags)
    if not seg.n:
        raise SegmentError(
            f"tag: no query of pool {pool.name} carries {'every tag of ' if len(seg.tags) > 1 else ''}{seg.label}"
        )
    return seg


def pool_tags(pool: Pool) -> list[tuple[str, int]]:
    """Every tag of the pool's queries with its number of queries, by tag (one statement)."""
    return Query.objects.filter(pool=pool).tag_counts()


def tag_membership(pool: Pool, tags: Sequence[str], query_ids: np.ndarray) -> np.ndarray:
    """(len(query_ids), len(tags)) booleans: query i carries tag j (one statement)."""
    member = np.zeros((len(query_ids), len(tags)), dtype=bool)
    column = {tag: j for j, tag in enumerate(tags)}
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, tags FROM {QUERY_TABLE} WHERE pool_id = %s AND tags <> '{{}}'", [pool.pk])
        for pk, query_tags in cursor.fetchall():
            i = np.searchsorted(query_ids, pk)
            if i < len(query_ids) and query_ids[i] == pk:
                for tag in query_tags:
                    if (j := column.get(tag)) is not None:
                        member[i, j] = True
    return member


# --- The fixed set: QueryScore rows ------------------------------------------------------------------


def run_means(run_ids, flavour: str, metrics: Sequence[str], seg: Segment) -> dict[int, RunMeans]:
    """`leaderboard.run_means` over the segment's rows only: {run id: RunMeans} (one GROUP BY)."""
    ids = [int(i) for i in run_ids]
    if not ids:
        return {}
    metrics = tuple(metrics)
    sums = ", ".join(f"sum({MEAN_FIELDS[m]})" for m in metrics)
    judged = ", ".join(f"sum({field})" for field in JUDGED_FIELDS.values())
    sql = (
        "SELECT run_id, count(*), count(*) FILTER (WHERE NOT has_ranking),"
        f" count(*) FILTER (WHERE NOT has_relevant), {sums}, {judged}"
        f" FROM {SCORE_TABLE} WHERE run_id = ANY(%s) AND flavor = %s AND query_id = ANY(%s) GROUP BY run_id"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        plan_for_memory(cursor)
        cursor.execute(sql, [ids, flavour, seg.query_ids.tolist()])
        rows = cursor.fetchall()
    result = {}
    for run_id, n, unranked, no_relevant, *totals in rows:
        ranked = n - unranked
        means = {m: total / n for m, total in zip(metrics, totals[: len(metrics)], strict=True)}
        for m, total in zip(JUDGED_FIELDS, totals[len(metrics) :], strict=True):
            means[m] = total / ranked if ranked else None
        result[run_id] = RunMeans(run_id, n, unranked, no_relevant, means)
    return result


def restrict(
    rows: list[LeaderboardRow], flavour: str, metrics: Sequence[str], seg: Segment, headline: str
) -> list[LeaderboardRow]:
    """The leaderboard's rows with their current and previous means over the segment, best `headline`
    first (unscored last, by name)."""
    ids = [r for row in rows for r in (row.run_id, row.previous_run_id) if r is not None]
    means = run_means(ids, flavour, metrics, seg)
    out = [
        replace(
            row,
            current=means.get(row.run_id) if row.run_id else None,
            previous=means.get(row.previous_run_id) if row.previous_run_id else None,
        )
        for row in rows
    ]

    def order(row: LeaderboardRow):
        score = row.mean(headline)
        return (score is None, -(score or 0.0), row.configuration.name)

    return sorted(out, key=order)


def cell_values(
    run_ids: Sequence[int], flavour: str, metric: str, query_ids=None
) -> tuple[np.ndarray, np.ndarray]:
    """(query keys ascending, values (queries x runs)) of one metric's stored cells of the runs (of the
    queries of `query_ids` only, when given), NaN where a run has no row for a query: one binary COPY.
    Every query of 50 runs x 5,000 is 250,000 cells (5 MB, about 0.8 s on the realistic pool: the wide
    CellScore rows are read whole), which is why the leaderboard's breakdown is read on demand."""
    ids = [int(i) for i in run_ids]
    field = {**MEAN_FIELDS, **JUDGED_FIELDS}[metric]
    sql = (
        f"SELECT run_id, query_id, COALESCE({field}, 'NaN'::float8) FROM {SCORE_TABLE}"
        " WHERE run_id = ANY(%s) AND flavor = %s"
    )
    params: list = [ids, flavour]
    if query_ids is not None:
        sql += " AND query_id = ANY(%s)"
        params.append([int(q) for q in query_ids])
    dtype = row_dtype(("run", ">i8"), ("query", ">i8"), ("value", ">f8"))
    with transaction.atomic(), connection.cursor() as cursor:
        plan_for_memory(cursor)
        rows = read_rows(cursor, sql, params, dtype)
    return to_matrix(ids, rows["run"].astype(np.int64), rows["query"].astype(np.int64), rows["value"])


def to_matrix(
    run_ids: Sequence[int], run: np.ndarray, query: np.ndarray, value
) -> tuple[np.ndarray, np.ndarray]:
    """(query keys, (queries x runs) values, NaN where missing) from parallel (run, query, value) arrays."""
    queries = np.unique(query)
    matrix = np.full((len(queries), len(run_ids)), np.nan)
    order = np.argsort(np.asarray(run_ids, dtype=np.int64))
    sorted_runs = np.asarray(run_ids, dtype=np.int64)[order]
    column = order[np.searchsorted(sorted_runs, run)]
    matrix[np.searchsorted(queries, query), column] = np.asarray(value, dtype=np.float64)
    return queries, matrix


def measure_cells(
    run_ids: Sequence[int], measures, column: int, query_ids=None
) -> tuple[np.ndarray, np.ndarray]:
    """(query keys, (queries x runs) values) of one column of a measure set's stored rows (MeasureScore),
    of the queries of `query_ids` only when given."""
    from .measure_reads import run_values

    stored = run_values(run_ids, measures, query_ids)
    parts = [(np.full(len(r.query), r.run_id), r.query, r.values[:, column]) for r in stored.values()]
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros((0, len(run_ids)))
    run, query, value = (np.concatenate(p) for p in zip(*parts, strict=True))
    return to_matrix(run_ids, run, query, value)


# --- Statistics on a segment (pure numpy over read cells) -------------------------------------------


@dataclass(frozen=True)
class Spread:
    """One run's mean over the segment's common queries, its 95% CI, and the paired randomization p
    against the leader (`p_holm`: Holm over every run but the leader; None for the leader itself)."""

    mean: float
    ci: tuple[float, float]
    p: float | None
    p_holm: float | None

    @property
    def significant(self) -> bool:
        return self.p_holm is not None and not math.isnan(self.p_holm) and self.p_holm < ALPHA


@dataclass(frozen=True)
class BoardSpread:
    n: int  # queries every run has a row for (the paired tests' queries)
    leader: int | None  # run id
    runs: dict[int, Spread]
    n_resamples: int


def spread(
    run_ids: Sequence[int], matrix: np.ndarray, *, n_resamples: int = BOARD_RESAMPLES, seed=stats.SEED
) -> BoardSpread:
    """CIs of every run's mean and each run against the best one (rows: queries, columns: runs), on the
    queries every run has a value for. A run with no value at all (not scored yet) is left out, not
    allowed to empty the board."""
    scored = ~np.isnan(matrix).all(axis=0) if matrix.size else np.zeros(len(run_ids), dtype=bool)
    run_ids = [r for r, keep in zip(run_ids, scored, strict=True) if keep]
    matrix = matrix[:, scored]
    if not len(run_ids):
        return BoardSpread(0, None, {}, n_resamples)
    values = matrix[~np.isnan(matrix).any(axis=1)]
    n = len(values)
    if n == 0:
        return BoardSpread(0, None, {}, n_resamples)
    means = values.mean(axis=0)
    boot = stats.bootstrap_means(values, n_resamples=stats.default_n_bootstrap(n, n_resamples), seed=seed)
    intervals = stats.percentile_intervals(boot)
    lead = int(np.argmax(means))
    others = [c for c in range(len(run_ids)) if c != lead]
    p = stats.randomization_pvalues(values[:, others] - values[:, [lead]], n_resamples=n_resamples, seed=seed)
    p_holm = stats.holm(p) if len(others) else np.zeros(0)
    runs = {}
    for c, run_id in enumerate(run_ids):
        constant = bool(np.all(values[:, c] == values[0, c]))
        ci = (float(values[0, c]),) * 2 if constant else (float(intervals[0, c]), float(intervals[1, c]))
        k = others.index(c) if c != lead else None
        runs[int(run_id)] = Spread(
            float(means[c]), ci, None if k is None else float(p[k]), None if k is None else float(p_holm[k])
        )
    return BoardSpread(n, int(run_ids[lead]), runs, n_resamples)


@dataclass(frozen=True)
class TagMeans:
    """One tag of the pool: its number of queries with cells, and each run's mean over them."""

    tag: str
    n: int
    means: dict[int, float | None]


def breakdown(
    tags: Sequence[str], run_ids: Sequence[int], queries: np.ndarray, matrix: np.ndarray, member: np.ndarray
) -> list[TagMeans]:
    """Per tag: n and each run's mean over the tag's queries (its rows; NaN cells left out)."""
    have = ~np.isnan(matrix)
    filled = np.where(have, matrix, 0.0)
    weights = member.T.astype(np.float64)  # (tags x queries)
    sums = weights @ filled
    counts = weights @ have.astype(np.float64)
    out = []
    for j, tag in enumerate(tags):
        means = {
            int(r): (float(sums[j, c] / counts[j, c]) if counts[j, c] else None)
            for c, r in enumerate(run_ids)
        }
        out.append(TagMeans(tag, int(member[:, j].sum()), means))
    return out


@dataclass(frozen=True)
class TagComparison:
    """One tag on the comparison of two runs: the stats.Comparison of the headline metric on its queries."""

    tag: str
    result: stats.Comparison


def compare_by_tag(
    tags: Sequence[str], member: np.ndarray, a: np.ndarray, b: np.ndarray, *, seed=stats.SEED
) -> list[TagComparison]:
    """For every tag: means, CIs, difference and paired tests of B vs A on the tag's queries (rows of
    `a`/`b` aligned with `member`), by `stats.compare_many`."""
    out = []
    for j, tag in enumerate(tags):
        rows = member[:, j]
        [result] = stats.compare_many(a[rows][:, None], b[rows][:, None], seed=seed)
        out.append(TagComparison(tag, result))
    return out


def compare_pair(
    a, b, flavour: str, seg: Segment, *, metric: str, metrics: Sequence[str]
) -> comparison.PairComparison:
    """`comparison.compare_pair` on the segment's queries only: the two current runs' rows of those
    queries, aligned, with the same statistics; means and judged@10 over the segment's rows of each run."""
    return comparison.compare_pair(a, b, flavour, metric=metric, metrics=metrics, segment=seg)


def pairwise_matrix(
    configurations, flavour: str, seg: Segment, *, metric: str = comparison.HEADLINE_METRIC, seed=stats.SEED
) -> comparison.Matrix:
    """`comparison.pairwise_matrix` on the segment's queries only: each configuration's mean, judged@10
    and every pair's difference and tests (Holm over the matrix) over the segment's rows."""
    return comparison.pairwise_matrix(configurations, flavour, metric=metric, seed=seed, segment=seg)


def cutoff_means(configurations, flavour: str, seg: Segment) -> dict[int, list[float | None]]:
    """`comparison.cutoff_means` over the segment's rows: {configuration pk: [mean NDCG@k per cutoff]}."""
    runs = comparison.current_runs(configurations)
    metrics = [f"ndcg@{k}" for k in CUTOFFS]
    summaries = run_means([r.pk for r in runs.values()], comparison.check_flavour(flavour), metrics, seg)
    out = {}
    for configuration in configurations:
        run = runs.get(configuration.pk)
        summary = summaries.get(run.pk) if run else None
        out[configuration.pk] = [summary.means[m] if summary else None for m in metrics]
    return out
