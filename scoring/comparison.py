"""Reading stored scores for the leaderboard and for comparing configurations: a thin service.

Nothing here recomputes a metric. Every figure comes from `QueryScore` rows (one per run, query and
flavour), which the scoring service keeps current as grades and runs arrive:

- a configuration's score is the mean over its current run's rows in one flavour (rows with
  has_ranking=False count 0, as `trec_eval -c`); judged@k is averaged over the queries the run ranked;
- two configurations are compared on the queries that have a row for both, query by query (paired);
- the significance figures are those of `scoring.stats` (paired randomization test, paired t-test,
  percentile bootstrap, Holm), computed for several metrics at once.

Reads are sized for pools of 50 configurations x 5,000 queries (`tests/bench/run.py bench_compare`): the
leaderboard is one aggregate over the two newest runs' rows of one flavour, a comparison reads only
the columns it shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np
from django.db import connection, transaction

from judgments.models import (
    Pool,
    Query,
    Run,
    SearchConfiguration,
)
from judgments.pgcopy.rows import read_rows, row_dtype

from . import comparison_store, stats
from .leaderboard import LeaderboardRow, RunMeans, plan_for_memory, pool_means, run_means
from .metrics import CUTOFFS, DEFAULT_FLAVOUR, FLAVOURS
from .models import FLAVOUR_CHOICES, JUDGED_FIELDS, MEAN_FIELDS, QueryScore
from .stats import N_RESAMPLES, SEED, compare_many, randomization_pvalues

LEADERBOARD_METRICS: tuple[str, ...] = tuple(f"ndcg@{k}" for k in CUTOFFS)
HEADLINE_METRIC = "ndcg@10"
UDCG_METRIC = "udcg@10"  # the leaderboard's UDCG column (scoring.metrics, "UDCG")
WARNING_JUDGED = "judged@10"
JUDGED_THRESHOLD = 0.9  # below this share of judged documents in the top 10, a comparison is shaky
ALPHA = 0.05

# Every stored column, by metric name.
SCORE_FIELDS: dict[str, str] = {**MEAN_FIELDS, **JUDGED_FIELDS}
FLAVOUR_NAMES: tuple[str, ...] = tuple(name for name, _ in FLAVOUR_CHOICES)


class ComparisonError(ValueError):
    """A comparison that cannot be made (unknown metric or flavour, a configuration without a scored run)."""


def metric_label(metric: str) -> str:
    """Display name: ndcg@10 -> NDCG@10, recall@5 -> Recall@5, mrr -> MRR."""
    name, _, cutoff = metric.partition("@")
    label = {
        "ndcg": "NDCG",
        "p": "P",
        "recall": "Recall",
        "judged": "Judged",
        "mrr": "MRR",
        "ap": "AP",
        "udcg": "UDCG",
    }[name]
    return f"{label}@{cutoff}" if cutoff else label


def check_flavour(flavour: str | None) -> str:
    """The flavour name, the default for None/empty; ComparisonError if unknown."""
    if not flavour:
        return DEFAULT_FLAVOUR
    if flavour not in FLAVOUR_NAMES:
        raise ComparisonError(f"Unknown flavour {flavour!r}; one of {', '.join(FLAVOUR_NAMES)}.")
    return flavour


def check_metric(metric: str | None) -> str:
    if not metric:
        return HEADLINE_METRIC
    if metric not in MEAN_FIELDS:
        raise ComparisonError(f"Unknown metric {metric!r}; one of {', '.join(MEAN_FIELDS)}.")
    return metric


def flavour_descriptions() -> list[tuple[str, str]]:
    return [
        (name, FLAVOURS[name].description if name in FLAVOURS else label) for name, label in FLAVOUR_CHOICES
    ]


# --- Leaderboard and history: the means of `scoring.leaderboard` ---------------------------------------


def leaderboard(pool: Pool, flavour: str) -> list[LeaderboardRow]:
    """One row per configuration of the pool, best mean NDCG@10 first; unscored ones last, by name.

    Three queries whatever the size of the pool (`leaderboard.pool_means`): the configurations, their
    two newest runs, one aggregate over those runs' stored rows in the flavour. Configurations without a
    run are listed too.
    """
    rows = pool_means(pool, check_flavour(flavour), (*LEADERBOARD_METRICS, UDCG_METRIC))

    def order(row: LeaderboardRow):
        score = row.mean(HEADLINE_METRIC)
        return (score is None, -(score or 0.0), row.configuration.name)

    return sorted(rows, key=order)


@dataclass(frozen=True)
class HistoryPoint:
    run: Run
    summary: RunMeans | None  # None: this run has no stored scores in the flavour


def configuration_history(configuration: SearchConfiguration, flavour: str) -> list[HistoryPoint]:
    """Every run of the configuration, oldest first, with its stored means (two queries)."""
    flavour = check_flavour(flavour)
    runs = list(configuration.runs.order_by("id"))
    summaries = run_means([r.pk for r in runs], flavour)
    return [HistoryPoint(run, summaries.get(run.pk)) for run in runs]


# --- Per-query score arrays -----------------------------------------------------------------------


@dataclass(frozen=True)
class RunScores:
    """A run's stored rows in one flavour as arrays, sorted by query key."""

    run_id: int
    query_ids: np.ndarray  # (n,) int64, ascending
    has_ranking: np.ndarray  # (n,) bool
    values: np.ndarray  # (n, len(metrics)) float64
    metrics: tuple[str, ...]

    def column(self, metric: str) -> np.ndarray:
        return self.values[:, self.metrics.index(metric)]


def run_scores(run_ids, flavour: str, metrics=tuple(SCORE_FIELDS)) -> dict[int, RunScores]:
    """{run id: RunScores} of `metrics` for the given runs: one query, read by binary COPY straight into
    numpy (10,000 rows of 6 columns: 4 ms instead of 40 ms through Python tuples)."""
    ids = [int(i) for i in run_ids]
    metrics = tuple(metrics)
    columns = ", ".join(f"{SCORE_FIELDS[m]}::float8" for m in metrics)
    table = QueryScore._meta.db_table
    dtype = row_dtype(
        ("run", ">i8"), ("query", ">i8"), ("has", "u1"), *((f"m{j}", ">f8") for j in range(len(metrics)))
    )
    with transaction.atomic(), connection.cursor() as cursor:
        plan_for_memory(cursor)
        rows = read_rows(
            cursor,
            f"SELECT run_id::int8, query_id::int8, has_ranking, {columns} FROM {table}"
            " WHERE flavor = %s AND run_id = ANY(%s) ORDER BY run_id, query_id",
            [flavour, ids],
            dtype,
        )
    run_col = rows["run"].astype(np.int64)
    values = np.empty((len(rows), len(metrics)))
    for j in range(len(metrics)):
        values[:, j] = rows[f"m{j}"]
    result = {}
    for run_id in ids:
        lo, hi = np.searchsorted(run_col, [run_id, run_id + 1])
        result[run_id] = RunScores(
            run_id=run_id,
            query_ids=rows["query"][lo:hi].astype(np.int64),
            has_ranking=rows["has"][lo:hi].astype(bool),
            values=np.ascontiguousarray(values[lo:hi]),
            metrics=metrics,
        )
    return result


def align(a: RunScores, b: RunScores) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query keys with a row for both, their index in a, their index in b)."""
    return np.intersect1d(a.query_ids, b.query_ids, assume_unique=True, return_indices=True)


# --- Comparing configurations ---------------------------------------------------------------------


def current_runs(configurations) -> dict[int, Run]:
    """{configuration pk: its newest run} for those that have one."""
    ids = [c.pk for c in configurations]
    return {run.configuration_id: run for run in Run.objects.filter(configuration_id__in=ids).current()}


@dataclass(frozen=True)
class MetricRow:
    metric: str
    label: str
    result: stats.Comparison

    def sentence(self, name_a: str, name_b: str, flavour: str) -> str:
        return self.result.sentence(f"{self.label} ({flavour})", name_a, name_b)


@dataclass
class PairedScores:
    """The stored rows of two configurations' current runs, aligned on the queries both have a row for."""

    a: SearchConfiguration
    b: SearchConfiguration
    run_a: Run
    run_b: Run
    flavour: str
    metrics: tuple[str, ...]  # the columns read
    query_ids: np.ndarray  # aligned query keys, ascending
    values_a: np.ndarray  # (n, len(metrics)) aligned rows of A
    values_b: np.ndarray
    only_a: int  # queries with a row for A only
    only_b: int
    judged_a: float | None  # mean judged@10 over the queries each run ranked (all its rows)
    judged_b: float | None
    means_a: dict[str, float]  # metric -> mean over all of A's rows (its leaderboard figure)
    means_b: dict[str, float]

    @property
    def n(self) -> int:
        return len(self.query_ids)

    def column(self, metric: str, side: str) -> np.ndarray:
        values = self.values_a if side == "a" else self.values_b
        return values[:, self.metrics.index(metric)]

    def differences(self, metric: str) -> np.ndarray:
        """Per-query B - A of a metric, in query-key order."""
        return self.column(metric, "b") - self.column(metric, "a")

    def low_judged(self) -> list[tuple[SearchConfiguration, float]]:
        """The configurations whose mean judged@10 is below the threshold."""
        found = []
        for configuration, judged in ((self.a, self.judged_a), (self.b, self.judged_b)):
            if judged is not None and judged < JUDGED_THRESHOLD:
                found.append((configuration, judged))
        return found


@dataclass
class PairComparison(PairedScores):
    """PairedScores with the significance figures of every shown metric."""

    metric: str = HEADLINE_METRIC  # the headline metric: the sentence, the chart and the per-query lists
    rows: list[MetricRow] = field(default_factory=list)
    n_resamples: int = N_RESAMPLES  # sign flips of the randomization test
    n_bootstrap: int = 0  # bootstrap resamples of the CIs

    @property
    def headline(self) -> MetricRow:
        return next(row for row in self.rows if row.metric == self.metric)

    def sentence(self) -> str:
        return self.headline.sentence(self.a.name, self.b.name, self.flavour)

    def differences(self, metric: str | None = None) -> np.ndarray:
        return super().differences(metric or self.metric)


def _mean_judged(scores: RunScores) -> float | None:
    ranked = scores.has_ranking
    if not ranked.any():
        return None
    return float(scores.column(WARNING_JUDGED)[ranked].mean())


def restrict(scores: RunScores, query_ids: np.ndarray) -> RunScores:
    """A run's stored rows of these queries only (a query segment's: scoring.segments)."""
    keep = np.isin(scores.query_ids, query_ids, assume_unique=True)
    return replace(
        scores,
        query_ids=scores.query_ids[keep],
        has_ranking=scores.has_ranking[keep],
        values=scores.values[keep],
    )


def _scored_runs(
    configurations, flavour: str, metrics, segment=None
) -> tuple[dict[int, Run], dict[int, RunScores]]:
    """The current runs and their stored rows; `segment` (scoring.segments.Segment: `query_ids`, `label`)
    keeps the rows of its queries only. A configuration without a run, or without a row: one line."""
    runs = current_runs(configurations)
    missing = [c.name for c in configurations if c.pk not in runs]
    if missing:
        raise ComparisonError(f"No run yet for {', '.join(missing)}.")
    scores = run_scores([runs[c.pk].pk for c in configurations], flavour, metrics)
    if segment is not None:
        scores = {run_id: restrict(rows, segment.query_ids) for run_id, rows in scores.items()}
    unscored = [c.name for c in configurations if len(scores[runs[c.pk].pk].query_ids) == 0]
    if unscored and segment is not None:
        raise ComparisonError(
            f"No stored {flavour} scores on segment {segment.label} for {', '.join(unscored)}."
        )
    if unscored:
        raise ComparisonError(f"No stored {flavour} scores yet for the current run of {', '.join(unscored)}.")
    return runs, scores


def paired_scores(
    a: SearchConfiguration, b: SearchConfiguration, flavour: str, metrics=LEADERBOARD_METRICS, segment=None
) -> PairedScores:
    """The stored rows of both current runs, aligned by query: `metrics` and judged@10 (two queries,
    no statistics). `segment`: its queries only (see _scored_runs); the means and judged@10 too."""
    flavour = check_flavour(flavour)
    if a.pk == b.pk:
        raise ComparisonError("Pick two different configurations.")
    if a.pool_id != b.pool_id:
        raise ComparisonError("Configurations of different pools are not scored on the same judgments.")
    metrics = tuple(dict.fromkeys([*metrics, WARNING_JUDGED]))
    for name in metrics:
        if name not in SCORE_FIELDS:
            raise ComparisonError(f"Unknown metric {name!r}.")
    runs, scores = _scored_runs([a, b], flavour, metrics, segment)
    sa, sb = scores[runs[a.pk].pk], scores[runs[b.pk].pk]
    query_ids, ia, ib = align(sa, sb)
    return PairedScores(
        a=a,
        b=b,
        run_a=runs[a.pk],
        run_b=runs[b.pk],
        flavour=flavour,
        metrics=metrics,
        query_ids=query_ids,
        values_a=sa.values[ia],
        values_b=sb.values[ib],
        only_a=len(sa.query_ids) - len(query_ids),
        only_b=len(sb.query_ids) - len(query_ids),
        judged_a=_mean_judged(sa),
        judged_b=_mean_judged(sb),
        means_a=dict(zip(metrics, sa.values.mean(axis=0).tolist(), strict=True)),
        means_b=dict(zip(metrics, sb.values.mean(axis=0).tolist(), strict=True)),
    )


def compare_pair(
    a: SearchConfiguration,
    b: SearchConfiguration,
    flavour: str,
    *,
    metric: str = HEADLINE_METRIC,
    metrics=LEADERBOARD_METRICS,
    n_resamples: int = N_RESAMPLES,
    n_bootstrap: int | None = None,
    seed: int | None = SEED,
    stored: bool = True,
    segment=None,
) -> PairComparison:
    """Compare the current runs of two configurations on every metric of `metrics` (plus `metric`).
    stored: read and keep the significance figures in `comparison_store` (False: always compute them, as
    the benchmarks that time the computation do). `segment` (scoring.segments.Segment): over its queries
    only, every figure computed (the store keeps whole-pool figures)."""
    metric = check_metric(metric)
    shown = list(dict.fromkeys([*metrics, metric]))
    for name in shown:
        check_metric(name)
    # Stored figures (comparison_store): the runs' score marks are read before their scores, so figures
    # stored under them never belong to older scores; a run replaced meanwhile is not stored at all.
    key = (
        comparison_store.key_of(shown, n_resamples, n_bootstrap, seed) if stored and segment is None else None
    )
    runs = current_runs([a, b]) if key else {}
    results, marks = None, None
    if a.pk in runs and b.pk in runs:
        results, marks = comparison_store.lookup(runs[a.pk].pk, runs[b.pk].pk, check_flavour(flavour), key)
    paired = paired_scores(a, b, flavour, shown, segment)
    same_runs = marks is not None and (paired.run_a.pk, paired.run_b.pk) == (runs[a.pk].pk, runs[b.pk].pk)
    if n_bootstrap is None:
        n_bootstrap = stats.default_n_bootstrap(paired.n, n_resamples)
    if results is None or not same_runs:
        columns = [paired.metrics.index(name) for name in shown]
        results = compare_many(
            paired.values_a[:, columns],
            paired.values_b[:, columns],
            n_resamples=n_resamples,
            n_bootstrap=n_bootstrap,
            seed=seed,
        )
        if same_runs:
            comparison_store.store(paired.run_a.pk, paired.run_b.pk, paired.flavour, key, marks, results)
    return PairComparison(
        **{f.name: getattr(paired, f.name) for f in fields(PairedScores)},
        metric=metric,
        rows=[
            MetricRow(name, metric_label(name), result) for name, result in zip(shown, results, strict=True)
        ],
        n_resamples=n_resamples,
        n_bootstrap=n_bootstrap,
    )


@dataclass(frozen=True)
class MatrixCell:
    row: SearchConfiguration
    column: SearchConfiguration
    n: int
    diff: float  # mean(row) - mean(column) over their common queries
    p_randomization: float
    p_t: float
    p_holm: float  # Holm-adjusted randomization p over every pair of the matrix
    p_t_holm: float

    @property
    def significant(self) -> bool:
        return not math.isnan(self.p_holm) and self.p_holm < ALPHA


@dataclass
class Matrix:
    configurations: list[SearchConfiguration]
    flavour: str
    metric: str
    means: dict[int, float]  # configuration pk -> mean over its rows
    judged: dict[int, float | None]
    cells: dict[tuple[int, int], MatrixCell] = field(default_factory=dict)

    def cell(self, row: SearchConfiguration, column: SearchConfiguration) -> MatrixCell | None:
        return self.cells.get((row.pk, column.pk))

    def grid(self) -> list[tuple[SearchConfiguration, list[MatrixCell | None]]]:
        return [(r, [self.cell(r, c) for c in self.configurations]) for r in self.configurations]


def pairwise_matrix(
    configurations: list[SearchConfiguration],
    flavour: str,
    *,
    metric: str = HEADLINE_METRIC,
    n_resamples: int = N_RESAMPLES,
    seed: int | None = SEED,
    segment=None,
) -> Matrix:
    """Every pair of configurations on one metric: differences, p-values and Holm-corrected p-values.

    Each pair is paired on the queries both have a row for; the family for Holm's correction is all
    pairs of the matrix. The configurations are listed best first. `segment`: over its queries only.
    """
    flavour, metric = check_flavour(flavour), check_metric(metric)
    if len({c.pk for c in configurations}) < 2:
        raise ComparisonError("Pick at least two configurations.")
    runs, scores = _scored_runs(configurations, flavour, (metric, WARNING_JUDGED), segment)
    per = {c.pk: scores[runs[c.pk].pk] for c in configurations}
    judged = {pk: _mean_judged(s) for pk, s in per.items()}
    return matrix_of(configurations, per, flavour, metric, judged, n_resamples=n_resamples, seed=seed)


def matrix_of(
    configurations: list[SearchConfiguration],
    per: dict[int, RunScores],
    flavour: str,
    metric: str,
    judged: dict[int, float | None],
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int | None = SEED,
) -> Matrix:
    """The matrix of `pairwise_matrix` from each configuration's stored rows (`per`: {configuration pk:
    RunScores holding `metric`}), whatever they were read from (the fixed set's or a measure set's rows)."""
    means = {pk: float(s.column(metric).mean()) for pk, s in per.items()}
    ordered = sorted(configurations, key=lambda c: (-means[c.pk], c.name))
    universe = np.unique(np.concatenate([s.query_ids for s in per.values()]))
    pairs = [(ordered[i], ordered[j]) for i in range(len(ordered)) for j in range(i + 1, len(ordered))]
    # Differences of every pair as one column each, zero where a pair lacks the query (exact: see
    # randomization_pvalues), so the sign flips are drawn once for the whole matrix.
    d = np.zeros((len(universe), len(pairs)))
    n_pair, p_t = [], []
    for c, (x, y) in enumerate(pairs):
        common, ix, iy = align(per[x.pk], per[y.pk])
        vx, vy = per[x.pk].column(metric)[ix], per[y.pk].column(metric)[iy]
        d[np.searchsorted(universe, common), c] = vx - vy
        n_pair.append(len(common))
        p_t.append(stats.paired_t_test(vy, vx)[1] if len(common) else math.nan)
    p_rand = randomization_pvalues(d, n_resamples=n_resamples, seed=seed)
    p_rand = np.where(np.array(n_pair) > 0, p_rand, np.nan)
    holm = stats.holm(p_rand)
    holm_t = stats.holm(np.array(p_t, dtype=np.float64))
    matrix = Matrix(ordered, flavour, metric, means, judged)
    for c, (x, y) in enumerate(pairs):
        diff = float(d[:, c].sum() / n_pair[c]) if n_pair[c] else math.nan
        for row, column, sign in ((x, y, 1.0), (y, x, -1.0)):
            matrix.cells[(row.pk, column.pk)] = MatrixCell(
                row=row,
                column=column,
                n=n_pair[c],
                diff=sign * diff,
                p_randomization=float(p_rand[c]),
                p_t=float(p_t[c]),
                p_holm=float(holm[c]),
                p_t_holm=float(holm_t[c]),
            )
    return matrix


def cutoff_means(configurations, flavour: str, family: str = "ndcg") -> dict[int, list[float | None]]:
    """{configuration pk: [mean of family@k for k in CUTOFFS]} of the current runs (one aggregate query)."""
    runs = current_runs(configurations)
    metrics = [f"{family}@{k}" for k in CUTOFFS]
    summaries = run_means([r.pk for r in runs.values()], check_flavour(flavour), metrics)
    result = {}
    for configuration in configurations:
        run = runs.get(configuration.pk)
        summary = summaries.get(run.pk) if run else None
        result[configuration.pk] = [summary.means[f"{family}@{k}"] if summary else None for k in CUTOFFS]
    return result


def queries_by_key(keys) -> dict[int, Query]:
    return Query.objects.in_bulk([int(k) for k in keys])
