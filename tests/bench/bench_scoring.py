"""`make bench`: the scoring benchmark, in one run, against pytrec_eval on the same data.

Generates a throw-away pool "bench-<time>" (deleted at the end unless --keep) of --queries queries with
--judged graded documents each (one rater for all, a second rater on a fifth of the pairs) and
--configurations runs of --depth documents per query, loads it through the import services
(judgments.exchange.imports), writes the same data as TREC files, then prints:

- import time per run file (parse + store, then the run's scoring after commit), and of the qrels;
- full recompute from the database (scoring.services.rescore_pool), with its steps;
- pytrec_eval parsing the TREC files and evaluating the same measures (ndcg_cut.3,5,10,100, P and
  recall at 3,5,10,100, recip_rank, map), in a fresh child process so its memory is its own;
- their ratio (target <= 0.25);
- one changed grade (record_judgment + commit + the incremental rescore), median and p95 of 100
  (target <= 20 ms);
- peak memory of this process (ru_maxrss; target <= 1 GiB);
- a 14-measure set (scoring.measures, ir_measures names: _pytrec_child.MEASURE_SET): set_measures (a
  full re-score writing every measure row) and a full re-score with the rows current, against
  pytrec_eval computing the set's trec_eval measures on the same files (target <= 0.3x), and one changed
  grade with the set;
- the storage choice: reading every ranked entry as (run, query, int8[]) rows, as scoring does, vs
  one row per entry (a throw-away unlogged table), both by binary COPY into numpy.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction

from judgments import services as judgment_services
from judgments.exchange.imports import file_rater_username, import_qrels, import_queries, import_run
from judgments.models import Judgment, Pool, SearchConfiguration, Team
from judgments.pgcopy.rows import read_columns, row_dtype, stream_rows
from judgments.signals import grades_changed
from scoring import cells, receivers, services

from ._pytrec_child import (
    MEASURE_SET,
    MEASURE_SET_TREC,
    SAME_CUTOFFS,
    SPECIFIED_MEASURES,
    evaluate_measure_set,
    parse_and_evaluate,
)

GRADE_WEIGHTS = np.array([0.5, 0.25, 0.13, 0.08, 0.04])
GRADE_WEIGHTS = GRADE_WEIGHTS / GRADE_WEIGHTS.sum()


class Command(BaseCommand):
    help = "Benchmark scoring (import, full and incremental recompute, memory) against pytrec_eval."

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=5000)
        parser.add_argument("--configurations", type=int, default=50)
        parser.add_argument("--depth", type=int, default=100)
        parser.add_argument("--judged", type=int, default=200, help="graded documents per query")
        parser.add_argument("--changes", type=int, default=100, help="single grade changes to time")
        parser.add_argument("--seed", type=int, default=20261121)
        parser.add_argument("--keep", action="store_true", help="keep the pool and the TREC files")

    def handle(self, *args, queries, configurations, depth, judged, changes, seed, keep, **options):
        if min(queries, configurations, depth, judged, changes) < 1:
            raise CommandError(
                "--queries, --configurations, --depth, --judged and --changes must be positive"
            )
        self.rng = np.random.default_rng(seed)
        self.n_queries, self.n_configurations, self.depth, self.judged = (
            queries,
            configurations,
            depth,
            judged,
        )
        name = f"bench-{time.strftime('%Y%m%d-%H%M%S')}"
        workdir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
        self.pool = Pool.objects.create(name=name, description="scoring benchmark (throw-away)")
        figures: dict[str, str] = {}
        try:
            self._note(f"pool {name}; TREC files in {workdir}")
            peaks: dict[str, float] = {}

            def phase(name: str, step, *args) -> None:
                step(*args)
                peaks[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

            phase("write files", self._write_files, workdir)
            phase("load", self._load, figures)
            self.recompute, self.pytrec_seconds = {}, {}
            self._settle()
            phase("recompute", self._full_recompute, figures, "current")
            self._pytrec_eval(figures)
            phase("changed grades", self._changed_grades, changes, figures)
            phase("storage", self._storage_choice, figures)
            phase("recompute stale", self._full_recompute, figures, "stale")
            phase("recompute empty", self._full_recompute, figures, "empty")
            phase("measure set", self._measure_set, figures, max(10, changes // 5))
            for label, seconds in self.pytrec_seconds.items():
                figures[f"ratio full recompute / pytrec_eval {label}"] = (
                    ", ".join(
                        f"{value / seconds:.3f} (rows {case})" for case, value in self.recompute.items()
                    )
                    + " (target <= 0.25)"
                )
            figures["peak memory (this process)"] = (
                f"{max(peaks.values()):.0f} MiB (target <= 1024 MiB); peak after each step: "
                + ", ".join(f"{name} {value:.0f}" for name, value in peaks.items())
            )
        finally:
            if keep:
                self._note(f"kept pool {name} and {workdir}")
            else:
                self._note("deleting the benchmark pool")
                self._delete_pool()
                shutil.rmtree(workdir, ignore_errors=True)
        self.stdout.write(
            f"Scoring benchmark: {queries} queries x {configurations} configurations x depth {depth}, "
            f"{judged} judged documents per query; {os.cpu_count()} CPUs, load average "
            f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end"
        )
        width = max(len(key) for key in figures)
        for key, value in figures.items():
            self.stdout.write(f"  {key:<{width}}  {value}")

    def _note(self, text: str) -> None:
        self.stderr.write(f"[bench] {text}")

    # --- data ------------------------------------------------------------------------------------

    def _write_files(self, workdir: Path) -> None:
        """Queries, two raters' qrels and one run per configuration, as TREC files."""
        started = time.perf_counter()
        nq, judged, depth = self.n_queries, self.judged, self.depth
        candidates = judged + depth  # per query: `judged` graded documents, the rest never graded
        self.grades = self.rng.choice(5, size=(nq, judged), p=GRADE_WEIGHTS)
        qids = [f"Q{q}" for q in range(nq)]
        docs = [[f"D{q}_{j}" for j in range(candidates)] for q in range(nq)]
        (workdir / "queries.tsv").write_text("".join(f"{qid}\tbenchmark query {qid}\n" for qid in qids))
        first = workdir / f"{self.pool.name}-grades.qrels"
        first.write_text(
            "".join(
                f"{qids[q]} 0 {docs[q][j]} {self.grades[q, j]}\n" for q in range(nq) for j in range(judged)
            )
        )
        # A second rater on a fifth of the pairs, one grade off now and then: combined grades get fractional.
        second = workdir / f"{self.pool.name}-second.qrels"
        picked = self.rng.random((nq, judged)) < 0.2
        noise = self.rng.choice([-1, 0, 0, 0, 1], size=(nq, judged))
        other = np.clip(self.grades + noise, 0, 4)
        second.write_text(
            "".join(
                f"{qids[q]} 0 {docs[q][j]} {other[q, j]}\n"
                for q in range(nq)
                for j in np.flatnonzero(picked[q])
            )
        )
        run_paths = []
        gains = np.zeros((nq, candidates))
        gains[:, :judged] = self.grades
        for c in range(self.n_configurations):
            quality = 0.2 + 1.6 * c / max(1, self.n_configurations - 1)
            noisy = quality * gains + self.rng.gumbel(size=(nq, candidates))
            top = np.argsort(-noisy, axis=1)[:, :depth]
            path = workdir / f"config{c:03d}.run"
            with path.open("w") as handle:
                for q in range(nq):
                    row = docs[q]
                    handle.write(
                        "".join(
                            f"{qids[q]} Q0 {row[j]} {rank} {depth - rank + 1} config{c:03d}\n"
                            for rank, j in enumerate(top[q].tolist(), start=1)
                        )
                    )
            run_paths.append(path)
        self._note(f"TREC files written in {time.perf_counter() - started:.1f} s")
        self.qrels_paths, self.run_paths = [first, second], run_paths

    def _load(self, figures: dict) -> None:
        pool, qrels_paths, run_paths = self.pool, self.qrels_paths, self.run_paths
        with (qrels_paths[0].parent / "queries.tsv").open("rb") as handle:
            import_queries(pool, handle, name="queries.tsv")
        started = time.perf_counter()
        for path in qrels_paths:
            with path.open("rb") as handle:
                import_qrels(pool, handle, name=path.name)
        figures["import qrels"] = (
            f"{time.perf_counter() - started:.2f} s for {Judgment.objects.filter(pair__pool=pool).count()} "
            f"judgments in {len(qrels_paths)} files"
        )
        team, _ = Team.objects.get_or_create(name="bench")
        stored, scored = [], []
        for number, path in enumerate(run_paths):
            configuration = SearchConfiguration.objects.create(pool=pool, team=team, name=path.stem)
            started = time.perf_counter()
            with transaction.atomic():
                with path.open("rb") as handle:
                    import_run(configuration, handle, name=path.name)
                committing = time.perf_counter()
            done = time.perf_counter()  # leaving atomic() committed and ran the run's scoring
            stored.append(committing - started)
            scored.append(done - committing)
            if number % 10 == 9:
                self._note(f"{number + 1} runs imported")
        total = [a + b for a, b in zip(stored, scored, strict=True)]
        figures["import per run file"] = (
            f"median {statistics.median(total):.2f} s (parse + store {statistics.median(stored):.2f} s, "
            f"then scoring the run {statistics.median(scored):.2f} s), max {max(total):.2f} s, "
            f"{self.n_queries * self.depth} lines each"
        )

    # --- measurements ----------------------------------------------------------------------------

    def _settle(self) -> None:
        """VACUUM ANALYZE the freshly loaded tables (not timed), so that autovacuum catching up does not
        run during the measurements."""
        self._note("vacuum analyze of the loaded tables")
        with connection.cursor() as cursor:
            for table in ("judgments_pair", "judgments_judgment", "judgments_ranking", "scoring_cellscore"):
                cursor.execute(f"VACUUM ANALYZE {table}")

    def _full_recompute(self, figures: dict, case: str) -> None:
        """rescore_pool with every stored row current (what `score` usually finds: runs and grades
        were scored as they came), with every row stale (e.g. after a new combine rule: all of them
        are rewritten), or with no stored row at all (all inserted)."""
        mine = "s.run_id = r.id AND r.configuration_id = c.id AND c.pool_id = %s"
        prepare = {
            "current": None,
            "stale": "UPDATE scoring_cellscore s SET exp_ndcg_10 = -1"
            f" FROM judgments_run r, judgments_searchconfiguration c WHERE {mine}",
            "empty": "DELETE FROM scoring_cellscore s USING judgments_run r, judgments_searchconfiguration c"
            f" WHERE {mine}",
        }[case]
        if prepare:
            with connection.cursor() as cursor:
                cursor.execute(prepare, [self.pool.pk])
            summary = services.rescore_pool(self.pool)
            self.recompute[case] = summary.seconds
            note = ""
        else:  # nothing changes between repeats: three of them, the median counts
            summaries = sorted((services.rescore_pool(self.pool) for _ in range(3)), key=lambda s: s.seconds)
            summary = summaries[1]
            self.recompute[case] = summary.seconds
            note = (
                f"median of 3 after VACUUM ANALYZE ({', '.join(f'{s.seconds:.2f}' for s in summaries)} s): "
            )
        steps = ", ".join(f"{step} {seconds:.2f}" for step, seconds in summary.timings.items())
        figures[f"full recompute, rows {case}"] = (
            f"{note}{summary.seconds:.2f} s: {summary}; steps (s): {steps}"
        )

    def _pytrec_eval(self, figures: dict) -> None:
        """pytrec_eval on the TREC files, in a fresh child process each (its memory is its own): the
        measures as the brief names them, then cut where the stored scores are."""
        for label, measures in (("as specified", SPECIFIED_MEASURES), ("same cutoffs as ours", SAME_CUTOFFS)):
            context = multiprocessing.get_context("spawn")
            result = context.Queue()
            paths = (str(self.qrels_paths[0]), [str(p) for p in self.run_paths])
            child = context.Process(target=parse_and_evaluate, args=(*paths, measures, result))
            child.start()
            answer = result.get()
            child.join()
            if isinstance(answer, BaseException):
                raise CommandError(f"pytrec_eval failed: {answer!r}")
            seconds, evaluated, peak = answer
            figures[f"pytrec_eval parse + evaluate, {label}"] = (
                f"{seconds:.2f} s for {evaluated} (run, query) evaluations of {' '.join(measures)} "
                f"(child process, peak {peak / 1024:.0f} MiB)"
            )
            self.pytrec_seconds[label] = seconds

    def _changed_grades(self, changes: int, figures: dict) -> None:
        """record_judgment on random judgments, each its own transaction, as the grading page does; the
        receiver's work (the incremental rescore) is timed apart from the whole call."""
        rater = get_user_model().objects.get(username=file_rater_username(f"{self.pool.name}-grades.qrels"))
        judgments = list(
            Judgment.objects.filter(pair__pool=self.pool, rater=rater)
            .order_by("?")
            .select_related("pair__pool")[:changes]
        )
        rescores: list[float] = []

        def timed(sender, **kwargs):
            started = time.perf_counter()
            receivers.on_grades_changed(sender, **kwargs)
            rescores.append(time.perf_counter() - started)

        grades_changed.disconnect(dispatch_uid="scoring.grades_changed")
        grades_changed.connect(timed, dispatch_uid="bench.grades_changed")
        try:
            calls = []
            for judgment in judgments:
                started = time.perf_counter()
                judgment_services.record_judgment(judgment.pair, rater, grade=(judgment.grade + 1) % 5)
                calls.append(time.perf_counter() - started)
        finally:
            grades_changed.disconnect(dispatch_uid="bench.grades_changed")
            grades_changed.connect(receivers.on_grades_changed, dispatch_uid="scoring.grades_changed")

        def spread(values: list[float]) -> str:
            values = sorted(values)
            p95 = values[min(len(values) - 1, int(np.ceil(0.95 * len(values))) - 1)]
            return f"median {statistics.median(values) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"

        figures["one changed grade: scores updated"] = (
            f"{spread(rescores)} of {len(rescores)} ({self.n_configurations} runs x 1 query x 4 flavours; "
            "target <= 20 ms)"
        )
        figures["one changed grade: whole save"] = (
            f"{spread(calls)} (record_judgment + history + commit + the above)"
        )

    def _measure_set(self, figures: dict, changes: int) -> None:
        """The pool scored with MEASURE_SET: set_measures (every MeasureScore row written, in one
        transaction: no read-ahead) and rescore_pool with the rows current (median of 3), against
        pytrec_eval on the TREC files computing the set's trec_eval measures (a fresh child process)."""
        from scoring.measure_sets import set_measures
        from scoring.models import MeasureScore

        started = time.perf_counter()
        measures, summary = set_measures(self.pool, MEASURE_SET)
        written = time.perf_counter() - started
        rows = MeasureScore.objects.filter(run__configuration__pool=self.pool).count()
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE scoring_measurescore")
        current = sorted(services.rescore_pool(self.pool).seconds for _ in range(3))
        context = multiprocessing.get_context("spawn")
        result = context.Queue()
        paths = (str(self.qrels_paths[0]), [str(p) for p in self.run_paths])
        child = context.Process(target=evaluate_measure_set, args=(*paths, result))
        child.start()
        answer = result.get()
        child.join()
        if isinstance(answer, BaseException):
            raise CommandError(f"pytrec_eval failed: {answer!r}")
        seconds, evaluated, peak = answer
        trec = sum(len(group) for group in MEASURE_SET_TREC.values())
        figures["measure set"] = f"{len(measures)} measures: {' '.join(m.name for m in measures)}"
        groups = "; ".join(f"{key}: {' '.join(names)}" for key, names in MEASURE_SET_TREC.items())
        figures["pytrec_eval, the set's trec_eval measures"] = (
            f"{seconds:.2f} s for {evaluated} (run, query) evaluations of {trec} trec_eval measures "
            f"({groups}; child process, peak {peak / 1024:.0f} MiB)"
        )
        figures["full re-score with the set, measure rows written (set_measures)"] = (
            f"{written:.2f} s for {rows} rows: {written / seconds:.3f}x pytrec_eval (target <= 0.3x); {summary}"
        )
        figures["full re-score with the set, rows current"] = (
            f"median of 3 {current[1]:.2f} s ({', '.join(f'{c:.2f}' for c in current)}): "
            f"{current[1] / seconds:.3f}x pytrec_eval (target <= 0.3x)"
        )
        self._measure_storage(figures, len(measures))
        before = {k: v for k, v in figures.items() if k.startswith("one changed grade")}
        self._changed_grades(changes, figures)
        for key in [k for k in figures if k.startswith("one changed grade")]:
            figures[f"{key}, with the set"] = figures.pop(key)
        figures.update(before)

    def _measure_storage(self, figures: dict, n_measures: int) -> None:
        """The storage of measure values: one row per (run, query) with a float8[] (MeasureScore), against
        one row per (run, query, measure) (a throw-away unlogged table filled from the arrays): size, time
        to write, and time to read every run's means (one GROUP BY)."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_total_relation_size('scoring_measurescore'), count(*) FROM scoring_measurescore"
            )
            array_bytes, rows = cursor.fetchone()
            started = time.perf_counter()
            with transaction.atomic():
                cursor.execute(
                    "SELECT run_id, i, avg(v) FROM scoring_measurescore, unnest(values) WITH ORDINALITY u(v, i)"
                    " GROUP BY run_id, i"
                )
                cursor.fetchall()
            array_means = time.perf_counter() - started
            cursor.execute("DROP TABLE IF EXISTS bench_measure_narrow")
            cursor.execute(
                "CREATE UNLOGGED TABLE bench_measure_narrow (run_id bigint, query_id bigint, measure int2, value float8)"
            )
            started = time.perf_counter()
            cursor.execute(
                "INSERT INTO bench_measure_narrow SELECT run_id, query_id, i, v FROM scoring_measurescore,"
                " unnest(values) WITH ORDINALITY u(v, i)"
            )
            cursor.execute(
                "CREATE UNIQUE INDEX bench_measure_narrow_key ON bench_measure_narrow (run_id, query_id, measure)"
            )
            narrow_write = time.perf_counter() - started
            cursor.execute("ANALYZE bench_measure_narrow")
            cursor.execute(
                "SELECT pg_total_relation_size('bench_measure_narrow'), count(*) FROM bench_measure_narrow"
            )
            narrow_bytes, narrow_rows = cursor.fetchone()
            started = time.perf_counter()
            cursor.execute(
                "SELECT run_id, measure, avg(value) FROM bench_measure_narrow GROUP BY run_id, measure"
            )
            cursor.fetchall()
            narrow_means = time.perf_counter() - started
            cursor.execute("DROP TABLE bench_measure_narrow")
        figures["measure storage: (run, query, float8[]) rows"] = (
            f"{rows} rows, {array_bytes / 2**20:.0f} MiB with index; every run's means by SQL {array_means:.2f} s"
        )
        figures["measure storage: one row per (run, query, measure)"] = (
            f"{narrow_rows} rows, {narrow_bytes / 2**20:.0f} MiB with index ({narrow_bytes / max(array_bytes, 1):.1f}x); "
            f"written (INSERT ... SELECT + index, no COPY from Python) {narrow_write:.2f} s; means {narrow_means:.2f} s"
        )

    def _storage_choice(self, figures: dict) -> None:
        """Every ranked entry of the pool read into numpy: stored as one int8[] per (run, query), as
        judgments_ranking does, or as one row per entry (an unlogged copy made here, not timed), read
        either row by row or grouped back into arrays by the server."""
        run_ids = list(
            SearchConfiguration.objects.filter(pool=self.pool)
            .values_list("runs__id", flat=True)
            .order_by("runs__id")
        )
        table = f"bench_entries_{self.pool.pk}"
        with connection.cursor() as cursor:
            batches = cells.query_batches(cursor, run_ids, None)
            started = time.perf_counter()
            entries = 0
            for batch in batches:
                if batch.rankings:
                    _, _, docs = cells.read_rankings(cursor, run_ids, batch, None)
                    entries += int((docs >= 0).sum())
                    del docs
            arrays = time.perf_counter() - started
            cursor.execute(
                "SELECT sum(pg_column_size(r.*)) FROM judgments_ranking r WHERE r.run_id = ANY(%s)", [run_ids]
            )
            array_bytes = cursor.fetchone()[0]
            self._note("copying the rankings to one row per entry")
            cursor.execute(
                f"CREATE UNLOGGED TABLE {table} (run_id bigint, query_id bigint, rank integer, doc_id bigint)"
            )
            try:
                cursor.execute(
                    f"INSERT INTO {table} SELECT r.run_id, r.query_id, e.rank, e.doc_id FROM judgments_ranking r,"
                    " unnest(r.doc_ids) WITH ORDINALITY AS e(doc_id, rank) WHERE r.run_id = ANY(%s)",
                    [run_ids],
                )
                cursor.execute(f"CREATE INDEX ON {table} (query_id, run_id, rank)")
                cursor.execute(f"ANALYZE {table}")
                cursor.execute(f"SELECT pg_table_size('{table}'), pg_indexes_size('{table}')")
                entry_bytes, entry_index_bytes = cursor.fetchone()

                started = time.perf_counter()
                rows = 0
                dtype = row_dtype(("run", ">i8"), ("query", ">i8"), ("rank", ">i4"), ("doc", ">i8"))
                for block in stream_rows(
                    cursor, f"SELECT run_id, query_id, rank, doc_id FROM {table}", None, dtype
                ):
                    rows += len(block)
                    block["doc"].astype(np.int64)
                per_row = time.perf_counter() - started

                started = time.perf_counter()
                for batch in batches:
                    if not batch.rankings:
                        continue
                    where, params = batch.where(run_ids)
                    read_columns(
                        cursor,
                        "SELECT array_agg(run_id), array_agg(query_id),"
                        " array_agg(docs || array_fill(-1::bigint, ARRAY[%s - cardinality(docs)])) FROM"
                        f" (SELECT run_id, query_id, array_agg(doc_id ORDER BY rank) AS docs FROM {table}"
                        f"  WHERE {where} GROUP BY run_id, query_id) grouped",
                        [batch.width, *params],
                        [">i8", ">i8", ">i8"],
                    )
                grouped = time.perf_counter() - started
            finally:
                cursor.execute(f"DROP TABLE IF EXISTS {table}")
        mib = 1024 * 1024
        figures["storage: (run, query, int8[]) rows"] = (
            f"{arrays:.2f} s to read {entries} entries into numpy ({array_bytes / mib:.0f} MiB of rows)"
        )
        figures["storage: one row per entry"] = (
            f"{per_row:.2f} s row by row ({per_row / arrays:.1f}x), {grouped:.2f} s grouped into arrays by the "
            f"server ({grouped / arrays:.1f}x); {rows} rows, {entry_bytes / mib:.0f} MiB + "
            f"{entry_index_bytes / mib:.0f} MiB index"
        )

    # --- cleanup -----------------------------------------------------------------------------------

    def _delete_pool(self) -> None:
        """Delete the benchmark pool in bulk SQL (the ORM would collect millions of rows in Python)."""
        raters = list(
            Judgment.objects.filter(pair__pool_id=self.pool.pk).values_list("rater_id", flat=True).distinct()
        )
        judgment_services.delete_pool_in_bulk(self.pool)
        get_user_model().objects.filter(pk__in=raters, username__startswith="qrels:bench-").delete()
        Team.objects.filter(name="bench", configurations__isnull=True).delete()
