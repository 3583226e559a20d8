"""Scores of a pool: combined grades and rankings in, stored `QueryScore` rows out.

Which cells exist: one row per (run, graded query, flavour) for every run of the pool (current or
not: the leaderboard shows the change since a configuration's previous run). A graded query has at
least one combined grade; queries without any grade get no row. A run with no ranking for a graded
query gets a row with has_ranking=False and every metric 0 (as `trec_eval -c`). has_relevant is False
when no document of the query has a combined grade >= 1 (trec_eval's relevance level).

Combined grade of a pair (in SQL): the adjudicated `Pair.final_grade` when set, else the pool's rule
(mean, median, majority with ties to the lower grade, min, max) over the raters' grades; "can't judge"
is no grade. It may be fractional (mean 2.5); the gain uses it as is.

Writers: `rescore_pool(pool)` recomputes everything; `rescore_queries(pool, query_ids)` (all runs x
those queries) and `rescore_run(run)` (one run x every graded query) recompute only the affected
cells. All three take a per-pool advisory lock, so concurrent updates apply one after the other and
the last one sees every committed grade. The signal receivers at the bottom call them after commit.

Readers: `configuration_means(pool, flavour)` for leaderboards (SQL AVG over stored rows).

Data moves in bulk: grades and rankings are read with COPY ... TO STDOUT (FORMAT BINARY) straight into
numpy arrays (rankings padded with -1 on the server to a fixed width, so every row has the same size),
and scores are written with COPY ... FROM STDIN (FORMAT BINARY) built by numpy: no Python loop per row.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, transaction

from judgments.models import CombineRule, Pool, Run, SearchConfiguration

from . import metrics
from .models import JUDGED_FIELDS, METRIC_FIELDS, QueryScore

logger = logging.getLogger(__name__)

FLAVOUR_NAMES: tuple[str, ...] = tuple(metrics.FLAVOURS)
# Column order of the score rows; metric names as in metrics.METRICS / metrics.JUDGED.
SCORE_COLUMNS: dict[str, str] = {**METRIC_FIELDS, **JUDGED_FIELDS}
# Rankings read per batch (rows x padded width): bounds memory whatever the pool size.
BATCH_ENTRIES = 6_000_000
# Up to this many queries, an incremental update reads their rankings in one statement.
FEW_QUERIES = 50
# Memory for the joins and aggregates over a whole pool (per transaction), so they do not spill to disk.
WORK_MEM = "256MB"
# First key of pg_advisory_xact_lock(key, pool id): "scoring".
_LOCK_KEY = 0x5C0_4E

_COMBINE_SQL = {
    CombineRule.MEAN: "avg(j.grade)::float8",
    CombineRule.MEDIAN: "percentile_cont(0.5) WITHIN GROUP (ORDER BY j.grade)",
    # mode() keeps the first of equally frequent values in input order: ORDER BY grade = the lower one.
    CombineRule.MAJORITY: "(mode() WITHIN GROUP (ORDER BY j.grade))::float8",
    CombineRule.MIN: "min(j.grade)::float8",
    CombineRule.MAX: "max(j.grade)::float8",
}

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


# --- Binary COPY ---------------------------------------------------------------------------------------


def _copy_out(cursor, sql: str, params: Sequence, dtype) -> np.ndarray:
    """Run `COPY (sql) TO STDOUT (FORMAT BINARY)` and view its rows as `dtype` (fixed-size rows).
    `dtype` may be a function of the stream's body (bytes after the header) when the row size is
    only known from the first row."""
    # The raw psycopg cursor: Django's debug wrapper (DEBUG=1) does not pass COPY parameters on.
    raw = getattr(cursor, "cursor", cursor)
    data = bytearray()
    with raw.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
        for chunk in copy:  # one row per chunk: appending keeps no per-row objects alive
            data += chunk
    if not data.startswith(_COPY_SIGNATURE) or not data.endswith(_COPY_TRAILER):
        raise ScoringError("unexpected binary COPY stream from the database")
    extension = int.from_bytes(data[15:19], "big")
    body = memoryview(data)[19 + extension : -2]
    if callable(dtype):
        dtype = dtype(body)
    if len(body) % dtype.itemsize:
        raise ScoringError(f"binary COPY rows are not {dtype.itemsize} bytes each")
    rows = np.frombuffer(body, dtype=dtype)
    if len(rows) and (rows["nfields"] != len([n for n in dtype.names if n.startswith("len_")])).any():
        raise ScoringError("binary COPY returned rows of an unexpected shape")
    return rows


def _fields(*columns: tuple[str, str | tuple]) -> np.dtype:
    """Packed dtype of a binary COPY row: field count, then (length, value) per column."""
    spec: list[tuple] = [("nfields", ">i2")]
    for name, kind in columns:
        spec.append((f"len_{name}", ">i4"))
        spec.append((name, *kind) if isinstance(kind, tuple) else (name, kind))
    return np.dtype(spec)


def _check_lengths(rows: np.ndarray, **expected: int) -> None:
    for name, length in expected.items():
        if len(rows) and (rows[f"len_{name}"] != length).any():
            raise ScoringError(f"column {name}: NULL or unexpected size in the binary COPY stream")


# --- Reading -------------------------------------------------------------------------------------------


_GRADES_SQL = """
    SELECT p.query_id, p.document_id, COALESCE(p.final_grade::float8, {aggregate})
    FROM judgments_pair p
    LEFT JOIN judgments_judgment j ON j.pair_id = p.id AND NOT j.cant_judge
    WHERE p.pool_id = %s {where}
    GROUP BY p.id
    HAVING p.final_grade IS NOT NULL OR count(j.grade) > 0
"""


def pool_grades(pool: Pool, query_ids: Iterable[int] | None = None) -> Grades:
    """Combined grades of `pool` (restricted to `query_ids` when given), by the pool's combine rule."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('work_mem', %s, true)", [WORK_MEM])
        return _read_grades(cursor, pool.pk, pool.combine_rule, query_ids)


def _read_grades(cursor, pool_id: int, rule: str, query_ids: Iterable[int] | None) -> Grades:
    params: list = [pool_id]
    where = ""
    if query_ids is not None:
        where = "AND p.query_id = ANY(%s)"
        params.append(sorted({int(q) for q in query_ids}))
    sql = _GRADES_SQL.format(aggregate=_COMBINE_SQL[CombineRule(rule)], where=where)
    rows = _copy_out(cursor, sql, params, _fields(("query", ">i8"), ("doc", ">i8"), ("grade", ">f8")))
    _check_lengths(rows, query=8, doc=8, grade=8)
    return Grades(
        rows["query"].astype(np.int64), rows["doc"].astype(np.int64), rows["grade"].astype(np.float64)
    )


@dataclass
class _Batch:
    run_ids: list[int] = field(default_factory=list)
    rows: int = 0
    width: int = 0


def _ranking_batches(cursor, run_ids: Sequence[int], query_ids: Sequence[int] | None) -> list[_Batch]:
    """Group runs so that each batch reads at most about BATCH_ENTRIES padded entries."""
    where, params = _ranking_filter(run_ids, query_ids)
    cursor.execute(
        f"SELECT run_id, count(*), max(cardinality(doc_ids)) FROM judgments_ranking WHERE {where}"
        " GROUP BY run_id ORDER BY run_id",
        params,
    )
    batches: list[_Batch] = []
    batch = _Batch()
    for run_id, count, width in cursor.fetchall():
        wider = max(batch.width, width)
        if batch.run_ids and (batch.rows + count) * wider > BATCH_ENTRIES:
            batches.append(batch)
            batch, wider = _Batch(), width
        batch.run_ids.append(run_id)
        batch.rows += count
        batch.width = wider
    if batch.run_ids:
        batches.append(batch)
    return batches


def _ranking_filter(run_ids: Sequence[int], query_ids: Sequence[int] | None) -> tuple[str, list]:
    where, params = "run_id = ANY(%s)", [list(run_ids)]
    if query_ids is not None:
        where += " AND query_id = ANY(%s)"
        params.append(list(query_ids))
    return where, params


def _read_rankings(cursor, batch: _Batch, query_ids: Sequence[int] | None):
    """(run pks, query pks, (n, width) document pks padded with -1) of a batch of runs."""
    where, params = _ranking_filter(batch.run_ids, query_ids)
    # Padding on the server makes every row the same size, so numpy reads the stream in one go.
    sql = (
        "SELECT run_id, query_id, doc_ids || array_fill(-1::bigint, ARRAY[%s - cardinality(doc_ids)])"
        f" FROM judgments_ranking WHERE {where}"
    )
    return read_padded_rankings(cursor, sql, [batch.width, *params], batch.width)


def _read_few_rankings(cursor, run_ids: Sequence[int], query_ids: Sequence[int]):
    """Like _read_rankings for a handful of queries, in one statement: the server pads to the widest
    ranking it finds (a window over the few rows), and the width is read from the first row."""
    where, params = _ranking_filter(run_ids, query_ids)
    sql = (
        "SELECT run_id, query_id, doc_ids || array_fill(-1::bigint,"
        " ARRAY[max(cardinality(doc_ids)) OVER () - cardinality(doc_ids)])"
        f" FROM judgments_ranking WHERE {where}"
    )
    return read_padded_rankings(cursor, sql, params, None)


def _width_of_first_row(body) -> int:
    # field count (2), run (4 + 8), query (4 + 8), array length (4), then ndim, flags, type, size.
    return int.from_bytes(body[42:46], "big") if len(body) >= 46 else 0


def read_padded_rankings(cursor, sql: str, params: Sequence, width: int | None):
    """Run `sql`, which selects (run_id, query_id, int8[] of exactly `width` elements; None: as many as
    the first row has), by binary COPY: (run pks, query pks, (n, width) int64 document pks)."""
    element = np.dtype([("len", ">i4"), ("value", ">i8")])

    def dtype_for(width: int) -> np.dtype:
        array = [("head", ">i4", (5,)), ("items", element, (width,))]
        return _fields(("run", ">i8"), ("query", ">i8"), ("docs", (array,)))

    found = {}

    def dtype(body) -> np.dtype:
        found["width"] = _width_of_first_row(body) if width is None else width
        return dtype_for(found["width"])

    rows = _copy_out(cursor, sql, params, dtype)
    width = found["width"]
    _check_lengths(rows, run=8, query=8, docs=20 + 12 * width)
    head = rows["docs"]["head"]  # ndim, has-nulls flag, element type, size, lower bound
    if len(rows) and not ((head[:, 0] == 1) & (head[:, 1] == 0) & (head[:, 3] == width)).all():
        raise ScoringError("unexpected ranking array in the binary COPY stream")
    if len(rows) and (rows["docs"]["items"]["len"] != 8).any():
        raise ScoringError("NULL document key in a ranking")
    return (
        rows["run"].astype(np.int64),
        rows["query"].astype(np.int64),
        rows["docs"]["items"]["value"].astype(np.int64).reshape(len(rows), width),
    )


# --- Computing -----------------------------------------------------------------------------------------


@dataclass
class _Rows:
    """Score rows: one per (run, query, flavour), values in SCORE_COLUMNS order."""

    run: np.ndarray  # int64
    query: np.ndarray  # int64
    flavour: np.ndarray  # int16: index in FLAVOUR_NAMES
    has_ranking: np.ndarray  # bool
    has_relevant: np.ndarray  # bool
    values: np.ndarray  # (n, len(SCORE_COLUMNS)) float64

    def __len__(self) -> int:
        return len(self.run)


def _score_cells(
    grades: Grades,
    graded: np.ndarray,
    relevant: np.ndarray,
    run_ids: Sequence[int],
    rank_run,
    rank_query,
    docs,
) -> _Rows:
    """Score the rankings of graded queries, and add a zero row for every (run, graded query) that
    has no ranking. Rankings of queries without grades are left out."""
    runs = np.asarray(sorted(run_ids), dtype=np.int64)
    if len(graded) == 0 or len(runs) == 0:
        return _Rows(
            *(np.zeros(0, dtype) for dtype in (np.int64, np.int64, np.int16, bool, bool)),
            np.zeros((0, len(SCORE_COLUMNS))),
        )
    position = np.minimum(np.searchsorted(graded, rank_query), len(graded) - 1)
    keep = graded[position] == rank_query
    rank_run, rank_query, docs, position = rank_run[keep], rank_query[keep], docs[keep], position[keep]
    scored = metrics.score_all(
        rank_query, docs, grades.query, grades.doc, grades.grade, metrics.FLAVOURS.values()
    )

    # Every (run, graded query) cell of the batch; those without a ranking score 0.
    present = np.zeros(len(runs) * len(graded), dtype=bool)
    present[np.searchsorted(runs, rank_run) * len(graded) + position] = True
    missing = np.flatnonzero(~present)
    run = np.concatenate([rank_run, runs[missing // len(graded)]])
    query = np.concatenate([rank_query, graded[missing % len(graded)]])
    has_ranking = np.arange(len(run)) < len(rank_run)
    has_relevant = np.isin(query, relevant)

    n, flavours = len(run), len(FLAVOUR_NAMES)
    values = np.zeros((n * flavours, len(SCORE_COLUMNS)))
    for f, name in enumerate(FLAVOUR_NAMES):
        table = scored[name]
        for j, metric in enumerate(SCORE_COLUMNS):
            values[f * n : f * n + len(rank_run), j] = table[metric]
    return _Rows(
        np.tile(run, flavours),
        np.tile(query, flavours),
        np.repeat(np.arange(flavours, dtype=np.int16), n),
        np.tile(has_ranking, flavours),
        np.tile(has_relevant, flavours),
        values,
    )


# --- Writing -------------------------------------------------------------------------------------------

_VALUE_COLUMNS = ("has_ranking", "has_relevant", *SCORE_COLUMNS.values())


def _now() -> int:
    """Now as a PostgreSQL binary timestamp (microseconds since 2000-01-01 UTC)."""
    return int((time.time() - _PG_EPOCH) * 1_000_000)


def _value_fields() -> list[tuple[str, str]]:
    return [("has_ranking", "u1"), ("has_relevant", "u1"), *((c, ">f8") for c in SCORE_COLUMNS.values())]


def _fill(table: np.ndarray, rows: _Rows, selection: np.ndarray, columns: list[tuple[str, str]]) -> None:
    table["nfields"] = len(columns)
    for name, kind in columns:
        table[f"len_{name}"] = np.dtype(kind).itemsize
    table["has_ranking"] = rows.has_ranking[selection]
    table["has_relevant"] = rows.has_relevant[selection]
    values = rows.values[selection]
    for j, column in enumerate(SCORE_COLUMNS.values()):
        table[column] = values[:, j]


def _insert_rows(cursor, rows: _Rows, selection: np.ndarray) -> int:
    """Insert the selected rows with one binary COPY (one block per flavour: the label's length varies)."""
    if not len(selection):
        return 0
    timestamp = _now()
    names = ["run_id", "query_id", "flavor", *_VALUE_COLUMNS, "updated_at"]
    with cursor.copy(
        f"COPY {QueryScore._meta.db_table} ({', '.join(names)}) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.write(_COPY_HEADER)
        for f, name in enumerate(FLAVOUR_NAMES):
            chosen = selection[rows.flavour[selection] == f]
            label = name.encode()
            columns = [
                ("run", ">i8"),
                ("query", ">i8"),
                ("flavor", f"S{len(label)}"),
                *_value_fields(),
                ("updated_at", ">i8"),
            ]
            table = np.empty(len(chosen), dtype=_fields(*columns))
            _fill(table, rows, chosen, columns)
            table["run"] = rows.run[chosen]
            table["query"] = rows.query[chosen]
            table["flavor"] = label
            table["updated_at"] = timestamp
            copy.write(table.tobytes())
        copy.write(_COPY_TRAILER)
    return len(selection)


def _update_rows(cursor, ids: np.ndarray, rows: _Rows, selection: np.ndarray) -> int:
    """Overwrite the values of stored rows `ids` with the selected rows (same order): a binary COPY into
    a temporary table, then one UPDATE. Keys do not change, so no foreign key is checked again."""
    if not len(selection):
        return 0
    columns = [("id", ">i8"), *_value_fields(), ("updated_at", ">i8")]
    definitions = ", ".join(
        ["id bigint", "has_ranking boolean", "has_relevant boolean"]
        + [f"{c} double precision" for c in SCORE_COLUMNS.values()]
        + ["updated_at timestamptz"]
    )
    cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS jl_score_updates ({definitions}) ON COMMIT DELETE ROWS")
    cursor.execute("TRUNCATE jl_score_updates")
    table = np.empty(len(selection), dtype=_fields(*columns))
    _fill(table, rows, selection, columns)
    table["id"] = ids
    table["updated_at"] = _now()
    with cursor.copy("COPY jl_score_updates FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(_COPY_HEADER + table.tobytes() + _COPY_TRAILER)
    assignments = ", ".join(f"{c} = u.{c}" for c in (*_VALUE_COLUMNS, "updated_at"))
    cursor.execute(
        f"UPDATE {QueryScore._meta.db_table} s SET {assignments} FROM jl_score_updates u WHERE s.id = u.id"
    )
    return len(selection)


def _read_stored(cursor, run_ids: Sequence[int], query_ids: Sequence[int] | None) -> np.ndarray:
    """The stored rows of these runs (and queries): id, run, query, flavour index (-1: unknown), values."""
    flavour = " ".join(f"WHEN '{name}' THEN {f}" for f, name in enumerate(FLAVOUR_NAMES))
    where, params = _ranking_filter(run_ids, query_ids)
    sql = (
        f"SELECT id, run_id, query_id, (CASE flavor {flavour} ELSE -1 END)::int2, {', '.join(_VALUE_COLUMNS)}"
        f" FROM {QueryScore._meta.db_table} WHERE {where}"
    )
    columns = [("id", ">i8"), ("run", ">i8"), ("query", ">i8"), ("flavour", ">i2"), *_value_fields()]
    stored = _copy_out(cursor, sql, params, _fields(*columns))
    _check_lengths(stored, **{name: np.dtype(kind).itemsize for name, kind in columns})
    return stored


def _sync_rows(
    cursor, rows: _Rows, run_ids: Sequence[int], query_ids: Sequence[int] | None
) -> dict[str, int]:
    """Make the stored rows of these runs (and queries) equal `rows`, writing only the differences:
    new cells are inserted, changed ones updated in place, cells that are no longer scored deleted."""
    stored = _read_stored(cursor, run_ids, query_ids)
    runs = np.asarray(sorted(run_ids), dtype=np.int64)
    queries = np.union1d(rows.query, stored["query"].astype(np.int64))
    flavours = len(FLAVOUR_NAMES)

    def keys(run, query, flavour):
        return (
            np.searchsorted(runs, run) * len(queries) + np.searchsorted(queries, query)
        ) * flavours + flavour

    new_keys = keys(rows.run, rows.query, rows.flavour.astype(np.int64))
    stored_keys = keys(
        stored["run"].astype(np.int64), stored["query"].astype(np.int64), stored["flavour"].astype(np.int64)
    )
    stored_keys[stored["flavour"] < 0] = -1  # a flavour no longer computed: deleted below
    order = np.argsort(stored_keys)
    sorted_keys = stored_keys[order]
    at = np.minimum(np.searchsorted(sorted_keys, new_keys), max(len(sorted_keys) - 1, 0))
    found = (sorted_keys[at] == new_keys) if len(sorted_keys) else np.zeros(len(new_keys), dtype=bool)
    match = order[at[found]]  # stored row of each found new row

    before = np.column_stack([stored[c].astype(np.float64) for c in _VALUE_COLUMNS])[match]
    after = np.column_stack([rows.has_ranking, rows.has_relevant, rows.values])[found]
    differs = (before != after).any(axis=1)
    kept = np.zeros(len(stored), dtype=bool)
    kept[match] = True

    stale = stored["id"][~kept].astype(np.int64)
    if len(stale):
        cursor.execute(f"DELETE FROM {QueryScore._meta.db_table} WHERE id = ANY(%s)", [stale.tolist()])
    updated = _update_rows(
        cursor, stored["id"][match[differs]].astype(np.int64), rows, np.flatnonzero(found)[differs]
    )
    inserted = _insert_rows(cursor, rows, np.flatnonzero(~found))
    return {
        "inserted": inserted,
        "updated": updated,
        "deleted": len(stale),
        "unchanged": int((~differs).sum()),
    }


# --- Recomputing ---------------------------------------------------------------------------------------


@dataclass
class RescoreSummary:
    runs: int = 0
    queries: int = 0  # graded queries in scope
    rows: int = 0  # score rows now stored for the scope (cells x flavours)
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)

    def __str__(self) -> str:
        return (
            f"{self.rows} scores for {self.runs} runs x {self.queries} graded queries x {len(FLAVOUR_NAMES)} "
            f"flavours ({self.inserted} inserted, {self.updated} updated, {self.deleted} deleted) "
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

    A handful of queries (a grade changed): their rows are deleted and written again. Otherwise runs
    are read in batches, and each batch's stored rows are compared with the new ones, so that only
    what changed is written (a full recompute of an up-to-date pool writes nothing)."""
    started = time.perf_counter()
    summary = RescoreSummary()
    timings = summary.timings
    for key in ("read grades", "read rankings", "score", "write"):
        timings[key] = 0.0
    with transaction.atomic(), connection.cursor() as cursor:
        rule, pool_runs = _begin(cursor, pool)
        run_ids = sorted(pool_runs if run_ids is None else set(run_ids) & set(pool_runs))
        if query_ids is not None:
            query_ids = sorted({int(q) for q in query_ids})
        tick = time.perf_counter()
        grades = _read_grades(cursor, pool.pk, rule, query_ids)
        graded, relevant = grades.queries, grades.relevant_queries()
        timings["read grades"] = time.perf_counter() - tick
        summary.runs, summary.queries = len(run_ids), len(graded)
        if not run_ids:
            summary.seconds = time.perf_counter() - started
            return summary

        if query_ids is not None and len(query_ids) <= FEW_QUERIES:
            tick = time.perf_counter()
            where, params = _ranking_filter(run_ids, query_ids)
            cursor.execute(f"DELETE FROM {QueryScore._meta.db_table} WHERE {where}", params)
            summary.deleted = cursor.rowcount
            rankings = _read_few_rankings(cursor, run_ids, graded.tolist()) if len(graded) else None
            timings["read rankings"] = time.perf_counter() - tick
            if rankings is not None:
                tick = time.perf_counter()
                rows = _score_cells(grades, graded, relevant, run_ids, *rankings)
                timings["score"] = time.perf_counter() - tick
                tick = time.perf_counter()
                summary.inserted = summary.rows = _insert_rows(cursor, rows, np.arange(len(rows)))
                timings["write"] = time.perf_counter() - tick
        else:
            # Only graded queries' rankings matter; for a whole pool, filtering in numpy is cheaper.
            ranking_queries = None if query_ids is None or not len(graded) else graded.tolist()
            tick = time.perf_counter()
            batches = _ranking_batches(cursor, run_ids, ranking_queries) if len(graded) else []
            # Runs with no ranking of any graded query still get their zero rows (or lose old ones).
            batched = {run for batch in batches for run in batch.run_ids}
            unranked = [run for run in run_ids if run not in batched]
            if unranked:
                batches.append(_Batch(unranked))
            timings["read rankings"] += time.perf_counter() - tick
            for batch in batches:
                tick = time.perf_counter()
                if batch.rows:
                    rank_run, rank_query, docs = _read_rankings(cursor, batch, ranking_queries)
                else:
                    rank_run = rank_query = np.zeros(0, dtype=np.int64)
                    docs = np.zeros((0, 0), dtype=np.int64)
                timings["read rankings"] += time.perf_counter() - tick
                tick = time.perf_counter()
                rows = _score_cells(grades, graded, relevant, batch.run_ids, rank_run, rank_query, docs)
                del rank_run, rank_query, docs
                timings["score"] += time.perf_counter() - tick
                tick = time.perf_counter()
                counts = _sync_rows(cursor, rows, batch.run_ids, query_ids)
                timings["write"] += time.perf_counter() - tick
                summary.rows += len(rows)
                summary.inserted += counts["inserted"]
                summary.updated += counts["updated"]
                summary.deleted += counts["deleted"]
                del rows
    summary.seconds = time.perf_counter() - started
    return summary


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
    """judgments.signals.grades_changed: rescore every run on the queries of the changed pairs."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT query_id FROM judgments_pair WHERE id = ANY(%s)", [list(pair_ids)])
        query_ids = [row[0] for row in cursor.fetchall()]
    rescore_queries(pool, query_ids)


def on_run_submitted(sender, run: Run, **kwargs) -> None:
    """judgments.signals.run_submitted: score the new run on every graded query of its pool."""
    rescore_run(run)


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

    means: {metric: mean} for every name in metrics.METRICS and metrics.JUDGED (None when n_queries is 0).
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
    averages = ", ".join(f"avg(s.{column})" for column in SCORE_COLUMNS.values())
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
