"""The realistic pool of `bench_exchange`: what a team's database holds after a season, built fast.

5,000 queries Q0.. with 300 candidate documents each (D<q>_<j>: 1,500,000 documents); the first 200 of
each query graded by one rater (1,000,000 judgments, with their history) and a fifth of them by a second
rater as well (1,200,000 judgments in all, combined by the mean); 50 configurations with one run of 100
documents per query each (25,000,000 ranked entries), better configurations ranking the relevant
documents higher; every run scored (scoring.services.rescore_pool); then VACUUM ANALYZE. The same shape
as `bench_scoring`'s pool, but written with set-based SQL and binary COPY instead of through the imports:
about a minute instead of several. `write_run` writes one more configuration's run as a TREC file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from judgments import pgcopy
from judgments.exchange.imports import fastrun
from judgments.models import Pool, Run, SearchConfiguration, Team
from judgments.pgcopy.rows import empty_rows, read_columns, write_rows

QUERIES, CANDIDATES, JUDGED, DEPTH, CONFIGURATIONS = 5000, 300, 200, 100, 50
GRADE_WEIGHTS = np.array([0.5, 0.25, 0.13, 0.08, 0.04])
TEAM, RATERS = "bench-exchange", ("bench-exchange-rater", "bench-exchange-rater2")
TABLES = (
    "judgments_query",
    "judgments_document",
    "judgments_pair",
    "judgments_judgment",
    "judgments_judgmentchange",
    "judgments_ranking",
    "judgments_run",
    "scoring_cellscore",
)


@dataclass
class Realistic:
    pool: Pool
    doc_keys: np.ndarray  # (QUERIES, CANDIDATES) document pks
    query_keys: np.ndarray  # (QUERIES,) query pks
    gains: np.ndarray  # (QUERIES, CANDIDATES) first rater's grade, 0 for unjudged candidates

    @property
    def name(self) -> str:
        return self.pool.name


def build(name: str, say, seed: int = 20261125) -> Realistic:
    """Create the realistic pool `name` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    pool = Pool.objects.create(name=name, description="bench_exchange's realistic pool (throw-away)")
    team, _ = Team.objects.get_or_create(name=TEAM)
    User = get_user_model()
    raters = [User.objects.get_or_create(username=u)[0] for u in RATERS]
    grades = rng.choice(5, size=(QUERIES, JUDGED), p=GRADE_WEIGHTS / GRADE_WEIGHTS.sum()).astype(np.int16)
    second = rng.random((QUERIES, JUDGED)) < 0.2
    other = np.clip(grades + rng.choice([-1, 0, 0, 0, 1], size=grades.shape), 0, 4).astype(np.int16)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO judgments_query (pool_id, external_id, text, information_need)"
            " SELECT %s, 'Q' || i, 'query ' || i, '' FROM generate_series(0, %s) i ORDER BY i",
            [pool.pk, QUERIES - 1],
        )
        cursor.execute(
            "INSERT INTO judgments_document (pool_id, external_id, title, body, url, extra)"
            " SELECT %s, 'D' || (i / %s) || '_' || (i %% %s), '', '', '', '{}' FROM generate_series(0, %s) i"
            " ORDER BY i",
            [pool.pk, CANDIDATES, CANDIDATES, QUERIES * CANDIDATES - 1],
        )
        (query_keys,) = read_columns(
            cursor,
            "SELECT array_agg(id ORDER BY substr(external_id, 2)::int) FROM judgments_query WHERE pool_id = %s",
            [pool.pk],
            [">i8"],
        )
        (doc_keys,) = read_columns(
            cursor,
            "SELECT array_agg(id ORDER BY split_part(substr(external_id, 2), '_', 1)::int,"
            " split_part(external_id, '_', 2)::int) FROM judgments_document WHERE pool_id = %s",
            [pool.pk],
            [">i8"],
        )
        doc_keys = doc_keys.reshape(QUERIES, CANDIDATES)
        # Pairs and both raters' grades through one temporary table; the history trigger logs them.
        cursor.execute(
            "CREATE TEMP TABLE bench_grades (query_id bigint, document_id bigint, grade smallint,"
            " second smallint) ON COMMIT DROP"
        )
        rows = empty_rows((("q", ">i8"), ("d", ">i8"), ("g", ">i2"), ("s", ">i2")), QUERIES * JUDGED)
        rows["q"] = np.repeat(query_keys, JUDGED)
        rows["d"] = doc_keys[:, :JUDGED].ravel()
        rows["g"] = grades.ravel()
        rows["s"] = np.where(second, other, -1).ravel()
        write_rows(cursor, "bench_grades", ["query_id", "document_id", "grade", "second"], rows)
        cursor.execute(
            "INSERT INTO judgments_pair (pool_id, query_id, document_id, priority)"
            " SELECT %s, query_id, document_id, 0 FROM bench_grades ORDER BY query_id, document_id",
            [pool.pk],
        )
        for rater, column, where in ((raters[0], "grade", ""), (raters[1], "second", "WHERE g.second >= 0")):
            cursor.execute("SELECT set_config('judgments.actor', %s, true)", [str(rater.pk)])
            cursor.execute(
                "INSERT INTO judgments_judgment (pair_id, rater_id, grade, cant_judge, cant_judge_reason, note,"
                f" created_at, updated_at) SELECT p.id, %s, g.{column}, false, '', '', now(), now()"
                " FROM bench_grades g JOIN judgments_pair p ON p.query_id = g.query_id"
                f" AND p.document_id = g.document_id {where} ORDER BY p.id",
                [rater.pk],
            )
    say(
        f"  realistic pool {name}: queries, documents and 1.2M judgments in {time.perf_counter() - started:.0f} s"
    )
    realistic = Realistic(pool, doc_keys, query_keys, np.pad(grades, ((0, 0), (0, CANDIDATES - JUDGED))))
    for c in range(CONFIGURATIONS):
        configuration = SearchConfiguration.objects.create(pool=pool, team=team, name=f"config{c:03d}")
        run = Run.objects.create(configuration=configuration, source=Run.Source.FILE, tag=f"config{c:03d}")
        top = ranked(realistic, rng, c)
        starts = np.arange(QUERIES) * DEPTH
        body = fastrun.ranking_rows(
            run.pk, query_keys, starts, doc_keys[np.arange(QUERIES)[:, None], top].ravel()
        )
        with connection.cursor() as cursor:
            with pgcopy.copy_in(cursor, "judgments_ranking", ["run_id", "query_id", "doc_ids"]) as copy:
                copy.write(body)
    say(f"  50 runs stored ({time.perf_counter() - started:.0f} s)")
    from scoring import services

    summary = services.rescore_pool(pool)
    say(f"  scored: {summary}")
    settle()
    say(f"  realistic pool ready in {time.perf_counter() - started:.0f} s")
    return realistic


def ranked(realistic: Realistic, rng, c: int) -> np.ndarray:
    """(QUERIES, DEPTH) candidate positions of configuration c's rankings: better c, better rankings."""
    quality = 0.2 + 1.6 * c / (CONFIGURATIONS - 1)
    noisy = quality * realistic.gains + rng.gumbel(size=realistic.gains.shape)
    return np.argsort(-noisy, axis=1)[:, :DEPTH]


def load(name: str) -> Realistic | None:
    """A realistic pool kept by an earlier run (--keep), with what `write_run` needs."""
    pool = Pool.objects.filter(name=name).first()
    if pool is None:
        return None
    with connection.cursor() as cursor:
        (query_keys,) = read_columns(
            cursor,
            "SELECT array_agg(id ORDER BY substr(external_id, 2)::int) FROM judgments_query WHERE pool_id = %s",
            [pool.pk],
            [">i8"],
        )
        doc_keys, gains = read_columns(
            cursor,
            "SELECT array_agg(d.id ORDER BY split_part(substr(d.external_id, 2), '_', 1)::int,"
            " split_part(d.external_id, '_', 2)::int), array_agg(COALESCE(j.grade, 0)::int2"
            " ORDER BY split_part(substr(d.external_id, 2), '_', 1)::int, split_part(d.external_id, '_', 2)::int)"
            " FROM judgments_document d LEFT JOIN judgments_pair p ON p.document_id = d.id"
            " LEFT JOIN judgments_judgment j ON j.pair_id = p.id AND j.rater_id ="
            " (SELECT id FROM auth_user WHERE username = %s) WHERE d.pool_id = %s",
            [RATERS[0], pool.pk],
            [">i8", ">i2"],
        )
    shape = (QUERIES, CANDIDATES)
    if len(query_keys) != QUERIES or len(doc_keys) != QUERIES * CANDIDATES:
        return None
    return Realistic(pool, doc_keys.reshape(shape), query_keys, gains.reshape(shape))


def write_run(realistic: Realistic, path, seed: int) -> int:
    """One more configuration's run (quality mid-field) as a TREC run file; returns its lines."""
    rng = np.random.default_rng(seed)
    top = ranked(realistic, rng, CONFIGURATIONS // 2)
    with open(path, "w") as out:
        for q in range(QUERIES):
            out.write(
                "".join(
                    f"Q{q} Q0 D{q}_{j} {rank} {DEPTH - rank + 1}.{q % 1000:03d} new\n"
                    for rank, j in enumerate(top[q].tolist(), start=1)
                )
            )
    return QUERIES * DEPTH


def write_qrels(path, seed: int) -> int:
    """A qrels file of QUERIES x JUDGED judgments (the same ids as the realistic pool's, for a new pool)."""
    rng = np.random.default_rng(seed)
    grades = rng.choice(5, size=(QUERIES, JUDGED), p=GRADE_WEIGHTS / GRADE_WEIGHTS.sum())
    with open(path, "w") as out:
        for q in range(QUERIES):
            out.write("".join(f"Q{q} 0 D{q}_{j} {g}\n" for j, g in enumerate(grades[q].tolist())))
    return QUERIES * JUDGED


def settle() -> None:
    """VACUUM ANALYZE the big tables (outside a transaction), as a database that has settled would be."""
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")


def remember_grades(realistic: Realistic) -> None:
    """The pool's combined grades cached as a full recompute leaves them (scoring.models.PoolGrades)."""
    from scoring import grades

    pool = realistic.pool
    with transaction.atomic(), connection.cursor() as cursor:
        mark = grades.history_mark(cursor)
        combined = grades.read_grades(cursor, pool.pk, pool.combine_rule, None, pool.grade_source)
        grades.remember_grades(cursor, pool.pk, pool.combine_rule, pool.grade_source, combined, mark=mark)


def drop_runs_after(realistic: Realistic, keep: int) -> None:
    """Delete the configurations the benchmark added (all but the first `keep`), with their runs and scores."""
    extra = SearchConfiguration.objects.filter(pool=realistic.pool).order_by("id")[keep:]
    ids = list(extra.values_list("id", flat=True))
    if ids:
        with transaction.atomic(), connection.cursor() as cursor:
            runs = "SELECT id FROM judgments_run WHERE configuration_id = ANY(%s)"
            cursor.execute(f"DELETE FROM judgments_ranking WHERE run_id IN ({runs})", [ids])
            cursor.execute("DELETE FROM judgments_run WHERE configuration_id = ANY(%s)", [ids])
            cursor.execute("DELETE FROM judgments_searchconfiguration WHERE id = ANY(%s)", [ids])
