"""`tests/bench/run.py bench_pages`: every page of the URL map, as each role, on the realistic pool and the
demo: server time and query count per page.

The realistic pool is `bench_exchange`'s (tests/bench/realistic_pool.py: 5,000 queries, 1.5M documents,
1.2M judgments, 50 configurations with a scored run each), plus every pair queued for rating and a model
judge that graded a fifth of them. Building it takes minutes, so it is built once and kept: run the
benchmark on a database of its own, e.g.

    EMBEDDED_PGDATA=.pgdata-bench EMBEDDED_PG_KEEP=1 DEBUG=1 .venv/bin/python tests/bench/run.py bench_pages

The demo's users are the roles (admin, engineer, rater), made members of the realistic pool too. Each
page is loaded in-process through Django's test client (the whole request: middleware, view, SQL,
template; no network), once to warm up, then timed as the best of --rounds; a last load counts its SQL
statements. Targets (issue 24): every page <= 300 ms, the leaderboard <= 100 ms, and no page's query
count growing with the pool (the realistic pool's count against the demo's, same page and role;
`tests/test_page_queries.py` pins that exactly in CI on a small pool and one 10x larger).
"""

from __future__ import annotations

import os
import time

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from judgments.models import ModelJudge, Pool, Team
from tests.page_map import pages

from . import realistic_pool
from .timing import best_times

TARGET_MS, LEADERBOARD_MS = 300.0, 100.0
ROLES = ("admin", "engineer", "rater")
JUDGE = "bench-pages-judge"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


class Command(BaseCommand):
    help = "Time every page as each role on the realistic pool and the demo (targets: <= 300 ms, leaderboard <= 100 ms)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--pool", default="bench-pages", help="the realistic pool's name (built if missing)"
        )
        parser.add_argument("--rounds", type=int, default=3, help="timings are the best of this many loads")
        parser.add_argument("--role", choices=ROLES, action="append", help="only these roles (repeatable)")
        parser.add_argument("--page", action="append", help="only the pages whose URL name contains this")

    def handle(self, *args, pool, rounds, role, page, **options):
        self.stdout.write(f"load average at start: {load()}")
        call_command("seed_demo", stdout=self.stderr)
        realistic = self._realistic(pool)
        demo = Pool.objects.get(name="demo")
        users = {r: get_user_model().objects.get(username=r) for r in ROLES}
        results = {}
        for found in (demo, realistic):
            missing: list[str] = []
            listed = [p for p in pages(found, missing=missing) if not page or any(s in p.name for s in page)]
            if missing:
                self.stderr.write(f"{found.name}: no object for {', '.join(sorted(set(missing)))}")
            for r in role or ROLES:
                client = Client(HTTP_HOST="localhost")
                client.force_login(users[r])
                for item in listed:
                    results[(found.name, r, item.url)] = (item.name, *self._measure(client, item.url, rounds))
        self._report(results, demo.name, realistic.name)
        self.stdout.write(f"load average at end: {load()}")

    def _measure(self, client: Client, url: str, rounds: int) -> tuple[int, float, int]:
        status = client.get(url).status_code
        if status != 200:
            return status, 0.0, 0
        (best,) = best_times(rounds, [lambda: client.get(url)])
        with CaptureQueriesContext(connection) as captured:
            client.get(url)
        return status, best * 1000, len(captured.captured_queries)

    def _report(self, results: dict, demo: str, realistic: str) -> None:
        self.stdout.write(f"\n{'pool':14} {'role':9} {'status':>6} {'ms':>8} {'queries':>7}  page")
        missed, grew = [], []
        for (pool, role, url), (name, status, ms, queries) in sorted(results.items()):
            if status == 405:
                continue  # POST only: not a page
            shown = f"{ms:8.1f}" if status == 200 else "       -"
            self.stdout.write(
                f"{pool:14} {role:9} {status:>6} {shown} {queries if status == 200 else '-':>7}  {url}"
            )
            if status != 200:
                continue
            limit = LEADERBOARD_MS if name == "scoring:leaderboard" else TARGET_MS
            if ms > limit:
                missed.append(f"{pool} {role} {url}: {ms:.0f} ms > {limit:.0f} ms")
        by_name: dict[tuple[str, str, int], dict[str, int]] = {}
        for (pool, role, url), (name, status, _ms, queries) in results.items():
            if status == 200:  # the same page: same role, URL name and number of configurations compared
                by_name.setdefault((role, name, url.count("c=")), {})[pool] = queries
        for (role, name, _), counts in sorted(by_name.items()):
            if demo in counts and realistic in counts and counts[realistic] > counts[demo]:
                grew.append(
                    f"{role} {name}: {counts[demo]} statements on the demo, {counts[realistic]} on {realistic}"
                )
        timed = sum(1 for r in results.values() if r[1] == 200)
        self.stdout.write(
            f"\n{timed} page loads timed (status 200); 405 (POST only) left out; 403/404: not that role's."
        )
        self.stdout.write(f"Over target ({len(missed)}):" if missed else "Every page within its target.")
        for line in missed:
            self.stdout.write(f"  {line}")
        self.stdout.write(
            f"More statements on the realistic pool than on the demo ({len(grew)}):"
            if grew
            else "No page runs more statements on the realistic pool than on the demo."
        )
        for line in grew:
            self.stdout.write(f"  {line}")

    # --- the realistic pool, built once -----------------------------------------------------------------

    def _realistic(self, name: str) -> Pool:
        found = realistic_pool.load(name)
        if found is None:
            if Pool.objects.filter(name=name).exists():
                raise CommandError(
                    f"Pool {name!r} exists but is not a complete realistic pool: delete it first."
                )
            self.stderr.write(f"Building the realistic pool {name} (once; kept for the next runs)")
            found = realistic_pool.build(name, self.stderr.write)
        pool = found.pool
        users = {r: get_user_model().objects.get(username=r) for r in ("engineer", "rater", "rater2")}
        pool.members.add(*users.values())
        Team.objects.get(name=realistic_pool.TEAM).members.add(users["engineer"])
        if not ModelJudge.objects.filter(pool=pool).exists():
            self._queue_and_judge(pool)
        return pool

    def _queue_and_judge(self, pool: Pool) -> None:
        """Every pair queued for rating, and a model judge that graded every fifth pair (close to rater 1)."""
        started = time.perf_counter()
        user, _ = get_user_model().objects.get_or_create(username=JUDGE)
        ModelJudge.objects.create(user=user, pool=pool, base_url="http://127.0.0.1:9/v1", model="bench-model")
        first = get_user_model().objects.get(username=realistic_pool.RATERS[0])
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE judgments_pair SET queued_at = now() WHERE pool_id = %s", [pool.pk])
            cursor.execute("SELECT set_config('judgments.actor', %s, true)", [str(user.pk)])
            cursor.execute(
                "INSERT INTO judgments_judgment (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note,"
                " created_at, updated_at) SELECT j.pair_id, %s, CASE WHEN j.pair_id %% 7 = 0"
                " THEN LEAST(j.grade + 1, 4) ELSE j.grade END, false, '', '', now(), now()"
                " FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id"
                " WHERE p.pool_id = %s AND j.rater_id = %s AND j.pair_id %% 5 = 0 ORDER BY j.pair_id",
                [user.pk, pool.pk, first.pk],
            )
        realistic_pool.settle()
        self.stderr.write(
            f"  pairs queued, model judge graded a fifth: {time.perf_counter() - started:.0f} s"
        )
