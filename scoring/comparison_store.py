"""Stored significance figures of two-configuration comparisons, so that a reload of the compare page skips
the 10,000 sign flips and 1,000 bootstrap resamples (about 200 ms of numpy at 5,000 queries).

A row (models.StoredComparison) is keyed by the two runs, the flavour and `key_of` (the metrics shown, the
number of sign flips and bootstrap resamples, the seed), and holds the RunTotals marks of both runs read
BEFORE their scores were: any later write of either run's score rows (a grade rescored, a run replaced)
moves a mark, so the row is not used again. Unseeded comparisons are not stored (they differ each time).
"""

from __future__ import annotations

from django.db import connection

from .models import RunTotals, StoredComparison
from .stats import Comparison

FIGURES = 15  # numbers per metric: n, means, CIs, diff, CI of diff, two p-values, wins/ties/losses

_LOOKUP = f"""
    SELECT ta.mark, tb.mark, s.figures, s.mark_a, s.mark_b
    FROM (SELECT 1) AS one
    LEFT JOIN {RunTotals._meta.db_table} ta ON ta.run_id = %(a)s
    LEFT JOIN {RunTotals._meta.db_table} tb ON tb.run_id = %(b)s
    LEFT JOIN {StoredComparison._meta.db_table} s
         ON s.run_a_id = %(a)s AND s.run_b_id = %(b)s AND s.flavour = %(flavour)s AND s.key = %(key)s
"""

_STORE = f"""
    INSERT INTO {StoredComparison._meta.db_table}
        (run_a_id, run_b_id, flavour, key, mark_a, mark_b, figures, computed_at)
    VALUES (%(a)s, %(b)s, %(flavour)s, %(key)s, %(mark_a)s, %(mark_b)s, %(figures)s, now())
    ON CONFLICT ON CONSTRAINT stored_comparison_unique DO UPDATE
    SET mark_a = excluded.mark_a, mark_b = excluded.mark_b, figures = excluded.figures,
        computed_at = excluded.computed_at
"""


def key_of(metrics, n_resamples: int, n_bootstrap: int | None, seed: int | None) -> str | None:
    """The key of a comparison's settings (None: not storable, an unseeded one)."""
    if seed is None:
        return None
    bootstrap = "auto" if n_bootstrap is None else n_bootstrap
    return f"{','.join(metrics)}|{n_resamples}|{bootstrap}|{seed}"


def lookup(run_a: int, run_b: int, flavour: str, key: str) -> tuple[list[Comparison] | None, tuple | None]:
    """(the stored figures if both marks are still current, else None; the current marks, None when a run
    has no score rows), in one statement."""
    with connection.cursor() as cursor:
        cursor.execute(_LOOKUP, {"a": run_a, "b": run_b, "flavour": flavour, "key": key})
        mark_a, mark_b, figures, stored_a, stored_b = cursor.fetchone()
    marks = (mark_a, mark_b) if mark_a is not None and mark_b is not None else None
    if figures is None or marks is None or (stored_a, stored_b) != marks:
        return None, marks
    return unflatten(figures), marks


def store(run_a: int, run_b: int, flavour: str, key: str, marks: tuple, results: list[Comparison]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            _STORE,
            {
                "a": run_a,
                "b": run_b,
                "flavour": flavour,
                "key": key,
                "mark_a": marks[0],
                "mark_b": marks[1],
                "figures": flatten(results),
            },
        )


def flatten(results: list[Comparison]) -> list[float]:
    out: list[float] = []
    for r in results:
        out += [r.n, r.mean_a, r.mean_b, *r.ci_a, *r.ci_b, r.diff, *r.ci_diff, r.p_randomization, r.p_t]
        out += [r.wins, r.ties, r.losses]
    return [float(x) for x in out]


def unflatten(figures: list[float]) -> list[Comparison]:
    results = []
    for i in range(0, len(figures), FIGURES):
        f = figures[i : i + FIGURES]
        results.append(
            Comparison(
                n=int(f[0]),
                mean_a=f[1],
                mean_b=f[2],
                ci_a=(f[3], f[4]),
                ci_b=(f[5], f[6]),
                diff=f[7],
                ci_diff=(f[8], f[9]),
                p_randomization=f[10],
                p_t=f[11],
                wins=int(f[12]),
                ties=int(f[13]),
                losses=int(f[14]),
            )
        )
    return results
