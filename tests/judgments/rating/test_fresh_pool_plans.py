"""A new small pool in a database that holds a big one: the grading page's statements stay linear in the
pool's own pairs and judgments without anyone running ANALYZE (issue 23, item 1).

The planner statistics describe the database before the small pool existed (autovacuum analyzes a table
after a tenth of it changed, which a small campaign in a big database never does), so the planner
believes the pool has about one pair. A statement whose plan then re-aggregates the pool's judgments per
pair grows with pairs x judgments; the bound below, the rows every plan node produced or filtered out,
is a few times pairs + judgments. The time bound is a ratio against the same statements once the
statistics are fresh, measured in the same test.
"""

import json
import time

import pytest
from django.db import connection
from django.urls import reverse

from judgments.models import Judgment, Pair
from judgments.rating import planner, queue
from tests.bench import queued_pool
from tests.bench.raters import FRAGMENT, PAIR


def _rows_touched(node: dict) -> float:
    """Rows every node of a JSON plan produced or removed by a filter, over all its loops."""
    loops = node.get("Actual Loops", 0)
    removed = node.get("Rows Removed by Filter", 0) + node.get("Rows Removed by Join Filter", 0)
    own = (node.get("Actual Rows", 0) + removed) * loops
    return own + sum(_rows_touched(child) for child in node.get("Plans", []))


def _grading_statements(client, pool) -> list[tuple[str, object]]:
    """The read statements of a grading page and of a submitted grade (with the next pair it serves)."""
    statements = []

    def record(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    grade_url = reverse("rating:grade", args=[pool.name])
    with connection.execute_wrapper(record):
        page = client.get(grade_url, headers=FRAGMENT)
        served = PAIR.search(page.content.decode())
        assert page.status_code == 200 and served, "the grading page serves a pair"
        response = client.post(f"{grade_url}{served.group(1)}/", {"grade": "2"}, headers=FRAGMENT)
        assert response.status_code == 200 and "Saved " in response.content.decode()
    return [
        (sql, params) for sql, params in statements if sql.lstrip().upper().startswith(("SELECT", "WITH"))
    ]


def _explain(statements) -> list[tuple[float, float, str]]:
    """(rows touched, milliseconds, statement) of each statement, by EXPLAIN ANALYZE."""
    measured = []
    with connection.cursor() as cursor:
        for sql, params in statements:
            tick = time.perf_counter()
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            elapsed = (time.perf_counter() - tick) * 1000
            (plan,) = cursor.fetchone()
            plan = json.loads(plan) if isinstance(plan, str) else plan
            measured.append((_rows_touched(plan[0]["Plan"]), elapsed, " ".join(sql.split())[:160]))
    return measured


@pytest.mark.slow
@pytest.mark.django_db
def test_a_new_small_pool_beside_a_big_one_plans_linearly_without_analyze(
    client, make_rater, django_user_model
):
    veteran = django_user_model.objects.create_user(username="veteran")
    queued_pool.build("big-season", queries=1500, docs=40, raters=[veteran], graded=0.5)
    queued_pool.analyze()  # autovacuum's view of the database after the big pool's bulk insert

    first, second = make_rater("fresh-one"), make_rater("fresh-two")
    small = queued_pool.build(
        "fresh-campaign", queries=100, docs=20, raters=[first], graded=0.5, members=[second]
    )
    size = Pair.objects.filter(pool=small).count() + Judgment.objects.filter(pair__pool=small).count()
    assert size == 3000
    with connection.cursor() as cursor:  # the premise: the planner thinks the new pool is (nearly) empty
        cursor.execute(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM judgments_pair WHERE pool_id = %s AND queued_at IS NOT NULL",
            [small.pk],
        )
        (plan,) = cursor.fetchone()
        plan = json.loads(plan) if isinstance(plan, str) else plan
        assert plan[0]["Plan"]["Plan Rows"] < 100

    client.force_login(second)
    stale = _explain(_grading_statements(client, small))
    over = [f"{rows:.0f} rows, {ms:.0f} ms: {sql}" for rows, ms, sql in stale if rows > 30 * size + 1000]
    assert not over, f"statements touching more than 30 x {size} rows:\n" + "\n".join(over)

    queued_pool.analyze()  # the reference: the same kind of page once the statistics are fresh
    fresh = _explain(_grading_statements(client, small))
    stale_ms, fresh_ms = sum(ms for _, ms, _ in stale), sum(ms for _, ms, _ in fresh)
    assert stale_ms <= 5 * fresh_ms + 200, f"{stale_ms:.0f} ms with stale statistics, {fresh_ms:.0f} ms fresh"


@pytest.mark.slow
@pytest.mark.django_db
def test_queueing_many_pairs_of_a_new_pool_refreshes_the_planner_statistics(
    django_user_model, django_capture_on_commit_callbacks
):
    queued_pool.build("big-season", queries=500, docs=40, raters=[django_user_model.objects.create_user("v")])
    queued_pool.analyze()
    small = queued_pool.build("fresh-campaign", queries=30, docs=20, queued=False)
    pairs = [(f"q{n // 20}", f"d{n}") for n in range(600)]
    assert planner.estimated_queue(small.pk) < 60

    with django_capture_on_commit_callbacks(execute=True):
        result = queue.add_pairs(small, pairs[:100])  # a few pairs: not worth an ANALYZE
    assert result.newly_queued == 100 and planner.estimated_queue(small.pk) < 60
    with django_capture_on_commit_callbacks(execute=True):
        result = queue.add_pairs(small, pairs)
    assert result.newly_queued == 500
    assert 300 <= planner.estimated_queue(small.pk) <= 1200  # the planner knows the pool now
    assert not planner.refresh_after_queueing(small.pk, 500)  # and is not asked again while it does
