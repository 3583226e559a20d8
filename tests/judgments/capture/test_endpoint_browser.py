"""In a real browser: the endpoint form shows the fields of the chosen kind and swaps in its default
template, Test shows the demo engine's hits without saving, and try a query runs an edited template side
by side and saves it as a new version. Screenshots go to screenshots/ (git-ignored)."""

from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(__file__).resolve().parents[3] / "screenshots"


def shot(page, name):
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"endpoint-{name}.png"), full_page=True)


def test_the_endpoint_form_follows_its_kind_and_tests_without_saving(
    browser_login, live_server, engineer, live_configuration
):
    page = browser_login(engineer, viewport=(1366, 1000))
    page.goto(f"{live_server.url}/configurations/{live_configuration.pk}/endpoint/")
    hits = page.locator('[data-field="hits_path"]')
    assert hits.is_hidden() and page.locator('[data-field="method"]').is_hidden()
    page.select_option("select[name=kind]", "solr")
    assert page.locator('[data-field="method"]').is_visible() and hits.is_hidden()
    assert page.locator("textarea[name=template]").input_value().startswith("q={{query}}&rows={{depth}}")
    page.select_option("select[name=kind]", "json")
    assert hits.is_visible() and page.locator('[data-field="id_field"]').is_visible()
    page.select_option("select[name=kind]", "elasticsearch")
    assert '"multi_match"' in page.locator("textarea[name=template]").input_value()
    assert page.locator('[data-field="auth_user"]').is_hidden()
    page.select_option("select[name=auth_kind]", "basic")
    assert page.locator('[data-field="auth_user"]').is_visible()
    page.select_option("select[name=auth_kind]", "")
    page.fill("input[name=test_query]", "bicycle tyre")
    page.click("#test-button")
    page.wait_for_load_state("networkidle")
    assert "Nothing was stored" in page.locator("#test-result").inner_text()
    assert page.locator(".test-hits li").first.inner_text().startswith("bike-")
    shot(page, "test")
    assert live_configuration.endpoints.count() == 1


def test_tune_side_by_side_then_save(browser_login, live_server, engineer, live_configuration):
    page = browser_login(engineer, viewport=(1366, 1000))
    page.goto(f"{live_server.url}/configurations/{live_configuration.pk}/try/?query=q1&depth=10")
    template = page.locator("#tune-template")
    template.fill(template.input_value().replace('["title", "body"]', '["title"]'))
    page.get_by_role("button", name="Run side by side").click()
    page.wait_for_load_state("networkidle")
    assert page.locator("#tune-saved li").count() > 0 and page.locator("#tune-edited li").count() > 0
    assert "entered the top 10" in page.locator("#tune-summary").inner_text()
    shot(page, "tune")
    assert live_configuration.endpoints.count() == 1
    page.get_by_role("button", name="Save as new version").click()
    page.wait_for_load_state("networkidle")
    assert "Saved as endpoint version 2" in page.locator(".messages").inner_text()
    assert live_configuration.endpoint.template.count('"title"') == 1
