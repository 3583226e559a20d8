"""The configuration page's endpoint panel, the endpoint form, the Capture button and a capture's progress:
what each persona sees and may do, and that no page ever shows a stored secret."""

import pytest
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from judgments.capture import services
from judgments.models import Run
from judgments.models.capture import CaptureJob
from tests.conftest import login

from .conftest import engine_ranking

SECRET = "pw-9f3e-hidden"


def page(client, configuration):
    return client.get(reverse("judgments:configuration-detail", args=[configuration.pk]))


@pytest.fixture
def guarded(live_configuration, engine):
    """The live configuration with a stored secret (basic auth), a secret header and a key in the URL."""
    services.set_endpoint(
        live_configuration,
        kind="elasticsearch",
        url=engine.search_url + "?api_key=" + SECRET + "-url",
        headers=[["X-Api-Token", SECRET + "-header"]],
        auth_kind="basic",
        auth_user="searcher",
        auth_secret=SECRET,
    )
    return live_configuration


def test_the_configuration_page_shows_the_endpoint_history_and_no_secret(client, engineer, guarded):
    response = page(login(client, engineer), guarded)
    html = response.content.decode()
    assert response.status_code == 200
    assert SECRET not in html
    assert "secret <strong>set</strong>" in html and "api_key=***" in html and "X-Api-Token: ***" in html
    assert 'data-version="2"' in html and 'data-version="1"' in html and "current" in html
    assert reverse("capture:endpoint-edit", args=[guarded.pk]) in html
    assert reverse("scoring:live-query", args=[guarded.pk]) in html
    assert 'name="capture"' in html  # the Capture button, for the team


def test_other_teams_see_the_endpoint_but_cannot_edit_or_capture(client, other_engineer, guarded):
    html = page(login(client, other_engineer), guarded).content.decode()
    assert "Search endpoint" in html and SECRET not in html and 'name="capture"' not in html
    assert client.get(reverse("capture:endpoint-edit", args=[guarded.pk])).status_code == 403
    assert client.post(reverse("capture:capture-start", args=[guarded.pk])).status_code == 403
    assert not CaptureJob.objects.exists()


def test_raters_and_outsiders_get_404(client, rater, outsider, guarded):
    for user in (rater, outsider):
        login(client, user)
        assert client.get(reverse("capture:endpoint-edit", args=[guarded.pk])).status_code in (403, 404)
        assert client.post(reverse("capture:capture-start", args=[guarded.pk])).status_code in (403, 404)
    assert not CaptureJob.objects.exists()


def test_the_endpoint_form_never_shows_the_secret_and_saving_it_unchanged_keeps_everything(
    client, engineer, guarded
):
    login(client, engineer)
    url = reverse("capture:endpoint-edit", args=[guarded.pk])
    html = client.get(url).content.decode()
    assert SECRET not in html and "Stored secret: <strong>set</strong>" in html
    form = {
        "kind": "elasticsearch",
        "url": guarded.endpoint.public()["url"],
        "method": "",
        "template": guarded.endpoint.template,
        "headers": "X-Api-Token: ***",
        "auth_kind": "basic",
        "auth_user": "searcher",
        "auth_secret": "",
        "depth": "100",
        "schedule": "daily",
    }
    response = client.post(url, form, follow=True)
    assert "The endpoint is unchanged (version 2). Schedule: every day." in response.content.decode()
    guarded.refresh_from_db()
    endpoint = guarded.endpoint
    assert (endpoint.version, endpoint.auth_secret, guarded.capture_schedule) == (2, SECRET, "daily")
    assert endpoint.url.endswith(SECRET + "-url") and endpoint.headers == [
        ["X-Api-Token", SECRET + "-header"]
    ]
    # a new URL and a new secret: version 3, the old versions kept
    response = client.post(
        url, {**form, "url": "http://127.0.0.1:9/docs/_search", "auth_secret": "new-one"}, follow=True
    )
    assert "Endpoint version 3 saved" in response.content.decode()
    assert list(guarded.endpoints.values_list("version", flat=True)) == [3, 2, 1]
    assert guarded.endpoint.auth_secret == "new-one" and "new-one" not in response.content.decode()


def test_a_bad_endpoint_form_says_why_and_stores_nothing(client, engineer, live_configuration):
    login(client, engineer)
    url = reverse("capture:endpoint-edit", args=[live_configuration.pk])
    response = client.post(url, {"kind": "json", "url": "http://127.0.0.1:9/s", "template": '{"q": "{{query}}"}',
                                 "depth": "10", "schedule": "none"})  # fmt: skip
    assert response.status_code == 200 and "needs hits path" in response.content.decode()
    response = client.post(url, {"kind": "elasticsearch", "url": "http://h/x", "template": '{"q": "{{qeury}}"}',
                                 "depth": "10", "schedule": "none"})  # fmt: skip
    assert "unknown placeholder {{qeury}}" in response.content.decode()
    assert live_configuration.endpoints.count() == 1


def test_the_capture_button_queues_a_background_capture(
    client, engineer, live_configuration, django_capture_on_commit_callbacks
):
    login(client, engineer)
    with django_capture_on_commit_callbacks(execute=True):  # the task is enqueued once the job is committed
        response = client.post(
            reverse("capture:capture-start", args=[live_configuration.pk]),
            {"depth": "5", "concurrency": "2", "keep_partial": "on"},
        )
    assert response.status_code == 302 and response["Location"].endswith("#capture")
    job = CaptureJob.objects.get()
    assert (job.status, job.depth, job.concurrency, job.keep_partial, job.requested_by) == (
        "queued",
        5,
        2,
        True,
        engineer,
    )
    (task,) = DBTaskResult.objects.all()
    assert (task.task_path, task.args_kwargs["args"]) == (
        "judgments.capture.tasks.capture_configuration",
        [job.pk],
    )
    html = page(client, live_configuration).content.decode()
    assert "Waiting for a worker" in html and 'hx-trigger="every 1s"' in html
    # a second press while it is queued is refused
    response = client.post(
        reverse("capture:capture-start", args=[live_configuration.pk]),
        {"depth": "5", "concurrency": "2"},
        follow=True,
    )
    assert "is queued already" in response.content.decode() and CaptureJob.objects.count() == 1


def test_progress_fragment_and_the_reload_when_it_ends(client, engineer, live_configuration):
    login(client, engineer)
    job = services.start_capture(live_configuration, trigger=CaptureJob.Trigger.WEB)
    url = reverse("capture:capture-job", args=[job.pk])
    fragment = client.get(url + "?polling=1", HTTP_HX_REQUEST="true")
    assert "HX-Refresh" not in fragment and 'data-status="queued"' in fragment.content.decode()
    services.run_capture(job)
    fragment = client.get(url + "?polling=1", HTTP_HX_REQUEST="true")
    assert fragment["HX-Refresh"] == "true" and 'data-status="succeeded"' in fragment.content.decode()
    full = client.get(url).content.decode()
    assert f'href="/runs/{Run.objects.get().pk}/">Open the run' in full and 'http-equiv="refresh"' not in full


def test_a_finished_capture_shows_the_runs_ndcg_and_the_change_since_the_previous_run(
    client, engineer, rater, live_configuration, engine, django_capture_on_commit_callbacks
):
    from judgments.models import Document, Pair, Query
    from judgments.services import record_judgment, record_run

    pair = Pair.objects.create(
        pool=live_configuration.pool,
        query=Query.objects.get(external_id="q1"),
        document=Document.objects.get(external_id="solar-1"),
    )
    record_judgment(pair, rater, grade=3)
    with django_capture_on_commit_callbacks(execute=True):
        before = record_run(live_configuration, {"q1": ["bike-1", "solar-1"]}, source="api")  # NDCG 1/log2(3)
        job = services.run_capture(services.start_capture(live_configuration, trigger=CaptureJob.Trigger.WEB))
    html = page(login(client, engineer), live_configuration).content.decode()
    # the engine ranks solar-1 first: NDCG@10 = 1 over the one graded query, +0.369 since the API run
    assert job.status == "succeeded"
    assert "<strong>1.000</strong>" in html and f"+0.369</span> since run #{before.pk}" in html
    judged = 100 // min(10, len(engine_ranking(engine, "solar panels")))  # solar-1 alone is graded
    assert f"judged@10 {judged}%" in html and "over 1 graded query" in html


def test_cancel_a_queued_capture(client, engineer, other_engineer, live_configuration):
    job = services.start_capture(live_configuration, trigger=CaptureJob.Trigger.WEB)
    login(client, other_engineer)
    assert client.post(reverse("capture:capture-cancel", args=[job.pk])).status_code == 403
    login(client, engineer)
    client.post(reverse("capture:capture-cancel", args=[job.pk]))
    job.refresh_from_db()
    assert job.status == "cancelled" and "nothing was stored" in job.message


def test_the_run_page_traces_a_captured_run_to_its_endpoint_and_lists_missing_queries(
    client, engineer, live_configuration
):
    from judgments.models import Query

    Query.objects.create(pool=live_configuration.pool, external_id="q9", text="")
    job = services.start_capture(live_configuration, trigger=CaptureJob.Trigger.WEB, keep_partial=True)
    job = services.run_capture(job)
    html = login(client, engineer).get(reverse("judgments:run-detail", args=[job.run.pk])).content.decode()
    assert "Captured from endpoint version 1" in html and "multi_match" in html
    assert "Partial run: 1 query missing (they score 0)" in html and "q9" in html
    config_html = page(client, live_configuration).content.decode()
    assert "Captured from the search endpoint (v1)" in config_html
