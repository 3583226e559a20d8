"""Leaderboard means of a pool's configurations, read from the stored scores."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from judgments.models import Pool, SearchConfiguration

from . import metrics
from .cells import FLAVOUR_NAMES, SCORE_COLUMNS
from .models import QueryScore

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
