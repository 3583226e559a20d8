"""A configuration's scheduled captures against the band of their recent history (scoring.bands): the
score history page's marks and the `capture.drop` webhook, computed one way.

A scheduled capture is a run stored by a capture job whose trigger is the schedule (`capture_due`). Its
figure is its mean NDCG@10 in the default flavour (the leaderboard's); the queries that moved are those
whose NDCG@10 changed most against the previous scheduled capture.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judgments.models import Query, Run, SearchConfiguration
from judgments.models.capture import CaptureJob

from .bands import Band, positions
from .comparison import run_scores
from .flavours import DEFAULT_FLAVOUR
from .leaderboard import run_means

METRIC = "ndcg@10"
MOVED = 5  # queries listed per capture


@dataclass(frozen=True)
class Moved:
    query_id: str
    before: float
    after: float

    @property
    def diff(self) -> float:
        return self.after - self.before


@dataclass(frozen=True)
class ScheduledPoint:
    run: Run
    mean: float
    band: Band | None  # of the previous scheduled captures; None with too few
    position: str  # "below", "above" or "inside"
    moved: tuple[Moved, ...]  # against the previous scheduled capture (empty for an inside point)

    @property
    def outside(self) -> bool:
        return self.position != "inside"


def scheduled_runs(configuration: SearchConfiguration) -> list[Run]:
    """The configuration's runs stored by scheduled captures, oldest first."""
    ids = CaptureJob.objects.filter(
        configuration=configuration, trigger=CaptureJob.Trigger.SCHEDULE, run__isnull=False
    ).values("run_id")
    return list(Run.objects.filter(pk__in=ids).order_by("id"))


def scheduled_points(configuration: SearchConfiguration, upto: Run | None = None) -> list[ScheduledPoint]:
    """Every scheduled capture of the configuration (up to and including `upto`), oldest first, with the
    band of the ones before it and, for one outside it, the queries that moved most."""
    runs = scheduled_runs(configuration)
    if upto is not None:
        runs = [r for r in runs if r.pk <= upto.pk]
    means = run_means([r.pk for r in runs], DEFAULT_FLAVOUR)
    scored = [r for r in runs if r.pk in means and means[r.pk].means.get(METRIC) is not None]
    values = [float(means[r.pk].means[METRIC]) for r in scored]
    points = []
    for i, (run, value, (b, position)) in enumerate(zip(scored, values, positions(values), strict=True)):
        moved = _moved(scored[i - 1], run) if position != "inside" and i > 0 else ()
        points.append(ScheduledPoint(run, value, b, position, moved))
    return points


def _moved(before: Run, after: Run) -> tuple[Moved, ...]:
    scores = run_scores([before.pk, after.pk], DEFAULT_FLAVOUR, (METRIC,))
    a, b = scores[before.pk], scores[after.pk]
    keys = np.union1d(a.query_ids, b.query_ids)
    va, vb = np.zeros(len(keys)), np.zeros(len(keys))
    va[np.searchsorted(keys, a.query_ids)] = a.values[:, 0]
    vb[np.searchsorted(keys, b.query_ids)] = b.values[:, 0]
    diffs = vb - va
    order = [j for j in np.argsort(-np.abs(diffs), kind="stable")[:MOVED] if diffs[j] != 0]
    names = dict(Query.objects.filter(pk__in=[int(keys[j]) for j in order]).values_list("pk", "external_id"))
    return tuple(Moved(names[int(keys[j])], float(va[j]), float(vb[j])) for j in order)
