"""Rater quality (judgments.rating.quality): the numpy computation equals the per-grade Python loop it
replaced; the stored snapshot equals the direct computation after each kind of write that changes it;
a big pool's page shows the snapshot with its time and never computes it."""

import math
import random
import statistics
from collections import defaultdict
from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse

from judgments import gold, services, snapshots
from judgments.judges.services import create_or_update_judge
from judgments.models import Document, Judgment, Pair, Query, Snapshot
from judgments.rating import quality
from judgments.rating.agreement import cohen_kappa_quadratic
from tests.conftest import login
from tests.scoring.test_assessors import import_rater_csv


@pytest.fixture
def rated(pool, rater, other_rater, site_admin, django_user_model):
    """Three raters and a judge over 6 x 8 pairs (overlapping, with can't judge, a distractor grade,
    serving times, some fast), 5 gold pairs."""
    rng = random.Random(3)
    pool.distractors_enabled = True
    pool.save()
    third = django_user_model.objects.create_user("tess_rater", password="x")
    pool.members.add(third)
    judge = create_or_update_judge(pool, "llm", base_url="http://127.0.0.1:9/v1", model="gpt-x")[0]
    docs = [Document.objects.create(pool=pool, external_id=f"e{d}", title="T", body="b") for d in range(8)]
    queries = [Query.objects.create(pool=pool, external_id=f"s{q}", text="q") for q in range(6)]
    rows = []
    for query in queries:
        for doc in docs:
            pair = Pair.objects.create(pool=pool, query=query, document=doc)
            for user in (rater, other_rater, third, judge.user):
                if rng.random() < 0.7:
                    cant = rng.random() < 0.05
                    rows.append(
                        Judgment(
                            pair=pair,
                            rater=user,
                            grade=None if cant else rng.choice((-1, 0, 1, 2, 3, 4)),
                            cant_judge=cant,
                            cant_judge_reason="no text" if cant else "",
                        )
                    )
    Judgment.objects.bulk_create(rows)
    for judgment in Judgment.objects.filter(pair__pool=pool, rater__in=(rater, third)):
        if rng.random() < 0.8:
            judgment.served_at = judgment.created_at - timedelta(seconds=rng.choice((0.5, 1.5, 3, 9, 30)))
            judgment.save(update_fields=["served_at"])
    gold.mark_gold(pool, [(q.external_id, "e0", 2) for q in queries[:5]], site_admin)
    return judge


def loop_rater_quality(pool) -> list[dict]:
    """The computation rater_quality did before it was numpy (one Python loop per grade)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT j.rater_id, u.username, j.pair_id, j.grade, p.gold_grade,
                      EXTRACT(EPOCH FROM (j.created_at - j.served_at))
               FROM judgments_judgment j JOIN judgments_pair p ON p.id = j.pair_id
               JOIN auth_user u ON u.id = j.rater_id
               WHERE p.pool_id = %s AND NOT j.cant_judge
                 AND NOT EXISTS (SELECT 1 FROM judgments_modeljudge mj WHERE mj.user_id = j.rater_id)""",
            [pool.pk],
        )
        rows = cursor.fetchall()
    names, gold_answers, times = {}, defaultdict(list), defaultdict(list)
    by_pair = defaultdict(dict)
    for rater, username, pair, grade, gold_grade, seconds in rows:
        names[rater] = username
        if gold_grade is not None:
            gold_answers[rater].append((grade, gold_grade))
        else:
            by_pair[pair][rater] = grade
        if seconds is not None:
            times[rater].append(float(seconds))
    couples = defaultdict(list)
    for grades in by_pair.values():
        for rater, grade in grades.items():
            couples[rater].extend(abs(grade - other) for r, other in grades.items() if r != rater)

    def share(hits, n):
        return hits / n if n else None

    result = []
    for rater, username in sorted(names.items(), key=lambda item: item[1]):
        answers, spent, diffs = gold_answers[rater], times[rater], couples[rater]
        kappa = (
            cohen_kappa_quadratic([a for a, _ in answers], [g for _, g in answers]) if answers else math.nan
        )
        result.append(
            {
                "rater_id": rater,
                "username": username,
                "gold_n": len(answers),
                "gold_exact": share(sum(a == g for a, g in answers), len(answers)),
                "gold_within_one": share(sum(abs(a - g) <= 1 for a, g in answers), len(answers)),
                "gold_kappa": None if math.isnan(kappa) else kappa,
                "agreement_n": len(diffs),
                "agreement_exact": share(sum(d == 0 for d in diffs), len(diffs)),
                "agreement_within_one": share(sum(d <= 1 for d in diffs), len(diffs)),
                "timed_n": len(spent),
                "median_seconds": statistics.median(spent) if spent else None,
                "fast_share": share(sum(s < quality.FAST for s in spent), len(spent)),
            }
        )
    return result


def assert_same(rows: list[dict], expected: list[dict]) -> None:
    assert [r["rater_id"] for r in rows] == [r["rater_id"] for r in expected]
    for row, want in zip(rows, expected, strict=True):
        assert row.keys() == want.keys()
        for key, value in want.items():
            assert row[key] == (value if value is None else pytest.approx(value, abs=1e-12)), key


def test_numpy_equals_the_loop(rated, pool, rater):
    rows = quality.rater_quality(pool)
    assert len(rows) == 3 and rated.user.pk not in [r["rater_id"] for r in rows]
    mine = next(r for r in rows if r["rater_id"] == rater.pk)
    assert mine["gold_n"] and mine["agreement_n"] and mine["timed_n"] and mine["fast_share"]
    assert_same(rows, loop_rater_quality(pool))


def test_no_grades_no_rows(pool):
    assert quality.rater_quality(pool) == [] == loop_rater_quality(pool)


def stored_rows(pool) -> list[dict]:
    return quality.rows_from(Snapshot.objects.get(pool=pool, kind=quality.KIND, key="").value)


def test_the_snapshot_equals_the_direct_computation_after_each_write(
    rated, pool, rater, other_rater, site_admin, tmp_path
):
    snapshots.refresh(pool)
    assert_same(stored_rows(pool), loop_rater_quality(pool))
    pair = Pair.objects.filter(pool=pool, gold_grade__isnull=True, judgments__rater=rater).first()
    fresh = Pair.objects.filter(pool=pool).exclude(judgments__rater=other_rater).first()
    writes = [
        lambda: services.record_judgment(pair, rater, grade=4),  # a regrade
        lambda: services.record_judgment(fresh, other_rater, grade=1),  # a new grade
        lambda: services.record_judgment(pair, rater, cant_judge=True, reason="no text"),
        lambda: gold.mark_gold(pool, [(pair.query.external_id, pair.document.external_id, 1)], site_admin),
        lambda: import_rater_csv(tmp_path, pool, other_rater, ["s1,e1,0", "s1,e2,4", "s2,e3,1"]),
        lambda: gold.clear_gold(pool, [(pair.query.external_id, pair.document.external_id)]),
    ]
    for write in writes:
        write()
        assert not snapshots.refresh(pool).skipped
        assert_same(stored_rows(pool), loop_rater_quality(pool))


def test_a_big_pools_page_reads_the_snapshot(client, rated, pool, site_admin, monkeypatch):
    url = reverse("rating:rater-quality", args=[pool.name])
    login(client, site_admin)
    inline = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "tess_rater" in inline and "Figures as of" not in inline
    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    monkeypatch.setattr(quality, "rater_value", lambda pool, key="": pytest.fail("computed inline"))
    first = client.get(url).content.decode()
    assert "being computed for the first time" in first and "tess_rater" not in first
    assert "No rater has graded" not in first
    monkeypatch.undo()
    snapshots.refresh(pool)
    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    monkeypatch.setattr(quality, "rater_value", lambda pool, key="": pytest.fail("computed inline"))
    page = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "Figures as of" in page
    assert page[page.index("<table") :] == inline[inline.index("<table") :]
