"""Agreement between raters and the disagreements an admin settles. Admin pages only.

The numbers come from the pure `agreement` module; this module only gathers the grades. "Can't judge"
answers are not grades and take no part in agreement or disagreement. A final grade set by an admin
(`services.set_final_grade`) does not change the raters' grades, so agreement stays a measure of the raters.

Both follow the pool's grade source, like the combined grade: with "humans" the grades of model judges
are left out, with "fill" a pair's model grades count only when no human graded it, with "all" every
grade counts. A pair sent to adjudication by hand (an AdjudicationRequest, e.g. from a judge's trust
page) is listed among the disagreements whatever its spread.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from judgments import snapshots
from judgments.models import (
    AdjudicationRequest,
    Disagreement,
    GradeSource,
    Judgment,
    ModelJudge,
    Pair,
    Pool,
)
from judgments.pgcopy.rows import read_columns

from . import agreement

DISAGREEMENT_SPREAD = 2


def pool_ratings(pool: Pool, source: str | None = None) -> dict[int, dict[int, int]]:
    """{pair pk: {rater pk: grade}} of rating_arrays(pool, source)."""
    ratings: dict[int, dict[int, int]] = defaultdict(dict)
    for pair, rater, grade in zip(*(a.tolist() for a in rating_arrays(pool, source)), strict=True):
        ratings[pair][rater] = grade
    return dict(ratings)


def rating_arrays(pool: Pool, source: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pair, rater, grade) arrays of every grade (not can't judge) in the pool that counts under `source`
    (default: the pool's grade source): with "humans" the models' grades are left out, with "fill" they
    count on pairs no human graded, with "all" every grade counts."""
    source = GradeSource(source or pool.grade_source)
    with connection.cursor() as cursor:
        pair, rater, grade = read_columns(
            cursor,
            "SELECT array_agg(j.pair_id::int8), array_agg(j.rater_id::int8), array_agg(j.grade::int2)"
            " FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id"
            " WHERE p.pool_id = %s AND NOT j.cant_judge",
            [pool.pk],
            [">i8", ">i8", ">i2"],
        )
    pair, rater, grade = pair.astype(np.int64), rater.astype(np.int64), grade.astype(np.int64)
    if source != GradeSource.ALL:
        model = np.isin(rater, np.asarray(list(ModelJudge.objects.rater_ids()), dtype=np.int64))
        keep = ~model
        if source == GradeSource.FILL:  # a pair no human graded keeps its models' grades
            keep |= ~np.isin(pair, pair[~model])
        pair, rater, grade = pair[keep], rater[keep], grade[keep]
    return pair, rater, grade


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
    pair, rater, grade = rating_arrays(pool)
    units, unit = np.unique(pair, return_inverse=True)
    counts = np.zeros((len(units), len(agreement.GRADES)), dtype=np.int64)
    np.add.at(counts, (unit, grade - agreement.GRADES[0]), 1)
    counts = counts[counts.sum(axis=1) >= 2]
    alpha, n_units = agreement.alpha_from_counts(counts) if len(counts) else (math.nan, 0)
    raters = np.unique(rater)
    users = get_user_model().objects.in_bulk(raters.tolist())
    kappas = [
        {"rater_a": users[a], "rater_b": users[b], "kappa": kappa, "defined": not math.isnan(kappa), "n": n}
        for a, b, kappa, n in agreement.kappas_of_raters(pair, rater, grade)
    ]
    return PoolAgreement(alpha=alpha, n_units=n_units, n_raters=len(raters), kappas=kappas)


def agreement_value(pool: Pool) -> dict:
    """pool_agreement as JSON (the stored snapshot's value, judgments.snapshots): raters by id."""
    result = pool_agreement(pool)
    return {
        "alpha": result.alpha,
        "n_units": result.n_units,
        "n_raters": result.n_raters,
        "kappas": [[row["rater_a"].pk, row["rater_b"].pk, row["kappa"], row["n"]] for row in result.kappas],
    }


def agreement_from(value: dict) -> PoolAgreement:
    """The PoolAgreement of a stored value, the raters read now (one statement)."""
    users = get_user_model().objects.in_bulk({pk for row in value["kappas"] for pk in row[:2]})
    kappas = [
        {"rater_a": users[a], "rater_b": users[b], "kappa": k, "defined": k is not None, "n": n}
        for a, b, k, n in value["kappas"]
        if a in users and b in users
    ]
    return PoolAgreement(
        alpha=math.nan if value["alpha"] is None else value["alpha"],
        n_units=value["n_units"],
        n_raters=value["n_raters"],
        kappas=kappas,
    )


def _counted_spread(source: str) -> str:
    """SQL: the spread of a pair's grades that count under `source` (m.id is a model judge's)."""
    everyone = "max(j.grade) - min(j.grade)"
    humans = "max(j.grade) FILTER (WHERE m.id IS NULL) - min(j.grade) FILTER (WHERE m.id IS NULL)"
    if source == GradeSource.ALL:
        return everyone
    if source == GradeSource.HUMANS:
        return humans
    return f"COALESCE({humans}, {everyone})"  # no human grade: the models' grades count


def _disagreeing_sql(source: str) -> str:
    """SQL of the disagreeing pairs of pool %(pool)s (spread %(spread)s or more, or sent by hand), with
    their spread and the page's order (unsettled first, then the widest spread, then by ids)."""
    return f"""
        SELECT p.id, max(j.grade) - min(j.grade) AS spread,
               row_number() OVER (
                   ORDER BY p.final_grade IS NOT NULL, max(j.grade) - min(j.grade) DESC, q.external_id, d.external_id
               ) AS rank,
               p.final_grade IS NULL AS unsettled
        FROM judgments_judgment j
        JOIN judgments_pair p ON p.id = j.pair_id
        JOIN judgments_query q ON q.id = p.query_id
        JOIN judgments_document d ON d.id = p.document_id
        LEFT JOIN judgments_modeljudge m ON m.user_id = j.rater_id
        LEFT JOIN judgments_adjudicationrequest r ON r.pair_id = p.id
        WHERE p.pool_id = %(pool)s AND NOT j.cant_judge
        GROUP BY p.id, q.external_id, d.external_id, r.id
        HAVING {_counted_spread(source)} >= %(spread)s OR r.id IS NOT NULL
    """


def disagreement_ids(pool: Pool, spread: int = DISAGREEMENT_SPREAD) -> list[int]:
    """Pairs whose grades (those that count under the pool's grade source) differ by `spread` or more,
    and pairs sent to adjudication by hand: unsettled first, then the widest spread, then by ids."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM ({_disagreeing_sql(GradeSource(pool.grade_source))}) s ORDER BY rank",
            {"pool": pool.pk, "spread": spread},
        )
        return [row[0] for row in cursor.fetchall()]


def store_disagreements(pool: Pool) -> dict:
    """Store the disagreements page's order (judgments.models.Disagreement: every disagreeing pair at its
    rank), replacing the pool's previous one; the "disagreements" snapshot's value: how many, how many
    without a final grade. Set-based: one DELETE and one INSERT ... SELECT, under the pool's lock."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_STORE_LOCK, pool.pk])
        cursor.execute("DELETE FROM judgments_disagreement WHERE pool_id = %s", [pool.pk])
        cursor.execute(
            f"""
            WITH ranked AS ({_disagreeing_sql(GradeSource(pool.grade_source))}),
            stored AS (
                INSERT INTO judgments_disagreement (pool_id, rank, pair_id, spread)
                SELECT %(pool)s, rank, id, spread FROM ranked
            )
            SELECT count(*), count(*) FILTER (WHERE unsettled) FROM ranked
            """,
            {"pool": pool.pk, "spread": DISAGREEMENT_SPREAD},
        )
        total, unsettled = cursor.fetchone()
    return {"total": total, "unsettled": unsettled}


def disagreements_value(pool: Pool, key: str = "") -> dict:
    """The "disagreements" snapshot (judgments.snapshots): the order stored, and its counts."""
    return store_disagreements(pool)


_STORE_LOCK = 0x5A4F  # first key of the advisory lock a pool's store_disagreements holds


class StoredDisagreements(Sequence):
    """The stored order of a pool's disagreeing pairs as a sequence of pair ids (for a Paginator): its
    length is the snapshot's count, a slice reads those ranks on the (pool, rank) index."""

    def __init__(self, pool: Pool, total: int):
        self.pool, self.total = pool, total

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, index):
        if not isinstance(index, slice):
            return self[index : index + 1][0]
        start, stop, _ = index.indices(self.total)
        if stop <= start:
            return []
        return list(
            Disagreement.objects.filter(pool=self.pool, rank__gt=start, rank__lte=stop)
            .order_by("rank")
            .values_list("pair_id", flat=True)
        )


def request_adjudication(pool: Pool, reasons: dict[int, str], user) -> int:
    """Send pairs of `pool` ({pair pk: why}) to the disagreements page, listed there whatever their
    spread. Returns how many were newly sent (a pair sent before keeps its first request)."""
    pairs = list(Pair.objects.filter(pool=pool, pk__in=list(reasons)).values_list("pk", flat=True))
    before = AdjudicationRequest.objects.filter(pair_id__in=pairs).count()
    AdjudicationRequest.objects.bulk_create(
        [AdjudicationRequest(pair_id=pk, reason=reasons[pk][:300], requested_by=user) for pk in pairs],
        ignore_conflicts=True,
    )
    snapshots.mark_changed(pool.pk)  # the trust page counts the far pairs not yet sent
    return AdjudicationRequest.objects.filter(pair_id__in=pairs).count() - before


def disagreements(
    pool: Pool, spread: int = DISAGREEMENT_SPREAD, pair_ids: list[int] | None = None
) -> list[Pair]:
    """The disagreeing pairs (or those of `pair_ids`, in that order), each with `.spread` and
    `.all_judgments`: every rater's grade or can't-judge answer with their notes, by rater name."""
    ids = disagreement_ids(pool, spread) if pair_ids is None else list(pair_ids)
    pairs = (
        Pair.objects.filter(pool=pool, pk__in=ids)
        .select_related("query", "document", "final_by", "adjudication_request")
        .in_bulk()
    )
    models = set(ModelJudge.objects.rater_ids())
    by_pair = defaultdict(list)
    for judgment in Judgment.objects.filter(pair__in=ids).select_related("rater").order_by("rater__username"):
        judgment.by_model = judgment.rater_id in models
        by_pair[judgment.pair_id].append(judgment)
    result = []
    for pk in ids:
        pair = pairs.get(pk)
        if pair is None:  # deleted since the stored order was computed
            continue
        grades = [j.grade for j in by_pair[pk] if not j.cant_judge]
        pair.spread = max(grades) - min(grades) if grades else 0
        pair.all_judgments = by_pair[pk]
        result.append(pair)
    return result
