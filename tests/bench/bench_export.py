"""`tests/bench/run.py bench_export`: the exports of a realistic pool against psql's COPY, in one run.

On a pool of 5,000 queries, 1,000,000 graded pairs (1.2M judgments) and 50 scored runs (bench_scoring's
generator; `--pool NAME` reuses a pool that exists, e.g. one kept by `bench_scoring --keep`):

1. Qrels: `manage.py export_qrels` (1M lines of combined grades) against psql's
   `COPY (SELECT qid, 0, docid, grade ...) TO STDOUT` of every judgment as stored (the target reference,
   as in bench_exchange), and psql's COPY of export_qrels' own statement (what the server alone costs).
2. Scores: `manage.py export_scores` (JSON lines, one per query x metric of each current run, 3.5M)
   against psql's COPY of the same rows (configuration, query, flavour, metric, value, judged) in the
   same order.

Each export is timed as a whole process (interpreter, Django and connection start-up included) and
in-process (call_command); start-up alone is the process exporting an empty pool. Every figure is the
best of --repeat rounds, each round running every side in turn. Target: process <= 1.5x psql.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from judgments import services
from judgments.models import Pool
from scoring import flavours
from scoring.exports import judged_metric
from scoring.leaderboard import configuration_means
from scoring.models import JUDGED_FIELDS, MEAN_FIELDS

from .psql import psql_args, run_psql
from .timing import best_times

LINE_METRICS = (*flavours.METRICS, *flavours.UDCG)  # export_scores writes a line for each, udcg@k included


TARGET = 1.5


class Command(BaseCommand):
    help = "Benchmark export_qrels and export_scores against psql's COPY TO STDOUT (target <= 1.5x)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--pool", help="an existing pool to export (default: generate one, then delete it)"
        )
        parser.add_argument("--queries", type=int, default=5000)
        parser.add_argument("--judged", type=int, default=200, help="graded documents per query")
        parser.add_argument("--configurations", type=int, default=50)
        parser.add_argument("--repeat", type=int, default=3, help="figures are the best of this many rounds")
        parser.add_argument("--keep", action="store_true", help="keep a generated pool")

    def handle(self, *args, pool, queries, judged, configurations, repeat, keep, **options):
        load = os.getloadavg()
        generated = None
        if pool:
            found = Pool.objects.filter(name=pool).first()
            if found is None:
                raise CommandError(f"No pool named {pool!r}")
        else:
            found = generated = self._generate(queries, judged, configurations)
        empty = Pool.objects.create(name=f"bench-export-empty-{os.getpid()}")
        self.psql = psql_args()
        try:
            with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
                self.tmp = Path(tmp)
                startup = self._time(repeat, lambda: self._manage("export_qrels", "--pool", empty.name))[0]
                qrels = self._qrels(found, repeat)
                scores = self._scores(found, repeat)
        finally:
            empty.delete()
            if generated is not None and not keep:
                services.delete_pool_in_bulk(generated)
        self.stdout.write(
            f"\nbench_export on pool {found.name}: {os.cpu_count()} CPUs, load average "
            f"{' '.join(f'{x:.1f}' for x in load)} at the start, "
            f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end; best of {repeat}"
        )
        self.stdout.write(f"  process start-up (export_qrels of an empty pool)  {startup:6.2f} s")
        for name, (process, inprocess, psql, extra) in (("qrels", qrels), ("scores", scores)):
            verdict = "ok" if process / psql <= TARGET else "MISSED"
            self.stdout.write(
                f"  {name:6} process {process:6.2f} s  in-process {inprocess:6.2f} s  psql {psql:6.2f} s  "
                f"ratio {process / psql:4.2f}x (in-process {inprocess / psql:4.2f}x) target <= {TARGET}x "
                f"{verdict}{extra}"
            )

    # --- the two exports -------------------------------------------------------------------------

    def _qrels(self, pool: Pool, repeat: int) -> tuple[float, float, float, str]:
        from judgments.exchange.exports import grades

        raw = (
            "SELECT q.external_id, 0, d.external_id, j.grade FROM judgments_judgment j"
            " JOIN judgments_pair p ON p.id = j.pair_id JOIN judgments_query q ON q.id = p.query_id"
            f" JOIN judgments_document d ON d.id = p.document_id WHERE p.pool_id = {int(pool.pk)}"
        )
        inner, params = grades.combined_grades_sql(pool, ordered=False)
        own = (
            "SELECT string_agg(c.qid || ' 0 ' || c.docid || ' ' || floor(grade + 0.5)::int::text, E'\\n')"
            f" FROM ({inner % tuple(int(p) for p in params)}) c GROUP BY c.pair_pk / 1000"
        )
        ours = self.tmp / "ours.qrels"
        psql, own_sql, process, inprocess = self._time(
            repeat,
            lambda: self._psql_copy(raw, "raw.qrels", "WITH (DELIMITER ' ')"),
            lambda: self._psql_copy(
                own, "own.qrels", setup=("SET enable_nestloop = off",)
            ),  # as qrels_blocks
            lambda: self._manage("export_qrels", "--pool", pool.name, out=ours),
            lambda: self._call("export_qrels", "--pool", pool.name, out=ours),
        )
        lines = _count_lines(ours)
        if lines != _count_lines(self.tmp / "own.qrels", escaped=True):
            raise CommandError("export_qrels and psql's COPY of its statement disagree")
        self.stdout.write(
            f"qrels: {lines:,} lines ({ours.stat().st_size / 1e6:.0f} MB); psql COPY of the "
            f"{_count_lines(self.tmp / 'raw.qrels'):,} judgments {psql:.2f} s, of export_qrels' statement "
            f"{own_sql:.2f} s; export_qrels process {process:.2f} s, in-process {inprocess:.2f} s"
        )
        return process, inprocess, psql, f"; vs psql COPY of our statement {process / own_sql:4.2f}x"

    def _scores(self, pool: Pool, repeat: int) -> tuple[float, float, float, str]:
        unpivot = ", ".join(
            f"('{m}', s.{MEAN_FIELDS[m]}, "
            + (f"s.{JUDGED_FIELDS[judged_metric(m)]})" if judged_metric(m) else "NULL::float8)")
            for m in LINE_METRICS
        )
        same_rows = f"""
            SELECT s.name, s.qid, s.flavor, m.metric, m.value, m.judged FROM (
                SELECT c.name, q.external_id AS qid, s.* FROM scoring_queryscore s
                JOIN judgments_run r ON r.id = s.run_id
                JOIN judgments_searchconfiguration c ON c.id = r.configuration_id
                JOIN judgments_query q ON q.id = s.query_id
                WHERE c.pool_id = {int(pool.pk)} AND s.flavor = '{flavours.DEFAULT_FLAVOUR}' AND NOT EXISTS (
                    SELECT 1 FROM judgments_run n WHERE n.configuration_id = r.configuration_id AND n.id > r.id)
                ORDER BY c.name, q.external_id OFFSET 0
            ) s CROSS JOIN LATERAL (VALUES {unpivot}) m(metric, value, judged)
        """
        ours = self.tmp / "ours.jsonl"
        psql, process, inprocess = self._time(
            repeat,
            lambda: self._psql_copy(same_rows, "rows.tsv"),
            lambda: self._manage("export_scores", "--pool", pool.name, out=ours),
            lambda: self._call("export_scores", "--pool", pool.name, out=ours),
        )
        lines, rows = _count_lines(ours), _count_lines(self.tmp / "rows.tsv")
        configurations = sum(1 for row in configuration_means(pool) if row.current is not None)
        self.stdout.write(
            f"scores: {lines:,} JSON lines ({ours.stat().st_size / 1e6:.0f} MB) = {rows:,} rows copied by psql "
            f"+ the means of {configurations} configurations; psql {psql:.2f} s; export_scores process "
            f"{process:.2f} s, in-process {inprocess:.2f} s"
        )
        if lines != rows + configurations * len(LINE_METRICS):
            raise CommandError("export_scores and psql's COPY disagree on the number of rows")
        return process, inprocess, psql, ""

    # --- helpers -----------------------------------------------------------------------------------

    def _generate(self, queries: int, judged: int, configurations: int) -> Pool:
        """bench_scoring's pool: its generator and loader, runs scored as they are imported."""
        import numpy as np

        from .bench_scoring import Command as Scoring

        maker = Scoring(stdout=self.stdout, stderr=self.stderr)
        maker.rng = np.random.default_rng(20261121)
        maker.n_queries, maker.n_configurations, maker.depth, maker.judged = (
            queries,
            configurations,
            100,
            judged,
        )
        maker.pool = Pool.objects.create(name=f"bench-export-{time.strftime('%Y%m%d-%H%M%S')}")
        with tempfile.TemporaryDirectory(prefix="bench-export-files-") as workdir:
            maker._write_files(Path(workdir))
            maker._load({})
        maker._settle()
        return maker.pool

    def _psql_copy(self, sql: str, name: str, options: str = "", setup: tuple[str, ...] = ()) -> None:
        with open(self.tmp / name, "wb") as out:
            commands = [arg for statement in setup for arg in ("-c", statement)]
            run_psql(self.psql, *commands, "-c", f"COPY ({sql}) TO STDOUT {options}", stdout=out)

    def _manage(self, *args: str, out: Path | None = None) -> None:
        env = dict(os.environ, DEBUG=os.environ.get("DEBUG", "1"))
        with open(out or os.devnull, "wb") as handle:
            subprocess.run(
                [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), *args],
                check=True,
                stdout=handle,
                env=env,
            )

    def _call(self, *args: str, out: Path) -> None:
        with open(out, "w") as handle:
            call_command(*args, stdout=handle, stderr=io.StringIO())

    def _time(self, repeat: int, *actions) -> list[float]:
        return best_times(repeat, actions)


def _count_lines(path: Path, *, escaped: bool = False) -> int:
    """Lines of a file; `escaped`: COPY's rows of many lines, whose newlines it wrote as \\n."""
    with open(path, "rb") as handle:
        data = handle.read()
    return data.count(b"\n") + (data.count(b"\\n") if escaped else 0)
