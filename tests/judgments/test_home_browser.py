"""In Debian's chromium: the home page fits the screen. An admin's pool row had eleven buttons, and the
page was 1,645 px wide at 1,366 px. Screenshots go to screenshots/ (git-ignored)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from judgments.models import Pool

SCREENSHOTS = Path(settings.BASE_DIR) / "screenshots"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("role", ["site_admin", "engineer", "rater"])
def test_the_home_page_fits_a_laptop_screen(request, browser_login, live_server, pool, site_admin, role):
    user = request.getfixturevalue(role)
    Pool.objects.create(
        name="trec-sample-with-a-long-name", description="Imported from trec_eval's sample " * 4
    )
    pool.members.add(site_admin)
    page = browser_login(user)
    page.goto(live_server.url + "/")
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"home-{role}-1366.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(SCREENSHOTS / f"home-{role}-390.png"), full_page=True)
