"""Comparing configurations on a pool's own measure set (scoring.measure_sets), read from MeasureScore rows:
the matrix of three or more configurations and the numbers behind the comparison CSV. The statistics are
those of the fixed set's comparison (`comparison.matrix_of`, `stats.compare_many`); nothing recomputes a
measure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judgments.models import Run, SearchConfiguration

from . import comparison, stats
from .measure_reads import RunValues, run_values
from .measures.compute import columns, judged_column
from .measures.names import Measure

JUDGED = "Judged@10"  # the column the low-judged warning reads, when the set has a measure cut at 10


def current_runs(configurations: Sequence[SearchConfiguration]) -> dict[int, Run]:
    """{configuration pk: its newest run}; ComparisonError naming those without one."""
    runs = comparison.current_runs(configurations)
    missing = [c.name for c in configurations if c.pk not in runs]
    if missing:
        raise comparison.ComparisonError(f"No run yet for {', '.join(missing)}.")
    return runs


def stored(configurations, measures: Sequence[Measure], query_ids=None) -> dict[int, RunValues]:
    """{configuration pk: its current run's stored rows}; ComparisonError when a run has none yet."""
    runs = current_runs(configurations)
    values = run_values([r.pk for r in runs.values()], measures, query_ids)
    missing = [c.name for c in configurations if runs[c.pk].pk not in values]
    if missing:
        raise comparison.ComparisonError(f"No stored scores yet for the current run of {', '.join(missing)}.")
    return {c.pk: values[runs[c.pk].pk] for c in configurations}


def pick(measures: Sequence[Measure], name: str | None) -> Measure:
    """The measure of the set named `name` (the first one for None or an unknown name)."""
    return next((m for m in measures if m.name == name), measures[0])


def matrix(
    configurations: list[SearchConfiguration],
    measures: Sequence[Measure],
    measure: Measure,
    *,
    query_ids=None,
    n_resamples: int = stats.N_RESAMPLES,
    seed: int | None = stats.SEED,
) -> comparison.Matrix:
    """Every pair of configurations on one measure of the set: differences, randomization and t p-values,
    Holm over the matrix (as `comparison.pairwise_matrix`); judged@10 when the set has Judged@10. With
    `query_ids` (a segment, scoring.segments), every figure is over those queries' rows only."""
    if len({c.pk for c in configurations}) < 2:
        raise comparison.ComparisonError("Pick at least two configurations.")
    names = columns(measures)
    column = names.index(measure.name)
    judged = names.index(JUDGED) if JUDGED in names else None
    per, judged_means = {}, {}
    for pk, rows in stored(configurations, measures, query_ids).items():
        per[pk] = comparison.RunScores(
            rows.run_id, rows.query, rows.has_ranking, rows.values[:, [column]], (measure.name,)
        )
        ranked = rows.has_ranking
        judged_means[pk] = (
            float(rows.values[ranked, judged].mean()) if judged is not None and ranked.any() else None
        )
    return comparison.matrix_of(
        configurations, per, "", measure.name, judged_means, n_resamples=n_resamples, seed=seed
    )


@dataclass(frozen=True)
class PairRows:
    """Two configurations' current runs aligned on the queries both have a row for."""

    query_ids: np.ndarray
    a: np.ndarray  # (n, columns)
    b: np.ndarray
    names: list[str]

    def results(self, measures: Sequence[Measure]) -> list[stats.Comparison]:
        k = len(measures)
        return stats.compare_many(self.a[:, :k], self.b[:, :k])

    def judged(self, measure: Measure) -> tuple[np.ndarray, np.ndarray] | None:
        name = judged_column(measure)
        if name is None:
            return None
        i = self.names.index(name)
        return self.a[:, i], self.b[:, i]


def pair_rows(a, b, measures: Sequence[Measure], query_ids=None) -> PairRows:
    if a.pk == b.pk:
        raise comparison.ComparisonError("Pick two different configurations.")
    rows = stored([a, b], measures, query_ids)
    ra, rb = rows[a.pk], rows[b.pk]
    common, ia, ib = np.intersect1d(ra.query, rb.query, return_indices=True)
    return PairRows(common, ra.values[ia], rb.values[ib], columns(measures))
