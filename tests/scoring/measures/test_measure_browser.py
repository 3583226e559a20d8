"""The measure pages in Chromium: the set is typed on the settings page, a bad name shows its one line,
and the leaderboard and comparison show the set (screenshots in MEASURE_SCREENSHOTS when set)."""

import os

import pytest

from scoring.models import PoolMeasures
from tests.scoring.compare.test_browser import ranked_pool  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shot(page, name):
    folder = os.environ.get("MEASURE_SCREENSHOTS")
    if folder:
        page.screenshot(path=f"{folder}/{name}.png", full_page=True)


def test_set_measures_in_the_browser(browser_login, live_server, engineer, ranked_pool):  # noqa: F811
    page = browser_login(engineer)
    page.goto(f"{live_server.url}/pools/robust/measures/")
    page.fill("#id_measures", "nDCG@10\nP(rel=9)@5")
    page.click("button.primary")
    assert "rel must be a grade of the pool's scale" in page.inner_text("#measure-error")
    shot(page, "measures-error")
    page.fill("#id_measures", "nDCG@10\nP(rel=2)@5\nERR@20\nRBP(p=0.9,rel=1)\nBpref")
    page.click("button.primary")
    assert PoolMeasures.objects.get().names[2] == "ERR@20"
    shot(page, "measures-saved")
    page.goto(f"{live_server.url}/pools/robust/leaderboard/")
    assert "ERR@20" in page.inner_text("table.leaderboard thead")
    shot(page, "measure-leaderboard")
    page.goto(f"{live_server.url}/pools/robust/compare/?c=bm25&c=dense")
    assert "Bpref" in page.inner_text("#measure-table")
    shot(page, "measure-compare")
