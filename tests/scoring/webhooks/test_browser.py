"""In a real browser (Debian's chromium through Playwright): an engineer adds a webhook on the pool's
webhooks page and reads its deliveries on the pool's page; the score history marks a scheduled capture
below its band; an admin edits a query's fields. Screenshots go to screenshots/ (git-ignored)."""

from pathlib import Path

import pytest

from judgments.capture import services as capture
from judgments.models import Query
from scoring.webhooks.models import Webhook, WebhookDelivery

from .test_scheduled import _scheduled_capture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SCREENSHOTS = Path(__file__).resolve().parents[3] / "screenshots"


def shot(page, name):
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"gate-{name}.png"), full_page=True)


def test_webhooks_history_band_and_query_fields_in_a_browser(
    gated, engineer, site_admin, browser_login, tmp_path
):
    gated.members.add(engineer)
    nightly = gated.configurations.get(name="baseline")
    capture.set_endpoint(nightly, kind="elasticsearch", url="http://127.0.0.1:9/docs/_search")
    best = gated.test_rankings["baseline"]
    queries = sorted(best)
    for n in range(3):
        _scheduled_capture(gated, tmp_path, nightly, best, n)
    broken = {**best, **{q: best[q][::-1] for q in queries[:3]}}
    dropped = _scheduled_capture(gated, tmp_path, nightly, broken, 9)

    page = browser_login(engineer, viewport=(1280, 900))
    page.goto(page.url.split("/", 3)[0] + "//" + page.url.split("/")[2] + "/pools/gated/webhooks/")
    page.fill("#id_url", "https://chat.example.com/hooks/relevance")
    page.fill("#id_secret", "browser-secret")
    page.check("input[value='gate.failed']")
    with page.expect_navigation():
        page.click("#add-webhook button[type=submit]")
    hook = Webhook.objects.get()
    assert hook.events == ["gate.failed"] and hook.secret == "browser-secret"
    WebhookDelivery.objects.create(
        webhook=hook, event="gate.failed", body="{}", status="delivered", status_code=200, attempts=1
    )
    WebhookDelivery.objects.create(
        webhook=hook,
        event="gate.failed",
        body="{}",
        status="pending",
        status_code=503,
        attempts=2,
        error="HTTP 503 Service Unavailable",
    )
    page.reload()
    assert page.locator("#webhooks tbody tr").count() == 1
    assert page.locator("#deliveries tbody tr").count() == 2
    assert "browser-secret" not in page.content()
    shot(page, "webhooks")
    page.goto(page.url.replace("/pools/gated/webhooks/", "/pools/gated/"))
    assert page.locator("#webhooks").is_visible()
    assert page.locator("#deliveries td.num", has_text="503").count() == 1
    shot(page, "pool-page")

    page.goto(page.url.replace("/pools/gated/", f"/configurations/{nightly.pk}/scores/"))
    marked = page.locator(f"tr[data-run='{dropped.pk}']")
    assert marked.get_attribute("data-scheduled") == "below"
    assert "below the band" in marked.inner_text()
    note = page.locator(f"tr[data-band-for='{dropped.pk}']").inner_text()
    assert all(q in note for q in queries[:3])
    shot(page, "history-band")

    admin = browser_login(site_admin, viewport=(1280, 900))
    admin.goto(admin.url.split("/", 3)[0] + "//" + admin.url.split("/")[2] + "/campaign/pools/gated/queries/")
    first = Query.objects.get(pool=gated, external_id=queries[0])
    admin.fill(f"#query-{first.pk} textarea", "locale = de-DE\ncategory = 12")
    with admin.expect_navigation():
        admin.click(f"#query-{first.pk} button[type=submit]")
    assert Query.objects.get(pk=first.pk).fields == {"locale": "de-DE", "category": 12}
    shot(admin, "query-fields")
