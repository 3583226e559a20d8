"""Judgment-free comparison of two configurations (scoring.measures.overlap): per query, how much their
current runs' lists differ (RBO_ext, p = 0.9, and Jaccard@k), read from the stored rankings only, so it
works before any grade exists; the queries that changed most come first. `queue_query` sends a query's
documents of both top k to the raters (the already graded ones are left out by the queue)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import connection

from judgments.models import Query, Run, SearchConfiguration
from judgments.rating import queue

from .measures.overlap import RBO_P, jaccard_at, rbo_ext

JACCARD_K = 10


@dataclass
class QueryOverlap:
    query: str  # external id
    rbo: float
    jaccard: float
    n_a: int
    n_b: int


@dataclass
class Overlap:
    a: SearchConfiguration
    b: SearchConfiguration
    run_a: int
    run_b: int
    k: int
    rows: list[QueryOverlap]  # changed most first (lowest RBO, then lowest Jaccard, then query id)

    @property
    def mean_rbo(self) -> float | None:
        return float(np.mean([r.rbo for r in self.rows])) if self.rows else None

    @property
    def mean_jaccard(self) -> float | None:
        return float(np.mean([r.jaccard for r in self.rows])) if self.rows else None


class OverlapError(ValueError):
    pass


def _rankings(run_id: int) -> dict[int, list[int]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT query_id, doc_ids FROM judgments_ranking WHERE run_id = %s", [run_id])
        return dict(cursor.fetchall())


def _current_run(configuration: SearchConfiguration) -> int:
    run = Run.objects.filter(configuration=configuration).order_by("-id").values_list("id", flat=True).first()
    if run is None:
        raise OverlapError(f"No run yet for {configuration.name}.")
    return run


def overlap(a: SearchConfiguration, b: SearchConfiguration, k: int = JACCARD_K) -> Overlap:
    """RBO_ext and Jaccard@k of the two current runs for every query either ranks."""
    if a.pk == b.pk:
        raise OverlapError("Pick two different configurations.")
    run_a, run_b = _current_run(a), _current_run(b)
    ra, rb = _rankings(run_a), _rankings(run_b)
    queries = sorted(set(ra) | set(rb))
    depth = max([len(v) for v in (*ra.values(), *rb.values())], default=0)
    A = np.full((len(queries), depth), -1, dtype=np.int64)
    B = np.full((len(queries), depth), -1, dtype=np.int64)
    for i, q in enumerate(queries):
        A[i, : len(ra.get(q, []))] = ra.get(q, [])
        B[i, : len(rb.get(q, []))] = rb.get(q, [])
    rbo, jac = rbo_ext(A, B, RBO_P), jaccard_at(A, B, k)
    names = dict(Query.objects.filter(pk__in=queries).values_list("pk", "external_id"))
    rows = [
        QueryOverlap(names[q], float(rbo[i]), float(jac[i]), len(ra.get(q, [])), len(rb.get(q, [])))
        for i, q in enumerate(queries)
    ]
    rows.sort(key=lambda r: (r.rbo, r.jaccard, r.query))
    return Overlap(a, b, run_a, run_b, k, rows)


def queue_query(a: SearchConfiguration, b: SearchConfiguration, query: str, k: int = JACCARD_K):
    """Queue the documents of both configurations' top k for `query` (graded ones are not queued)."""
    found = Query.objects.filter(pool=a.pool, external_id=query).first()
    if found is None:
        raise OverlapError(f"No query {query!r} in this pool.")
    docs: list[int] = []
    for configuration in (a, b):
        ranking = _rankings(_current_run(configuration)).get(found.pk, [])
        docs += [d for d in ranking[:k] if d not in docs]
    if not docs:
        raise OverlapError(f"Neither configuration ranks a document for {query!r}.")
    external = dict(a.pool.documents.filter(pk__in=docs).values_list("pk", "external_id"))
    return queue.add_pairs(a.pool, [(query, external[d]) for d in docs])
