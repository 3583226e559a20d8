"""In a real browser (Debian's chromium through Playwright): an engineer presses Capture on the configuration
page, watches the progress while a real db_worker process captures from the demo engine, and sees the new
scored run; then tries a query live and an admin sends its unjudged documents to the raters. Screenshots
go to screenshots/ (git-ignored)."""

import re
from pathlib import Path

import pytest

from judgments.models import Document, Pair, Query, Run
from judgments.services import record_judgment

from .conftest import manage_py

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(__file__).resolve().parents[3] / "screenshots"


def shot(page, name):
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"capture-{name}.png"), full_page=True)


@pytest.fixture
def graded(live_configuration, rater):
    pool = live_configuration.pool
    for qid, docid, grade in [
        ("q1", "solar-1", 3),
        ("q1", "solar-2", 1),
        ("q3", "bike-1", 4),
        ("q3", "bike-2", 2),
    ]:
        pair = Pair.objects.create(
            pool=pool,
            query=Query.objects.get(external_id=qid),
            document=Document.objects.get(external_id=docid),
        )
        record_judgment(pair, rater, grade=grade)
    return live_configuration


@pytest.fixture
def worker():
    process = manage_py(
        "db_worker", "--queue-name", "default", "--no-reload", "--interval", "0.2", "--no-startup-delay"
    )
    yield process
    process.terminate()
    process.communicate(timeout=30)


def test_capture_then_try_a_query(browser_login, live_server, engineer, site_admin, graded, worker):
    page = browser_login(engineer)
    page.goto(f"{live_server.url}/configurations/{graded.pk}/")
    assert page.locator(".endpoint-definition").first.is_visible()
    shot(page, "configuration-before")
    page.fill("input[name=depth]", "10")
    page.click("button[name=capture]")
    page.wait_for_selector(".capture-job[data-status=succeeded]", timeout=60_000)  # polled, then reloaded
    run = Run.objects.get(configuration=graded)
    assert page.locator(f"a[href='/runs/{run.pk}/']").first.is_visible()
    assert "Captured from the search endpoint (v1)" in page.locator("#runs + p + table").inner_text()
    assert re.search(r"4\s*/\s*4 queries", page.locator(".capture-job").inner_text())
    shot(page, "configuration-after")

    page.click("text=Try a query live")
    page.select_option("select[name=query]", "q1")
    page.click("#live-form button[type=submit]")
    page.wait_for_selector("#live-list")
    rows = page.locator("#live-list li")
    assert rows.count() >= 2 and rows.first.get_attribute("data-doc") == "solar-1"
    assert page.locator("#live-ndcg").inner_text() == "1.000"  # solar-1 (3) then solar-2 (1): the ideal order
    assert page.locator("#live-queue").count() == 0  # an engineer may not queue in this pool
    shot(page, "try-a-query")

    admin = browser_login(site_admin)
    admin.goto(f"{live_server.url}/configurations/{graded.pk}/try/?query=q1")
    admin.click("#live-queue button")
    admin.wait_for_selector(".msg-success")
    assert "newly queued for rating" in admin.locator(".messages").inner_text()
    assert Pair.objects.filter(query__external_id="q1", queued_at__isnull=False).exists()
    assert admin.locator("#live-all-queued").is_visible()
    shot(admin, "try-a-query-queued")
