"""Content-Security-Policy: every response carries one, and the pages still work under it in a real
browser (Debian's chromium): no script, style or handler of ours is blocked."""

import re
from pathlib import Path

import pytest

from config.csp import DEFAULT_POLICY, HEADER, SWAGGER_POLICY

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def test_every_page_carries_the_policy(client, rater, pool):
    assert client.get("/accounts/login/")[HEADER] == DEFAULT_POLICY
    assert client.get("/healthz")[HEADER] == DEFAULT_POLICY
    client.force_login(rater)
    for url in ("/", f"/pools/{pool.name}/grade/", "/api/pools/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response[HEADER] == DEFAULT_POLICY, url
    assert "script-src 'self';" in DEFAULT_POLICY and "unsafe-eval" not in DEFAULT_POLICY


@pytest.mark.parametrize(
    "template", sorted(p.relative_to(TEMPLATES).as_posix() for p in TEMPLATES.rglob("*.html"))
)
def test_no_template_has_an_inline_script_style_or_event_handler(template):
    """The policy would block them: scripts go in static/js, handlers are attached there."""
    text = (TEMPLATES / template).read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), "inline <script>"
    assert not re.search(r"<style\b", text), "<style> element"
    assert not re.search(r"\son[a-z]+\s*=", text), "inline event handler"


def test_swagger_ui_gets_its_own_policy_with_no_inline_script(client, rater):
    client.force_login(rater)
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert page[HEADER] == SWAGGER_POLICY
    assert "<script>" not in page.content.decode()  # the init script is a file: ?script
    assert client.get("/api/docs/", {"script": ""}).status_code == 200


def test_the_schema_and_docs_need_a_login(client, rater):
    schema = client.get("/api/schema/")
    assert schema.status_code in (401, 403)
    assert b"openapi" not in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/accounts/login/")
    client.force_login(rater)
    assert client.get("/api/schema/").status_code == 200


# --- In a browser ------------------------------------------------------------------------------------

VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sourceFile || "") + ":" + e.lineNumber);
});
"""


def _watch(page):
    page.add_init_script(VIOLATIONS)
    return page


def _violations(page):
    return page.evaluate("window.__csp")


@pytest.fixture
def two_scored_configurations(pool, configuration, other_configuration, engineer, other_rater):
    from judgments import services
    from judgments.models import Document, Judgment, Pair, Query
    from scoring import services as scoring_services

    for qid, docid, grade in (("q1", "d2", 3), ("q2", "d3", 1)):
        pair = Pair.objects.create(
            pool=pool,
            query=Query.objects.get(external_id=qid),
            document=Document.objects.get(external_id=docid),
        )
        Judgment.objects.create(pair=pair, rater=other_rater, grade=grade)
    services.record_run(
        configuration, {"q1": ["d1", "d2"], "q2": ["d3"]}, source="api", submitted_by=engineer
    )
    services.record_run(other_configuration, {"q1": ["d2", "d1"], "q2": ["d3", "d1"]}, source="api")
    scoring_services.rescore_pool(pool)
    return pool


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pages_work_under_the_policy_in_a_browser(
    two_scored_configurations, rater, engineer, site_admin, browser_login, live_server
):
    from judgments.models import Judgment
    from judgments.rating import queue

    pool = two_scored_configurations
    queue.add_pairs(pool, [("q1", "d1")])

    page = _watch(browser_login(rater).context.new_page())
    page.goto(f"{live_server.url}/pools/{pool.name}/grade/")
    page.wait_for_selector("#grade-form")
    # The watcher sees a violation, and the browser enforces the policy: an injected inline script is blocked.
    page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'window.__ran = 1'; document.body.append(s); }"
    )
    page.wait_for_function("window.__csp.length > 0")
    assert page.evaluate("window.__ran") is None
    assert _violations(page)[0].startswith("script-src")
    page.evaluate("window.__csp = []")
    page.keyboard.press("3")  # grade.js: keys grade, Enter submits
    page.keyboard.press("Enter")
    page.wait_for_selector("text=Nothing to grade right now")
    assert Judgment.objects.get(rater=rater).grade == 3
    assert _violations(page) == []

    page = _watch(browser_login(engineer).context.new_page())
    page.goto(f"{live_server.url}/pools/{pool.name}/compare/?c=bm25&c=dense")
    page.wait_for_selector("#metric-select")
    with page.expect_navigation(timeout=10_000):
        page.select_option("#metric-select", "ndcg@3")  # data-autosubmit, no inline onchange
    assert "metric=ndcg%403" in page.url or "metric=ndcg@3" in page.url
    page.goto(f"{live_server.url}/pools/{pool.name}/leaderboard/")
    page.click("th >> text=Configuration")  # compare.js sorts
    assert page.locator("th[aria-sort]").count() == 1
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock", timeout=20_000)  # Swagger UI rendered the schema
    assert _violations(page) == []

    page = _watch(browser_login(site_admin).context.new_page())
    for url in (
        "/admin/",
        "/admin/judgments/pool/",
        f"/admin/judgments/pool/{pool.pk}/change/",
        "/campaign/",
        f"/campaign/pools/{pool.name}/",
        f"/campaign/pools/{pool.name}/people/",
    ):
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")
    assert _violations(page) == []
