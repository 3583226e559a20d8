"""MeasureScore rows: a pool's own measure set (models.PoolMeasures) for every (run, graded query) cell,
computed in the same pass as the CellScore rows (cells.score_cells) and written like them: by binary COPY,
only the rows that changed. Every row of a pool has one width (the set's columns), so that rows are read
and written as fixed-size binary records: the float8[] value is a head and (length, value) per element.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from judgments.pgcopy.rows import ARRAY_HEAD, read_rows, row_dtype, write_rows

from .measures import compute as measure_compute
from .measures.names import Measure, parse
from .models import MeasureScore, PoolMeasures

TABLE = MeasureScore._meta.db_table
_FLOAT8_OID = 701


# The names of a pool's measure set, as a statement of its own or a scalar subquery of a larger one.
NAMES_SQL = f"SELECT names FROM {PoolMeasures._meta.db_table} WHERE pool_id = {{pool}}"


def pool_measures(cursor, pool_id: int) -> list[Measure] | None:
    """The pool's measure set (None: the pool has today's fixed set and no MeasureScore rows)."""
    cursor.execute(NAMES_SQL.format(pool="%s"), [pool_id])
    row = cursor.fetchone()
    return measures_named(None if row is None else row[0])


def measures_named(names: list[str] | None) -> list[Measure] | None:
    """The measure set of these stored names (None: no set)."""
    return None if names is None else [parse(name) for name in names]


def compute_values(grades, rank_query, docs, measures: Sequence[Measure]) -> np.ndarray:
    """(n, columns) values of the rankings (rows grouped by query, as cells.score_cells passes them)."""
    workers = min(2, os.cpu_count() or 1) if docs.size >= 1_000_000 else 1  # as cells.score_cells
    return measure_compute.compute(
        rank_query, docs, grades.query, grades.doc, grades.grade, measures, check=False, workers=workers
    )


def missing_values(measures: Sequence[Measure], count: int) -> np.ndarray:
    """Values of `count` cells without a ranking: 0, and 1 for RBP's residual (nothing was read)."""
    values = np.zeros((count, len(measure_compute.columns(measures))))
    values[:, len(measure_compute.extended(measures)) :] = 1.0
    return values


def width(measures: Sequence[Measure]) -> int:
    """The number of values of each MeasureScore row."""
    return len(measure_compute.columns(measures))


def _row_dtype(width: int) -> np.dtype:
    array = [("head", ARRAY_HEAD), ("items", [("len", ">i4"), ("value", ">f8")], (width,))]
    return row_dtype(("run", ">i8"), ("query", ">i8"), ("has_ranking", "u1"), ("values", array))


def insert_rows(
    cursor, run: np.ndarray, query: np.ndarray, has_ranking: np.ndarray, values: np.ndarray
) -> int:
    """Insert rows with one binary COPY."""
    if not len(run):
        return 0
    width = values.shape[1]
    table = np.empty(len(run), dtype=_row_dtype(width))
    table["nfields"] = 4
    table["len_run"], table["len_query"], table["len_has_ranking"] = 8, 8, 1
    table["len_values"] = table.dtype["values"].itemsize
    table["run"], table["query"], table["has_ranking"] = run, query, has_ranking
    head = table["values"]["head"]
    head["ndim"], head["has_nulls"], head["element_type"] = 1, 0, _FLOAT8_OID
    head["length"], head["lower_bound"] = width, 1
    table["values"]["items"]["len"] = 8
    table["values"]["items"]["value"] = values
    write_rows(cursor, TABLE, ["run_id", "query_id", "has_ranking", "values"], table)
    return len(run)


def read_stored(cursor, where: str, params: list, width: int):
    """Stored rows of the scope: ids, runs, queries, has_ranking, values (n, width). Rows of another width (a set
    stored before the set changed) cannot be here: measure_sets deletes them with the change."""
    sql = f"SELECT id, run_id, query_id, has_ranking, values FROM {TABLE} WHERE {where}"
    array = [("head", ARRAY_HEAD), ("items", [("len", ">i4"), ("value", ">f8")], (width,))]
    columns = [("id", ">i8"), ("run", ">i8"), ("query", ">i8"), ("has_ranking", "u1"), ("values", array)]
    dtype = row_dtype(*columns)
    stored = read_rows(cursor, sql, params, dtype)
    if len(stored) and (stored["values"]["head"]["length"] != width).any():
        raise ValueError("stored measure rows of another width than the pool's measure set")
    return (
        stored["id"].astype(np.int64),
        stored["run"].astype(np.int64),
        stored["query"].astype(np.int64),
        stored["has_ranking"].astype(bool),
        stored["values"]["items"]["value"].astype(np.float64).reshape(len(stored), width),
    )


def no_rows(width: int):
    """read_stored's answer for a scope without rows."""
    empty = np.zeros(0, dtype=np.int64)
    return empty, empty, empty, np.zeros(0, dtype=bool), np.zeros((0, width))


def sync_rows(cursor, run, query, has_ranking, values, stored) -> None:
    """Make the stored rows equal the computed ones, writing only differences (as cells.sync_rows)."""
    ids, s_run, s_query, s_has, s_values = stored
    runs = np.union1d(run, s_run)
    queries = np.union1d(query, s_query)

    def keys(r, q):
        return np.searchsorted(runs, r) * len(queries) + np.searchsorted(queries, q)

    new_keys = keys(run, query)
    stored_keys = keys(s_run, s_query)
    order = np.argsort(stored_keys)
    sorted_keys = stored_keys[order]
    if len(sorted_keys):
        at = np.minimum(np.searchsorted(sorted_keys, new_keys), len(sorted_keys) - 1)
        found = sorted_keys[at] == new_keys
        match = order[at[found]]
    else:
        found, match = np.zeros(len(new_keys), dtype=bool), np.zeros(0, dtype=np.int64)
    # NaN never equals itself: compare bit patterns, so that an unchanged NaN is not rewritten.
    differs = (s_values[match].view(np.int64) != values[found].view(np.int64)).any(axis=1)
    differs |= s_has[match] != has_ranking[found].astype(bool)
    kept = np.zeros(len(ids), dtype=bool)
    kept[match] = True
    gone = np.concatenate([ids[~kept], ids[match[differs]]])
    if len(gone):
        cursor.execute(f"DELETE FROM {TABLE} WHERE id = ANY(%s)", [gone.tolist()])
    write = np.sort(np.concatenate([np.flatnonzero(~found), np.flatnonzero(found)[differs]]))
    insert_rows(cursor, run[write], query[write], has_ranking[write], values[write])
