"""Recomputing a pool's scores (all of it, some queries, one run) under the pool's scoring lock."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, transaction

from judgments.models import Pool, Run
from judgments.words import counted

from . import measure_cells
from .cells import (
    CELL_TABLE,
    FLAVOUR_NAMES,
    Batch,
    CellRows,
    insert_rows,
    query_batches,
    read_rankings,
    read_stored,
    score_cells,
    sync_rows,
)
from .grades import (
    MODEL_RATERS_SQL,
    WORK_MEM,
    ScoringError,
    cached_grades,
    history_mark,
    read_grades,
    remember_grades,
)

logger = logging.getLogger(__name__)
# Batches the reading connection may hold ready (each about BATCH_ENTRIES x 8 bytes of rankings and the
# batch's stored rows): enough to keep reading while the grades are read and combined.
READ_AHEAD_BATCHES = 3
# Up to this many queries, an incremental update reads everything in one go and rewrites the rows.
FEW_QUERIES = 50
# First key of pg_advisory_xact_lock(key, pool id): "scoring".
_LOCK_KEY = 0x5C0_4E
SCORING_LOCK_KEY = _LOCK_KEY  # public: scoring.measure_sets takes the same lock
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
        """Add sync_rows' counts of inserted, updated and deleted rows."""
        self.inserted += counts["inserted"]
        self.updated += counts["updated"]
        self.deleted += counts["deleted"]

    def __str__(self) -> str:
        return (
            f"{counted(self.rows, 'cell')} for {counted(self.runs, 'run')} x "
            f"{counted(self.queries, 'graded query')}, {len(FLAVOUR_NAMES)} "
            f"flavours each ({self.inserted} inserted, {self.updated} updated, {self.deleted} deleted) "
            f"in {self.seconds:.2f} s"
        )


def _begin(cursor, pool: Pool) -> tuple[str, str, list[int], list | None, np.ndarray]:
    """Take the pool's scoring lock for this transaction; return its combine rule, grade source, run pks,
    measure set (None: the fixed set, see measure_cells) and the model raters (grades.model_raters),
    read in one statement once the lock is held."""
    cursor.execute(
        "SELECT pg_advisory_xact_lock(%s, %s), set_config('work_mem', %s, true)",
        [_LOCK_KEY, pool.pk, WORK_MEM],
    )
    cursor.execute(
        f"""
        SELECT p.combine_rule, p.grade_source, ARRAY(
            SELECT r.id FROM judgments_run r JOIN judgments_searchconfiguration c ON c.id = r.configuration_id
            WHERE c.pool_id = p.id ORDER BY r.id),
            ({measure_cells.NAMES_SQL.format(pool="p.id")}), ({MODEL_RATERS_SQL})
        FROM judgments_pool p WHERE p.id = %s
        """,
        [pool.pk],
    )
    row = cursor.fetchone()
    if row is None:
        raise ScoringError(f"pool {pool.pk} no longer exists")
    return row[0], row[1], list(row[2]), measure_cells.measures_named(row[3]), np.asarray(row[4], np.int64)


def _rescore(
    pool: Pool,
    run_ids: Sequence[int] | None,
    query_ids: Sequence[int] | None,
    *,
    measures_cleared: bool = False,
) -> RescoreSummary:
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
    read_ahead = not connection.in_atomic_block or measures_cleared
    with transaction.atomic(), connection.cursor() as cursor:
        rule, source, pool_runs, measures, models = _begin(cursor, pool)
        width = None if measures is None else measure_cells.width(measures)
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
            # of graded ones only; otherwise filtering costs more than it saves.
            # The grades the other runs were scored with (models.PoolGrades), when the pool has them:
            # a row of arrays per graded query instead of every judgment.
            tick = time.perf_counter()
            grades = cached_grades(cursor, pool.pk, rule, source)
            if grades is None:
                mark = history_mark(cursor)
                grades = read_grades(cursor, pool.pk, rule, None, source, models)
                remember_grades(cursor, pool.pk, rule, source, grades, mark=mark)
            timings["read grades"] = time.perf_counter() - tick
            graded = grades.queries.tolist()
            where, params = Batch().where(run_ids)
            cursor.execute(
                f"DELETE FROM {CELL_TABLE} WHERE {where} AND NOT query_id = ANY(%s)", [*params, graded]
            )
            summary.deleted += cursor.rowcount
            cursor.execute(
                f"DELETE FROM {measure_cells.TABLE} WHERE {where} AND NOT query_id = ANY(%s)",
                [*params, graded],
            )
            cursor.execute("SELECT count(*) FROM judgments_query WHERE pool_id = %s", [pool.pk])
            if 2 * len(graded) < cursor.fetchone()[0]:
                scope = grades.queries

        if scope is not None and len(scope) <= FEW_QUERIES:
            tick = time.perf_counter()
            if grades is None:
                grades = read_grades(cursor, pool.pk, rule, scope.tolist(), source, models)
                remember_grades(cursor, pool.pk, rule, source, grades, scope.tolist())
                timings["read grades"] = time.perf_counter() - tick
            summary.queries = len(grades.queries)
            tick = time.perf_counter()
            where, params = Batch().where(run_ids, scope.tolist())
            cursor.execute(f"DELETE FROM {CELL_TABLE} WHERE {where}", params)
            summary.deleted += cursor.rowcount
            cursor.execute(f"DELETE FROM {measure_cells.TABLE} WHERE {where}", params)
            graded = grades.queries
            rankings = read_rankings(cursor, run_ids, Batch(), graded.tolist()) if len(graded) else None
            timings["read rankings"] = time.perf_counter() - tick
            if rankings is not None:
                tick = time.perf_counter()
                rows = score_cells(grades, run_ids, *rankings, measures=measures)
                timings["score"] = time.perf_counter() - tick
                tick = time.perf_counter()
                summary.inserted = summary.rows = insert_rows(cursor, rows, np.arange(len(rows)))
                if rows.measures is not None:
                    has = rows.values[:, 0].astype(bool)
                    measure_cells.insert_rows(cursor, rows.run, rows.query, has, rows.measures)
                timings["write"] = time.perf_counter() - tick
            summary.seconds = time.perf_counter() - started
            return summary

        tick = time.perf_counter()
        batches = query_batches(cursor, run_ids, None if scope is None else scope.tolist())
        timings["read rankings"] += time.perf_counter() - tick

        def load(cursor, batch: Batch):
            """A batch's rankings (of the queries in scope: the full pool filters in numpy) and stored rows."""
            tick = time.perf_counter()
            wanted = None if scope is None else batch.select(scope).tolist()
            if batch.rankings and (wanted is None or wanted):
                rankings = read_rankings(cursor, run_ids, batch, wanted)
            else:
                rankings = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 0), np.int64))
            stored = read_stored(cursor, *batch.where(run_ids, wanted))
            if width is not None and measures_cleared:
                stored = (stored, measure_cells.no_rows(width))
            elif width is not None:
                stored = (stored, measure_cells.read_stored(cursor, *batch.where(run_ids, wanted), width))
            return batch, rankings, stored, time.perf_counter() - tick

        ahead = _ReadAhead(load, batches) if read_ahead and len(batches) > 1 else None
        # With a reader ahead, this connection only writes: a thread writes one batch while this one
        # scores the next.
        behind = _WriteBehind(connection.connection) if ahead is not None else None
        remembered = None
        try:
            if grades is None:
                tick = time.perf_counter()
                mark = history_mark(cursor)
                grades = read_grades(
                    cursor, pool.pk, rule, None if scope is None else scope.tolist(), source, models
                )
                timings["read grades"] = time.perf_counter() - tick
                # Stored after the scores: until then the connection may be the writer thread's.
                remembered = grades
            summary.queries = len(grades.queries)
            waited = time.perf_counter()
            for batch, rankings, stored, reading in ahead or (load(cursor, b) for b in batches):
                tick = time.perf_counter()
                timings["read rankings"] += tick - waited if ahead else reading
                rows = score_cells(
                    grades.between(batch.low, batch.high), run_ids, *rankings, measures=measures
                )
                del rankings
                timings["score"] += time.perf_counter() - tick
                summary.rows += len(rows)
                if behind is not None:
                    behind.put(rows, stored)
                else:
                    tick = time.perf_counter()
                    summary.add(_sync_all(cursor, rows, stored))
                    timings["write"] += time.perf_counter() - tick
                del rows, stored
                waited = time.perf_counter()
            if behind is not None:
                tick = time.perf_counter()
                behind.finish()
                timings["wait for writes"] = time.perf_counter() - tick
                timings["write"] += behind.seconds
                summary.add(behind.counts)
            if remembered is not None:
                remember_grades(
                    cursor, pool.pk, rule, source, remembered, None if scope is None else scope.tolist(), mark
                )
        finally:
            if ahead is not None:
                ahead.close()
            if behind is not None:
                behind.close()
    summary.seconds = time.perf_counter() - started
    return summary


def _sync_all(cursor, rows: CellRows, stored) -> dict[str, int]:
    """sync_rows, and with a measure set (stored is then (CellScore rows, MeasureScore rows)) the
    MeasureScore rows of the same cells; the counts are CellScore's."""
    if rows.measures is None:
        return sync_rows(cursor, rows, stored)
    stored, measure_stored = stored
    counts = sync_rows(cursor, rows, stored)
    has = rows.values[:, 0].astype(bool)
    measure_cells.sync_rows(cursor, rows.run, rows.query, has, rows.measures, measure_stored)
    return counts


class _WriteBehind:
    """Writes score batches (sync_rows) on the caller's own connection and transaction, from a thread,
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
                    for key, value in _sync_all(cursor, *item).items():
                        self.counts[key] += value
                except BaseException as exc:
                    self.error = exc
                self.seconds += time.perf_counter() - tick

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

    def put(self, rows: CellRows, stored) -> None:
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

    def __init__(self, load, batches: Sequence[Batch]):
        self.results: queue.Queue = queue.Queue(maxsize=READ_AHEAD_BATCHES)
        self.stop = threading.Event()
        self.worker = threading.Thread(
            target=self._work, args=(load, batches), name="scoring-read-ahead", daemon=True
        )
        self.worker.start()

    def _work(self, load, batches: Sequence[Batch]) -> None:
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


def rescore_pool(pool: Pool, *, measures_cleared: bool = False) -> RescoreSummary:
    """Recompute every stored score of the pool: every run (current or not), graded query and flavour.
    `measures_cleared`: see _rescore (scoring.measure_sets, which has just deleted the measure rows)."""
    summary = _rescore(pool, None, None, measures_cleared=measures_cleared)
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


def score_new_run(run: Run) -> RescoreSummary:
    """rescore_run for a run just stored, then its `run.scored` news to the pool's webhooks (a queued
    delivery each; a webhook problem is logged, never raised: scoring.webhooks.events)."""
    summary = rescore_run(run)
    from .webhooks import events  # events reads the means scoring just wrote

    events.safely(events.run_scored, run)
    return summary
