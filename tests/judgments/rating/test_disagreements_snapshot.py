"""The disagreements page's stored order (judgments.models.Disagreement, the "disagreements" snapshot)
equals the direct computation (adjudication.disagreement_ids) after each kind of write that changes it,
and a big pool's page reads it a page at a time."""

import random

import pytest
from django.urls import reverse

from judgments import raters, services, snapshots
from judgments.models import Disagreement, Document, Judgment, Pair, Query, SnapshotDue
from judgments.rating import adjudication
from tests.conftest import login


@pytest.fixture
def disputed(pool, rater, other_rater):
    """60 pairs graded by both raters with every spread 0-4."""
    rng = random.Random(3)
    queries = [Query.objects.create(pool=pool, external_id=f"k{q}", text="t") for q in range(6)]
    documents = [
        Document.objects.create(pool=pool, external_id=f"x{d}", title="t", body="b") for d in range(10)
    ]
    pairs = [Pair.objects.create(pool=pool, query=q, document=d) for q in queries for d in documents]
    Judgment.objects.bulk_create(
        [Judgment(pair=p, rater=rater, grade=rng.randint(0, 4)) for p in pairs]
        + [Judgment(pair=p, rater=other_rater, grade=rng.randint(0, 4)) for p in pairs]
    )
    return pairs


def stored(pool) -> list[int]:
    return list(Disagreement.objects.filter(pool=pool).order_by("rank").values_list("pair_id", flat=True))


def test_the_stored_order_equals_the_direct_one_after_each_write(
    pool, disputed, rater, other_rater, site_admin
):
    snapshots.refresh(pool)
    assert stored(pool) == adjudication.disagreement_ids(pool) and len(stored(pool)) > 25
    far = adjudication.disagreement_ids(pool)
    writes = [
        lambda: services.record_judgment(disputed[0], rater, grade=4),  # a regrade
        lambda: services.record_judgment(disputed[1], rater, cant_judge=True, reason="?"),  # can't judge
        lambda: services.set_final_grade(Pair.objects.get(pk=far[0]), 2, site_admin),  # settled: goes last
        lambda: adjudication.request_adjudication(pool, {disputed[5].pk: "look"}, site_admin),  # by hand
        lambda: raters.set_excluded(pool, other_rater, True, site_admin),  # an exclusion
    ]
    for write in writes:
        write()
        assert SnapshotDue.objects.filter(pool=pool).exists()
        snapshots.refresh(pool)
        assert stored(pool) == adjudication.disagreement_ids(pool)
    pool.grade_source = "all"
    pool.save()
    assert SnapshotDue.objects.filter(pool=pool).exists()


def test_a_big_pools_page_reads_the_stored_order_a_page_at_a_time(
    client, pool, disputed, site_admin, monkeypatch
):
    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    login(client, site_admin)
    url = reverse("rating:disagreements", args=[pool.name])
    assert "being computed for the first time" in client.get(url).content.decode()
    snapshots.refresh(pool)
    ids = adjudication.disagreement_ids(pool)
    for number, chunk in ((1, ids[:25]), (2, ids[25:50])):
        page = client.get(url, {"page": number}).content.decode()
        shown = [int(part.split('"')[0]) for part in page.split('id="pair-')[1:]]
        assert shown == chunk
    assert f": {len(ids)}, {len(ids)} without a final grade" in page and "Figures as of" in page
