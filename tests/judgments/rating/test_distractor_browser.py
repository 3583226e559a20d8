"""The distractor grade in a real browser (Debian's chromium through Playwright): key d grades -1 where the
pool has that grade and does nothing elsewhere; the button is on screen on a laptop and a phone; the
leaderboard shows UDCG@10 with its definition. Screenshots go to tests/screenshots/."""

from pathlib import Path

import pytest
from django.urls import reverse

from judgments import services
from judgments.models import Judgment, Pool
from scoring.services import rescore_pool
from tests.judgments.rating.test_grading_browser import _current_pair, _press_and_wait, _state

SCREENSHOTS = Path(__file__).resolve().parents[2] / "screenshots"

pytestmark = pytest.mark.browser


@pytest.fixture
def distractor_pool(pool, queued):
    services.set_distractors(pool, True)
    for qid, docid in (("q1", "d1"), ("q1", "d2"), ("q1", "d3"), ("q2", "d3"), ("q2", "d1")):
        queued(pool, qid, docid)
    return pool


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_key_d_grades_a_distractor_and_the_button_is_on_screen(
    transactional_db, live_server, browser_login, distractor_pool, rater, width, height
):
    page = browser_login(rater, viewport=(width, height))
    page.goto(live_server.url + reverse("rating:grade", args=[distractor_pool.name]))
    page.wait_for_selector("#grade-form")
    button = page.locator('#grade-form button[name="grade"][value="-1"]')
    assert button.inner_text().split() == ["d", "Distractor"] or button.inner_text().startswith("d")
    assert "Distractor" in button.inner_text()
    for grade in range(-1, 5):
        box = page.locator(f'#grade-form button[name="grade"][value="{grade}"]').bounding_box()
        assert (
            box and box["x"] >= 0 and box["x"] + box["width"] <= width and box["y"] + box["height"] <= height
        )
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"grading-distractor-{width}x{height}.png"))

    page.evaluate("window.__noReload = true")
    first = _current_pair(page)
    _press_and_wait(page, "d", _state(page))
    assert "Saved -1 (Distractor)" in page.locator(".rating-notice").inner_text()
    second = _current_pair(page)
    _press_and_wait(page, "2", _state(page))
    assert page.evaluate("window.__noReload === true")  # answered in place, no page load
    assert dict(Judgment.objects.filter(rater=rater).values_list("pair_id", "grade")) == {
        first: -1,
        second: 2,
    }


def test_key_d_does_nothing_where_the_pool_has_no_distractor_grade(
    transactional_db, live_server, browser_login, pool, rater, queued
):
    queued(pool, "q1", "d1")
    page = browser_login(rater)
    page.goto(live_server.url + reverse("rating:grade", args=[pool.name]))
    page.wait_for_selector("#grade-form")
    assert page.locator('#grade-form button[name="grade"][value="-1"]').count() == 0
    before = _state(page)
    page.keyboard.press("d")
    page.wait_for_timeout(300)
    assert _state(page) == before and not Judgment.objects.exists()
    _press_and_wait(page, "1", before)
    assert list(Judgment.objects.values_list("grade", flat=True)) == [1]


def test_leaderboard_shows_udcg_with_its_definition(
    transactional_db,
    live_server,
    browser_login,
    distractor_pool,
    rater,
    other_rater,
    engineer,
    run,
    other_configuration,
):
    pairs = {
        (p.query.external_id, p.document.external_id): p
        for p in distractor_pool.pairs.select_related("query", "document")
    }
    for key, grade in {
        ("q1", "d1"): 3,
        ("q1", "d2"): -1,
        ("q1", "d3"): 1,
        ("q2", "d3"): -1,
        ("q2", "d1"): 2,
    }.items():
        services.record_judgment(pairs[key], rater, grade=grade)
    # The same documents in another order would score the same: UDCG@10 discounts no position.
    services.record_run(other_configuration, {"q1": ["d2", "d3"], "q2": ["d1", "d3"]}, source="api")
    rescore_pool(Pool.objects.get(pk=distractor_pool.pk))
    page = browser_login(engineer, viewport=(1366, 900))
    page.goto(live_server.url + reverse("scoring:leaderboard", args=[distractor_pool.name]))
    header = page.locator("#udcg-head")
    assert header.inner_text() == "UDCG@10"
    cells = page.locator('td[data-metric="udcg@10"]')
    assert cells.count() == 2
    values = [float(cells.nth(i).inner_text()) for i in range(2)]
    assert all(0.4 < v < 0.75 for v in values) and values[0] != values[1]
    assert "positional discount is uniform" in page.locator("#udcg-definition").inner_text()
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "leaderboard-udcg.png"), full_page=True)
