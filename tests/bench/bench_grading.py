"""`tests/bench/run.py bench_grading`: raters grading at once against the production server.

Builds a throw-away pool "bench-grading-<time>" (deleted at the end unless --keep): --queries queries of
--docs documents each, every pair queued and wanting 2 grades, --configurations search configurations with
one run each ranking every document of every query (so each grade rescores its query for every run, as
in a pool in use), and --raters raters plus one for the profile.

Planner statistics (--statistics): "analyze" (the default) runs ANALYZE after building the pool, as
autovacuum would soon after; "app" runs none and queues the pool through the app (queue.build_queue, which
refreshes them as a deployment's queue build does); "stale" runs none and queues the pairs behind the
app's back, so the planner never learns of the pool. --busy-database N first builds a background pool of
about N queued pairs, half of them graded, and analyzes it (autovacuum does after a bulk insert that big):
a database that already holds a season's pool, in which the new bench pool is small.

1. Profile, in this process through Django's test Client: --profile-submits grade posts of one rater
   (the grading page's fragment request), each with its SQL statements counted and timed; prints the
   median wall time, its SQL part, the statements of one submit, and with --explain EXPLAIN ANALYZE of
   each of them.
2. Load: collectstatic, then gunicorn (--workers) with production settings (DEBUG off), as
   tests/test_production.py starts it; the raters (sessions made here) grade for --seconds, thinking
   --think-ms between getting a pair and posting its grade, each over a keep-alive connection. A probe
   asks /healthz every 100 ms meanwhile: the reference measured in the same run.

Prints acknowledged vs stored grades, duplicates, over-assigned pairs, errors, submit latency p50/p95/p99
(target p95 <= 50 ms), /healthz latency, and the load average before and after.
"""

from __future__ import annotations

import cProfile
import io
import logging
import os
import pstats
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from django.test import Client

from judgments import access, pool_keys, services
from judgments.models import Document, Judgment, Pair, Pool, Query, SearchConfiguration, Team
from judgments.rating import planner, queue
from judgments.services import delete_pool_in_bulk
from tests.bench import queued_pool
from tests.bench import raters as load
from tests.bench import server as production

TARGET_P95_MS = 50.0
RATERS_PER_PAIR = 2


def _cpu_seconds(root: int) -> float:
    """User + system CPU seconds of process `root` and its descendants (running ones, and those they
    reaped), from /proc: a measure of work that other processes on the machine do not inflate much."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        times[pid] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += times.get(pid, 0.0)
        stack.extend(children.get(pid, []))
    return total


def _postmaster_pid() -> int | None:
    """The local PostgreSQL server's pid when it is the embedded one (else None: not measured)."""
    if settings.DATABASE_URL:
        return None
    try:
        return int((Path(settings.EMBEDDED_PGDATA) / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _load_average() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


class Command(BaseCommand):
    help = "Raters grading at once against gunicorn: stored vs acknowledged grades and submit latency."

    def add_arguments(self, parser):
        parser.add_argument("--raters", type=int, default=32)
        parser.add_argument("--seconds", type=float, default=60.0, help="length of the load phase")
        parser.add_argument(
            "--think-ms",
            type=float,
            nargs=2,
            default=(2000.0, 6000.0),
            metavar=("MIN", "MAX"),
            help="think time between getting a pair and posting its grade, uniform (default 2000 6000)",
        )
        parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
        parser.add_argument("--warm-up", type=float, default=5.0, help="seconds of unmeasured grading first")
        parser.add_argument("--queries", type=int, default=300)
        parser.add_argument("--docs", type=int, default=20, help="documents (queued pairs) per query")
        parser.add_argument("--configurations", type=int, default=8, help="configurations with a run")
        parser.add_argument("--profile-submits", type=int, default=40, help="0: no profile phase")
        parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE one submit's statements")
        parser.add_argument(
            "--cprofile", choices=("cumulative", "tottime"), help="print the profile's top Python functions"
        )
        parser.add_argument("--no-load", action="store_true", help="profile only")
        parser.add_argument(
            "--statistics",
            choices=("analyze", "app", "stale"),
            default="analyze",
            help="planner statistics of the new pool (see the module docstring)",
        )
        parser.add_argument(
            "--busy-database",
            type=int,
            default=0,
            metavar="PAIRS",
            help="first build a background pool of about PAIRS queued pairs (e.g. 250000)",
        )
        parser.add_argument("--seed", type=int, default=20261125)
        parser.add_argument("--keep", action="store_true", help="keep the pool and its users afterwards")

    def handle(self, *args, **options):
        if options["raters"] < 1 or options["seconds"] <= 0 or options["queries"] < 1 or options["docs"] < 1:
            raise CommandError("--raters, --seconds, --queries and --docs must be positive")
        logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would cost the run
        self.options = options
        self.rng = random.Random(options["seed"])
        name = f"bench-grading-{time.strftime('%Y%m%d-%H%M%S')}"
        self.background = None
        if options["busy_database"] > 0:
            started = time.perf_counter()
            self.background = self._build_background(f"{name}-background", options["busy_database"])
            self.stderr.write(
                f"built background pool {self.background.name} in {time.perf_counter() - started:.1f} s"
            )
        started = time.perf_counter()
        self.pool, self.users = self._build(name)
        self.stderr.write(
            f"built pool {name} in {time.perf_counter() - started:.1f} s (statistics: {options['statistics']}); "
            f"the planner expects {planner.estimated_queue(self.pool.pk):.0f} queued pairs of "
            f"{Pair.objects.filter(pool=self.pool).queued().count()}"
        )
        try:
            if options["profile_submits"]:
                self._profile(
                    self.users[-1], options["profile_submits"], options["explain"], options["cprofile"]
                )
            if not options["no_load"]:
                self._load(self.users[: options["raters"]])
        finally:
            if options["keep"]:
                self.stderr.write(f"kept pool {name} and its users")
            else:
                self._delete()

    # --- Data ---------------------------------------------------------------------------------------

    def _build(self, name: str):
        o = self.options
        User = get_user_model()
        access.ensure_role_groups()
        rater_group = Group.objects.get(name=access.RATER)
        with transaction.atomic():
            pool = Pool.objects.create(
                name=name, description="bench_grading: throw-away", raters_per_pair=RATERS_PER_PAIR
            )
            users = User.objects.bulk_create(
                [User(username=f"{name}-rater{i:03d}") for i in range(o["raters"] + 1)]
            )
            rater_group.user_set.add(*users)
            pool.members.add(*users)
            queries = Query.objects.bulk_create(
                [
                    Query(pool=pool, external_id=f"q{i:04d}", text=f"query {i} about things")
                    for i in range(o["queries"])
                ]
            )
            documents = Document.objects.bulk_create(
                [
                    Document(
                        pool=pool,
                        external_id=f"d{i:06d}",
                        title=f"Document {i}",
                        body=" ".join(f"word{self.rng.randrange(5000)}" for _ in range(150)),
                    )
                    for i in range(o["queries"] * o["docs"])
                ],
                batch_size=5000,
            )
            team, _ = Team.objects.get_or_create(name="bench-grading")
            per_query = {
                q.external_id: [d.external_id for d in documents[i * o["docs"] : (i + 1) * o["docs"]]]
                for i, q in enumerate(queries)
            }
            for c in range(o["configurations"]):
                configuration = SearchConfiguration.objects.create(pool=pool, team=team, name=f"cfg-{c:02d}")
                rankings = {q: self.rng.sample(docs, len(docs)) for q, docs in per_query.items()}
                services.record_run(configuration, rankings, source="api")
            pool_keys.ensure_pairs(
                pool,
                [
                    (q.pk, d.pk)
                    for i, q in enumerate(queries)
                    for d in documents[i * o["docs"] : (i + 1) * o["docs"]]
                ],
            )
            if o["statistics"] != "app":
                Pair.objects.filter(pool=pool).update(queued_at=pool.created_at, priority=0)
        if o["statistics"] == "app":  # as an admin builds it: every pair in some run's top --docs
            queue.build_queue(pool, k=o["docs"])
        elif o["statistics"] == "analyze":
            with (
                connection.cursor() as cursor
            ):  # fresh planner statistics, as autovacuum would give soon after
                for table in (
                    "judgments_pair",
                    "judgments_judgment",
                    "judgments_document",
                    "judgments_ranking",
                ):
                    cursor.execute(f"ANALYZE {table}")
        return pool, users

    def _build_background(self, name: str, pairs: int):
        docs = 50
        veteran, _ = get_user_model().objects.get_or_create(username=f"{name}-veteran")
        pool = queued_pool.build(name, queries=max(1, pairs // docs), docs=docs, raters=[veteran], graded=0.5)
        queued_pool.analyze()  # what autovacuum does after a bulk insert of a tenth of a table or more
        return pool

    def _delete(self) -> None:
        from django_tasks_db.models import DBTaskResult

        DBTaskResult.objects.filter(args_kwargs__args__0=self.pool.pk).delete()
        delete_pool_in_bulk(self.pool)
        if self.background is not None:
            delete_pool_in_bulk(self.background)
            get_user_model().objects.filter(username=f"{self.background.name}-veteran").delete()
        Team.objects.filter(name="bench-grading", configurations__isnull=True).delete()
        get_user_model().objects.filter(pk__in=[u.pk for u in self.users]).delete()
        if self.background is not None:
            # Vacuum the background pool's dead rows now: otherwise autovacuum does it during the next run
            # and doubles PostgreSQL's CPU per request there (seen: 18.7 -> 36.5 ms).
            with connection.cursor() as cursor:
                cursor.execute(
                    "VACUUM (ANALYZE) judgments_pair, judgments_judgment, judgments_judgmentchange,"
                    " judgments_document, judgments_query, judgments_ranking"
                )
        self.stderr.write(f"deleted pool {self.pool.name}")

    # --- Profile ------------------------------------------------------------------------------------

    def _profile(self, user, n: int, explain: bool, python: str | None) -> None:
        client = Client(HTTP_HOST="localhost")
        client.force_login(user)
        grade_url = f"/pools/{self.pool.name}/grade/"
        html = client.get(grade_url, headers=load.FRAGMENT).content.decode()
        walls, sql_times, counts, statements = [], [], [], []
        profiler = cProfile.Profile() if python else None
        sort = python
        for i in range(n + 1):
            found = load.PAIR.search(html)
            if found is None:
                break
            timed: list[tuple[float, str, object]] = []

            def timer(execute, sql, params, many, context, timed=timed):
                tick = time.perf_counter()
                try:
                    return execute(sql, params, many, context)
                finally:
                    timed.append(((time.perf_counter() - tick) * 1000, sql, params))

            def commit(_commit=connection._commit, timed=timed):
                tick = time.perf_counter()
                try:
                    return _commit()
                finally:
                    timed.append(((time.perf_counter() - tick) * 1000, "COMMIT", None))

            connection._commit = commit  # commits are no cursor statements: timed here
            try:
                with connection.execute_wrapper(timer):
                    if profiler is not None and i:
                        profiler.enable()
                    tick = time.perf_counter()
                    response = client.post(
                        f"{grade_url}{found.group(1)}/", {"grade": str(i % 5)}, headers=load.FRAGMENT
                    )
                    wall = (time.perf_counter() - tick) * 1000
                    if profiler is not None:
                        profiler.disable()
            finally:
                del connection._commit
            if response.status_code != 200 or "Saved " not in response.content.decode():
                raise CommandError(f"profile submit answered {response.status_code}")
            html = response.content.decode()
            if i == 0:
                continue  # warm-up
            walls.append(wall)
            sql_times.append(sum(ms for ms, _, _ in timed))
            counts.append(len(timed))
            statements = timed
        self.stdout.write(
            f"Profile: {len(walls)} submits in this process (test Client, DEBUG={settings.DEBUG}), "
            f"load average {_load_average()}"
        )
        self.stdout.write(
            f"  wall median {statistics.median(walls):6.1f} ms (min {min(walls):.1f}), "
            f"SQL median {statistics.median(sql_times):6.1f} ms, "
            f"statements median {statistics.median(counts):.0f} (min {min(counts)}, max {max(counts)})"
        )
        self.stdout.write("  statements of the last submit (ms):")
        for ms, sql, _ in statements:
            self.stdout.write(f"    {ms:6.2f}  {' '.join(sql.split())[:150]}")
        if explain:
            self._explain(statements)
        if profiler is not None:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(sort).print_stats(45)
            self.stdout.write(out.getvalue())

    def _explain(self, statements) -> None:
        with connection.cursor() as cursor:
            for _, sql, params in statements:
                if not sql.lstrip().upper().startswith(("SELECT", "WITH")) or "FOR UPDATE" in sql.upper():
                    continue
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                self.stdout.write("  " + " ".join(sql.split())[:150])
                for (line,) in cursor.fetchall():
                    self.stdout.write("      " + line)

    # --- Load ---------------------------------------------------------------------------------------

    def _load(self, users) -> None:
        o = self.options
        workdir = Path(tempfile.mkdtemp(prefix="bench-grading-"))
        log = open(workdir / "gunicorn.log", "w+")
        server = None
        clients = {}
        try:
            env = production.server_env(workdir / "static")
            server, base = production.start_gunicorn(env, log, workers=o["workers"])
            for user in users:
                django_client = Client()
                django_client.force_login(user)
                session = load.with_session(base, django_client.cookies["sessionid"].value)
                clients[user.username] = [session]
            probe_ms: list[float] = []
            stop = threading.Event()

            def probe():
                with httpx.Client(base_url=base, timeout=30) as client:
                    while not stop.wait(0.1):
                        tick = time.perf_counter()
                        client.get("/healthz")
                        probe_ms.append((time.perf_counter() - tick) * 1000)

            # Warm-up, not measured: every worker imports the scoring code and compiles the templates on
            # its first requests. Its grades count in the stored-versus-acknowledged check.
            warm = load.grade_concurrently(
                clients, self.pool.name, think=(0.0, 0.05), seconds=o["warm_up"], seed=o["seed"] + 1
            )
            before = _load_average()
            postmaster = _postmaster_pid()
            cpu_before = (_cpu_seconds(server.pid), _cpu_seconds(postmaster) if postmaster else None)
            prober = threading.Thread(target=probe, daemon=True)
            prober.start()
            think = (o["think_ms"][0] / 1000, o["think_ms"][1] / 1000)
            outcome = load.grade_concurrently(
                clients, self.pool.name, think=think, seconds=o["seconds"], seed=o["seed"]
            )
            stop.set()
            prober.join()
            during = _load_average()
            cpu = (
                _cpu_seconds(server.pid) - cpu_before[0],
                _cpu_seconds(postmaster) - cpu_before[1] if postmaster else None,
            )
        finally:
            for connections in clients.values():
                for client in connections:
                    client.close()
            if server is not None:
                production.stop(server)
            log.seek(0)
            server_log = log.read()
            log.close()
            shutil.rmtree(workdir, ignore_errors=True)
        self._report(warm, outcome, probe_ms, before, during, server_log, cpu)

    def _report(self, warm: load.Load, outcome: load.Load, probe_ms, before, during, server_log, cpu):
        o = self.options
        stored = Counter(
            Judgment.objects.filter(pair__pool=self.pool)
            .exclude(rater=self.users[-1])  # the profile's rater
            .values_list("rater__username", "pair_id", "grade")
        )
        acknowledged = Counter(warm.acknowledged + outcome.acknowledged)
        per_rater_pair = Counter((name, pair) for name, pair, _ in acknowledged.elements())
        duplicates = sum(n - 1 for n in per_rater_pair.values() if n > 1)
        per_pair = Counter(
            Judgment.objects.filter(pair__pool=self.pool, cant_judge=False).values_list("pair_id", flat=True)
        )
        over = sum(1 for n in per_pair.values() if n > RATERS_PER_PAIR)
        lost = sum((acknowledged - stored).values())
        unacknowledged = sum((stored - acknowledged).values())
        p = load.percentile
        submits = outcome.submit_ms
        self.stdout.write(
            f"Load: {o['raters']} raters, statistics {o['statistics']}, busy database {o['busy_database']} pairs, "
            f"think {o['think_ms'][0]:.0f}-"
            f"{o['think_ms'][1]:.0f} ms, {outcome.seconds:.1f} s, gunicorn --workers {o['workers']}, "
            f"{os.cpu_count()} cores; load average before {before}, at the end {during}"
        )
        self.stdout.write(
            f"  grades acknowledged {sum(acknowledged.values())} ({len(warm.acknowledged)} in the warm-up), "
            f"stored {sum(stored.values())}, "
            f"acknowledged but not stored {lost}, stored but not acknowledged {unacknowledged}, "
            f"duplicates {duplicates}, over-assigned pairs {over}"
        )
        self.stdout.write(
            f"  requests {outcome.requests}, errors {len(warm.errors) + len(outcome.errors)}, refused by the "
            f"queue {len(warm.refused) + len(outcome.refused)}, server tracebacks {server_log.count('Traceback')}"
        )
        for error in (warm.errors + outcome.errors)[:5]:
            self.stdout.write(f"    {error}")
        self.stdout.write(
            f"  submit (POST grade -> next pair) ms: p50 {p(submits, 50):6.1f}  p95 {p(submits, 95):6.1f}  "
            f"p99 {p(submits, 99):6.1f}  max {max(submits, default=float('nan')):6.1f}  (n={len(submits)})"
        )
        pages = outcome.page_ms
        self.stdout.write(
            f"  next pair (GET) ms:                p50 {p(pages, 50):6.1f}  p95 {p(pages, 95):6.1f}  "
            f"p99 {p(pages, 99):6.1f}  (n={len(pages)})"
        )
        self.stdout.write(
            f"  /healthz reference ms:             p50 {p(probe_ms, 50):6.1f}  p95 {p(probe_ms, 95):6.1f}  "
            f"p99 {p(probe_ms, 99):6.1f}  (n={len(probe_ms)})"
        )
        requests = max(outcome.requests, 1)
        database = f", PostgreSQL {cpu[1] * 1000 / requests:.1f} ms" if cpu[1] is not None else ""
        self.stdout.write(
            f"  CPU per grading request (healthz probes included): gunicorn {cpu[0] * 1000 / requests:.1f} ms"
            f"{database}"
        )
        verdict = "met" if p(submits, 95) <= TARGET_P95_MS else "NOT met"
        self.stdout.write(f"  target: submit p95 <= {TARGET_P95_MS:.0f} ms: {verdict}")
