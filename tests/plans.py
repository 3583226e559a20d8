"""What PostgreSQL really did for a page's statements: the most rows any step of any plan produced.

A page that joins several one-to-many relations of a row at once (a pool's queries x documents x raters x
pairs) produces their product before DISTINCT or GROUP BY throws it away. That is invisible in a query
count and in a small fixture's timings, but not in EXPLAIN ANALYZE's row counts.
"""

from __future__ import annotations

import json

from django.db import connection
from django.test.utils import CaptureQueriesContext

JOINS = {"Nested Loop", "Hash Join", "Merge Join"}


def _plan_rows(node: dict) -> int:
    """The most rows any join of the plan produced (over all its loops). Scans are left out: a small table
    scanned again for every row of a nested loop is work, not a product of relations."""
    rows = 0
    if node.get("Node Type") in JOINS:
        rows = int(node.get("Actual Rows", 0)) * max(int(node.get("Actual Loops", 1)), 1)
    return max([rows, *(_plan_rows(child) for child in node.get("Plans", []))])


def most_rows(statements: list[str]) -> tuple[int, str]:
    """The largest row count (rows x loops) of any join of the SELECT statements' plans, and that statement."""
    worst, worst_sql = 0, ""
    with connection.cursor() as cursor:
        for sql in statements:
            if not sql.lstrip().upper().startswith("SELECT"):
                continue
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}")
            raw = cursor.fetchone()[0]
            plan = (raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"]
            rows = _plan_rows(plan)
            if rows > worst:
                worst, worst_sql = rows, sql
    return worst, worst_sql


def page_statements(client, url: str) -> list[str]:
    """The SQL a GET of `url` ran (the page must answer 200)."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return [q["sql"] for q in captured.captured_queries]
