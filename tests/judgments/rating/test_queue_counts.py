"""The judging queue's counts and the missing-content list read stored values (tallies, Pair.human_grades):
they must equal what the pool's rows say after each kind of write."""

import re

import pytest
from django.urls import reverse

from judgments import services
from judgments.models import Document, Judgment, Pair
from judgments.rating import queue


@pytest.fixture
def two_per_pair(pool, configuration, site_admin):
    """raters_per_pair 2; q1 ranks two documents with content and three without, all queued."""
    pool.raters_per_pair = 2
    pool.save()
    services.record_run(configuration, {"q1": ["d1", "d2", "bare0", "bare1", "bare2"]}, source="api")
    queue.build_queue(pool, 10)
    return pool


def _page_counts(client, pool) -> dict:
    html = client.get(reverse("rating:queue", args=[pool.name])).content.decode()
    stats = re.findall(r'<span class="n">(?:<a [^>]*>)?(\d+)(?:</a>)?</span> ([^<(]+)', html)
    return {label.strip(): int(n) for n, label in stats}


def _recounted(pool) -> dict:
    open_pairs = queue.open_pairs(pool)
    return {
        "pairs queued": Pair.objects.in_pool(pool).queued().count(),
        "complete": Pair.objects.in_pool(pool).queued().count() - open_pairs.count(),
        "still need grades": open_pairs.count(),
        "open without content": open_pairs.filter(document__title="", document__body="").count(),
        "can't-judge answers": Judgment.objects.in_pool(pool).filter(cant_judge=True).count(),
    }


def _listed(client, pool) -> set[str]:
    html = client.get(reverse("rating:missing-content", args=[pool.name])).content.decode()
    return set(re.findall(r'<td class="mono">([^<]+)</td>', html))


def _without_content(pool) -> set[str]:
    return {pair.document.external_id for pair in queue.pairs_without_content(pool)}


def test_queue_counts_and_missing_content_follow_every_write(
    client, site_admin, two_per_pair, rater, other_rater
):
    pool = two_per_pair
    client.force_login(site_admin)
    bare = {p.document.external_id: p for p in Pair.objects.in_pool(pool).select_related("document")}

    def check():
        counts = _page_counts(client, pool)
        assert {label: counts[label] for label in _recounted(pool)} == _recounted(pool)
        assert _listed(client, pool) == _without_content(pool)

    check()
    assert _listed(client, pool) == {"bare0", "bare1", "bare2"}
    services.record_judgment(bare["bare0"], rater, grade=2)  # one grade of two: still open, still listed
    check()
    assert "bare0" in _listed(client, pool)
    services.record_judgment(bare["bare0"], other_rater, grade=3)  # complete: leaves the list
    check()
    assert _listed(client, pool) == {"bare1", "bare2"}
    services.record_judgment(bare["bare0"], other_rater, cant_judge=True, reason="broken")  # back to open
    check()
    assert "bare0" in _listed(client, pool)
    services.set_final_grade(bare["bare1"], 1, site_admin)  # adjudicated: complete
    check()
    assert _listed(client, pool) == {"bare0", "bare2"}
    Document.objects.filter(pool=pool, external_id="bare2").update(title="now it has one")
    check()
    assert _listed(client, pool) == {"bare0"}


def test_missing_content_says_what_is_true_when_nothing_is_open(
    client, site_admin, two_per_pair, rater, other_rater
):
    pool = two_per_pair
    for pair in Pair.objects.in_pool(pool):
        services.record_judgment(pair, rater, grade=1)
        services.record_judgment(pair, other_rater, grade=2)
    client.force_login(site_admin)
    html = client.get(reverse("rating:missing-content", args=[pool.name])).content.decode()
    assert "No queued pair still short of grades lacks content: every queued pair is complete" in html
    assert "Complete pairs (5 of 5 queued) are not listed here" in html
    assert "Every queued pair's document has content" not in html
