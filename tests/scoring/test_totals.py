"""Stored per-run totals (scoring.totals): after every kind of write that changes score rows, the means
read from them equal a direct computation over the rows, in every flavour and for a pool's own measure
set; `rebuild` recomputes the same; the migration's frozen column list is today's."""
# ruff: noqa: F811 (the busy pool and its raters are test_incremental's fixtures)

import importlib
import math

import numpy as np
import pytest
from django.db import connection

from judgments import services as judgment_services
from judgments.models import Judgment, Query, Run
from scoring import measure_sets, totals
from scoring.flavours import FLAVOURS
from scoring.leaderboard import ALL_METRICS, run_means
from scoring.measure_reads import run_means as measure_means
from scoring.measure_reads import run_values
from scoring.models import JUDGED_FIELDS, MEAN_FIELDS, MeasureTotals, QueryScore, RunTotals
from scoring.services import rescore_pool
from tests.scoring.test_incremental import busy_pool, judge, raters  # noqa: F401

SET = ["nDCG@10", "P(rel=2)@5", "RR", "AP", "Judged@3", "RBP(p=0.9,rel=2)"]


def direct_means(pool, flavour: str) -> dict[int, dict]:
    """Every run's means straight from its rows (QueryScore, the flavour's view), as AVG computes them."""
    out = {}
    runs = Run.objects.filter(configuration__pool=pool).values_list("pk", flat=True)
    for run_id in runs:
        rows = list(
            QueryScore.objects.filter(run_id=run_id, flavor=flavour).values(
                "has_ranking", "has_relevant", *MEAN_FIELDS.values(), *JUDGED_FIELDS.values()
            )
        )
        if not rows:
            continue
        ranked = [r for r in rows if r["has_ranking"]]
        means = {m: float(np.mean([r[c] for r in rows])) for m, c in MEAN_FIELDS.items()}
        for m, c in JUDGED_FIELDS.items():
            means[m] = sum(r[c] for r in rows) / len(ranked) if ranked else None
        out[run_id] = {
            "n": len(rows),
            "unranked": len(rows) - len(ranked),
            "no_relevant": sum(1 for r in rows if not r["has_relevant"]),
            "means": means,
        }
    return out


def close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == pytest.approx(b, rel=1e-12, abs=1e-12)


def assert_totals_match(pool) -> None:
    """run_means (from the totals) equals the direct means in every flavour; no totals without rows."""
    runs = list(Run.objects.filter(configuration__pool=pool).values_list("pk", flat=True))
    for flavour in FLAVOURS:
        direct = direct_means(pool, flavour)
        stored = run_means(runs, flavour, ALL_METRICS)
        assert set(stored) == set(direct), flavour
        for run_id, want in direct.items():
            got = stored[run_id]
            assert (got.n_queries, got.n_unranked, got.n_no_relevant) == (
                want["n"],
                want["unranked"],
                want["no_relevant"],
            )
            for metric, value in want["means"].items():
                assert close(got.means[metric], value), (flavour, run_id, metric, got.means[metric], value)
    assert set(RunTotals.objects.values_list("run_id", flat=True)) == set(
        QueryScore.objects.values_list("run_id", flat=True).distinct()
    )


def assert_measure_totals_match(pool) -> None:
    measures = measure_sets.measure_set(pool)
    runs = list(Run.objects.filter(configuration__pool=pool).values_list("pk", flat=True))
    stored = measure_means(runs, measures)
    values = run_values(runs, measures)
    assert set(stored) == set(values)
    for run_id, rows in values.items():
        got = stored[run_id]
        assert (got.n_queries, got.n_unranked) == (len(rows.query), int((~rows.has_ranking).sum()))
        for name, value in zip(got.means, rows.values.mean(axis=0), strict=True):
            assert close(got.means[name], float(value)), (run_id, name)
    assert set(MeasureTotals.objects.values_list("run_id", flat=True)) == set(values)


def test_a_full_score_stores_totals_equal_to_the_rows(busy_pool):
    assert RunTotals.objects.exists()
    assert_totals_match(busy_pool)


def test_grades_changed_regraded_and_removed(busy_pool, raters, django_capture_on_commit_callbacks):
    judgment = Judgment.objects.filter(pair__query__external_id="q2", rater=raters[0]).order_by("pk").first()
    with django_capture_on_commit_callbacks(execute=True):  # a regrade: the incremental path
        judgment_services.record_judgment(judgment.pair, raters[0], grade=(judgment.grade + 2) % 5)
    assert_totals_match(busy_pool)
    with django_capture_on_commit_callbacks(execute=True):  # a first grade of a query: its rows appear
        judge(busy_pool, raters[0], "q6", "d1", 3)
    assert_totals_match(busy_pool)
    with django_capture_on_commit_callbacks(execute=True):  # every grade of q6 gone: its rows go
        Judgment.objects.filter(pair__query__external_id="q6").delete()
        judgment_services.notify_grades(busy_pool, list(busy_pool.pairs.values_list("pk", flat=True)))
    assert_totals_match(busy_pool)


def test_runs_uploaded_and_deleted(busy_pool, configuration, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = judgment_services.record_run(configuration, {"q1": ["d1", "d2"], "q3": ["d3"]}, source="api")
    assert RunTotals.objects.filter(run=run).exists()
    assert_totals_match(busy_pool)
    run.delete()  # Django's CASCADE deletes its rows
    assert not RunTotals.objects.filter(run_id=run.pk).exists()
    assert_totals_match(busy_pool)
    other = Run.objects.filter(configuration__pool=busy_pool).order_by("pk").first()
    with connection.cursor() as cursor:  # deleted in SQL: migration 0002's trigger deletes its rows
        cursor.execute("DELETE FROM judgments_ranking WHERE run_id = %s", [other.pk])
        cursor.execute("DELETE FROM judgments_run WHERE id = %s", [other.pk])
    assert not RunTotals.objects.filter(run_id=other.pk).exists()
    assert_totals_match(busy_pool)


def test_a_query_deleted(busy_pool):
    Query.objects.get(pool=busy_pool, external_id="q2").delete()
    assert_totals_match(busy_pool)


def test_a_nan_row_makes_the_mean_nan_until_it_is_rescored(busy_pool):
    with connection.cursor() as cursor:  # a row stored before UDCG existed (migration 0003)
        cursor.execute(
            "UPDATE scoring_cellscore SET udcg_10 = 'NaN' WHERE id = (SELECT min(id) FROM scoring_cellscore)"
        )
    assert_totals_match(busy_pool)
    assert any(
        math.isnan(m.means["udcg@10"])
        for m in run_means(RunTotals.objects.values_list("run_id", flat=True), "exp").values()
    )
    rescore_pool(busy_pool)
    assert_totals_match(busy_pool)
    assert not any(
        math.isnan(m.means["udcg@10"])
        for m in run_means(RunTotals.objects.values_list("run_id", flat=True), "exp").values()
    )


def test_measure_set_set_regraded_changed_and_reset(busy_pool, raters, django_capture_on_commit_callbacks):
    measure_sets.set_measures(busy_pool, SET)
    assert MeasureTotals.objects.exists()
    assert_measure_totals_match(busy_pool)
    judgment = Judgment.objects.filter(pair__query__external_id="q1", rater=raters[0]).order_by("pk").first()
    with django_capture_on_commit_callbacks(execute=True):
        judgment_services.record_judgment(judgment.pair, raters[0], grade=(judgment.grade + 1) % 5)
    assert_measure_totals_match(busy_pool)
    measure_sets.set_measures(busy_pool, ["nDCG@5", "Bpref"])  # another width
    assert_measure_totals_match(busy_pool)
    Run.objects.filter(configuration__pool=busy_pool).order_by("pk").first().delete()
    assert_measure_totals_match(busy_pool)
    measure_sets.reset_measures(busy_pool)
    assert not MeasureTotals.objects.exists()
    assert_totals_match(busy_pool)


def test_rebuild_recomputes_the_same_totals(busy_pool):
    measure_sets.set_measures(busy_pool, SET)
    before = {r.run_id: (r.n, r.sums, r.nans) for r in RunTotals.objects.all()}
    measures_before = {r.run_id: (r.n, r.sums) for r in MeasureTotals.objects.all()}
    RunTotals.objects.update(n=1, sums=[0.0] * len(totals.CELL_COLUMNS))  # damaged
    totals.rebuild()
    after = {r.run_id: (r.n, r.sums, r.nans) for r in RunTotals.objects.all()}
    assert after.keys() == before.keys()
    for run_id, (n, sums, nans) in before.items():
        assert after[run_id][0] == n and after[run_id][2] == nans
        assert after[run_id][1] == pytest.approx(sums, rel=1e-12, abs=1e-12)
    assert {r.run_id: r.n for r in MeasureTotals.objects.all()} == {
        k: v[0] for k, v in measures_before.items()
    }
    one = next(iter(before))
    totals.rebuild([one])
    assert_totals_match(busy_pool)
    assert_measure_totals_match(busy_pool)


def test_the_migration_sums_todays_columns():
    migration = importlib.import_module("scoring.migrations.0008_boards_run_totals")
    assert tuple(migration.COLUMNS) == totals.CELL_COLUMNS
