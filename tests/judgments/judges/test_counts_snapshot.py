"""The judge pages' counts are the "judge" snapshot (judgments.snapshots): equal to a direct count after
the judge grades, can't judge and a human grades; a big pool's pages show them as of their time."""

import pytest
from django.urls import reverse

from judgments import services as judgment_services
from judgments import snapshots
from judgments.judges import services
from judgments.judges.services import create_or_update_judge
from judgments.models import Judgment, Pair, Snapshot, SnapshotDue
from tests.conftest import login
from tests.judgments.judges.pools import make_pool


def direct(judge) -> dict:
    mine = Judgment.objects.filter(rater=judge.user, pair__pool=judge.pool)
    return {
        "graded": mine.filter(cant_judge=False).count(),
        "cant": mine.filter(cant_judge=True).count(),
        "waiting": {s.replace("-", "_"): len(services.select_pairs(judge, s)) for s in services.SELECTIONS},
    }


def stored(judge) -> dict:
    return Snapshot.objects.get(pool=judge.pool, kind="judge", key=str(judge.pk)).value


@pytest.fixture
def judge(db):
    pool = make_pool(queries=3, documents=4)
    return create_or_update_judge(pool, "gpt-judge", base_url="http://127.0.0.1:9/v1", model="m")[0]


def test_the_stored_counts_equal_a_direct_count_after_each_write(judge, rater):
    pool = judge.pool
    pool.members.add(rater)
    snapshots.refresh(pool)
    assert stored(judge) == direct(judge)
    pairs = list(Pair.objects.filter(pool=pool).order_by("pk"))
    writes = [
        lambda: judgment_services.record_judgment(pairs[0], judge.user, grade=3),
        lambda: judgment_services.record_judgment(pairs[1], judge.user, cant_judge=True, reason="empty"),
        lambda: judgment_services.record_judgment(pairs[2], rater, grade=1),  # a human: fewer left queued
        lambda: judgment_services.record_judgment(pairs[1], judge.user, grade=0),  # can't judge -> a grade
    ]
    for write in writes:
        write()
        assert SnapshotDue.objects.filter(pool=pool).exists()
        snapshots.refresh(pool)
        assert stored(judge) == direct(judge)
    assert stored(judge)["graded"] == 2 and stored(judge)["cant"] == 0


def test_a_big_pools_judge_pages_show_the_stored_counts(client, judge, site_admin, monkeypatch):
    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    judgment_services.record_judgment(Pair.objects.filter(pool=judge.pool).first(), judge.user, grade=2)
    login(client, site_admin)
    detail = reverse("judges:detail", args=[judge.pool.name, judge.user.username])
    listing = reverse("judges:list", args=[judge.pool.name])
    assert "being computed for the first time" in client.get(detail).content.decode()
    snapshots.refresh(judge.pool)
    page = client.get(detail).content.decode()
    counts = direct(judge)
    assert "Figures as of" in page and f'<span class="n">{counts["graded"]}</span> grades given' in page
    assert f'<span class="n">{counts["waiting"]["queued"]}</span> queued pairs' in page
    assert "Figures as of" in client.get(listing).content.decode()


def test_the_judges_list_runs_as_many_statements_for_three_judges_as_for_one(
    client, judge, site_admin, monkeypatch
):
    """On a big pool (the counts stored; a small one computes each judge's inline, which is cheap there)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from judgments.models import JudgeRun

    login(client, site_admin)
    url = reverse("judges:list", args=[judge.pool.name])
    JudgeRun.objects.create(judge=judge, status="succeeded", total=1, done=1)

    def statements() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    snapshots.refresh(judge.pool)
    one = statements()
    for name in ("judge-b", "judge-c"):
        other = create_or_update_judge(judge.pool, name, base_url="http://127.0.0.1:9/v1", model="m")[0]
        JudgeRun.objects.create(judge=other, status="succeeded", total=2, done=2)
    snapshots.refresh(judge.pool)
    assert statements() == one
