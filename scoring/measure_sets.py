"""A pool's measure set (models.PoolMeasures): read it, replace it (and re-score), or go back to today's
fixed set. The one place that writes it: the settings page, the API and `manage.py set_measures` all call
`set_measures`, so that a bad name is refused the same way everywhere, before anything is stored."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection, transaction

from judgments.models import Pool

from . import measure_cells
from .measures.compute import columns
from .measures.names import Measure, MeasureError, parse, parse_set
from .models import PoolMeasures
from .services import SCORING_LOCK_KEY, RescoreSummary, rescore_pool

__all__ = ["MeasureError", "measure_columns", "measure_set", "reset_measures", "set_measures"]


def measure_set(pool: Pool) -> list[Measure] | None:
    """The pool's own measure set, or None when it has today's fixed set."""
    row = PoolMeasures.objects.filter(pool=pool).values_list("names", flat=True).first()
    return None if row is None else [parse(name) for name in row]


def measure_columns(pool: Pool) -> list[str] | None:
    """The value columns of the pool's MeasureScore rows (each measure, then each RBP residual)."""
    measures = measure_set(pool)
    return None if measures is None else columns(measures)


def check_names(pool: Pool, names: Sequence[str]) -> list[Measure]:
    """The parsed set, checked against the pool's grade scale; MeasureError (one line) otherwise."""
    return parse_set(names, pool.grades)


def _lock_and_forget(pool: Pool) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [SCORING_LOCK_KEY, pool.pk])
        cursor.execute(
            f"DELETE FROM {measure_cells.TABLE} s USING judgments_run r, judgments_searchconfiguration c"
            " WHERE s.run_id = r.id AND r.configuration_id = c.id AND c.pool_id = %s",
            [pool.pk],
        )


def set_measures(pool: Pool, names: Sequence[str]) -> tuple[list[Measure], RescoreSummary]:
    """Replace the pool's measure set with `names` and re-score every run with it, in one transaction.
    MeasureError on a bad name, with nothing changed."""
    measures = check_names(pool, names)
    # At the top level this transaction changes only the set and its rows, so the re-score may read the
    # rankings and CellScore rows ahead on a second connection (inside a caller's transaction it cannot:
    # that connection would not see what the caller wrote).
    cleared = not connection.in_atomic_block
    with transaction.atomic():
        _lock_and_forget(pool)
        PoolMeasures.objects.update_or_create(pool=pool, defaults={"names": [m.name for m in measures]})
        summary = rescore_pool(pool, measures_cleared=cleared)
    return measures, summary


def reset_measures(pool: Pool) -> None:
    """Back to today's fixed set: the pool's own set and its MeasureScore rows go."""
    with transaction.atomic():
        _lock_and_forget(pool)
        PoolMeasures.objects.filter(pool=pool).delete()
