"""Reading a pool's own measure set back (models.MeasureScore): per-query values and per-run means, for the
pages, the API and the exports. Rows are read by binary COPY into numpy (a run of 5,000 queries x 15 values
is 0.6 MB), and means are plain averages over every row of a run (a query the run has no ranking for
counts 0, as trec_eval -c and as the fixed set's means)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from django.db import connection

from judgments.models import Query

from . import measure_cells
from .measures.compute import columns
from .measures.names import Measure
from .models import MeasureTotals


@dataclass
class RunValues:
    """One run's stored rows: query pks (sorted), has_ranking, and values (n, columns)."""

    run_id: int
    query: np.ndarray
    has_ranking: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class MeasureMeans:
    """Means of one run over its stored rows, keyed by column name (measures, Judged@k, residuals)."""

    run_id: int
    n_queries: int
    n_unranked: int
    means: dict[str, float | None]

    @property
    def n_ranked(self) -> int:
        return self.n_queries - self.n_unranked


def run_values(run_ids: Iterable[int], measures: Sequence[Measure], query_ids=None) -> dict[int, RunValues]:
    """{run id: RunValues} for the runs that have rows (of `query_ids` only, when given)."""
    ids = sorted({int(i) for i in run_ids})
    if not ids:
        return {}
    where, params = "run_id = ANY(%s)", [ids]
    if query_ids is not None:
        where += " AND query_id = ANY(%s)"
        params.append([int(q) for q in query_ids])
    with connection.cursor() as cursor:
        _, run, query, has, values = measure_cells.read_stored(
            cursor, where + " ORDER BY run_id, query_id", params, measure_cells.width(measures)
        )
    out: dict[int, RunValues] = {}
    if not len(run):
        return out
    cuts = np.flatnonzero(np.diff(run)) + 1
    for start, stop in zip([0, *cuts.tolist()], [*cuts.tolist(), len(run)], strict=True):
        out[int(run[start])] = RunValues(
            int(run[start]), query[start:stop], has[start:stop], values[start:stop]
        )
    return out


def run_means(run_ids: Iterable[int], measures: Sequence[Measure], query_ids=None) -> dict[int, MeasureMeans]:
    """{run id: MeasureMeans} of every column, over every stored row of the run: from the run's stored
    totals (models.MeasureTotals, scoring.totals), or over the rows of `query_ids` only, when given."""
    names = columns(measures)
    out = {}
    if query_ids is None:
        ids = sorted({int(i) for i in run_ids})
        rows = MeasureTotals.objects.filter(run_id__in=ids).values_list(
            "run_id", "n", "n_unranked", "sums", "nans"
        )
        for run_id, n, unranked, sums, nans in rows:
            if len(sums) != len(names):
                raise ValueError("stored measure totals of another width than the pool's measure set")
            means = {
                name: float("nan") if nan else total / n
                for name, total, nan in zip(names, sums, nans, strict=True)
            }
            out[run_id] = MeasureMeans(run_id, n, unranked, means)
        return out
    for run_id, rows in run_values(run_ids, measures, query_ids).items():
        means = rows.values.mean(axis=0) if len(rows.query) else np.full(len(names), np.nan)
        out[run_id] = MeasureMeans(
            run_id,
            len(rows.query),
            int((~rows.has_ranking).sum()),
            {name: float(v) for name, v in zip(names, means, strict=True)},
        )
    return out


def query_ids_by_pk(query_pks: Iterable[int]) -> dict[int, str]:
    return dict(Query.objects.filter(pk__in=list(query_pks)).values_list("pk", "external_id"))


def values_by_cell(rows) -> dict[tuple[int, int], dict[str, float]]:
    """{(run id, query pk): {column: value}} of the pool's measure set for score rows (objects with
    .run.configuration.pool, .run_id, .query_id) whose pool has a set: one read of the set and one of
    the values per pool."""
    from .measure_sets import measure_set

    by_pool: dict[int, list] = {}
    pools = {}
    for row in rows:
        pool = row.run.configuration.pool
        pools[pool.pk] = pool
        by_pool.setdefault(pool.pk, []).append(row)
    out: dict[tuple[int, int], dict[str, float]] = {}
    for pool_pk, pool_rows in by_pool.items():
        measures = measure_set(pools[pool_pk])
        if measures is None:
            continue
        names = columns(measures)
        wanted = {(r.run_id, r.query_id) for r in pool_rows}
        stored = run_values({r.run_id for r in pool_rows}, measures, {r.query_id for r in pool_rows})
        for run_id, values in stored.items():
            for query, row in zip(values.query.tolist(), values.values, strict=True):
                if (run_id, query) in wanted:
                    out[(run_id, query)] = dict(zip(names, row.tolist(), strict=True))
    return out
