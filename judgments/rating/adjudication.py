"""Agreement between raters and the disagreements an admin settles. Admin pages only.

The numbers come from the pure `agreement` module; this module only gathers the grades. "Can't judge"
answers are not grades and take no part in agreement or disagreement. A final grade set by an admin
(`services.set_final_grade`) does not change the raters' grades, so agreement stays a measure of the raters.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import connection

from judgments.models import Judgment, Pair, Pool

from . import agreement

DISAGREEMENT_SPREAD = 2


def pool_ratings(pool: Pool) -> dict[int, dict[int, int]]:
    """{pair pk: {rater pk: grade}} for every grade (not can't judge) in the pool."""
    ratings: dict[int, dict[int, int]] = defaultdict(dict)
    rows = Judgment.objects.in_pool(pool).graded().values_list("pair_id", "rater_id", "grade")
    for pair_id, rater_id, grade in rows.iterator(chunk_size=10_000):
        ratings[pair_id][rater_id] = grade
    return dict(ratings)


@dataclass
class PoolAgreement:
    alpha: float  # nan when undefined (no pair with 2 grades, or no variation at all)
    n_units: int  # pairs with two or more grades behind alpha
    n_raters: int
    kappas: list[dict] = field(default_factory=list)  # {rater_a, rater_b (users), kappa, n}

    @property
    def alpha_defined(self) -> bool:
        return not math.isnan(self.alpha)


def pool_agreement(pool: Pool) -> PoolAgreement:
    """Krippendorff's alpha (ordinal) over the pairs with 2+ grades, and quadratic-weighted Cohen's
    kappa for every two raters with 2+ pairs in common, each with the number of pairs behind it."""
    ratings = pool_ratings(pool)
    raters = sorted({r for by_rater in ratings.values() for r in by_rater})
    units = [list(by_rater.values()) for by_rater in ratings.values() if len(by_rater) >= 2]
    alpha, n_units = agreement.krippendorff_alpha_ordinal(units) if units else (math.nan, 0)
    users = get_user_model().objects.in_bulk(raters)
    kappas = [
        {"rater_a": users[a], "rater_b": users[b], "kappa": kappa, "defined": not math.isnan(kappa), "n": n}
        for a, b, kappa, n in agreement.pairwise_kappas(ratings)
    ]
    return PoolAgreement(alpha=alpha, n_units=n_units, n_raters=len(raters), kappas=kappas)


def disagreement_ids(pool: Pool, spread: int = DISAGREEMENT_SPREAD) -> list[int]:
    """Pairs whose grades differ by `spread` or more: unsettled first, then the widest spread, then by ids."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT p.id
            FROM judgments_judgment j
            JOIN judgments_pair p ON p.id = j.pair_id
            JOIN judgments_query q ON q.id = p.query_id
            JOIN judgments_document d ON d.id = p.document_id
            WHERE p.pool_id = %s AND NOT j.cant_judge
            GROUP BY p.id, q.external_id, d.external_id
            HAVING max(j.grade) - min(j.grade) >= %s
            ORDER BY p.final_grade IS NOT NULL, max(j.grade) - min(j.grade) DESC, q.external_id, d.external_id
            """,
            [pool.pk, spread],
        )
        return [row[0] for row in cursor.fetchall()]


def disagreements(
    pool: Pool, spread: int = DISAGREEMENT_SPREAD, pair_ids: list[int] | None = None
) -> list[Pair]:
    """The disagreeing pairs (or those of `pair_ids`, in that order), each with `.spread` and
    `.all_judgments`: every rater's grade or can't-judge answer with their notes, by rater name."""
    ids = disagreement_ids(pool, spread) if pair_ids is None else list(pair_ids)
    pairs = (
        Pair.objects.filter(pool=pool, pk__in=ids).select_related("query", "document", "final_by").in_bulk()
    )
    by_pair = defaultdict(list)
    for judgment in Judgment.objects.filter(pair__in=ids).select_related("rater").order_by("rater__username"):
        by_pair[judgment.pair_id].append(judgment)
    result = []
    for pk in ids:
        pair = pairs[pk]
        grades = [j.grade for j in by_pair[pk] if not j.cant_judge]
        pair.spread = max(grades) - min(grades) if grades else 0
        pair.all_judgments = by_pair[pk]
        result.append(pair)
    return result
