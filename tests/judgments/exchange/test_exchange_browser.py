"""In Debian's chromium: the import flow (upload → preview with marked problems → confirm), the run
upload of an engineer, and the API docs page working with every outside request blocked."""

import pytest

from judgments.models import Document, Run, Upload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_previews_a_bad_file_then_imports_a_good_one(
    browser_login, live_server, site_admin, pool, tmp_path
):
    page = browser_login(site_admin)
    page.goto(f"{live_server.url}/pools/robust/import/")
    page.select_option("select[name=kind]", "documents")
    assert page.is_hidden("select[name=configuration]")  # run options hide for other kinds
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "d7", "title": "ok"}\n{"id": "d 8"}\nnot json\n')
    page.set_input_files("input[name=file]", str(bad))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(".problem-box")
    assert page.locator("tr.bad").count() == 2
    assert "contains whitespace" in page.inner_text("#line-2")
    assert page.locator("text=Confirm import").count() == 0
    assert not Upload.objects.exists()  # a refused file is not stored
    page.click("text=Upload another file")
    page.wait_for_selector("#upload-form")

    good = tmp_path / "good.jsonl"
    good.write_bytes(b'{"id": "d7", "title": "Seven", "lang": "en"}\n')
    page.select_option("select[name=kind]", "documents")
    page.set_input_files("input[name=file]", str(good))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(".ok-box")
    assert not Document.objects.filter(external_id="d7").exists()
    page.click("text=Confirm import")
    page.wait_for_selector(".msg-success")
    assert Document.objects.get(pool=pool, external_id="d7").extra == {"lang": "en"}


def test_engineer_uploads_a_run_from_the_browser(
    browser_login, live_server, engineer, configuration, tmp_path
):
    page = browser_login(engineer)
    page.goto(f"{live_server.url}/pools/robust/")
    page.click("text=Upload a run")
    page.select_option("select[name=configuration]", str(configuration.pk))
    run_file = tmp_path / "bm25.trec"
    run_file.write_bytes(b"q1 Q0 d2 1 9 mine\nq1 Q0 d1 2 8 mine\n")
    page.set_input_files("input[name=file]", str(run_file))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector(".ok-box")
    page.click("text=Confirm import")
    page.wait_for_selector(".msg-success")
    assert Run.objects.get(configuration=configuration).tag == "mine"


def test_api_docs_work_without_internet(browser_login, live_server, engineer, pool):
    page = browser_login(engineer)
    outside = []

    def only_local(route):
        if route.request.url.startswith(live_server.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock")
    assert page.locator(".opblock").count() > 20
    assert "Judgment lists API" in page.inner_text(".swagger-ui .title")
    assert outside == []
