"""In Debian's chromium: an admin goes from an empty database (one superuser, as `createsuperuser`
leaves it) to a pool with two raters who grade, without Django admin or a shell. Screenshots of the
campaign pages go to screenshots/ (git-ignored)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from judgments.models import Judgment, Pair, Pool, Team

SCREENSHOTS = Path(settings.BASE_DIR) / "screenshots"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUERIES = "q1\tcheap flights to lisbon\nq2\tvegan lasagna recipe\n"
DOCUMENTS = (
    '{"id": "d1", "title": "Lisbon flights from 39 EUR", "body": "Compare fares to Lisbon for every airline."}\n'
    '{"id": "d2", "title": "The best vegan lasagna", "body": "Layers of pasta, lentil ragu and cashew cream."}\n'
)


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"campaign-{name}.png"), full_page=True)


def _import(page, tmp_path: Path, kind: str, name: str, content: str) -> None:
    page.click(".pooltabs >> text=Import")
    page.select_option("select[name=kind]", kind)
    path = tmp_path / name
    path.write_text(content)
    page.set_input_files("input[name=file]", str(path))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(".ok-box")
    page.click("text=Confirm import")
    page.wait_for_selector(".msg-success")


def test_an_admin_takes_an_empty_database_to_a_pool_with_two_raters_who_grade(
    browser_login, chromium, live_server, site_admin, tmp_path
):
    assert not Pool.objects.exists()
    page = browser_login(site_admin)
    shot(page, "home-empty")
    page.click("nav.mainnav >> text=Campaigns")
    page.wait_for_selector("h1:has-text('Campaigns')")
    shot(page, "index-empty")

    # A pool, with its guidelines previewed as the admin types.
    page.click("text=New pool")
    page.fill("#id_name", "news")
    page.fill("#id_description", "Everyday searches, graded by two raters each.")
    page.fill("#id_guidelines", "## How to grade\n\nRead the **information need** first.\n\n- one\n- two")
    page.wait_for_selector("#guidelines-preview strong:has-text('information need')")
    page.fill("#id_raters_per_pair", "2")
    page.select_option("#id_combine_rule", "median")
    page.fill("#id_label_4", "Exactly right")
    shot(page, "new-pool")
    page.click("button:has-text('Create pool')")
    page.wait_for_selector("h1:has-text('People of news')")
    pool = Pool.objects.get(name="news")
    assert (pool.raters_per_pair, pool.combine_rule, pool.grade_scale[4]["label"]) == (
        2,
        "median",
        "Exactly right",
    )

    # Two rater accounts, each with a one-time link.
    links = []
    for name in ("rita", "rolf"):
        page.fill("#id_username", name)
        page.fill("#id_email", f"{name}@example.org")
        page.click("text=Create rater and get the link")
        page.wait_for_selector(f".link-box:has-text('Send this link to {name}')")
        links.append(page.input_value("#set-password-link"))
    shot(page, "people")

    # Queries and documents through the import page, and two pairs queued by hand.
    _import(page, tmp_path, "queries", "queries.tsv", QUERIES)
    page.goto(f"{live_server.url}/campaign/pools/news/people/")
    _import(page, tmp_path, "documents", "docs.jsonl", DOCUMENTS)
    page.goto(f"{live_server.url}/campaign/pools/news/people/")
    page.click(".pooltabs >> text=Queue")
    for query, document in (("q1", "d1"), ("q2", "d2")):
        page.fill("#id_query_id", query)
        page.fill("#id_document_id", document)
        page.click("button:has-text('Add pair')")
        page.wait_for_selector(".msg-success")
    assert Pair.objects.filter(pool=pool, queued_at__isnull=False).count() == 2

    # Each rater opens their link, chooses a password, lands on the grading page and grades.
    for number, link in enumerate(links, start=1):
        context = chromium.new_context(viewport={"width": 1366, "height": 768})
        try:
            rater_page = context.new_page()
            rater_page.goto(link)
            rater_page.wait_for_selector("h1:has-text('Choose your password')")
            assert "/set-password/" in rater_page.url and link.rsplit("/", 2)[-2] not in rater_page.url
            if number == 1:
                shot(rater_page, "set-password")
            rater_page.fill("#id_new_password1", "grading-all-day-42")
            rater_page.fill("#id_new_password2", "grading-all-day-42")
            rater_page.click("button:has-text('Set password and log in')")
            rater_page.wait_for_selector("#grade-form")
            assert rater_page.url.endswith("/pools/news/grade/")
            assert "information need" in rater_page.text_content(".guidelines")
            if number == 1:
                shot(rater_page, "rater-grading")
            rater_page.keyboard.press("3")
            rater_page.wait_for_selector(".rating-notice:has-text('Saved 3')")
        finally:
            context.close()
    judgments = Judgment.objects.filter(pair__pool=pool)
    assert sorted(judgments.values_list("rater__username", flat=True)) == ["rita", "rolf"]
    assert set(judgments.values_list("grade", flat=True)) == {3}

    # The people page shows both raters with their judgment.
    page.goto(f"{live_server.url}/campaign/pools/news/people/")
    assert page.locator("table.people tr:has-text('rita') td.num").inner_text() == "1"
    shot(page, "people-after")


def test_an_admin_builds_a_team_and_moves_a_configuration(
    browser_login, live_server, site_admin, pool, configuration
):
    page = browser_login(site_admin)
    page.goto(f"{live_server.url}/campaign/teams/")
    page.fill("#id_name", "dense-retrieval")
    page.click("button:has-text('Create team')")
    page.wait_for_selector("h1:has-text('Team dense-retrieval')")
    page.fill("#id_user", "oscar_engineer")
    page.click("button:has-text('Add to the team')")
    page.wait_for_selector(".member-list:has-text('oscar_engineer')")
    page.goto(f"{live_server.url}/campaign/teams/{configuration.team_id}/")
    shot(page, "team")
    page.select_option(f"#move-{configuration.pk}", label="dense-retrieval")
    page.click(f"form[action$='/configurations/{configuration.pk}/move/'] button")
    page.wait_for_selector("h1:has-text('Team dense-retrieval')")
    assert page.locator("table:has-text('bm25')").count() == 1
    configuration.refresh_from_db()
    assert configuration.team == Team.objects.get(name="dense-retrieval")
    page.goto(f"{live_server.url}/campaign/")
    shot(page, "index")
    page.goto(f"{live_server.url}/campaign/pools/robust/")
    shot(page, "settings")
