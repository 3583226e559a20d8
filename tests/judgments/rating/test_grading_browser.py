"""The grading page in a real browser (Debian's chromium through Playwright): keyboard only, no reloads."""

from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from judgments import demo_data
from judgments.models import Document, Judgment, JudgmentChange, Pair, Query

SCREENSHOTS = Path(settings.BASE_DIR) / "screenshots"

pytestmark = pytest.mark.browser


def _current_pair(page) -> int:
    return int(page.locator("#grade-form").get_attribute("data-pair"))


def _press_and_wait(page, key: str, before: str) -> None:
    """Press `key` and wait until the grading fragment has been replaced (a new pair or page state)."""
    page.keyboard.press(key)
    page.wait_for_function(
        "before => { const g = document.querySelector('#grade-form');"
        " const now = g ? g.dataset.pair + location.pathname : 'done' + location.pathname;"
        " return now !== before && !document.getElementById('rating').classList.contains('busy'); }",
        arg=before,
    )


def _state(page) -> str:
    return page.evaluate(
        "() => { const g = document.querySelector('#grade-form');"
        " return (g ? g.dataset.pair : 'done') + location.pathname; }"
    )


def test_rater_grades_skips_cant_judges_and_goes_back_with_the_keyboard(
    transactional_db, live_server, browser_login, pool, rater, queued
):
    for doc in ("d1", "d2", "d3", "d4", "d5", "d6"):
        queued(pool, "q1", doc)
    for doc in ("d1", "d2", "d3"):
        queued(pool, "q2", doc)
    grade_url = reverse("rating:grade", args=[pool.name])

    page = browser_login(rater)
    page.goto(live_server.url + grade_url)
    page.evaluate("window.__noReload = true")

    graded = []  # (pair, grade) in order
    for grade in (0, 1, 2, 3, 4):
        pair = _current_pair(page)
        if grade == 2:  # a note, typed after pressing n; Esc leaves the field so keys grade again
            page.keyboard.press("n")
            page.keyboard.type("mentions the topic twice")
            page.keyboard.press("Escape")
        _press_and_wait(page, str(grade), _state(page))
        graded.append((pair, grade))
        assert f"Saved {grade} (" in page.locator(".rating-notice").inner_text()

    skipped = _current_pair(page)
    _press_and_wait(page, "s", _state(page))
    assert _current_pair(page) != skipped

    cant = _current_pair(page)
    page.keyboard.press("c")
    assert page.evaluate("document.activeElement.id") == "reason"
    page.keyboard.type("The page is in Finnish")
    _press_and_wait(page, "Enter", _state(page))
    current = _current_pair(page)

    # u: back to the can't-judge pair; Backspace: one further back, to the last graded pair.
    _press_and_wait(page, "u", _state(page))
    assert _current_pair(page) == cant and "Changing your earlier judgment" in page.content()
    _press_and_wait(page, "Backspace", _state(page))
    last_pair, last_grade = graded[-1]
    assert _current_pair(page) == last_pair
    assert page.url.endswith(reverse("rating:grade-pair", args=[pool.name, last_pair]))
    _press_and_wait(page, "1", _state(page))
    assert _current_pair(page) == current  # back at the pair the rater was holding
    assert page.url.endswith(grade_url)

    page.keyboard.press("?")
    assert page.locator("#rating-help").is_visible()
    page.keyboard.press("Escape")
    assert not page.locator("#rating-help").is_visible()
    assert page.evaluate("window.__noReload") is True  # every step happened without a page load

    judgments = {j.pair_id: j for j in Judgment.objects.filter(rater=rater)}
    assert len(judgments) == 6 and skipped not in judgments
    for pair, grade in graded[:-1]:
        assert judgments[pair].grade == grade and not judgments[pair].cant_judge
    assert judgments[graded[2][0]].note == "mentions the topic twice"
    assert judgments[last_pair].grade == 1
    assert judgments[cant].cant_judge and judgments[cant].cant_judge_reason == "The page is in Finnish"
    assert list(
        JudgmentChange.objects.filter(pair_id=last_pair)
        .order_by("id")
        .values_list("action", "old_grade", "new_grade")
    ) == [("created", None, last_grade), ("changed", last_grade, 1)]
    assert Pair.objects.get(pk=current).held_by == rater


def test_grading_page_without_javascript_is_a_plain_form(
    transactional_db, live_server, chromium, pool, rater, queued
):
    first, second = queued(pool, "q1", "d1"), queued(pool, "q1", "d2")
    context = chromium.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/accounts/login/")
        page.fill("#id_username", rater.username)
        page.fill("#id_password", "correct-horse-battery")
        page.click("button[type=submit]")
        page.goto(live_server.url + reverse("rating:grade", args=[pool.name]))
        served = _current_pair(page)
        page.click('#grade-form button[name="grade"][value="3"]')
        page.wait_for_load_state()
        assert _current_pair(page) == ({first.pk, second.pk} - {served}).pop()
        assert "Saved 3 (Highly relevant)." in page.locator(".messages").inner_text()
        page.click("#cant summary")
        page.fill("#reason", "Broken page")
        page.click("#cant-button")
        page.wait_for_load_state()
        assert "Nothing to grade right now" in page.content()
    finally:
        context.close()
    assert dict(Judgment.objects.values_list("pair_id", "grade")) == {
        served: 3,
        ({first.pk, second.pk} - {served}).pop(): None,
    }


@pytest.fixture
def demo_like_pool(pool):
    """A pool that reads like the demo: real guidelines, a query with an information need, longer text."""
    queries, documents, _ = demo_data.build()
    qid, text, need = queries[0]
    pool.guidelines = (
        "## How to grade\n\nRead the **information need**, not just the query words.\n\n"
        "- Grade the document, not the site.\n- If the page cannot be judged, press **c** and say why."
    )
    pool.save()
    query = Query.objects.create(pool=pool, external_id=qid, text=text, information_need=need)
    docid, title, body, url = documents[0]
    document = Document.objects.create(
        pool=pool,
        external_id=docid,
        title=title,
        body=body + "\n\n" + documents[1][2] + " " + documents[2][2],
        url=url,
        extra={"site": "example.org", "published": "2024-05-01", "words": 1240},
    )
    from django.utils import timezone

    Pair.objects.create(pool=pool, query=query, document=document, queued_at=timezone.now(), priority=1)
    return pool


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_grading_page_screenshots(
    transactional_db, live_server, browser_login, demo_like_pool, rater, width, height
):
    pool = demo_like_pool
    page = browser_login(rater, viewport=(width, height))
    page.goto(live_server.url + reverse("rating:grade", args=[pool.name]))
    page.wait_for_selector("#grade-form")
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"grading-{width}x{height}.png"))

    # Nothing sticks out sideways, and every grade button is on screen without scrolling.
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    for grade in range(5):
        box = page.locator(f'#grade-form button[name="grade"][value="{grade}"]').bounding_box()
        assert (
            box and box["x"] >= 0 and box["x"] + box["width"] <= width and box["y"] + box["height"] <= height
        )
        assert box["height"] >= 40  # a finger can hit it
    assert page.locator("mark").count() >= 1  # query words highlighted
