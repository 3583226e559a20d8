"""`tests/bench/run.py bench_compare`: server time of the leaderboard and of a two-way comparison on a big pool.

Builds a throw-away pool "bench-compare-<time>" (deleted at the end unless --keep): --queries queries,
--configurations configurations with --runs runs each (the previous run feeds the leaderboard's
"change"), and one stored CellScore row per (run, query) with every flavour, written by binary COPY from
numpy (no ranking, no grade: these pages read stored scores only). Then it requests, through the
Django test Client as an engineer of the pool (middleware, view, SQL, numpy and template included):

- the leaderboard (`scoring:leaderboard`), and
- a comparison of two configurations (`scoring:compare`, 4 NDCG metrics with bootstrap CIs,
  randomization and t-tests, the sorted difference chart and the per-query lists),

--requests times each after one warm-up request, and prints the median, p90 and minimum (target: a
median of at most 300 ms each), plus the matrix of five configurations and the service calls alone.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from judgments import access, pgcopy
from judgments.models import Pool, Query, Run, SearchConfiguration, Team
from judgments.pgcopy.rows import empty_rows
from judgments.services import delete_pool_in_bulk
from scoring import comparison
from scoring.models import (
    CELL_VALUE_COLUMNS,
    FLAVOUR_CHOICES,
    JUDGED_FIELDS,
    METRIC_FIELDS,
    CellScore,
    QueryScore,
    cell_column,
)

TARGET_MS = 300.0


class Command(BaseCommand):
    help = "Time the leaderboard and a two-way comparison (server time, median of N requests) on a big pool."

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=5000)
        parser.add_argument("--configurations", type=int, default=50)
        parser.add_argument(
            "--runs", type=int, default=2, help="runs per configuration (the newest is current)"
        )
        parser.add_argument("--requests", type=int, default=20, help="timed requests per page")
        parser.add_argument("--seed", type=int, default=20261121)
        parser.add_argument("--keep", action="store_true", help="keep the pool (and its engineer) afterwards")

    def handle(self, *args, queries, configurations, runs, requests, seed, keep, **options):
        if min(queries, runs, requests) < 1 or configurations < 2:
            raise CommandError(
                "--queries, --runs and --requests must be positive and --configurations at least 2"
            )
        self.rng = np.random.default_rng(seed)
        name = f"bench-compare-{time.strftime('%Y%m%d-%H%M%S')}"
        started = time.perf_counter()
        self.pool, self.user = self._build(name, queries, configurations, runs)
        self.stderr.write(f"built pool {name} in {time.perf_counter() - started:.1f} s")
        try:
            self._measure(requests)
        finally:
            if keep:
                self.stderr.write(f"kept pool {name} and user {self.user.username}")
            else:
                self._delete()

    # --- Data ---------------------------------------------------------------------------------------

    def _build(self, name: str, n_queries: int, n_configurations: int, n_runs: int):
        user = get_user_model().objects.create_user(f"{name}-engineer", password=None)
        access.ensure_role_groups()
        user.groups.add(Group.objects.get(name=access.ENGINEER))
        with transaction.atomic():
            pool = Pool.objects.create(name=name, description="bench_compare: throw-away")
            pool.members.add(user)
            team, _ = Team.objects.get_or_create(name="bench-compare")
            Query.objects.bulk_create(
                [Query(pool=pool, external_id=f"q{i:05d}", text=f"query {i}") for i in range(n_queries)],
                batch_size=5000,
            )
            query_ids = np.array(
                Query.objects.filter(pool=pool).order_by("pk").values_list("pk", flat=True), dtype=np.int64
            )
            configs = SearchConfiguration.objects.bulk_create(
                [
                    SearchConfiguration(pool=pool, team=team, name=f"cfg-{c:02d}")
                    for c in range(n_configurations)
                ]
            )
            run_rows = Run.objects.bulk_create(
                [
                    Run(configuration=c, source=Run.Source.API, tag=f"v{r}")
                    for r in range(n_runs)
                    for c in configs
                ]
            )
            # Per-query difficulty, per-configuration quality, per-run improvement: realistic spreads.
            difficulty = self.rng.beta(2.0, 2.5, n_queries)
            quality = self.rng.normal(0.0, 0.04, n_configurations)
            names = [name for name, _ in self._columns()]
            with (
                connection.cursor() as cursor,
                pgcopy.copy_in(cursor, CellScore._meta.db_table, names) as copy,
            ):
                for index, run in enumerate(run_rows):
                    c, r = index % n_configurations, index // n_configurations
                    shift = quality[c] + 0.01 * (r - n_runs + 1)
                    copy.write(self._score_rows(run.pk, query_ids, difficulty + shift))
        with connection.cursor() as cursor:  # fresh planner statistics, as autovacuum would give soon after
            cursor.execute(f"ANALYZE {CellScore._meta.db_table}")
        return pool, user

    @staticmethod
    def _columns() -> list[tuple[str, str]]:
        values = [(column, "u1" if column.startswith("has_") else ">f8") for column in CELL_VALUE_COLUMNS]
        return [("run_id", ">i8"), ("query_id", ">i8"), *values, ("updated_at", ">i8")]

    def _score_rows(self, run_id: int, query_ids: np.ndarray, level: np.ndarray) -> bytes:
        """One CellScore row per query: every flavour's NDCG near `level`, the shared metrics too."""
        n = len(query_ids)
        rows = empty_rows(self._columns(), n)
        for name, _ in self._columns():
            rows[name] = 0
        rows["run_id"] = run_id
        rows["query_id"] = query_ids
        ranked = self.rng.random(n) > 0.005  # a few queries without a ranking: every metric 0
        rows["has_ranking"] = ranked
        rows["has_relevant"] = 1
        ndcg10 = np.clip(level + self.rng.normal(0, 0.15, n), 0, 1)
        for f, (flavour, _) in enumerate(FLAVOUR_CHOICES):
            for k, spread in ((3, -0.06), (5, -0.03), (10, 0.0), (100, 0.04)):
                noise = self.rng.normal(0, 0.05, n) if k != 10 else 0.0
                rows[cell_column(flavour, f"ndcg_{k}")] = np.clip(ndcg10 + spread + 0.01 * f + noise, 0, 1)
        metric_columns = {
            cell_column(flavour, c) for flavour, _ in FLAVOUR_CHOICES for c in METRIC_FIELDS.values()
        }
        for column in metric_columns:
            if "ndcg" not in column:
                rows[column] = np.clip(ndcg10 + self.rng.normal(-0.1, 0.15, n), 0, 1)
        for column in JUDGED_FIELDS.values():
            rows[column] = np.clip(self.rng.normal(0.95, 0.05, n), 0, 1)
        for column in (*metric_columns, *JUDGED_FIELDS.values()):
            rows[column] = np.where(ranked, rows[column], 0.0)
        rows["updated_at"] = pgcopy.timestamp()
        return rows.tobytes()

    def _delete(self) -> None:
        delete_pool_in_bulk(self.pool)  # the ORM would load a million score rows in Python first
        Team.objects.filter(name="bench-compare", configurations__isnull=True).delete()
        self.user.delete()
        self.stderr.write(f"deleted pool {self.pool.name}")

    # --- Timing -------------------------------------------------------------------------------------

    def _time(self, label: str, call, n: int) -> float:
        call()  # warm-up: imports, template compilation, connection
        times = []
        for _ in range(n):
            tick = time.perf_counter()
            call()
            times.append((time.perf_counter() - tick) * 1000)
        times.sort()
        median = statistics.median(times)
        p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
        self.stdout.write(
            f"  {label:<46} median {median:7.1f} ms   p90 {p90:7.1f} ms   min {times[0]:7.1f} ms"
        )
        return median

    def _measure(self, n: int) -> None:
        client = Client(HTTP_HOST="localhost")
        client.force_login(self.user)
        pool = self.pool
        names = [row.configuration.name for row in comparison.leaderboard(pool, "exp")[:5] if row.current]
        a, b = names[1], names[0]  # the runner-up against the leader: the comparison people make
        leaderboard_url = reverse("scoring:leaderboard", args=[pool.name])
        compare_url = reverse("scoring:compare", args=[pool.name]) + f"?c={a}&c={b}"
        matrix_url = reverse("scoring:compare", args=[pool.name]) + "".join(
            ("?" if i == 0 else "&") + f"c={name}" for i, name in enumerate(names)
        )

        def get(url):
            def call():
                response = client.get(url)
                if response.status_code != 200:
                    raise CommandError(f"{url} answered {response.status_code}")

            return call

        n_queries = Query.objects.filter(pool=pool).count()
        n_configurations = SearchConfiguration.objects.filter(pool=pool).count()
        n_rows = CellScore.objects.filter(run__configuration__pool=pool).count()
        n_scores = QueryScore.objects.filter(run__configuration__pool=pool).count()
        self.stdout.write(
            f"bench_compare: {n_configurations} configurations x {n_queries:,} queries, {n_rows:,} stored "
            f"(run, query) rows = {n_scores:,} scores in the flavour view; {n} requests per page after a "
            "warm-up (Django test Client)"
        )
        leaderboard = self._time("leaderboard page", get(leaderboard_url), n)
        compare = self._time(f"A vs B page ({a} vs {b})", get(compare_url), n)
        self._time(f"matrix page ({len(names)} configurations)", get(matrix_url), n)
        self._time("  service: comparison.leaderboard", lambda: comparison.leaderboard(pool, "exp"), n)
        configurations = {c.name: c for c in SearchConfiguration.objects.filter(pool=pool, name__in=[a, b])}
        self._time(
            "  service: comparison.compare_pair",
            lambda: comparison.compare_pair(configurations[a], configurations[b], "exp", stored=False),
            n,
        )
        verdict = "met" if max(leaderboard, compare) <= TARGET_MS else "MISSED"
        self.stdout.write(
            f"target: median <= {TARGET_MS:.0f} ms each: {verdict} "
            f"(leaderboard {leaderboard:.0f} ms, A vs B {compare:.0f} ms)"
        )
