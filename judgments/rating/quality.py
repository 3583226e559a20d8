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

`rater_quality` reads the pool's human grades in one statement and works in numpy (1.2M grades: a few
seconds, most of it the read); the page shows the stored snapshot ("rater_quality", judgments.snapshots)
that a task recomputes when the pool changed, and computes it inline only on a small pool.
"""

from __future__ import annotations

import math

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from judgments import access, snapshots
from judgments.models import Pool
from judgments.pgcopy.rows import read_columns

from .agreement import cohen_kappa_quadratic

FAST = 2.0  # seconds: a grade given faster than this was hardly read
KIND = "rater_quality"  # its snapshot (registered in ScoringConfig.ready with the other kinds)
_NO_GOLD = -99

# The pool's human grades, its pairs matched by a hash semi-join (a join per grade, nested on the pairs'
# key, took 6.7 s of 1.2M grades; this 2.6 s, on a loaded machine), and its gold pairs apart.
_GRADES_SQL = """
    SELECT array_agg(j.rater_id::int8), array_agg(j.pair_id::int8), array_agg(j.grade::int2),
           array_agg(COALESCE(EXTRACT(EPOCH FROM (j.created_at - j.served_at))::float8, 'NaN'))
    FROM judgments_judgment j
    WHERE j.pair_id IN (SELECT id FROM judgments_pair WHERE pool_id = %s) AND NOT j.cant_judge
      AND j.rater_id <> ALL(ARRAY(SELECT user_id FROM judgments_modeljudge))
"""
_GOLD_SQL = """
    SELECT array_agg(id::int8 ORDER BY id), array_agg(gold_grade::int2 ORDER BY id)
    FROM judgments_pair WHERE pool_id = %s AND gold_grade IS NOT NULL
"""
WORK_MEM = "256MB"  # the semi-join's hash of a big pool's pairs, in memory


def _read(pool: Pool) -> tuple[np.ndarray, ...]:
    """(rater, pair, grade, gold grade or _NO_GOLD, seconds or nan) of every human grade of the pool."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('work_mem', %s, true)", [WORK_MEM])
        rater, pair, grade, seconds = read_columns(
            cursor, _GRADES_SQL, [pool.pk], [">i8", ">i8", ">i2", ">f8"]
        )
        gold_pairs, gold_grades = read_columns(cursor, _GOLD_SQL, [pool.pk], [">i8", ">i2"])
    gold = np.full(len(pair), _NO_GOLD, dtype=np.int16)
    if len(gold_pairs):
        at = np.minimum(np.searchsorted(gold_pairs, pair), len(gold_pairs) - 1)
        hit = gold_pairs[at] == pair
        gold[hit] = gold_grades[at[hit]]
    return rater, pair, grade, gold, seconds


def _share(hits, n: int) -> float | None:
    return float(hits) / n if n else None


def _couples(pair: np.ndarray, grade: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per grade: how many other grades its pair has, how many of them are equal, and within one."""
    pairs, index = np.unique(pair, return_inverse=True)
    low = int(grade.min()) if len(grade) else 0
    width = (int(grade.max()) - low + 3) if len(grade) else 3  # a zero column on either side
    column = grade.astype(np.int64) - low + 1
    counts = np.bincount(index * width + column, minlength=len(pairs) * width).reshape(len(pairs), width)
    others = counts.sum(axis=1)[index] - 1
    exact = counts[index, column] - 1
    within = counts[index, column - 1] + counts[index, column] + counts[index, column + 1] - 1
    return others, exact, within


def rater_value(pool: Pool, key: str = "") -> dict:
    """Every human rater's figures (see the module docstring), by rater id: the snapshot's value."""
    rater, pair, grade, gold, seconds = _read(pool)
    raters, index = np.unique(rater, return_inverse=True)
    n = len(raters)
    is_gold = gold != _NO_GOLD
    g_index, g_grade, g_gold = index[is_gold], grade[is_gold], gold[is_gold]
    diff = np.abs(g_grade.astype(np.int64) - g_gold)
    gold_n = np.bincount(g_index, minlength=n)
    gold_exact = np.bincount(g_index, weights=diff == 0, minlength=n)
    gold_within = np.bincount(g_index, weights=diff <= 1, minlength=n)
    rest = ~is_gold
    others, exact, within = _couples(pair[rest], grade[rest])
    couples = np.bincount(index[rest], weights=others, minlength=n)
    agree = np.bincount(index[rest], weights=exact, minlength=n)
    agree_one = np.bincount(index[rest], weights=within, minlength=n)
    timed = ~np.isnan(seconds)
    order = np.argsort(index[timed], kind="stable")
    spent = np.split(seconds[timed][order], np.cumsum(np.bincount(index[timed], minlength=n))[:-1])
    rows = []
    for i, rater_id in enumerate(raters.tolist()):
        mine = g_index == i
        kappa = cohen_kappa_quadratic(g_grade[mine], g_gold[mine]) if gold_n[i] else math.nan
        times = spent[i]
        rows.append(
            {
                "rater_id": rater_id,
                "gold_n": int(gold_n[i]),
                "gold_exact": _share(gold_exact[i], gold_n[i]),
                "gold_within_one": _share(gold_within[i], gold_n[i]),
                "gold_kappa": None if math.isnan(kappa) else kappa,
                "agreement_n": int(couples[i]),
                "agreement_exact": _share(agree[i], int(couples[i])),
                "agreement_within_one": _share(agree_one[i], int(couples[i])),
                "timed_n": len(times),
                "median_seconds": float(np.median(times)) if len(times) else None,
                "fast_share": _share(np.count_nonzero(times < FAST), len(times)),
            }
        )
    return {"rows": rows}


def rows_from(value: dict) -> list[dict]:
    """The rows of a stored value, each with its rater's username as it is now, by username."""
    ids = [row["rater_id"] for row in value["rows"]]
    names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    rows = [{**row, "username": names[row["rater_id"]]} for row in value["rows"] if row["rater_id"] in names]
    return sorted(rows, key=lambda row: row["username"])


def rater_quality(pool: Pool) -> list[dict]:
    """One row per human rater with grades in the pool, by username (see the module docstring)."""
    return rows_from(rater_value(pool))


@access.require(access.is_admin)
@require_GET
def rater_quality_fragment(request: HttpRequest, pool_name: str) -> HttpResponse:
    """The people page's rater-quality table (loaded into it; also a page of its own without JS)."""
    found = access.admin_pool_or_404(request, pool_name)
    shown = snapshots.read(found, KIND)[""]  # stored: computed by a task when the pool changed
    template = (
        "rating/_rater_quality.html" if "HX-Request" in request.headers else "rating/rater_quality.html"
    )
    rows = rows_from(shown.value) if shown.value is not None else []
    return render(request, template, {"pool": found, "rows": rows, "fast": FAST, "snapshot": shown})
