"""Has the leaderboard settled? The service between the stored scores and `settling`'s numpy.

`measure(pool, measure, flavour)` reads the current runs' stored per-query scores into a (configurations,
queries) matrix over every query some current run ranks (a query nobody graded scores 0, as on the
leaderboard), and returns a `Stability`:
- expected_tau: the bootstrap over queries of `settling.expected_tau`;
- judged@10 of each configuration: the share of its top 10 that is graded, over the queries it ranks;
- grades since the ordering last changed (the ordering and the grade count are kept in `PoolStability`).

The pool is **settled** when expected_tau >= 0.9, every configuration's judged@10 >= 0.8, and the ordering
has not changed over the last `STAY_GRADES` grades (the tau "stays"). `update(pool)` measures and stores
it, and sets or clears `Pool.settled_at`, which the judging queue reads when the pool is set to stop when
settled. The receivers call it after grades for such pools (and for pools small enough to measure at
every grade, `LIVE_CELLS`), at most once every `LIVE_INTERVAL` (`after_grades`); the leaderboard and
`manage.py stability` measure on demand.
How the rule was validated is in docs/campaigns.md (tests/bench/bench_adaptive.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta

import numpy as np
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from judgments import tallies
from judgments.models import Pool, Ranking, Run, SearchConfiguration

from . import settling
from .flavours import DEFAULT_FLAVOUR, FLAVOURS
from .measures import names
from .models import MEAN_FIELDS, PoolStability, QueryScore, RunTotals

DEFAULT_MEASURE = "ndcg@10"
STAY_GRADES = 20  # the ordering unchanged over this many grades: "stays"
LIVE_CELLS = 20_000  # pools with at most this many (run, query) cells are measured after every grade
LIVE_INTERVAL = timedelta(seconds=2)  # ... but after a rater's grade, not again sooner than this


class StabilityError(ValueError):
    """A measure or flavour name that does not exist."""


# ir_measures families (scoring.measures.names) whose default form is a stored metric, by our name.


def measure_name(name: str) -> str:
    """The stored metric a name means: the export's names (ndcg@10, any case), trec_eval's (ndcg_cut_10),
    or ir_measures syntax for the same metrics (nDCG@10, P@10, R@100, RR, AP: default parameters)."""
    stored = names.fixed_name(name)
    if stored in MEAN_FIELDS:
        return stored
    try:
        names.parse(name)
    except names.MeasureError as exc:
        raise StabilityError(f"--measure: {exc}") from None
    raise StabilityError(
        f"Measure {name!r} is not among the stored scores the leaderboard orders by: use one of "
        f"{', '.join(MEAN_FIELDS)} (or trec_eval's or ir_measures' names for them)."
    )


@dataclass
class Stability:
    measure: str
    flavour: str
    expected_tau: float
    judged: dict[str, float]  # configuration name -> judged@10
    ordering: list[str]  # configuration names, best first
    grades: int
    grades_since_change: int
    queries: int
    settled: bool
    problems: list[str] = field(default_factory=list)  # why it is not settled
    measured_at: datetime | None = None  # None: measured just now
    stale: bool = False  # the scores changed since it was measured

    def as_json(self) -> dict:
        out = {**asdict(self), "expected_tau": round(self.expected_tau, 4)}
        del out["measured_at"], out["stale"]
        return out


def _matrix(pool: Pool, metric: str, flavour: str):
    runs = list(Run.objects.filter(configuration__pool=pool).current().select_related("configuration"))
    runs.sort(key=lambda r: r.configuration.name)
    run_index = {run.pk: i for i, run in enumerate(runs)}
    queries = sorted(set(Ranking.objects.filter(run__in=runs).values_list("query_id", flat=True).distinct()))
    query_index = {q: j for j, q in enumerate(queries)}
    scores = np.zeros((len(runs), len(queries)))
    judged_sum = np.zeros(len(runs))
    column = MEAN_FIELDS[metric]
    rows = QueryScore.objects.filter(run__in=runs, flavor=flavour).values_list(
        "run_id", "query_id", column, "judged_10", "has_ranking"
    )
    for run_id, query_id, value, judged, has_ranking in rows:
        if query_id in query_index:
            scores[run_index[run_id], query_index[query_id]] = value
        if has_ranking:
            judged_sum[run_index[run_id]] += judged
    ranked = dict(Ranking.objects.filter(run__in=runs).values_list("run_id").annotate(n=Count("id")))
    judged = {
        run.configuration.name: float(judged_sum[i] / ranked[run.pk]) if ranked.get(run.pk) else 0.0
        for i, run in enumerate(runs)
    }
    return runs, scores, judged


def measure(pool: Pool, metric: str = DEFAULT_MEASURE, flavour: str = DEFAULT_FLAVOUR) -> Stability:
    """Measure the pool's stability now. In the default measure and flavour (nDCG@10, exp), which decide
    whether the pool has settled, store it (ordering, grade count at its last change, settled)."""
    metric = measure_name(metric)
    if flavour not in FLAVOURS:
        raise StabilityError(f"Unknown flavour {flavour!r}: use one of {', '.join(FLAVOURS)}.")
    basis = _marks(pool)  # before the scores: a change committed in between makes the result stale
    runs, scores, judged = _matrix(pool, metric, flavour)
    tau = settling.expected_tau(scores) if scores.size else 0.0
    names = [run.configuration.name for run in runs]
    order = settling.ordering(scores.mean(axis=1) if scores.size else [0.0] * len(runs), names)
    ids = {run.configuration.name: run.configuration_id for run in runs}
    order_ids = [ids[name] for name in order]
    grades = tallies.pool_counts(pool).grades  # stored: counting a pool's judgments took ~24 ms a grade
    with transaction.atomic():
        stored = PoolStability.objects.select_for_update().filter(pool=pool).first()
        changed = stored is None or stored.ordering != order_ids
        at_change = grades if changed else min(stored.grades_at_change, grades)
        since = grades - at_change
        problems = []
        if tau < settling.SETTLED_TAU:
            problems.append(f"expected tau {tau:.3f} < {settling.SETTLED_TAU}")
        low = sorted(name for name, value in judged.items() if value < settling.SETTLED_JUDGED)
        if low or not judged:
            problems.append(
                f"judged@10 < {settling.SETTLED_JUDGED} for {', '.join(low) or 'no configuration'}"
            )
        if since < STAY_GRADES:
            problems.append(f"ordering changed {since} grade(s) ago (< {STAY_GRADES})")
        settled = not problems and settling.is_settled(tau, list(judged.values()))
        if (metric, flavour) != (DEFAULT_MEASURE, DEFAULT_FLAVOUR):  # an aside: the pool's state stays
            return Stability(
                metric, flavour, tau, judged, order, grades, since, scores.shape[1], settled, problems
            )
        PoolStability.objects.update_or_create(
            pool=pool,
            defaults={
                "measure": metric,
                "ordering": order_ids,
                "grades": grades,
                "grades_at_change": at_change,
                "expected_tau": tau,
                "judged": {str(ids[n]): v for n, v in judged.items()},
                "settled": settled,
                "queries": scores.shape[1],
                "problems": problems,
                "basis": basis,
            },
        )
        if settled != (pool.settled_at is not None):
            pool.settled_at = timezone.now() if settled else None
            Pool.objects.filter(pk=pool.pk).update(settled_at=pool.settled_at)
    return Stability(metric, flavour, tau, judged, order, grades, since, scores.shape[1], settled, problems)


def _marks(pool: Pool) -> dict[str, int]:
    """{run id: mark of its stored totals} of the pool's current runs: changes whenever their scores do."""
    current = Run.objects.filter(configuration__pool=pool).current()
    return {
        str(run): mark for run, mark in RunTotals.objects.filter(run__in=current).values_list("run", "mark")
    }


def for_leaderboard(pool: Pool, cells: int) -> Stability | None:
    """The leaderboard's panel: the stored measurement (nDCG@10, exp) while the current runs' scores are
    those it was measured from. Otherwise a pool of at most LIVE_CELLS cells is measured now; a bigger one
    keeps showing the stored measurement, marked stale (None before its first), and the caller asks for a
    new one in the background (tasks.request_stability): its bootstrap over 250,000 cells and its count of
    the pool's grades took 1-3 s per page load."""
    row = PoolStability.objects.filter(pool=pool, measure=DEFAULT_MEASURE).first()
    if row is not None and row.basis == _marks(pool):
        return _stored(row)
    if cells <= LIVE_CELLS:
        return measure(pool)
    if (
        row is None or not row.queries
    ):  # a stale row over no query (an empty pool's) is no measurement to show
        return None
    return replace(_stored(row), stale=True)


def _stored(row: PoolStability) -> Stability:
    ids = [int(i) for i in row.ordering]
    names = dict(SearchConfiguration.objects.filter(pk__in=ids).values_list("pk", "name"))
    return Stability(
        row.measure,
        DEFAULT_FLAVOUR,
        row.expected_tau,
        {names[int(i)]: value for i, value in row.judged.items() if int(i) in names},
        [names[i] for i in ids if i in names],
        row.grades,
        row.grades - row.grades_at_change,
        row.queries,
        row.settled,
        list(row.problems),
        measured_at=row.measured_at,
    )


def measured_live(pool: Pool) -> bool:
    """Is the pool measured after every grade? When it stops when settled, or is small enough."""
    if pool.stop_when_settled:
        return True
    runs = Run.objects.filter(configuration__pool=pool).current().count()
    return runs * pool.queries.count() <= LIVE_CELLS


def after_grades(pool: Pool, *, later: Callable[[datetime], object] | None = None) -> None:
    """After the scores of changed grades are stored: re-measure when the pool is measured live.

    `later` (a rater's grade, scoring.receivers): a pool measured less than LIVE_INTERVAL ago is not
    measured again now; `later(due)` asks for one measurement at `due` instead (a task), so that 32 raters
    grading a small pool pay one measurement every LIVE_INTERVAL, not one a grade (33 ms of the 61 ms a
    submit's after-response work took on a 300-query, 8-run pool), and the last grades are still
    measured. The settled rule counts grades, not measurements, so it holds; a pool set to stop when
    settled stops at most LIVE_INTERVAL later."""
    pool.refresh_from_db(fields=["stop_when_settled", "settled_at"])
    if not measured_live(pool):
        return
    if later is not None:
        last = PoolStability.objects.filter(pool=pool).values_list("measured_at", flat=True).first()
        if last is not None and timezone.now() - last < LIVE_INTERVAL:
            later(last + LIVE_INTERVAL)
            return
    measure(pool)
