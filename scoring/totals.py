"""Stored per-run sums of the score rows (models.RunTotals, models.MeasureTotals), so that a mean is read
from one row per run instead of summed from 5,000 rows per run on every page load (the leaderboard of 50
configurations read 250,000 rows: 1.3-2.3 s).

They are kept by statement-level triggers on the score tables (migration 0008_boards_run_totals; the
MeasureScore one sums each array position since 0012_measure_totals_by_position, whose SQL function
`scoring_measure_delta_sql` writes the statement for a width, also used by `rebuild`), so
every write of a score row moves them in the same transaction, whoever writes it: the incremental and
full rescoring (binary COPY and DELETE in scoring.services, scoring.cells, scoring.measure_cells), a
measure set replaced (scoring.measure_sets), a run or query deleted (Django's CASCADE or the forget
triggers of migrations 0002 and 0005). Each statement adds the sums of the rows it inserted and takes
away those of the rows it deleted, grouped by run; a run whose count falls to 0 loses its row, so a row
exists exactly for the runs that have score rows. Score writes already hold the pool's scoring lock
(scoring.services), so the per-run rows add no new point of contention for raters.

A row holds n (rows), n_unranked (rows without a ranking: they score 0), n_no_relevant (CellScore only),
`sums` and `nans` in column order (`CELL_COLUMNS`, or the pool's measure set columns): a NaN value (UDCG
of rows stored before migration 0003) is left out of `sums` and counted in `nans`, so that a mean is NaN
exactly while a row holding NaN is stored, as a direct AVG over the rows is. Sums are float8: a mean read
back differs from a direct average by rounding only (about 1e-16 relative per write, tested against a
direct computation); `rebuild` recomputes them from the rows.

`mark` is a sequence number taken at every change: a snapshot computed from a pool's scores (the
leaderboard's stability) records the marks it saw, and is stale once they differ.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from .models import CELL_VALUE_COLUMNS, CellScore, MeasureScore, MeasureTotals, RunTotals

# The CellScore value columns summed, in the order of RunTotals.sums (and .nans).
CELL_COLUMNS: tuple[str, ...] = CELL_VALUE_COLUMNS[2:]
CELL_INDEX: dict[str, int] = {column: i for i, column in enumerate(CELL_COLUMNS)}
CELL_TOTALS = RunTotals._meta.db_table
MEASURE_TOTALS = MeasureTotals._meta.db_table
MARK_SEQUENCE = "scoring_totals_mark_seq"


def cell_delta_sql(source: str, sign: int, columns: Iterable[str] = CELL_COLUMNS) -> str:
    """Add `sign` x the sums of the CellScore rows of `source` (a table or transition table) to RunTotals,
    then drop the rows of runs left with none. Shared by the triggers (migration 0008) and `rebuild`."""
    sums = ", ".join(f"sum(CASE WHEN {c} = 'NaN' THEN 0 ELSE {c} END) * {sign}" for c in columns)
    nans = ", ".join(f"count(*) FILTER (WHERE {c} = 'NaN') * {sign}" for c in columns)
    return f"""
    INSERT INTO {CELL_TOTALS} AS t (run_id, n, n_unranked, n_no_relevant, sums, nans, mark)
    SELECT run_id, count(*) * {sign}, count(*) FILTER (WHERE NOT has_ranking) * {sign},
        count(*) FILTER (WHERE NOT has_relevant) * {sign}, ARRAY[{sums}]::float8[], ARRAY[{nans}]::float8[],
        nextval('{MARK_SEQUENCE}')
    FROM {source} AS r GROUP BY run_id ORDER BY run_id
    ON CONFLICT (run_id) DO UPDATE SET n = t.n + excluded.n, n_unranked = t.n_unranked + excluded.n_unranked,
        n_no_relevant = t.n_no_relevant + excluded.n_no_relevant,
        sums = scoring_add_arrays(t.sums, excluded.sums), nans = scoring_add_arrays(t.nans, excluded.nans),
        mark = excluded.mark;
    DELETE FROM {CELL_TOTALS} t WHERE t.n <= 0 AND t.run_id IN (SELECT r.run_id FROM {source} AS r);
    """


def rebuild(run_ids: Iterable[int] | None = None) -> None:
    """Recompute the totals of these runs (default: every run) from their score rows, set-based (the
    migration's fill for existing pools; also a repair). The triggers fire on the score tables only."""
    ids = None if run_ids is None else sorted({int(i) for i in run_ids})
    where = "" if ids is None else " WHERE run_id = ANY(%(ids)s)"
    params = None if ids is None else {"ids": ids}
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {CELL_TOTALS}{where}", params)
        cursor.execute(f"DELETE FROM {MEASURE_TOTALS}{where}", params)
        cursor.execute(cell_delta_sql(f"(SELECT * FROM {CellScore._meta.db_table}{where})", 1), params)
        rows = f"(SELECT * FROM {MeasureScore._meta.db_table}{where})"
        cursor.execute(f"SELECT max(cardinality(r.values)) FROM {rows} AS r", params)
        width = cursor.fetchone()[0]
        if width is not None:
            cursor.execute("SELECT scoring_measure_delta_sql(%s, 1, %s)", [rows, width])
            cursor.execute(cursor.fetchone()[0], params)  # the statement the trigger runs
