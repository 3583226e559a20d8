"""`manage.py bench_exchange`: the import/export throughput targets, measured in one run.

1. Run import: a 500,000-line TREC run file (5,000 queries x 100 documents drawn from a 100,000-document
   pool) through `manage.py import_run`, against `psql \\copy` of the same file into a plain table
   (no index, no constraint) on the same server. Target: <= 1.5x.
2. Qrels export: 1,000,000 judgments (10,000 queries x 100 documents, one rater) through
   `manage.py export_qrels`, against psql's `COPY (SELECT qid, 0, docid, grade ...) TO STDOUT` of the
   same rows. Target: <= 1.5x.

Each side is timed as a whole process (interpreter and Django start-up included for ours), and ours
also in-process through call_command (start-up excluded). Every timing is the best of --repeat rounds,
each round running psql, our process and our call_command in turn. The pools it creates are deleted
at the end (unless --keep). Figures go to stdout.
"""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from judgments import services
from judgments.models import Pool, SearchConfiguration, Team

TARGET = 1.5


class Command(BaseCommand):
    help = "Benchmark the run import and the qrels export against psql's COPY (targets: <= 1.5x each)."

    def add_arguments(self, parser):
        parser.add_argument("--run-lines", type=int, default=500_000)
        parser.add_argument("--judgments", type=int, default=1_000_000)
        parser.add_argument("--repeat", type=int, default=5, help="timings are the best of this many rounds")
        parser.add_argument("--keep", action="store_true", help="keep the benchmark pools")
        parser.add_argument("--only", choices=["import", "export"], help="run one of the two benchmarks")

    def handle(self, *args, run_lines, judgments, repeat, keep, only, **options):
        self.psql = self._psql()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.pools: list[str] = []
        results = {}
        try:
            with tempfile.TemporaryDirectory(prefix="bench_exchange_") as tmp:
                if only in (None, "import"):
                    results["import"] = self.bench_import(Path(tmp), f"bx-run-{stamp}", run_lines, repeat)
                if only in (None, "export"):
                    results["export"] = self.bench_export(Path(tmp), f"bx-qrels-{stamp}", judgments, repeat)
        finally:
            if not keep:
                self.cleanup()
        self.stdout.write("")
        self.stdout.write("Summary (ratio = ours / psql; target <= 1.5x; process = a whole manage.py run,")
        self.stdout.write("in-process = the command's work without starting Python and Django)")
        for name, (ours_process, ours_inprocess, psql) in results.items():
            verdicts = [
                f"{label} {'ok' if ours / psql <= TARGET else 'MISSED'}"
                for label, ours in (("process", ours_process), ("in-process", ours_inprocess))
            ]
            self.stdout.write(
                f"  {name:7} ours {ours_process:6.2f} s (in-process {ours_inprocess:6.2f} s)  psql {psql:6.2f} s  "
                f"ratio {ours_process / psql:4.2f}x (in-process {ours_inprocess / psql:4.2f}x)  {', '.join(verdicts)}"
            )

    # --- helpers -----------------------------------------------------------------------------------

    def _psql(self) -> list[str]:
        from config.embedded_db import server

        connection.ensure_connection()
        db = connection.settings_dict
        candidates = [server.bin_dir() / "psql"] if db["ENGINE"] == "config.embedded_db" else []
        psql = next((str(p) for p in candidates if p.exists()), None) or server.which_psql()
        if psql is None:
            raise CommandError("psql not found")
        args = [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db["NAME"], "-U", db["USER"] or "postgres"]
        if db["HOST"]:
            args += ["-h", str(db["HOST"])]
        if db["PORT"]:
            args += ["-p", str(db["PORT"])]
        return args

    def _psql_env(self) -> dict:
        env = dict(os.environ)
        if connection.settings_dict.get("PASSWORD"):
            env["PGPASSWORD"] = connection.settings_dict["PASSWORD"]
        return env

    def _time(self, repeat: int, *actions) -> list[float]:
        """The best time of each action over `repeat` rounds; every round runs them all in turn, so
        that a busy spell of the shared machine falls on every side rather than on one."""
        best = [float("inf")] * len(actions)
        for _ in range(repeat):
            for i, action in enumerate(actions):
                start = time.perf_counter()
                action()
                best[i] = min(best[i], time.perf_counter() - start)
        return best

    def _run_psql(self, *extra: str, stdout=subprocess.DEVNULL) -> None:
        subprocess.run([*self.psql, *extra], check=True, stdout=stdout, env=self._psql_env())

    def _manage(self, *args: str, stdout=subprocess.DEVNULL) -> None:
        env = dict(os.environ, DEBUG=os.environ.get("DEBUG", "1"))
        subprocess.run(
            [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), *args],
            check=True,
            stdout=stdout,
            stderr=subprocess.DEVNULL,
            env=env,
        )

    def _say(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()
        self.stderr.flush()

    # --- 1. run import -----------------------------------------------------------------------------

    def bench_import(self, tmp: Path, name: str, lines: int, repeat: int) -> tuple[float, float, float]:
        depth = 100
        n_queries = max(1, lines // depth)
        n_docs = 100_000
        rng = random.Random(7)
        path = tmp / "bench.run"
        with open(path, "w") as out:
            for q in range(n_queries):
                docs = rng.sample(range(n_docs), depth)
                out.writelines(
                    f"q{q} Q0 doc{d} {r + 1} {depth - r}.{rng.randrange(1000):03d} bench\n"
                    for r, d in enumerate(docs)
                )
        size = path.stat().st_size
        self._say(
            f"Run import: {n_queries * depth:,} lines ({size / 1e6:.1f} MB), {n_queries:,} queries x {depth}, {n_docs:,} documents"
        )

        # The pool as it is before a run arrives: its queries and documents exist.
        pool = Pool.objects.create(name=name)
        self.pools.append(name)
        team, _ = Team.objects.get_or_create(name="bench-exchange")
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO judgments_query (pool_id, external_id, text, information_need) "
                "SELECT %s, 'q' || i, 'query ' || i, '' FROM generate_series(0, %s) i",
                [pool.pk, n_queries - 1],
            )
            cursor.execute(
                "INSERT INTO judgments_document (pool_id, external_id, title, body, url, extra) "
                "SELECT %s, 'doc' || i, '', '', '', '{}' FROM generate_series(0, %s) i",
                [pool.pk, n_docs - 1],
            )
            cursor.execute("ANALYZE judgments_document")
            cursor.execute("ANALYZE judgments_query")

        counter = iter(range(1000))

        def ours_process():
            self._manage(
                "import_run",
                "--pool",
                name,
                "--configuration",
                f"p{next(counter)}",
                "--team",
                team.name,
                str(path),
            )

        def ours_inprocess():
            call_command(
                "import_run", "--pool", name, "--configuration", f"i{next(counter)}", "--team", team.name, str(path),
                stdout=io.StringIO(), stderr=io.StringIO(),
            )  # fmt: skip

        table = f"bench_exchange_run_{os.getpid()}"
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TABLE {table} (qid text, q0 text, docid text, rank int, score float8, tag text)"
            )
        try:

            def psql_copy():
                self._run_psql(
                    "-c", f"TRUNCATE {table}", "-c", f"\\copy {table} FROM '{path}' WITH (DELIMITER ' ')"
                )

            psql, process, inprocess = self._time(repeat, psql_copy, ours_process, ours_inprocess)
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT count(*) FROM {table}")
                copied = cursor.fetchone()[0]
        finally:
            with connection.cursor() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {table}")
        runs = SearchConfiguration.objects.filter(pool=pool).count()
        assert copied == n_queries * depth, copied
        self._say(
            f"  psql \\copy into a plain table      {psql:6.2f} s\n"
            f"  manage.py import_run (process)     {process:6.2f} s   {process / psql:4.2f}x\n"
            f"  import_run via call_command        {inprocess:6.2f} s   {inprocess / psql:4.2f}x\n"
            f"  ({runs} runs stored, each {n_queries:,} rankings)"
        )
        return process, inprocess, psql

    # --- 2. qrels export ---------------------------------------------------------------------------

    def bench_export(self, tmp: Path, name: str, n_judgments: int, repeat: int) -> tuple[float, float, float]:
        per_query = 100
        n_queries = max(1, n_judgments // per_query)
        self._say(
            f"\nQrels export: {n_queries * per_query:,} judgments ({n_queries:,} queries x {per_query} documents, one rater)"
        )
        from django.contrib.auth import get_user_model

        pool = Pool.objects.create(name=name)
        self.pools.append(name)
        rater, _ = get_user_model().objects.get_or_create(username="bench-exchange-rater")
        with transaction.atomic(), connection.cursor() as cursor:
            # Setup only: skip the judgment history trigger for this session's bulk insert.
            cursor.execute("SET LOCAL session_replication_role = replica")
            cursor.execute(
                "INSERT INTO judgments_query (pool_id, external_id, text, information_need) "
                "SELECT %s, 'q' || i, 'query ' || i, '' FROM generate_series(0, %s) i",
                [pool.pk, n_queries - 1],
            )
            cursor.execute(
                "INSERT INTO judgments_document (pool_id, external_id, title, body, url, extra) "
                "SELECT %s, 'd' || i, '', '', '', '{}' FROM generate_series(0, %s) i",
                [pool.pk, n_queries * per_query - 1],
            )
            # Fresh statistics, or the planner takes a million new rows for a handful.
            cursor.execute("ANALYZE judgments_query")
            cursor.execute("ANALYZE judgments_document")
            cursor.execute(
                """
                INSERT INTO judgments_pair (pool_id, query_id, document_id, priority)
                SELECT %s, q.id, d.id, 0 FROM judgments_document d
                JOIN judgments_query q ON q.pool_id = %s AND q.external_id = 'q' || (substr(d.external_id, 2)::int / %s)
                WHERE d.pool_id = %s
                """,
                [pool.pk, pool.pk, per_query, pool.pk],
            )
            cursor.execute("ANALYZE judgments_pair")
            cursor.execute(
                "INSERT INTO judgments_judgment (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note,"
                " created_at, updated_at) SELECT id, %s, (id %% 5)::smallint, false, '', '', now(), now()"
                " FROM judgments_pair WHERE pool_id = %s",
                [rater.pk, pool.pk],
            )
        with connection.cursor() as cursor:
            for table in ("judgments_pair", "judgments_judgment", "judgments_query", "judgments_document"):
                cursor.execute(f"ANALYZE {table}")

        same_rows = (
            "SELECT q.external_id, 0, d.external_id, j.grade FROM judgments_judgment j"
            " JOIN judgments_pair p ON p.id = j.pair_id JOIN judgments_query q ON q.id = p.query_id"
            f" JOIN judgments_document d ON d.id = p.document_id WHERE p.pool_id = {pool.pk}"
        )
        out_psql, out_ours = tmp / "copy.txt", tmp / "ours.qrels"

        def psql_copy():
            with open(out_psql, "wb") as out:
                self._run_psql("-c", f"COPY ({same_rows}) TO STDOUT WITH (DELIMITER ' ')", stdout=out)

        def ours_process():
            with open(out_ours, "wb") as out:
                self._manage("export_qrels", "--pool", name, stdout=out)

        def ours_inprocess():
            with open(out_ours, "w") as out:
                call_command("export_qrels", "--pool", name, stdout=out, stderr=io.StringIO())

        psql, process, inprocess = self._time(repeat, psql_copy, ours_process, ours_inprocess)
        ours_lines = sorted(out_ours.read_text().splitlines())
        theirs = sorted(out_psql.read_text().splitlines())
        if ours_lines != theirs:
            raise CommandError("export_qrels and COPY disagree on the rows")
        self._say(
            f"  psql COPY ... TO STDOUT            {psql:6.2f} s   ({len(theirs):,} lines, {out_psql.stat().st_size / 1e6:.1f} MB)\n"
            f"  manage.py export_qrels (process)   {process:6.2f} s   {process / psql:4.2f}x\n"
            f"  export_qrels via call_command      {inprocess:6.2f} s   {inprocess / psql:4.2f}x\n"
            f"  (the same {len(ours_lines):,} lines, checked)"
        )
        return process, inprocess, psql

    # --- cleanup -----------------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Delete the benchmark pools in bulk."""
        for name in self.pools:
            pool = Pool.objects.filter(name=name).first()
            if pool is not None:
                services.delete_pool_in_bulk(pool)
        Team.objects.filter(name="bench-exchange", configurations__isnull=True).delete()
        from django.contrib.auth import get_user_model

        get_user_model().objects.filter(username="bench-exchange-rater", judgments__isnull=True).delete()
        self.stderr.write(f"Deleted the benchmark pools: {', '.join(self.pools)}")
