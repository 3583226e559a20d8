"""In Debian's chromium: one tab bar on every page of a pool, the same for a role wherever it is, with
the current page's tab marked; the header keeps to one line on a phone (the API token and log out are in
the user menu). Screenshots of each page at 1,366 px and at phone size go to screenshots/ (git-ignored)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from judgments.models import Pair

SCREENSHOTS = Path(settings.BASE_DIR) / "screenshots"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGES = {
    "rater": ["judgments:pool-detail", "rating:grade", "rating:my-judgments"],
    "engineer": [
        "judgments:pool-detail",
        "judgments:configuration-list",
        "scoring:leaderboard",
        "exchange:import",
        "exchange:export",
    ],
    "site_admin": [
        "judgments:pool-detail",
        "judgments:configuration-list",
        "scoring:leaderboard",
        "rating:queue",
        "rating:agreement",
        "judges:list",
        "campaign:people",
        "campaign:pool-edit",
    ],
}
TABS = {
    "rater": ["Overview", "Grade", "My judgments"],
    "engineer": ["Overview", "Configurations", "Leaderboard", "Upload a run", "Export", "Webhooks"],
    "site_admin": [
        "Overview",
        "Configurations",
        "Leaderboard",
        "Import",
        "Export",
        "Webhooks",
        "Queue",
        "Gold pairs",
        "Agreement",
        "Disagreements",
        "Model judges",
        "People",
        "Queries",
        "Settings",
    ],
}


@pytest.mark.parametrize("role", list(PAGES))
def test_every_page_of_a_pool_has_the_same_tabs_for_a_role(
    request, browser_login, live_server, pool, configuration, run, site_admin, role
):
    user = request.getfixturevalue(role)
    Pair.objects.create(pool=pool, query=pool.queries.first(), document=pool.documents.first())
    Pair.objects.filter(pool=pool).update(queued_at="2026-01-01T00:00:00Z")
    page = browser_login(user)
    SCREENSHOTS.mkdir(exist_ok=True)
    for name in PAGES[role]:
        page.set_viewport_size({"width": 1366, "height": 768})
        page.goto(live_server.url + reverse(name, args=[pool.name]))
        tabs = page.locator("nav.pooltabs .pooltabs-tabs a")
        assert tabs.all_inner_texts() == TABS[role], name
        current = page.locator("nav.pooltabs a[aria-current=page]").all_inner_texts()
        assert len(current) == 1, (name, current)
        assert page.evaluate("document.documentElement.scrollWidth") <= 1366, name
        slug = name.replace(":", "-")
        page.screenshot(path=str(SCREENSHOTS / f"tabs-{role}-{slug}-1366.png"), full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})
        page.screenshot(path=str(SCREENSHOTS / f"tabs-{role}-{slug}-390.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, name
        assert page.locator("header.topbar").bounding_box()["height"] < 60, name  # one line
    page.click("details.usermenu summary")
    assert page.locator(".usermenu-items a", has_text="API token").is_visible()
