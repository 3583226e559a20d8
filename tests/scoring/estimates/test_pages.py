"""The pages that defend model grades, as their users see them: an admin draws the human sample on the
estimates page (a sample larger than the pool is refused, nothing drawn), the engineer reads the
estimates and a difference, the leaderboard carries the sample's progress and the circularity warning
with the humans' own top of the table, the compare page links to the estimate of A − B, the trust page
shows the probes and the warning, and the leaderboard by assessor gives each one's winner and τ. Raters
see none of it. A browser screenshot of the estimates page."""

from pathlib import Path

import pytest
from django.urls import reverse

from judgments.judges.probing import fingerprint
from judgments.models import HumanSample, ProbeAnswer, SearchConfiguration
from scoring.services import rescore_pool
from tests.conftest import login
from tests.scoring.estimates.conftest import run_command

SCREENSHOTS = Path(__file__).resolve().parents[3] / "screenshots"


def test_admin_draws_the_sample_on_the_page(judged_pool, pool, client, site_admin, engineer):
    url = reverse("scoring:estimates", args=[pool.name])
    login(client, site_admin)
    page = client.get(url)
    assert (
        page.status_code == 200
        and b"No human sample yet" in page.content
        and b'id="draw-sample"' in page.content
    )
    refused = client.post(reverse("scoring:draw-sample", args=[pool.name]), {"size": "99"}, follow=True)
    assert b"larger than the pool" in refused.content and not HumanSample.objects.exists()
    drawn = client.post(
        reverse("scoring:draw-sample", args=[pool.name]), {"size": "5", "seed": "9"}, follow=True
    )
    assert b"Drew 5 queries at random (seed 9)" in drawn.content
    sample = HumanSample.objects.get()
    assert (sample.size, sample.seed, sample.drawn_by) == (5, 9, site_admin)
    again = client.post(reverse("scoring:draw-sample", args=[pool.name]), {"size": "4"}, follow=True)
    assert b"replaces the previous sample" in again.content and HumanSample.objects.get().size == 4
    # An engineer reads it but cannot draw one.
    login(client, engineer)
    page = client.get(url)
    assert b"4 / 4" in page.content and b'id="draw-sample"' not in page.content
    assert client.post(reverse("scoring:draw-sample", args=[pool.name]), {"size": "3"}).status_code == 403


def test_estimates_and_difference_on_the_page(judged_pool, pool, client, engineer):
    run_command("sample_queries", "--pool", pool.name, "--size", "6", "--seed", "7")
    login(client, engineer)
    page = client.get(
        reverse("scoring:estimates", args=[pool.name]),
        {"measure": "ndcg@10", "flavour": "trec", "a": "dense", "b": "bm25"},
    )
    text = page.content.decode()
    assert page.status_code == 200
    for name in ("bm25", "dense", "hybrid"):
        assert f'data-configuration="{name}"' in text
    assert 'id="difference"' in text and "dense − bm25" in text
    assert "N = 12 queries; n = 6 human-sampled" in text


def test_leaderboard_compare_and_trust_carry_the_notes(judged_pool, pool, client, site_admin, rater):
    dense = SearchConfiguration.objects.get(pool=pool, name="dense")
    dense.model_name = "gpt-4o"  # the judge's model is gpt-x: same family
    dense.save()
    run_command("sample_queries", "--pool", pool.name, "--size", "3", "--seed", "1")
    ProbeAnswer.objects.bulk_create(
        ProbeAnswer(
            judge=judged_pool, pair=pair, kind=kind, fingerprint=fingerprint(judged_pool), grade=grade
        )
        for pair in pool.pairs.all()[:3]
        for kind, grade in (
            ("original", 1),
            ("stuffing", 3),
            ("injection", 1),
            ("paraphrase", 1),
            ("repeat", 1),
        )
    )
    rescore_pool(pool)  # the runs' scores (on-commit hooks do not fire in this test's transaction)
    login(client, site_admin)
    board = client.get(reverse("scoring:leaderboard", args=[pool.name])).content.decode()
    assert "Human sample: 3 of 3 randomly drawn queries graded completely" in board
    assert 'id="leaderboard-estimates"' in board  # the estimates load into the leaderboard (htmx)
    fragment = client.get(reverse("scoring:estimates", args=[pool.name]), {"fragment": "1"}).content.decode()
    assert "<html" not in fragment and 'data-configuration="dense"' in fragment
    assert (
        "Circular evaluation: <strong>dense</strong> uses gpt-4o" in board
        and "Top of the table by the humans" in board
    )
    compare = client.get(
        reverse("scoring:compare", args=[pool.name]), {"c": ["dense", "bm25"]}
    ).content.decode()
    assert 'id="estimates-link"' in compare and "a=dense" in compare
    trust = client.get(reverse("scoring:trust", args=[pool.name, "llm"])).content.decode()
    assert "circular-warning" in trust and 'id="probe-results"' in trust
    assert 'data-kind="stuffing" class="alarm"' in trust and 'data-kind="injection">' in trust
    assessors = client.get(reverse("scoring:assessors", args=[pool.name])).content.decode()
    assert "humans (combined)" in assessors and "rita_rater" in assessors and ">llm<" in assessors
    # Raters see none of it.
    login(client, rater)
    for url in (
        reverse("scoring:estimates", args=[pool.name]),
        reverse("scoring:assessors", args=[pool.name]),
    ):
        assert client.get(url).status_code == 404


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_estimates_page_in_a_browser(judged_pool, pool, site_admin, browser_login, live_server):
    run_command("sample_queries", "--pool", pool.name, "--size", "6", "--seed", "7")
    page = browser_login(site_admin)
    page.goto(f"{live_server.url}{reverse('scoring:estimates', args=[pool.name])}?a=dense&b=bm25")
    assert page.locator("section.estimates tbody tr").count() == 3
    assert "dense − bm25" in page.locator("#difference").inner_text()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "estimates.png"), full_page=True)
    # The leaderboard loads the same tables after the page (htmx), so it stays as fast as before.
    rescore_pool(pool)
    page.goto(f"{live_server.url}{reverse('scoring:leaderboard', args=[pool.name])}")
    page.wait_for_selector("#leaderboard-estimates section.estimates tbody tr")
    assert page.locator("#leaderboard-estimates section.estimates tbody tr").count() == 3
    page.screenshot(path=str(SCREENSHOTS / "leaderboard-estimates.png"), full_page=True)
