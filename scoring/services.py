"""Scores of a pool: combined grades and rankings in, stored `CellScore` rows out (read as `QueryScore`).

Which cells exist: one row per (run, graded query), holding every flavour, for every run of the pool
(current or not: the leaderboard shows the change since a configuration's previous run). A graded
query has at least one combined grade; queries without any grade get no row. A run with no ranking for a graded
query gets a row with has_ranking=False and every metric 0 (as `trec_eval -c`). has_relevant is False
when no document of the query has a combined grade >= 1 (trec_eval's relevance level).

Combined grade of a pair: the adjudicated `Pair.final_grade` when set, else the pool's rule (mean,
median, majority with ties to the lower grade, min, max) over the raters' grades; "can't judge" is no
grade. It may be fractional (mean 2.5); the gain uses it as is. SQL selects the pool's grades (one row
per rater grade) and `combine_grades` combines them with numpy: measured on 1.2 million judgments,
GROUP BY in PostgreSQL took 5.2 s where this takes 2.4 s (the join alone costs that much).

Writers: `rescore_pool(pool)` recomputes everything; `rescore_queries(pool, query_ids)` (all runs x
those queries) and `rescore_run(run)` (one run x every graded query) recompute only the affected
cells. All three take a per-pool advisory lock, so concurrent updates apply one after the other and
the last one sees every committed grade. The signal receivers at the bottom call them after commit.

Readers: `configuration_means(pool, flavour)` for leaderboards (SQL AVG over stored rows).

Data moves in bulk, with no Python loop per row: reads are COPY ... TO STDOUT (FORMAT BINARY) viewed
by numpy as fixed-size rows (rankings padded with -1 to a common width on the server), or, for the
narrow grade rows, as one row of arrays (array_agg per column: half the cost for a million rows);
scores are written by COPY ... FROM STDIN (FORMAT BINARY) built by numpy. A pool-wide recompute goes
through the queries in batches (bounded memory), compares each batch with its stored rows and writes
only what differs, so recomputing an up-to-date pool writes nothing; outside a transaction a second
connection reads the next batch while the first scores and writes.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, transaction

from judgments.models import CombineRule, Pool, Run, SearchConfiguration

from . import metrics
from .models import CELL_VALUE_COLUMNS, JUDGED_FIELDS, METRIC_FIELDS, CellScore, QueryScore, cell_column

logger = logging.getLogger(__name__)

FLAVOUR_NAMES: tuple[str, ...] = tuple(metrics.FLAVOURS)
# Column order of the score rows; metric names as in metrics.METRICS / metrics.JUDGED.
SCORE_COLUMNS: dict[str, str] = {**METRIC_FIELDS, **JUDGED_FIELDS}
# Ranked entries read per batch (rankings x padded width): bounds memory whatever the pool size.
BATCH_ENTRIES = 5_000_000
# Batches the reading connection may hold ready (each about BATCH_ENTRIES x 8 bytes of rankings and the
# batch's stored rows): enough to keep reading while the grades are read and combined.
READ_AHEAD_BATCHES = 3
# Threads that score a batch side by side (numpy releases the GIL), from this many ranked entries on.
SCORING_THREADS = min(2, os.cpu_count() or 1)
THREADED_ENTRIES = 1_000_000
# Up to this many queries, an incremental update reads everything in one go and rewrites the rows.
FEW_QUERIES = 50
# From this many changed pairs on (a big import), grades_changed recomputes the whole pool.
MANY_PAIRS = 100_000
# Memory for the joins and aggregates over a whole pool (per transaction), so they do not spill to disk.
WORK_MEM = "256MB"
# First key of pg_advisory_xact_lock(key, pool id): "scoring".
_LOCK_KEY = 0x5C0_4E

_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_COPY_HEADER = _COPY_SIGNATURE + b"\x00\x00\x00\x00\x00\x00\x00\x00"
_COPY_TRAILER = b"\xff\xff"
_PG_EPOCH = 946_684_800  # 2000-01-01T00:00:00Z in Unix seconds


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


# --- Binary COPY ---------------------------------------------------------------------------------------


def _copy_columns(cursor, sql: str, params: Sequence, kinds: Sequence[str]) -> list[np.ndarray]:
    """Run `sql`, which returns one row of arrays (an array_agg per column), by binary COPY; each column
    as a numpy array of `kind` (a big-endian dtype such as ">i8"), 2-D for an array of arrays. A NULL
    (array_agg over no rows) gives an empty array."""
    # The raw psycopg cursor: Django's debug wrapper (DEBUG=1) does not pass COPY parameters on.
    raw = getattr(cursor, "cursor", cursor)
    data = bytearray()
    with raw.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
        for chunk in copy:
            data += chunk
    if not data.startswith(_COPY_SIGNATURE) or not data.endswith(_COPY_TRAILER):
        raise ScoringError("unexpected binary COPY stream from the database")

    def integer(at: int, size: int = 4) -> int:
        return int.from_bytes(data[at : at + size], "big", signed=True)

    position = 19 + integer(15)  # signature, flags, header extension
    if integer(position, 2) != len(kinds):
        raise ScoringError(f"expected one row of {len(kinds)} columns from the database")
    position += 2
    columns = []
    for kind in kinds:
        dtype = np.dtype(kind)
        length = integer(position)
        position += 4
        if length < 0:
            columns.append(np.zeros(0, dtype.newbyteorder("=")))
            continue
        ndim, has_nulls = integer(position), integer(position + 4)
        shape = tuple(integer(position + 12 + 8 * axis) for axis in range(ndim))
        count = int(np.prod(shape)) if ndim else 0
        items = np.frombuffer(
            data,
            dtype=np.dtype([("len", ">i4"), ("value", dtype)]),
            count=count,
            offset=position + 12 + 8 * ndim,
        )
        if has_nulls or (items["len"] != dtype.itemsize).any():
            raise ScoringError("NULL or unexpected value size in an array from the database")
        columns.append(items["value"].astype(dtype.newbyteorder("=")).reshape(shape if ndim else (0,)))
        position += length
    return columns


def _copy_rows(cursor, sql: str, params: Sequence, dtype) -> np.ndarray:
    """Run `COPY (sql) TO STDOUT (FORMAT BINARY)` and view its fixed-size rows as `dtype` (see _fields);
    `dtype` may be a function of the stream's body when the row size shows only in the first row.
    For wide rows this is faster than one row of arrays."""
    raw = getattr(cursor, "cursor", cursor)
    data = bytearray()
    with raw.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
        for chunk in copy:  # one chunk per row: appending keeps no per-row object alive
            data += chunk
    if not data.startswith(_COPY_SIGNATURE) or not data.endswith(_COPY_TRAILER):
        raise ScoringError("unexpected binary COPY stream from the database")
    body = memoryview(data)[19 + int.from_bytes(data[15:19], "big") : -2]
    if callable(dtype):
        dtype = dtype(body)
    if len(body) % dtype.itemsize:
        raise ScoringError(f"binary COPY rows are not {dtype.itemsize} bytes each")
    rows = np.frombuffer(body, dtype=dtype)
    for name in dtype.names:
        if name.startswith("len_") and len(rows) and (rows[name] != dtype[name[4:]].itemsize).any():
            raise ScoringError(f"NULL or unexpected size in column {name[4:]} of a binary COPY stream")
    return rows


def _fields(*columns: tuple[str, object]) -> np.dtype:
    """Packed dtype of a binary COPY row: field count, then (length, value) per column."""
    spec: list[tuple] = [("nfields", ">i2")]
    for name, kind in columns:
        spec += [(f"len_{name}", ">i4"), (name, kind)]
    return np.dtype(spec)


# --- Reading -------------------------------------------------------------------------------------------

_GRADES_SQL = """
    SELECT array_agg(p.id), array_agg(p.query_id), array_agg(p.document_id),
           array_agg(COALESCE(p.final_grade, -1)::int2), array_agg(COALESCE(j.grade, -1)::int2)
    FROM judgments_pair p
    LEFT JOIN judgments_judgment j ON j.pair_id = p.id AND NOT j.cant_judge
    WHERE p.pool_id = %s {where} AND (p.final_grade IS NOT NULL OR j.grade IS NOT NULL)
"""


def pool_grades(pool: Pool, query_ids: Iterable[int] | None = None) -> Grades:
    """Combined grades of `pool` (restricted to `query_ids` when given), by the pool's combine rule."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('work_mem', %s, true)", [WORK_MEM])
        return _read_grades(cursor, pool.pk, pool.combine_rule, query_ids)


def _read_grades(cursor, pool_id: int, rule: str, query_ids: Iterable[int] | None) -> Grades:
    if query_ids is None:
        return _read_pool_grades(cursor, pool_id, rule)
    params = [pool_id, sorted({int(q) for q in query_ids})]
    columns = _copy_columns(
        cursor,
        _GRADES_SQL.format(where="AND p.query_id = ANY(%s)"),
        params,
        [">i8", ">i8", ">i8", ">i2", ">i2"],
    )
    return combine_grades(*columns, rule=rule)


def _read_pool_grades(cursor, pool_id: int, rule: str) -> Grades:
    """Every grade of a pool without joining in SQL (the join is most of the cost): the pool's pairs,
    then the judgments of the pairs' id range, matched to the pairs in numpy. When the pool's pairs are
    scattered over a much wider id range (pools filled at the same time), a semi-join reads instead."""
    pair, query, doc, final = _copy_columns(
        cursor,
        "SELECT array_agg(id), array_agg(query_id), array_agg(document_id),"
        " array_agg(COALESCE(final_grade, -1)::int2) FROM judgments_pair WHERE pool_id = %s",
        [pool_id],
        [">i8", ">i8", ">i8", ">i2"],
    )
    if not len(pair):
        return combine_grades(pair, query, doc, final, np.zeros(0, dtype=np.int16), rule=rule)
    low, high = int(pair.min()), int(pair.max())
    if high - low + 1 <= 2 * len(pair):
        where, params = "j.pair_id BETWEEN %s AND %s", [low, high]
    else:
        where, params = "j.pair_id IN (SELECT id FROM judgments_pair WHERE pool_id = %s)", [pool_id]
    judged, grade = _copy_columns(
        cursor,
        f"SELECT array_agg(j.pair_id), array_agg(j.grade) FROM judgments_judgment j WHERE {where} AND NOT j.cant_judge",
        params,
        [">i8", ">i2"],
    )
    order = np.argsort(pair)
    pair, query, doc, final = pair[order], query[order], doc[order], final[order]
    at = np.minimum(np.searchsorted(pair, judged), len(pair) - 1)
    mine = pair[at] == judged  # the id range may hold other pools' pairs
    at, grade = at[mine], grade[mine]
    if rule == CombineRule.MEAN:  # the default rule needs no sort within pairs: sums per pair
        count = np.bincount(at, minlength=len(pair))
        total = np.bincount(at, weights=grade.astype(np.float64), minlength=len(pair))
        mean = np.divide(total, count, out=np.zeros(len(pair)), where=count > 0)
        combined = np.where(final >= 0, final, mean)
        keep = np.flatnonzero((count > 0) | (final >= 0))
        keep = keep[np.argsort(query[keep], kind="stable")]
        return Grades(query[keep].astype(np.int64), doc[keep].astype(np.int64), combined[keep])
    # A pair with a final grade and no rater grade still counts: one entry with grade -1.
    ungraded = np.ones(len(pair), dtype=bool)
    ungraded[at] = False
    only_final = np.flatnonzero(ungraded & (final >= 0))
    rows = np.concatenate([at, only_final])
    grade = np.concatenate([grade, np.full(len(only_final), -1, dtype=grade.dtype)])
    return combine_grades(pair[rows], query[rows], doc[rows], final[rows], grade, rule=rule)


def combine_grades(
    pair: np.ndarray, query: np.ndarray, doc: np.ndarray, final: np.ndarray, grade: np.ndarray, *, rule: str
) -> Grades:
    """One combined grade per pair, from one entry per rater grade of the pair (grade -1: none, for a
    pair that only has a final grade; final -1: no final grade). Sorted by query."""
    rule = CombineRule(rule)
    if not len(pair):
        return Grades(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    order = np.lexsort((grade, pair, query))  # pairs grouped within queries, grades ascending
    pair, query, doc, final, grade = (a[order] for a in (pair, query, doc, final, grade))
    starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
    ends = np.r_[starts[1:], len(pair)]
    group = np.repeat(np.arange(len(starts)), ends - starts)
    valid = grade >= 0
    count = np.bincount(group[valid], minlength=len(starts))
    has_grade = count > 0
    first = np.minimum(ends - count, len(pair) - 1)  # valid grades (>= 0) sort last in a pair
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
    combined = np.where(pair_final >= 0, pair_final, combined)
    keep = has_grade | (pair_final >= 0)
    return Grades(query[starts][keep].astype(np.int64), doc[starts][keep].astype(np.int64), combined[keep])


@dataclass
class _Batch:
    """Queries low <= pk < high (None: unbounded), read together; width: the widest ranking."""

    low: int | None = None
    high: int | None = None
    width: int | None = None
    rankings: int = 0

    @property
    def entries(self) -> int:
        return self.rankings * (self.width or 0)

    def where(self, run_ids: Sequence[int], query_ids: Sequence[int] | None = None) -> tuple[str, list]:
        where, params = "run_id = ANY(%s)", [list(run_ids)]
        if self.low is not None:
            where += " AND query_id >= %s"
            params.append(self.low)
        if self.high is not None:
            where += " AND query_id < %s"
            params.append(self.high)
        if query_ids is not None:
            where += " AND query_id = ANY(%s)"
            params.append(list(query_ids))
        return where, params

    def select(self, query_ids: np.ndarray) -> np.ndarray:
        """The sorted query pks that fall in this batch."""
        start = 0 if self.low is None else np.searchsorted(query_ids, self.low)
        stop = len(query_ids) if self.high is None else np.searchsorted(query_ids, self.high)
        return query_ids[start:stop]


def _query_batches(cursor, run_ids: Sequence[int], query_ids: Sequence[int] | None) -> list[_Batch]:
    """Cut the query pks into ranges of about BATCH_ENTRIES padded ranked entries (all runs of a query
    go in the same batch); the ranges cover every pk, ranked or not."""
    where, params = _Batch().where(run_ids, query_ids)
    cursor.execute(
        f"SELECT query_id, count(*), max(cardinality(doc_ids)) FROM judgments_ranking WHERE {where}"
        " GROUP BY query_id ORDER BY query_id",
        params,
    )
    batches = [_Batch()]
    for query_id, count, width in cursor.fetchall():
        batch = batches[-1]
        if batch.rankings and (batch.rankings + count) * max(batch.width, width) > BATCH_ENTRIES:
            batch.high = query_id
            batch = _Batch(low=query_id)
            batches.append(batch)
        batch.rankings += count
        batch.width = max(batch.width or 0, width)
    return batches


def _ranking_dtype(width: int) -> np.dtype:
    # an int8[] in binary: ndim, has-nulls flag, element type, size, lower bound, then (length, value)s
    array = [("head", ">i4", (5,)), ("items", [("len", ">i4"), ("value", ">i8")], (width,))]
    return _fields(("run", ">i8"), ("query", ">i8"), ("docs", array))


def _read_rankings(cursor, run_ids: Sequence[int], batch: _Batch, query_ids: Sequence[int] | None):
    """(run pks, query pks, (n, width) document pks padded with -1) of the batch's rankings. The server
    pads every ranking to the same width, so that the rows have one size; without a known width it
    pads to the widest ranking it finds (a window over a few rows)."""
    where, params = batch.where(run_ids, query_ids)
    if batch.width is not None:
        width = int(batch.width)
        padded = "CASE WHEN cardinality(doc_ids) = %s THEN doc_ids ELSE doc_ids || array_fill(-1::bigint, ARRAY[%s - cardinality(doc_ids)]) END"
        params = [width, width, *params]
    else:
        padded = "doc_ids || array_fill(-1::bigint, ARRAY[max(cardinality(doc_ids)) OVER () - cardinality(doc_ids)])"
    found = {}

    def dtype(body) -> np.dtype:
        if batch.width is not None:
            found["width"] = int(batch.width)
        else:  # the first row's array size, after the field count (2), run (4 + 8), query (4 + 8),
            # array length (4), number of dimensions, has-nulls flag and element type (4 each)
            found["width"] = int.from_bytes(body[42:46], "big") if len(body) >= 46 else 0
        return _ranking_dtype(found["width"])

    rows = _copy_rows(
        cursor, f"SELECT run_id, query_id, {padded} FROM judgments_ranking WHERE {where}", params, dtype
    )
    head = rows["docs"]["head"]
    if len(rows) and not ((head[:, 0] == 1) & (head[:, 1] == 0) & (head[:, 3] == found["width"])).all():
        raise ScoringError("unexpected ranking array in the binary COPY stream")
    items = rows["docs"]["items"]
    if len(rows) and (items["len"] != 8).any():
        raise ScoringError("NULL document key in a ranking")
    return rows["run"].astype(np.int64), rows["query"].astype(np.int64), items["value"].astype(np.int64)


# --- Computing -----------------------------------------------------------------------------------------


# The value columns of a CellScore row, and where each comes from: the first flavour whose metric lands
# in that column (models.cell_column).
_CELL_COLUMNS: tuple[str, ...] = CELL_VALUE_COLUMNS
_CELL_SOURCES: dict[str, tuple[str, str]] = {}
for _flavour in FLAVOUR_NAMES:
    for _metric, _column in SCORE_COLUMNS.items():
        _CELL_SOURCES.setdefault(cell_column(_flavour, _column), (_flavour, _metric))
assert _CELL_COLUMNS[:2] == ("has_ranking", "has_relevant")
assert set(_CELL_COLUMNS[2:]) == set(_CELL_SOURCES), "CellScore columns and flavours disagree"


@dataclass
class _Rows:
    """CellScore rows: one per (run, query), values in _CELL_COLUMNS order."""

    run: np.ndarray  # int64
    query: np.ndarray  # int64
    values: np.ndarray  # (n, len(_CELL_COLUMNS)) float64: has_ranking, has_relevant, then the metrics

    def __len__(self) -> int:
        return len(self.run)


def _score_cells(grades: Grades, run_ids: Sequence[int], rank_run, rank_query, docs) -> _Rows:
    """Score the rankings of the graded queries, and add a zero row for every (run, graded query) that
    has no ranking. Rankings of queries without grades are left out."""
    runs = np.asarray(sorted(run_ids), dtype=np.int64)
    graded, relevant = grades.queries, grades.relevant_queries()
    if len(graded) == 0 or len(runs) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _Rows(empty, empty, np.zeros((0, len(_CELL_COLUMNS))))
    position = np.minimum(np.searchsorted(graded, rank_query), len(graded) - 1)
    keep = graded[position] == rank_query
    rank_run, rank_query, docs, position = rank_run[keep], rank_query[keep], docs[keep], position[keep]
    # Rankings grouped by query: metrics looks grades up query by query.
    order = np.argsort(rank_query, kind="stable")
    rank_run, rank_query, docs, position = rank_run[order], rank_query[order], docs[order], position[order]
    scored = metrics.score_all(
        rank_query,
        docs,
        grades.query,
        grades.doc,
        grades.grade,
        metrics.FLAVOURS.values(),
        workers=SCORING_THREADS if len(docs) * docs.shape[1] >= THREADED_ENTRIES else 1,
        check=False,  # stored rankings: a CHECK constraint refuses a document twice; padded on the right
    )
    del docs

    # Every (run, graded query) cell; those without a ranking score 0.
    present = np.zeros(len(runs) * len(graded), dtype=bool)
    present[np.searchsorted(runs, rank_run) * len(graded) + position] = True
    missing = np.flatnonzero(~present)
    run = np.concatenate([rank_run, runs[missing // len(graded)]])
    query = np.concatenate([rank_query, graded[missing % len(graded)]])
    ranked = len(rank_run)
    values = np.zeros((len(run), len(_CELL_COLUMNS)))
    values[:ranked, 0] = 1.0
    values[:, 1] = np.isin(query, relevant)
    for j, column in enumerate(_CELL_COLUMNS[2:], start=2):
        flavour, metric = _CELL_SOURCES[column]
        values[:ranked, j] = scored[flavour][metric]
    return _Rows(run, query, values)


# --- Writing -------------------------------------------------------------------------------------------


def _now() -> int:
    """Now as a PostgreSQL binary timestamp (microseconds since 2000-01-01 UTC)."""
    return int((time.time() - _PG_EPOCH) * 1_000_000)


_VALUE_KINDS = [(c, "u1" if c.startswith("has_") else ">f8") for c in _CELL_COLUMNS]
_TABLE = CellScore._meta.db_table


def _binary_rows(columns: list[tuple[str, str]], count: int) -> np.ndarray:
    table = np.empty(count, dtype=_fields(*columns))
    table["nfields"] = len(columns)
    for name, kind in columns:
        table[f"len_{name}"] = np.dtype(kind).itemsize
    return table


def _fill_values(table: np.ndarray, values: np.ndarray) -> None:
    for j, (name, _) in enumerate(_VALUE_KINDS):
        table[name] = values[:, j]


def _insert_rows(cursor, rows: _Rows, selection: np.ndarray) -> int:
    """Insert the selected rows with one binary COPY."""
    if not len(selection):
        return 0
    names = ["run_id", "query_id", *_CELL_COLUMNS, "updated_at"]
    table = _binary_rows([("run", ">i8"), ("query", ">i8"), *_VALUE_KINDS, ("at", ">i8")], len(selection))
    table["run"] = rows.run[selection]
    table["query"] = rows.query[selection]
    _fill_values(table, rows.values[selection])
    table["at"] = _now()
    with cursor.copy(f"COPY {_TABLE} ({', '.join(names)}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(_COPY_HEADER + table.tobytes() + _COPY_TRAILER)
    return len(selection)


def _read_stored(cursor, where: str, params: list):
    """Stored rows: ids, runs, queries, values."""
    sql = f"SELECT id, run_id, query_id, {', '.join(_CELL_COLUMNS)} FROM {_TABLE} WHERE {where}"
    columns = [("id", ">i8"), ("run", ">i8"), ("query", ">i8"), *_VALUE_KINDS]
    stored = _copy_rows(cursor, sql, params, _fields(*columns))
    values = np.empty((len(stored), len(_CELL_COLUMNS)))
    for j, (name, _) in enumerate(_VALUE_KINDS):
        values[:, j] = stored[name]
    return (
        stored["id"].astype(np.int64),
        stored["run"].astype(np.int64),
        stored["query"].astype(np.int64),
        values,
    )


def _sync_rows(cursor, rows: _Rows, stored) -> dict[str, int]:
    """Make the `stored` rows (from _read_stored) equal `rows`, writing only the differences: new cells
    are inserted, changed ones replaced, cells no longer scored deleted."""
    ids, run, query, values = stored
    runs = np.union1d(rows.run, run)
    queries = np.union1d(rows.query, query)

    def keys(run, query):
        return np.searchsorted(runs, run) * len(queries) + np.searchsorted(queries, query)

    new_keys = keys(rows.run, rows.query)
    order = np.argsort(keys(run, query))
    sorted_keys = keys(run, query)[order]
    if len(sorted_keys):
        at = np.minimum(np.searchsorted(sorted_keys, new_keys), len(sorted_keys) - 1)
        found = sorted_keys[at] == new_keys
        match = order[at[found]]  # the stored row of each new row found
    else:
        found, match = np.zeros(len(new_keys), dtype=bool), np.zeros(0, dtype=np.int64)
    differs = (values[match] != rows.values[found]).any(axis=1)
    kept = np.zeros(len(ids), dtype=bool)
    kept[match] = True

    # A changed row is deleted and inserted again, with the stale ones and the new ones: measured on
    # 250,000 changed rows, one DELETE and one COPY take 2.1 s where an UPDATE from a temporary table
    # takes 4.5 s (an UPDATE writes a new row version and index entries too, and joins first).
    changed = np.flatnonzero(found)[differs]
    gone = np.concatenate([ids[~kept], ids[match[differs]]])
    if len(gone):
        cursor.execute(f"DELETE FROM {_TABLE} WHERE id = ANY(%s)", [gone.tolist()])
    _insert_rows(cursor, rows, np.sort(np.concatenate([np.flatnonzero(~found), changed])))
    return {"inserted": int((~found).sum()), "updated": len(changed), "deleted": int((~kept).sum())}


# --- Recomputing ---------------------------------------------------------------------------------------


@dataclass
class RescoreSummary:
    runs: int = 0
    queries: int = 0  # graded queries in scope
    rows: int = 0  # CellScore rows now stored for the scope: (run, graded query) cells, every flavour in each
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    def add(self, counts: dict[str, int]) -> None:
        """Add _sync_rows' counts of inserted, updated and deleted rows."""
        self.inserted += counts["inserted"]
        self.updated += counts["updated"]
        self.deleted += counts["deleted"]

    def __str__(self) -> str:
        return (
            f"{self.rows} cells for {self.runs} runs x {self.queries} graded queries, {len(FLAVOUR_NAMES)} "
            f"flavours each ({self.inserted} inserted, {self.updated} updated, {self.deleted} deleted) "
            f"in {self.seconds:.2f} s"
        )


def _begin(cursor, pool: Pool) -> tuple[str, list[int]]:
    """Take the pool's scoring lock for this transaction; return its combine rule and run pks."""
    cursor.execute(
        "SELECT pg_advisory_xact_lock(%s, %s), set_config('work_mem', %s, true)",
        [_LOCK_KEY, pool.pk, WORK_MEM],
    )
    cursor.execute(
        """
        SELECT p.combine_rule, ARRAY(
            SELECT r.id FROM judgments_run r JOIN judgments_searchconfiguration c ON c.id = r.configuration_id
            WHERE c.pool_id = p.id ORDER BY r.id)
        FROM judgments_pool p WHERE p.id = %s
        """,
        [pool.pk],
    )
    row = cursor.fetchone()
    if row is None:
        raise ScoringError(f"pool {pool.pk} no longer exists")
    return row[0], list(row[1])


def _rescore(pool: Pool, run_ids: Sequence[int] | None, query_ids: Sequence[int] | None) -> RescoreSummary:
    """Recompute the cells run x query for run in run_ids (default every run of the pool) and query in
    query_ids (default every query), so that the stored rows equal them, in one transaction.

    A few queries (a grade changed): one read, and their rows are deleted and written again. Otherwise
    the queries are read in batches, and each batch is compared with its stored rows, so that only
    what changed is written (a full recompute of an up-to-date pool writes nothing). Outside a
    transaction, a second connection reads the next batch while this one scores and writes."""
    started = time.perf_counter()
    summary = RescoreSummary()
    timings = summary.timings
    for key in ("read grades", "read rankings", "score", "write"):
        timings[key] = 0.0
    # Another connection cannot see the caller's uncommitted rows: read ahead only outside a transaction.
    read_ahead = not connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        rule, pool_runs = _begin(cursor, pool)
        run_ids = sorted(pool_runs if run_ids is None else set(run_ids) & set(pool_runs))
        scope = None if query_ids is None else np.unique(np.asarray(list(query_ids), dtype=np.int64))
        summary.runs = len(run_ids)
        if not run_ids:
            summary.seconds = time.perf_counter() - started
            return summary

        grades = None
        if scope is None and len(run_ids) < len(pool_runs):
            # Some of the runs (a new one): only graded queries have rows, so read the grades first and
            # drop the runs' rows of other queries. When most queries are not graded, read the rankings
            # of graded ones only (33 ms -> 3 ms for 5,000 rankings and no grade); otherwise filtering
            # costs more than it saves (140 ms against 40 ms to read 5,000 rankings).
            tick = time.perf_counter()
            grades = _read_grades(cursor, pool.pk, rule, None)
            timings["read grades"] = time.perf_counter() - tick
            graded = grades.queries.tolist()
            where, params = _Batch().where(run_ids)
            cursor.execute(
                f"DELETE FROM {_TABLE} WHERE {where} AND NOT query_id = ANY(%s)", [*params, graded]
            )
            summary.deleted += cursor.rowcount
            cursor.execute("SELECT count(*) FROM judgments_query WHERE pool_id = %s", [pool.pk])
            if 2 * len(graded) < cursor.fetchone()[0]:
                scope = grades.queries

        if scope is not None and len(scope) <= FEW_QUERIES:
            tick = time.perf_counter()
            if grades is None:
                grades = _read_grades(cursor, pool.pk, rule, scope.tolist())
                timings["read grades"] = time.perf_counter() - tick
            summary.queries = len(grades.queries)
            tick = time.perf_counter()
            where, params = _Batch().where(run_ids, scope.tolist())
            cursor.execute(f"DELETE FROM {_TABLE} WHERE {where}", params)
            summary.deleted += cursor.rowcount
            graded = grades.queries
            rankings = _read_rankings(cursor, run_ids, _Batch(), graded.tolist()) if len(graded) else None
            timings["read rankings"] = time.perf_counter() - tick
            if rankings is not None:
                tick = time.perf_counter()
                rows = _score_cells(grades, run_ids, *rankings)
                timings["score"] = time.perf_counter() - tick
                tick = time.perf_counter()
                summary.inserted = summary.rows = _insert_rows(cursor, rows, np.arange(len(rows)))
                timings["write"] = time.perf_counter() - tick
            summary.seconds = time.perf_counter() - started
            return summary

        tick = time.perf_counter()
        batches = _query_batches(cursor, run_ids, None if scope is None else scope.tolist())
        timings["read rankings"] += time.perf_counter() - tick

        def load(cursor, batch: _Batch):
            """A batch's rankings (of the queries in scope: the full pool filters in numpy) and stored rows."""
            tick = time.perf_counter()
            wanted = None if scope is None else batch.select(scope).tolist()
            if batch.rankings and (wanted is None or wanted):
                rankings = _read_rankings(cursor, run_ids, batch, wanted)
            else:
                rankings = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.int64))
            stored = _read_stored(cursor, *batch.where(run_ids, wanted))
            return batch, rankings, stored, time.perf_counter() - tick

        ahead = _ReadAhead(load, batches) if read_ahead and len(batches) > 1 else None
        # With a reader ahead, this connection only writes: a thread writes one batch while this one
        # scores the next.
        behind = _WriteBehind(connection.connection) if ahead is not None else None
        try:
            if grades is None:
                tick = time.perf_counter()
                grades = _read_grades(cursor, pool.pk, rule, None if scope is None else scope.tolist())
                timings["read grades"] = time.perf_counter() - tick
            summary.queries = len(grades.queries)
            waited = time.perf_counter()
            for batch, rankings, stored, reading in ahead or (load(cursor, b) for b in batches):
                tick = time.perf_counter()
                timings["read rankings"] += tick - waited if ahead else reading
                rows = _score_cells(grades.between(batch.low, batch.high), run_ids, *rankings)
                del rankings
                timings["score"] += time.perf_counter() - tick
                summary.rows += len(rows)
                if behind is not None:
                    behind.put(rows, stored)
                else:
                    tick = time.perf_counter()
                    summary.add(_sync_rows(cursor, rows, stored))
                    timings["write"] += time.perf_counter() - tick
                del rows, stored
                waited = time.perf_counter()
            if behind is not None:
                tick = time.perf_counter()
                behind.finish()
                timings["wait for writes"] = time.perf_counter() - tick
                timings["write"] += behind.seconds
                summary.add(behind.counts)
        finally:
            if ahead is not None:
                ahead.close()
            if behind is not None:
                behind.close()
    summary.seconds = time.perf_counter() - started
    return summary


class _WriteBehind:
    """Writes score batches (_sync_rows) on the caller's own connection and transaction, from a thread,
    one batch at a time: put() waits while the previous batch is still being written. The caller must
    not use the connection until finish() has returned; finish() raises what a write raised."""

    def __init__(self, raw_connection):
        self.raw_connection = raw_connection
        self.batches: queue.Queue = queue.Queue(maxsize=1)
        self.counts = {"inserted": 0, "updated": 0, "deleted": 0}
        self.seconds = 0.0
        self.error: BaseException | None = None
        self.worker = threading.Thread(target=self._work, name="scoring-write-behind", daemon=True)
        self.worker.start()

    def _work(self) -> None:
        with self.raw_connection.cursor() as cursor:
            while (item := self.batches.get()) is not None:
                if self.error is not None:
                    continue  # drain: the caller learns of the error at its next put() or finish()
                tick = time.perf_counter()
                try:
                    for key, value in _sync_rows(cursor, *item).items():
                        self.counts[key] += value
                except BaseException as exc:
                    self.error = exc
                self.seconds += time.perf_counter() - tick

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

    def put(self, rows: _Rows, stored) -> None:
        self._raise()
        self.batches.put((rows, stored))

    def finish(self) -> None:
        self.close()
        self._raise()

    def close(self) -> None:
        if self.worker.is_alive():
            self.batches.put(None)
            self.worker.join()


class _ReadAhead:
    """Iterates over load(cursor, batch) for each batch, loaded by a thread on its own database
    connection one batch ahead, so that the database reads while the caller scores and writes. The
    thread starts at once (the first batch loads while the caller reads the grades); close() stops it."""

    def __init__(self, load, batches: Sequence[_Batch]):
        self.results: queue.Queue = queue.Queue(maxsize=READ_AHEAD_BATCHES)
        self.stop = threading.Event()
        self.worker = threading.Thread(
            target=self._work, args=(load, batches), name="scoring-read-ahead", daemon=True
        )
        self.worker.start()

    def _work(self, load, batches: Sequence[_Batch]) -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT set_config('work_mem', %s, true)", [WORK_MEM])
                for batch in batches:
                    if self.stop.is_set():
                        return
                    self.results.put((True, load(cursor, batch)))
            self.results.put((True, None))
        except BaseException as exc:  # handed over to the consuming thread
            self.results.put((False, exc))
        finally:
            connection.close()  # this thread's own connection

    def __iter__(self):
        while True:
            ok, value = self.results.get()
            if not ok:
                raise value
            if value is None:
                return
            yield value

    def close(self) -> None:
        self.stop.set()
        while self.worker.is_alive():  # a worker blocked on the full queue gets to finish
            try:
                self.results.get(timeout=0.05)
            except queue.Empty:
                pass
        self.worker.join()


def rescore_pool(pool: Pool) -> RescoreSummary:
    """Recompute every stored score of the pool: every run (current or not), graded query and flavour."""
    summary = _rescore(pool, None, None)
    logger.info("pool %s rescored: %s", pool.name, summary)
    return summary


def rescore_queries(pool: Pool, query_ids: Iterable[int]) -> RescoreSummary:
    """Recompute the cells of these queries for every run of the pool (after their grades changed).
    A query that no longer has any grade loses its rows."""
    ids = sorted({int(q) for q in query_ids})
    if not ids:
        return RescoreSummary()
    return _rescore(pool, None, ids)


def rescore_run(run: Run) -> RescoreSummary:
    """Compute the cells of one run for every graded query of its pool (after it was submitted)."""
    pool = Pool.objects.get(configurations__runs=run)
    return _rescore(pool, [run.pk], None)


# --- Signal receivers (connected in ScoringConfig.ready) ---------------------------------------------


def on_grades_changed(sender, pool: Pool, pair_ids: Iterable[int], **kwargs) -> None:
    """judgments.signals.grades_changed: rescore every run on the queries of the changed pairs. After
    a big import (MANY_PAIRS or more), the whole pool: looking the queries up from a million pair ids
    took 1.7 s, and most queries have changed anyway (the recompute writes only rows that differ)."""
    ids = list(pair_ids)
    with _or_recompute_later(pool.pk):
        if len(ids) >= MANY_PAIRS:
            rescore_pool(pool)
            return
        with connection.cursor() as cursor:
            cursor.execute("SELECT DISTINCT query_id FROM judgments_pair WHERE id = ANY(%s)", [ids])
            query_ids = [row[0] for row in cursor.fetchall()]
        rescore_queries(pool, query_ids)


def on_run_submitted(sender, run: Run, **kwargs) -> None:
    """judgments.signals.run_submitted: score the new run on every graded query of its pool."""
    with _or_recompute_later(run.configuration.pool_id):
        rescore_run(run)


@contextmanager
def _or_recompute_later(pool_id: int):
    """The grade or run that triggered an update is already committed: if the update fails, log it and
    queue a full recompute of the pool (tasks.recompute_pool) rather than fail the user's request."""
    try:
        yield
    except Exception:
        logger.exception("incremental scoring of pool %s failed; queueing a full recompute", pool_id)
        from .tasks import recompute_pool

        recompute_pool.enqueue(pool_id)


def remember_combine_rule(sender, instance: Pool, update_fields=None, **kwargs) -> None:
    """pre_save of Pool: note the stored combine rule, to see in post_save whether it changed."""
    if instance.pk and (update_fields is None or "combine_rule" in update_fields):
        instance._stored_combine_rule = (
            Pool.objects.filter(pk=instance.pk).values_list("combine_rule", flat=True).first()
        )


def on_pool_saved(sender, instance: Pool, created: bool = False, **kwargs) -> None:
    """post_save of Pool: a new combine rule changes every combined grade, so the whole pool is
    recomputed, in the background (tasks.recompute_pool) once the change is committed."""
    before = instance.__dict__.pop("_stored_combine_rule", None)
    if created or before is None or before == instance.combine_rule:
        return
    from .tasks import recompute_pool

    pool_id = instance.pk
    transaction.on_commit(lambda: recompute_pool.enqueue(pool_id))


# --- Leaderboards --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunMeans:
    """Means of one run's stored scores over every graded query of the pool (missing rankings count 0).

    means: {metric: mean} for every name in metrics.METRICS (None when n_queries is 0) and metrics.JUDGED
    (judged@k over the queries the run ranked, as on the leaderboard; None when it ranked none).
    n_missing: graded queries the run has no ranking for; n_no_relevant: graded queries with no
    document of grade >= 1 (both are included in n_queries and in the means, with their scores).
    """

    run_id: int
    n_queries: int
    n_missing: int
    n_no_relevant: int
    means: dict[str, float | None]


@dataclass(frozen=True)
class ConfigurationMeans:
    configuration: SearchConfiguration  # with .team loaded
    current: RunMeans  # the configuration's newest run
    previous: RunMeans | None  # the run before it, scored against the same (current) grades

    def change(self, metric: str) -> float | None:
        """Current minus previous mean of `metric`; None without a previous run or a mean."""
        if self.previous is None:
            return None
        now, before = self.current.means.get(metric), self.previous.means.get(metric)
        return None if now is None or before is None else now - before


def configuration_means(pool: Pool, flavour: str = metrics.DEFAULT_FLAVOUR) -> list[ConfigurationMeans]:
    """For each configuration of `pool` that has a run, in name order: the means of its current run
    (and of the previous run) in `flavour`, by SQL AVG over the stored rows. Nothing is recomputed."""
    if flavour not in metrics.FLAVOURS:
        raise ValueError(f"unknown flavour {flavour!r}; expected one of {FLAVOUR_NAMES}")
    # judged@k: over the queries the run ranked (an unranked query's row holds 0), as the leaderboard.
    averages = ", ".join(
        f"avg(s.{column}) FILTER (WHERE s.has_ranking)" if metric in metrics.JUDGED else f"avg(s.{column})"
        for metric, column in SCORE_COLUMNS.items()
    )
    sql = f"""
        WITH runs AS (
            SELECT r.id, r.configuration_id,
                   row_number() OVER (PARTITION BY r.configuration_id ORDER BY r.id DESC) AS age
            FROM judgments_run r
            JOIN judgments_searchconfiguration c ON c.id = r.configuration_id
            WHERE c.pool_id = %s
        )
        SELECT runs.configuration_id, runs.id, runs.age, count(s.id),
               count(s.id) FILTER (WHERE NOT s.has_ranking),
               count(s.id) FILTER (WHERE NOT s.has_relevant),
               {averages}
        FROM runs
        LEFT JOIN {QueryScore._meta.db_table} s ON s.run_id = runs.id AND s.flavor = %s
        WHERE runs.age <= 2
        GROUP BY runs.configuration_id, runs.id, runs.age
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [pool.pk, flavour])
        rows = cursor.fetchall()
    per_configuration: dict[int, dict[int, RunMeans]] = {}
    for configuration_id, run_id, age, n, n_missing, n_no_relevant, *means in rows:
        per_configuration.setdefault(configuration_id, {})[age] = RunMeans(
            run_id, n, n_missing, n_no_relevant, dict(zip(SCORE_COLUMNS, means, strict=True))
        )
    configurations = SearchConfiguration.objects.filter(pk__in=per_configuration).select_related("team")
    return [
        ConfigurationMeans(
            configuration, per_configuration[configuration.pk][1], per_configuration[configuration.pk].get(2)
        )
        for configuration in configurations.order_by("name")
    ]
