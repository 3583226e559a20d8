"""The human sample: n queries of a pool drawn uniformly at random by the app, graded by the humans.

Prediction-powered estimates (scoring.estimates) are unbiased only if the queries the humans grade are
a uniform random sample of the pool's queries, so the app draws them (numpy's default_rng with a
recorded seed, over the pool's queries in external-id order: the same seed on the same queries draws the
same sample) and nothing lets a hand-picked set stand in: the sample is never edited, and drawing a new
one replaces it. Drawing queues every pair of the sampled queries ahead of the rest of the queue
(rating.queue.queue_queries: the top `depth` of every current run, and every pair the pool has for them).

A sampled query counts once it is completely human-graded: none of its pairs is open in the queue's
sense (a final grade, or the pool's raters_per_pair human grades). Until every sampled query counts,
the sample is unfinished and no estimate is made.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.db.models import Count

from judgments import snapshots
from judgments.models import (
    HumanSample,
    Pair,
    Pool,
    Query,
    SampledQuery,
    human_grade_count,
)

from . import queue

MAX_SEED = 2**63 - 1


class SampleError(ValueError):
    """A sample that cannot be drawn as asked; the message says why."""


@dataclass(frozen=True)
class Drawn:
    sample: HumanSample
    query_ids: list[str]  # external ids, in the pool's order
    replaced: bool  # a previous sample was replaced
    queued: queue.QueueResult


def draw_sample(
    pool: Pool, size: int, *, seed: int | None = None, depth: int = queue.DEFAULT_DEPTH, actor=None
) -> Drawn:
    """Draw `size` of the pool's queries at random (a new random seed unless `seed` is given), record
    them as the pool's human sample (replacing any previous one) and queue their pairs for the humans."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise SampleError(f"The sample size must be a whole number of at least 1, not {size!r}.")
    if seed is None:
        seed = secrets.randbelow(MAX_SEED)
    if not 0 <= seed <= MAX_SEED:
        raise SampleError(f"The seed must be from 0 to {MAX_SEED}, not {seed}.")
    if not 1 <= depth <= queue.MAX_DEPTH:
        raise SampleError(f"The depth must be from 1 to {queue.MAX_DEPTH}, not {depth}.")
    with transaction.atomic():
        Pool.objects.select_for_update().filter(pk=pool.pk).first()
        queries = list(
            Query.objects.filter(pool=pool).order_by("external_id").values_list("pk", "external_id")
        )
        if size > len(queries):
            raise SampleError(
                f"Pool {pool.name} has {len(queries)} quer{'y' if len(queries) == 1 else 'ies'}: "
                f"a sample of {size} is larger than the pool."
            )
        chosen = np.sort(np.random.default_rng(seed).choice(len(queries), size=size, replace=False))
        picked = [queries[i] for i in chosen.tolist()]
        replaced = HumanSample.objects.filter(pool=pool).delete()[0] > 0
        sample = HumanSample.objects.create(
            pool=pool, seed=seed, size=size, population=len(queries), depth=depth, drawn_by=actor
        )
        SampledQuery.objects.bulk_create(SampledQuery(sample=sample, query_id=pk) for pk, _ in picked)
        queued = queue.queue_queries(pool, [pk for pk, _ in picked], depth)
        snapshots.mark_changed(pool.pk)  # the estimates follow the sample
    return Drawn(sample, [external for _, external in picked], replaced, queued)


@dataclass(frozen=True)
class SampleStatus:
    sample: HumanSample
    query_pks: list[int]  # every sampled query
    complete_pks: list[int]  # those completely human-graded (they count)
    open_pairs: int  # pairs of sampled queries still waiting for human grades

    @property
    def size(self) -> int:
        return len(self.query_pks)

    @property
    def n_complete(self) -> int:
        return len(self.complete_pks)

    @property
    def finished(self) -> bool:
        return self.n_complete == self.size

    @property
    def percent(self) -> int:
        return round(100 * self.n_complete / self.size) if self.size else 100


def sample_status(pool: Pool) -> SampleStatus | None:
    """The pool's sample and how far the humans are with it; None when no sample was drawn."""
    sample = HumanSample.objects.filter(pool=pool).first()
    if sample is None:
        return None
    query_pks = sorted(sample.entries.values_list("query_id", flat=True))
    open_by_query = dict(
        Pair.objects.filter(pool=pool, query_id__in=query_pks, final_grade__isnull=True)
        .alias(n=human_grade_count())
        .filter(n__lt=pool.raters_per_pair)
        .values("query_id")
        .annotate(open=Count("pk"))
        .values_list("query_id", "open")
    )
    complete = [pk for pk in query_pks if pk not in open_by_query]
    return SampleStatus(sample, query_pks, complete, sum(open_by_query.values()))
