"""Prediction-powered estimates (scoring.ppi) of a pool's configurations: a model judge's grades on every
query, corrected by the humans' grades on the app's random sample of queries (judgments.rating.sample).

Per configuration (its current run) and measure, over the pool's N queries:
- m_M(q): the measure from the judge's grades alone (a pair the judge did not grade is unjudged);
- m_H(q): the measure from the humans' combined grades (the pool's rule, an admin's final grade wins,
  model judges never count), on the n sampled queries that humans graded completely;
a query the run did not answer counts 0. The estimate, its 95 % interval and the naive model-only mean
follow scoring.ppi; the difference of two configurations uses d(q) = m_A(q) − m_B(q) in place of m.

The queries holding pairs shown to the judge as examples in its prompt (judgments.judges.examples)
leave the sample; examples are chosen outside the sample, so this only happens when a sample is drawn
after the examples were.

Measures are named as `export_scores` names them (ndcg@10, p@5, recall@100, mrr, ap, udcg@10; the
ir_measures spellings nDCG@10, P@5, R@100, RR and AP too), in one NDCG flavour (default exp).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from django.db import connection

from judgments.judges.examples import example_pair_ids
from judgments.models import ModelJudge, Pair, Pool, Query, Run
from judgments.rating.sample import sample_status

from . import metrics, ppi
from .cells import query_batches, read_rankings
from .flavours import CUTOFFS, DEFAULT_FLAVOUR, FLAVOURS, JUDGED, METRICS, UDCG
from .grades import Grades, human_grades, rater_grades
from .measures import names
from .measures.compute import compute
from .measures.names import Measure

MEASURES: tuple[str, ...] = METRICS + JUDGED + UDCG


class EstimateError(ValueError):
    """An estimate that cannot be made (no sample, an unfinished one, a judge without grades...)."""


def measure_key(name: str) -> str | Measure:
    """The measure as a user writes it: a name of today's fixed set in the flavour asked for (ndcg@10,
    nDCG@10, P@5, R@100, RR, AP: the names `export_scores` writes for a pool without a measure set), else
    any measure in ir_measures syntax that scoring.measures computes (P(rel=2)@5, ERR@20: the names it
    writes for a pool with a set), which ignores the flavour."""
    key = names.fixed_name(name or "")
    if key in MEASURES:
        return key
    try:
        return names.parse(name)
    except names.MeasureError as error:
        known = ", ".join(f"{m}@k" for m in ("ndcg", "p", "recall", "judged", "udcg")) + ", mrr, ap"
        raise EstimateError(
            f"Unknown measure {name!r}: one of {known} with k in {', '.join(map(str, CUTOFFS))}, or a measure "
            f"in ir_measures syntax ({error})."
        ) from None


def measure_name(measure: str | Measure) -> str:
    return measure if isinstance(measure, str) else measure.name


def check_flavour(flavour: str | None) -> str:
    flavour = flavour or DEFAULT_FLAVOUR
    if flavour not in FLAVOURS:
        raise EstimateError(f"Unknown flavour {flavour!r}: one of {', '.join(FLAVOURS)}.")
    return flavour


def per_query(
    run_ids: list[int], query_pks: np.ndarray, grades: Grades, measure: str | Measure, flavour: str
) -> np.ndarray:
    """(len(run_ids), len(query_pks)) values of `measure` for every run and query with `grades`; a query
    a run did not rank scores 0. `query_pks` sorted."""
    values = np.zeros((len(run_ids), len(query_pks)))
    if not run_ids or not len(query_pks):
        return values
    row_of = {run: i for i, run in enumerate(run_ids)}
    udcg = isinstance(measure, str) and measure.startswith("udcg")
    with connection.cursor() as cursor:
        for batch in query_batches(cursor, run_ids, query_pks.tolist()):
            run_of, rank_query, docs = read_rankings(cursor, run_ids, batch, query_pks.tolist())
            if not len(run_of):
                continue
            if isinstance(measure, str):
                scored = metrics.score(
                    rank_query, docs, grades.query, grades.doc, grades.grade, FLAVOURS[flavour], udcg=udcg
                )[measure]
            else:
                scored = compute(rank_query, docs, grades.query, grades.doc, grades.grade, [measure])[:, 0]
            rows = np.array([row_of[int(r)] for r in run_of])
            values[rows, np.searchsorted(query_pks, rank_query)] = scored
    return values


@dataclass(frozen=True)
class Estimated:
    configuration: object
    run_id: int
    estimate: ppi.Estimate
    plus_plus: ppi.Estimate


@dataclass(frozen=True)
class Estimates:
    judge: ModelJudge
    measure: str
    flavour: str
    rows: list[Estimated]  # best estimate first
    n_sample: int  # queries the humans graded completely (n)
    n_queries: int  # every query of the pool (N)
    # kept for the difference of two configurations
    model_values: np.ndarray  # (runs, N)
    human_values: np.ndarray  # (runs, n)
    sample_columns: np.ndarray  # the sample's columns in model_values
    run_ids: tuple[int, ...]  # the rows of model_values and human_values

    def difference(self, a: int, b: int) -> ppi.Estimate:
        """The estimate of mean(m_A − m_B) for rows a and b of `rows`."""
        ra, rb = self.rows[a], self.rows[b]
        ia, ib = self._index[ra.run_id], self._index[rb.run_id]
        model = self.model_values[ia] - self.model_values[ib]
        human = self.human_values[ia] - self.human_values[ib]
        return ppi.estimate(model, human, model[self.sample_columns])

    @property
    def _index(self) -> dict[int, int]:
        return {run_id: i for i, run_id in enumerate(self.run_ids)}


def estimates(
    pool: Pool, judge: ModelJudge, measure: str = "ndcg@10", flavour: str | None = None
) -> Estimates:
    """PPI estimates of every configuration with a current run (see the module docstring); EstimateError
    when the pool has no finished human sample or the judge has no grades in it."""
    measure, flavour = measure_key(measure), check_flavour(flavour)
    if not isinstance(measure, str):
        try:
            names.check_for_scale(measure, pool.grades)
        except names.MeasureError as error:
            raise EstimateError(str(error)) from None
    status = sample_status(pool)
    if status is None:
        raise EstimateError(
            f"Pool {pool.name} has no human sample: draw one (manage.py sample_queries --pool {pool.name} --size N)."
        )
    if not status.finished:
        raise EstimateError(
            f"The human sample of pool {pool.name} is not finished: {status.n_complete} of {status.size} sampled "
            f"queries are completely graded by humans ({status.open_pairs} pairs still open)."
        )
    judged = rater_grades(pool, judge.user_id)
    if not len(judged):
        raise EstimateError(f"Judge {judge.name} has no grades in pool {pool.name}.")
    sample = np.asarray(status.complete_pks, dtype=np.int64)
    # The queries holding pairs shown to the judge as prompt examples leave the sample.
    shown = Pair.objects.filter(pk__in=example_pair_ids(judge)).values_list("query_id", flat=True)
    sample = np.setdiff1d(sample, np.asarray(sorted(set(shown)), dtype=np.int64))
    if not len(sample):
        raise EstimateError(
            "Every sampled query holds one of the judge's prompt examples: draw a larger sample."
        )
    query_pks = np.asarray(
        sorted(Query.objects.filter(pool=pool).values_list("pk", flat=True)), dtype=np.int64
    )
    runs = list(Run.objects.filter(configuration__pool=pool).current().select_related("configuration"))
    run_ids = [r.pk for r in runs]
    model_values = per_query(run_ids, query_pks, judged, measure, flavour)
    human_values = per_query(run_ids, sample, human_grades(pool, sample.tolist()), measure, flavour)
    columns = np.searchsorted(query_pks, sample)
    rows = [
        Estimated(
            run.configuration,
            run.pk,
            ppi.estimate(model_values[i], human_values[i], model_values[i, columns]),
            ppi.ppi_plus_plus(model_values[i], human_values[i], model_values[i, columns]),
        )
        for i, run in enumerate(runs)
    ]
    order = sorted(range(len(rows)), key=lambda i: (-rows[i].estimate.estimate, rows[i].configuration.name))
    return Estimates(
        judge,
        measure_name(measure),
        flavour,
        [rows[i] for i in order],
        len(sample),
        len(query_pks),
        model_values,
        human_values,
        columns,
        tuple(run_ids),
    )


def format_interval(e: ppi.Estimate) -> str:
    if math.isnan(e.estimate):
        return "–"
    if not e.has_interval:
        return f"{e.estimate:.3f}"
    return f"{e.estimate:.3f} [{e.ci_low:.3f}, {e.ci_high:.3f}]"
