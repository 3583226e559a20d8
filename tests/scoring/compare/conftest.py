"""A pool with stored scores for the comparison tests: CellScore rows inserted directly (seeded), so the
figures on the pages can be checked against plain Python over the same rows (read back per flavour
through the QueryScore view).

`scored`: 40 queries; configurations bm25 (two runs), dense (one run, 3 queries unranked) and hybrid
(one run, 2 queries without a stored row); flavours exp and trec, with different values.
"""

from dataclasses import dataclass

import numpy as np
import pytest
from django.db.models import FloatField

from scoring.models import JUDGED_FIELDS, METRIC_FIELDS, CellScore, QueryScore, cell_column

N_QUERIES = 40


def insert_scores(run, query_pks, flavour, rng, *, base=None, effect=0.0, unranked=(), judged=(0.85, 1.0)):
    """Store one flavour's scores per query: NDCG around `base` (+ effect), other metrics random; queries
    in `unranked` get has_ranking=False and every metric 0. A (run, query) stored already keeps its other
    flavours' NDCG; P, recall, MRR, AP and judged@k are shared by flavours (see scoring.models), so the
    last flavour stored sets them. Returns {query pk: {field: value}}."""
    n = len(query_pks)
    base = rng.uniform(0.1, 0.8, n) if base is None else np.asarray(base)
    rows, values = [], {}
    for i, query_pk in enumerate(query_pks):
        ranked = query_pk not in unranked
        ndcg10 = float(np.clip(base[i] + effect + rng.normal(0, 0.12), 0, 1)) if ranked else 0.0
        fields = {}
        for k, field in zip((3, 5, 10, 100), ("ndcg_3", "ndcg_5", "ndcg_10", "ndcg_100"), strict=True):
            fields[field] = float(np.clip(ndcg10 + rng.normal(0, 0.05) * (k != 10), 0, 1)) if ranked else 0.0
        for field in METRIC_FIELDS.values():
            fields.setdefault(field, float(rng.uniform(0, 1)) if ranked else 0.0)
        for field in JUDGED_FIELDS.values():
            fields[field] = float(rng.uniform(*judged)) if ranked else 0.0
        cells = {cell_column(flavour, field): value for field, value in fields.items()}
        rows.append((query_pk, ranked, cells))
        values[query_pk] = fields
    stored = {c.query_id: c for c in CellScore.objects.filter(run=run, query_id__in=query_pks)}
    zeros = {f.name: 0.0 for f in CellScore._meta.concrete_fields if isinstance(f, FloatField)}
    new, changed = [], []
    for query_pk, ranked, cells in rows:
        if (cell := stored.get(query_pk)) is None:
            cell = CellScore(run=run, query_id=query_pk, **zeros)
            new.append(cell)
        else:
            changed.append(cell)
        cell.has_ranking, cell.has_relevant = ranked, True
        for column, value in cells.items():
            setattr(cell, column, value)
    # Rows stored already are replaced whole (delete + create): bulk_update writes a CASE per column per
    # row, seconds for these ~60 columns, where the fixture's whole set-up takes a fraction of that.
    CellScore.objects.filter(pk__in=[cell.pk for cell in changed]).delete()
    CellScore.objects.bulk_create(new + changed)
    return values


@dataclass
class Scored:
    pool: object
    queries: list  # Query objects, in external id order
    bm25: object
    dense: object
    hybrid: object
    bm25_old_run: object
    bm25_run: object
    dense_run: object
    hybrid_run: object
    unranked: set  # query pks dense did not rank
    hybrid_missing: set  # query pks without a stored row for hybrid


@pytest.fixture
def scored(db, pool, team, other_team, configuration, other_configuration, engineer):
    from judgments.models import Query, Run, SearchConfiguration

    Query.objects.bulk_create(
        [Query(pool=pool, external_id=f"t{i:02d}", text=f"test query {i}") for i in range(3, N_QUERIES + 1)]
    )
    queries = list(Query.objects.filter(pool=pool).order_by("external_id"))
    assert len(queries) == N_QUERIES
    pks = [q.pk for q in queries]
    hybrid = SearchConfiguration.objects.create(pool=pool, team=team, name="hybrid")
    bm25_old = Run.objects.create(configuration=configuration, source="api", submitted_by=engineer, tag="old")
    bm25_run = Run.objects.create(configuration=configuration, source="api", submitted_by=engineer, tag="new")
    dense_run = Run.objects.create(configuration=other_configuration, source="api", tag="dense-1")
    hybrid_run = Run.objects.create(configuration=hybrid, source="api", tag="hybrid-1")
    rng = np.random.default_rng(20240611)
    base = rng.uniform(0.15, 0.75, N_QUERIES)
    unranked = set(pks[5:8])
    missing = set(pks[-2:])
    for flavour, shift in (("exp", 0.0), ("trec", 0.05)):
        insert_scores(bm25_old, pks, flavour, rng, base=base + shift, effect=-0.03)
        insert_scores(bm25_run, pks, flavour, rng, base=base + shift)
        insert_scores(dense_run, pks, flavour, rng, base=base + shift, effect=0.15, unranked=unranked)
        insert_scores(
            hybrid_run,
            [p for p in pks if p not in missing],
            flavour,
            rng,
            base=base[: N_QUERIES - 2] + shift,
            effect=0.02,
            judged=(0.55, 0.95),
        )
    return Scored(
        pool,
        queries,
        configuration,
        other_configuration,
        hybrid,
        bm25_old,
        bm25_run,
        dense_run,
        hybrid_run,
        unranked,
        missing,
    )


def rows_of(run, flavour="exp"):
    """{query pk: QueryScore} of a run in a flavour, straight from the database."""
    return {s.query_id: s for s in QueryScore.objects.filter(run=run, flavor=flavour)}


def db_mean(run, metric_field, flavour="exp", only=None, ranked_only=False):
    rows = rows_of(run, flavour)
    values = [
        getattr(s, metric_field)
        for q, s in rows.items()
        if (only is None or q in only) and (not ranked_only or s.has_ranking)
    ]
    return sum(values) / len(values)


def paired_arrays(run_a, run_b, metric_field, flavour="exp"):
    """Values of the two runs on the queries both have a row for, in query pk order."""
    ra, rb = rows_of(run_a, flavour), rows_of(run_b, flavour)
    common = sorted(set(ra) & set(rb))
    return (
        np.array([getattr(ra[q], metric_field) for q in common]),
        np.array([getattr(rb[q], metric_field) for q in common]),
        common,
    )
