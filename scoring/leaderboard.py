"""Means of a pool's configurations, read from the stored scores: the one reader of the leaderboard page,
its CSV, the score exports (`exports.score_lines`, `manage.py export_scores`), a configuration's history
and the comparison page's cutoff chart. Nothing here recomputes a metric.

- `run_means(run_ids, flavour, metrics)`: the stored totals of some runs (models.RunTotals: one row per
  run, kept by scoring.totals in the transactions that write the score rows) read in a flavour. A metric's mean is over every row (a query the run has no ranking for counts 0, as `trec_eval -c`);
  judged@k is averaged over the queries the run ranked (None when it ranked none).
- `pool_means(pool, flavour, metrics)`: every configuration of the pool with its two newest runs and
  their means, in three queries whatever the size of the pool: the configurations, their two newest runs
  (a window function) and `run_means` over those runs.
- `configuration_means(pool, flavour)`: the configurations that have a run, with every metric, in name
  order (the exports' "all" rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Window
from django.db.models.functions import RowNumber

from judgments.models import Pool, Run, SearchConfiguration

from . import totals
from .flavours import DEFAULT_FLAVOUR, FLAVOURS
from .models import JUDGED_FIELDS, MEAN_FIELDS, RunTotals, cell_column

ALL_METRICS: tuple[str, ...] = tuple(MEAN_FIELDS)  # udcg@k included


@dataclass(frozen=True)
class RunMeans:
    """Means over one run's stored rows in one flavour.

    means: {metric: mean over every row} for the metrics read, and {judged@k: mean over the rows of the
    queries the run ranked (None when it ranked none)} for every k. n_unranked: rows of queries the run
    has no ranking for (scored 0); n_no_relevant: rows of queries with no document of grade >= 1 (both
    are included in n_queries and in the means, with their scores).
    """

    run_id: int
    n_queries: int
    n_unranked: int
    n_no_relevant: int
    means: dict[str, float | None]

    @property
    def judged(self) -> dict[str, float | None]:
        return {metric: self.means[metric] for metric in JUDGED_FIELDS}


def plan_for_memory(cursor) -> None:
    """Tell the planner, for this transaction, that score pages are read from memory.

    Measured when scores were stored one row per flavour: with the default random_page_cost (4,
    spinning disks) PostgreSQL read a run's rows through the run_id index and filtered the other
    flavours out, touching four times the pages; costed as memory-resident it used the (run, flavour,
    query) index (3-4x faster on 50 configurations x 5,000 queries). The wide rows (scoring.models)
    are read through their (run, query) index either way; the setting stays for the other reads."""
    cursor.execute("SELECT set_config('random_page_cost', '1.1', true)")


def _mean(sums: list[float], nans: list[float], j: int, count: int) -> float:
    """Column j's mean over `count` rows: NaN while a stored row holds NaN there (as AVG would be)."""
    return float("nan") if nans[j] else sums[j] / count


def run_means(run_ids, flavour: str, metrics=ALL_METRICS) -> dict[int, RunMeans]:
    """{run id: RunMeans} of `metrics` (and judged@k) for the runs that have rows: read from their stored
    totals (models.RunTotals, one row per run, kept with the rows by scoring.totals)."""
    ids = [int(i) for i in run_ids]
    if not ids:
        return {}
    metrics = tuple(metrics)
    result = {}
    columns = [totals.CELL_INDEX[cell_column(flavour, MEAN_FIELDS[m])] for m in metrics]
    judged_columns = [totals.CELL_INDEX[field] for field in JUDGED_FIELDS.values()]
    rows = RunTotals.objects.filter(run_id__in=ids).values_list(
        "run_id", "n", "n_unranked", "n_no_relevant", "sums", "nans"
    )
    for run_id, n, unranked, no_relevant, sums, nans in rows:
        ranked = n - unranked
        means = {m: _mean(sums, nans, j, n) for m, j in zip(metrics, columns, strict=True)}
        # Rows of unranked queries hold judged@k = 0, so the sum over all rows is the sum over the ranked.
        for m, j in zip(JUDGED_FIELDS, judged_columns, strict=True):
            means[m] = _mean(sums, nans, j, ranked) if ranked else None
        result[run_id] = RunMeans(run_id, n, unranked, no_relevant, means)
    return result


@dataclass
class LeaderboardRow:
    """A configuration (with .team loaded), its newest run and the run before it, with their means
    (None: no such run, or not scored yet)."""

    configuration: SearchConfiguration
    run_id: int | None = None
    run_created_at: datetime | None = None
    current: RunMeans | None = None
    previous_run_id: int | None = None
    previous: RunMeans | None = None

    def mean(self, metric: str) -> float | None:
        """The current run's mean of `metric` (judged@k included); None without one."""
        return self.current.means[metric] if self.current else None

    judged = mean  # judged@k: over the queries the run ranked (see RunMeans)

    def change(self, metric: str) -> float | None:
        """Current minus previous mean of `metric`; None without both runs' means."""
        if self.current is None or self.previous is None:
            return None
        now, before = self.current.means[metric], self.previous.means[metric]
        return None if now is None or before is None else now - before


def pool_means(
    pool: Pool, flavour: str, metrics=ALL_METRICS, *, archived: bool = False
) -> list[LeaderboardRow]:
    """Every configuration of the pool in name order, those without a run too, with the means of its
    two newest runs in `flavour` (the flavour is not checked here). Archived configurations are left out
    unless `archived` (judgments.removal: hidden from lists, kept for exports)."""
    shown = pool.configurations.all() if archived else pool.configurations.filter(archived_at__isnull=True)
    rows = {c.pk: LeaderboardRow(c) for c in shown.select_related("team").order_by("name")}
    runs = Run.objects.filter(configuration__pool=pool)
    if not archived:
        runs = runs.filter(configuration__archived_at__isnull=True)
    newest = list(
        runs.annotate(age=Window(RowNumber(), partition_by=[F("configuration_id")], order_by=F("id").desc()))
        .filter(age__lte=2)
        .values_list("id", "configuration_id", "created_at", "age")
    )
    means = run_means([run_id for run_id, *_ in newest], flavour, metrics)
    for run_id, configuration_id, created_at, age in newest:
        row = rows[configuration_id]
        if age == 1:
            row.run_id, row.run_created_at, row.current = run_id, created_at, means.get(run_id)
        else:
            row.previous_run_id, row.previous = run_id, means.get(run_id)
    return list(rows.values())


def configuration_means(
    pool: Pool, flavour: str = DEFAULT_FLAVOUR, *, archived: bool = False
) -> list[LeaderboardRow]:
    """The configurations of `pool` that have a run, in name order, with the means of every metric of
    their current and previous runs in `flavour` (archived ones too if `archived`: exports)."""
    if flavour not in FLAVOURS:
        raise ValueError(f"unknown flavour {flavour!r}; expected one of {tuple(FLAVOURS)}")
    return [row for row in pool_means(pool, flavour, archived=archived) if row.run_id is not None]
