"""`tests/bench/run.py bench_segments`: query segments (scoring.segments) on the realistic pool (bench_pages'
5,000 queries x 50 configurations): the leaderboard, the comparison of two configurations, its per-query
CSV and the matrix of five configurations (page and CSV) without a tag filter and with one, `export_scores` with and without `--tag`, and `/api/segments/<pool>/`, each timed (best
of --rounds, in-process through Django's test client) with its SQL statement count.

The pool's queries are tagged first if none carries a tag (one UPDATE, set-based): `head` (10%), `torso`
(30%), `tail` (60%), `category:c0`..`c9` (by key), `lang:en`/`lang:de` (half each): 15 tags. Run it on a
database of its own, e.g.

    EMBEDDED_PGDATA=.pgdata-bench EMBEDDED_PG_KEEP=1 DEBUG=1 .venv/bin/python tests/bench/run.py bench_segments
"""

from __future__ import annotations

import os
import time
from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from judgments.models import Pool, Query

from .timing import best_times

TAG_SQL = """
UPDATE judgments_query q SET tags = ARRAY(
    SELECT t FROM unnest(ARRAY[
        CASE WHEN r.rank <= r.n / 10 THEN 'head' WHEN r.rank <= r.n * 4 / 10 THEN 'torso' ELSE 'tail' END,
        'category:c' || (q.id %% 10),
        CASE WHEN q.id %% 2 = 0 THEN 'lang:en' ELSE 'lang:de' END
    ]::varchar[]) AS t ORDER BY t COLLATE "C")
FROM (SELECT id, row_number() OVER (ORDER BY id) AS rank, count(*) OVER () AS n
      FROM judgments_query WHERE pool_id = %s) r
WHERE q.id = r.id
"""


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


class Command(BaseCommand):
    help = "Time the leaderboard, the comparison, export_scores and the segments API with and without a tag."

    def add_arguments(self, parser):
        parser.add_argument(
            "--pool", default="bench-pages", help="the realistic pool (bench_pages builds it)"
        )
        parser.add_argument("--rounds", type=int, default=2)
        parser.add_argument("--tag", default="head", help="the segment timed (default head: 500 queries)")
        parser.add_argument(
            "--user", default="engineer", help="the engineer the pages are requested as (made a member)"
        )

    def handle(self, *args, pool, rounds, tag, user, **options):
        self.stdout.write(f"load average at start: {load()}")
        found = Pool.objects.filter(name=pool).first()
        if found is None:
            raise CommandError(f"no pool {pool}: run bench_pages first to build it")
        if not Query.objects.filter(pool=found).exclude(tags=[]).exists():
            start = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute(TAG_SQL, [found.pk])
                cursor.execute("ANALYZE judgments_query")
            self.stdout.write(f"tagged the pool's queries in {time.perf_counter() - start:.2f} s")
        tags = Query.objects.filter(pool=found).tag_counts()
        self.stdout.write(f"{len(tags)} tags: " + ", ".join(f"{t} ({n})" for t, n in tags))
        names = list(found.configurations.order_by("name").values_list("name", flat=True)[:5])
        five = "&".join(f"c={n}" for n in names)
        user = get_user_model().objects.get(username=user)
        found.members.add(user)
        client = Client(HTTP_HOST="localhost")
        client.force_login(user)
        base = f"/pools/{found.name}"
        pages = [
            ("leaderboard", f"{base}/leaderboard/"),
            (f"leaderboard ?tag={tag}", f"{base}/leaderboard/?tag={tag}"),
            (f"leaderboard ?tag={tag}&tag=lang:en", f"{base}/leaderboard/?tag={tag}&tag=lang:en"),
            ("leaderboard ?tag=tail (3,000 queries)", f"{base}/leaderboard/?tag=tail"),
            ("leaderboard ?breakdown=1", f"{base}/leaderboard/?breakdown=1"),
            ("compare A vs B", f"{base}/compare/?c={names[0]}&c={names[1]}"),
            (f"compare A vs B ?tag={tag}", f"{base}/compare/?c={names[0]}&c={names[1]}&tag={tag}"),
            ("compare.csv A vs B queries", f"{base}/compare.csv?c={names[0]}&c={names[1]}&table=queries"),
            (
                f"compare.csv A vs B queries ?tag={tag}",
                f"{base}/compare.csv?c={names[0]}&c={names[1]}&table=queries&tag={tag}",
            ),
            ("matrix of 5", f"{base}/compare/?{five}"),
            (f"matrix of 5 ?tag={tag}", f"{base}/compare/?{five}&tag={tag}"),
            ("matrix of 5 ?tag=tail (3,000 queries)", f"{base}/compare/?{five}&tag=tail"),
            (f"compare.csv matrix of 5 ?tag={tag}", f"{base}/compare.csv?{five}&table=matrix&tag={tag}"),
            ("api segments (no tag)", f"/api/segments/{found.name}/"),
            (f"api segments ?tag={tag}", f"/api/segments/{found.name}/?tag={tag}"),
            ("api segments ?breakdown=1", f"/api/segments/{found.name}/?breakdown=1"),
        ]
        self.stdout.write(f"\n{'what':42} {'ms':>9} {'statements':>10}")
        for label, url in pages:
            status = client.get(url).status_code
            if status != 200:
                self.stdout.write(f"{label:42} status {status}")
                continue
            (best,) = best_times(rounds, [lambda url=url: client.get(url)])
            with CaptureQueriesContext(connection) as captured:
                client.get(url)
            self.stdout.write(f"{label:42} {best * 1000:9.1f} {len(captured.captured_queries):>10}")
        for label, extra in (("export_scores", []), (f"export_scores --tag {tag}", ["--tag", tag])):
            sizes = []

            def export(extra=extra, sizes=sizes):
                out = StringIO()
                call_command("export_scores", "--pool", found.name, *extra, stdout=out)
                sizes.append(len(out.getvalue().splitlines()))

            (best,) = best_times(rounds, [export])
            self.stdout.write(f"{label:42} {best * 1000:9.1f} {'':>10}  ({sizes[-1]:,} lines)")
        self.stdout.write(f"load average at end: {load()}")
