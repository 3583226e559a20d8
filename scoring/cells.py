"""Score cells: read rankings in batches, score them with scoring.metrics, write changed rows by COPY."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judgments import pgcopy
from judgments.pgcopy.rows import ARRAY_HEAD, empty_rows, read_rows, row_dtype, write_rows

from . import measure_cells, metrics
from .grades import Grades, ScoringError
from .models import CELL_VALUE_COLUMNS, JUDGED_FIELDS, METRIC_FIELDS, UDCG_FIELDS, CellScore, cell_column

FLAVOUR_NAMES: tuple[str, ...] = tuple(metrics.FLAVOURS)
# Column order of the score rows; metric names as in metrics.METRICS / metrics.JUDGED / metrics.UDCG.
SCORE_COLUMNS: dict[str, str] = {**METRIC_FIELDS, **JUDGED_FIELDS, **UDCG_FIELDS}
# Ranked entries read per batch (rankings x padded width): bounds memory whatever the pool size.
BATCH_ENTRIES = 5_000_000
# Threads that score a batch side by side (numpy releases the GIL), from this many ranked entries on.
SCORING_THREADS = min(2, os.cpu_count() or 1)
THREADED_ENTRIES = 1_000_000


@dataclass
class Batch:
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


def query_batches(cursor, run_ids: Sequence[int], query_ids: Sequence[int] | None) -> list[Batch]:
    """Cut the query pks into ranges of about BATCH_ENTRIES padded ranked entries (all runs of a query
    go in the same batch); the ranges cover every pk, ranked or not."""
    where, params = Batch().where(run_ids, query_ids)
    cursor.execute(
        f"SELECT query_id, count(*), max(cardinality(doc_ids)) FROM judgments_ranking WHERE {where}"
        " GROUP BY query_id ORDER BY query_id",
        params,
    )
    batches = [Batch()]
    for query_id, count, width in cursor.fetchall():
        batch = batches[-1]
        if batch.rankings and (batch.rankings + count) * max(batch.width, width) > BATCH_ENTRIES:
            batch.high = query_id
            batch = Batch(low=query_id)
            batches.append(batch)
        batch.rankings += count
        batch.width = max(batch.width or 0, width)
    return batches


def _ranking_dtype(width: int) -> np.dtype:
    # an int8[] in binary: its head (ndim, has-nulls flag, element type, size, lower bound), then (length, value)s
    array = [("head", ARRAY_HEAD), ("items", [("len", ">i4"), ("value", ">i8")], (width,))]
    return row_dtype(("run", ">i8"), ("query", ">i8"), ("docs", array))


def read_rankings(cursor, run_ids: Sequence[int], batch: Batch, query_ids: Sequence[int] | None):
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

    rows = read_rows(
        cursor, f"SELECT run_id, query_id, {padded} FROM judgments_ranking WHERE {where}", params, dtype
    )
    head = rows["docs"]["head"]
    if (
        len(rows)
        and not ((head["ndim"] == 1) & (head["has_nulls"] == 0) & (head["length"] == found["width"])).all()
    ):
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
class CellRows:
    """CellScore rows: one per (run, query), values in _CELL_COLUMNS order."""

    run: np.ndarray  # int64
    query: np.ndarray  # int64
    values: np.ndarray  # (n, len(_CELL_COLUMNS)) float64: has_ranking, has_relevant, then the metrics
    # The pool's own measure set (measure_cells), same rows: (n, columns) float64; None without a set.
    measures: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.run)


def score_cells(
    grades: Grades, run_ids: Sequence[int], rank_run, rank_query, docs, measures=None
) -> CellRows:
    """Score the rankings of the graded queries, and add a zero row for every (run, graded query) that
    has no ranking. Rankings of queries without grades are left out. `measures`: the pool's own measure
    set (a list of scoring.measures.names.Measure), computed into CellRows.measures in the same pass."""
    runs = np.asarray(sorted(run_ids), dtype=np.int64)
    graded, relevant = grades.queries, grades.relevant_queries()
    if len(graded) == 0 or len(runs) == 0:
        empty = np.zeros(0, dtype=np.int64)
        none = None if measures is None else measure_cells.missing_values(measures, 0)
        return CellRows(empty, empty, np.zeros((0, len(_CELL_COLUMNS))), none)
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
        udcg=True,  # in the same pass: distractors are the negative combined grades
    )
    own = None if measures is None else measure_cells.compute_values(grades, rank_query, docs, measures)
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
    if own is not None:
        own = np.concatenate([own, measure_cells.missing_values(measures, len(missing))])
    return CellRows(run, query, values, own)


# --- Writing -------------------------------------------------------------------------------------------


_VALUE_KINDS = [(c, "u1" if c.startswith("has_") else ">f8") for c in _CELL_COLUMNS]
CELL_TABLE = CellScore._meta.db_table


def _fill_values(table: np.ndarray, values: np.ndarray) -> None:
    for j, (name, _) in enumerate(_VALUE_KINDS):
        table[name] = values[:, j]


def insert_rows(cursor, rows: CellRows, selection: np.ndarray) -> int:
    """Insert the selected rows with one binary COPY."""
    if not len(selection):
        return 0
    names = ["run_id", "query_id", *_CELL_COLUMNS, "updated_at"]
    columns = [("run", ">i8"), ("query", ">i8"), *_VALUE_KINDS, ("at", ">i8")]
    table = empty_rows(columns, len(selection))
    table["run"] = rows.run[selection]
    table["query"] = rows.query[selection]
    _fill_values(table, rows.values[selection])
    table["at"] = pgcopy.timestamp()
    write_rows(cursor, CELL_TABLE, names, table)
    return len(selection)


def read_stored(cursor, where: str, params: list):
    """Stored rows: ids, runs, queries, values."""
    sql = f"SELECT id, run_id, query_id, {', '.join(_CELL_COLUMNS)} FROM {CELL_TABLE} WHERE {where}"
    columns = [("id", ">i8"), ("run", ">i8"), ("query", ">i8"), *_VALUE_KINDS]
    stored = read_rows(cursor, sql, params, row_dtype(*columns))
    values = np.empty((len(stored), len(_CELL_COLUMNS)))
    for j, (name, _) in enumerate(_VALUE_KINDS):
        values[:, j] = stored[name]
    return (
        stored["id"].astype(np.int64),
        stored["run"].astype(np.int64),
        stored["query"].astype(np.int64),
        values,
    )


def sync_rows(cursor, rows: CellRows, stored) -> dict[str, int]:
    """Make the `stored` rows (from read_stored) equal `rows`, writing only the differences: new cells
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

    # A changed row is deleted and inserted again, with the stale ones and the new ones: one DELETE and
    # one COPY take half the time of an UPDATE from a temporary table (an UPDATE writes a new row
    # version and index entries too, and joins first).
    changed = np.flatnonzero(found)[differs]
    gone = np.concatenate([ids[~kept], ids[match[differs]]])
    if len(gone):
        cursor.execute(f"DELETE FROM {CELL_TABLE} WHERE id = ANY(%s)", [gone.tolist()])
    insert_rows(cursor, rows, np.sort(np.concatenate([np.flatnonzero(~found), changed])))
    return {"inserted": int((~found).sum()), "updated": len(changed), "deleted": int((~kept).sum())}
