"""Rater quality, per rater of a pool: how they do on gold pairs, how they agree with the other raters,
and how long they take. Shown on the pool's people page (a fragment it loads from `rater_quality`).

- gold: answers on gold pairs (judgments.gold), the share exactly right and within one grade, and the
  quadratic-weighted Cohen's kappa of their grades against the gold grades (`agreement`);
- agreement: over the non-gold pairs they graded with other human raters, the share of (their grade,
  another's grade) couples that are equal, and within one;
- time: per judgment, from when the queue served the pair (`Judgment.served_at`, the hold's start) to
  when the grade arrived (its first save); the median and the share under `FAST` seconds. Judgments
  without a serving time (imports, older rows) are left out of it.
Model judges are not raters here. Admins only: a rater sees none of this.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from judgments import access
from judgments.models import Pool

from .agreement import cohen_kappa_quadratic

FAST = 2.0  # seconds: a grade given faster than this was hardly read

_ROWS_SQL = """
    SELECT j.rater_id, u.username, j.pair_id, j.grade, p.gold_grade,
           EXTRACT(EPOCH FROM (j.created_at - j.served_at))
    FROM judgments_judgment j
    JOIN judgments_pair p ON p.id = j.pair_id
    JOIN auth_user u ON u.id = j.rater_id
    WHERE p.pool_id = %s AND NOT j.cant_judge
      AND NOT EXISTS (SELECT 1 FROM judgments_modeljudge mj WHERE mj.user_id = j.rater_id)
"""


def _share(hits: int, n: int) -> float | None:
    return hits / n if n else None


def rater_quality(pool: Pool) -> list[dict]:
    """One row per human rater with grades in the pool, by username (see the module docstring)."""
    with connection.cursor() as cursor:
        cursor.execute(_ROWS_SQL, [pool.pk])
        rows = cursor.fetchall()
    names: dict[int, str] = {}
    gold: dict[int, list[tuple[int, int]]] = defaultdict(list)
    times: dict[int, list[float]] = defaultdict(list)
    by_pair: dict[int, dict[int, int]] = defaultdict(dict)
    for rater, username, pair, grade, gold_grade, seconds in rows:
        names[rater] = username
        if gold_grade is not None:
            gold[rater].append((grade, gold_grade))
        else:
            by_pair[pair][rater] = grade
        if seconds is not None:
            times[rater].append(float(seconds))
    couples: dict[int, list[int]] = defaultdict(list)  # |their grade - another's| per couple
    for grades in by_pair.values():
        for rater, grade in grades.items():
            couples[rater].extend(abs(grade - other) for r, other in grades.items() if r != rater)
    result = []
    for rater, username in sorted(names.items(), key=lambda item: item[1]):
        answers = gold[rater]
        kappa = (
            cohen_kappa_quadratic([a for a, _ in answers], [g for _, g in answers]) if answers else math.nan
        )
        spent = times[rater]
        diffs = couples[rater]
        result.append(
            {
                "rater_id": rater,
                "username": username,
                "gold_n": len(answers),
                "gold_exact": _share(sum(a == g for a, g in answers), len(answers)),
                "gold_within_one": _share(sum(abs(a - g) <= 1 for a, g in answers), len(answers)),
                "gold_kappa": None if math.isnan(kappa) else kappa,
                "agreement_n": len(diffs),
                "agreement_exact": _share(sum(d == 0 for d in diffs), len(diffs)),
                "agreement_within_one": _share(sum(d <= 1 for d in diffs), len(diffs)),
                "timed_n": len(spent),
                "median_seconds": statistics.median(spent) if spent else None,
                "fast_share": _share(sum(s < FAST for s in spent), len(spent)),
            }
        )
    return result


@access.require(access.is_admin)
@require_GET
def rater_quality_fragment(request: HttpRequest, pool_name: str) -> HttpResponse:
    """The people page's rater-quality table (loaded into it; also a page of its own without JS)."""
    found = access.admin_pool_or_404(request, pool_name)
    template = (
        "rating/_rater_quality.html" if "HX-Request" in request.headers else "rating/rater_quality.html"
    )
    return render(request, template, {"pool": found, "rows": rater_quality(found), "fast": FAST})
