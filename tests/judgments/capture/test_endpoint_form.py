"""Create -> endpoint -> test -> save as one path: the New configuration button, the endpoint form's
fields per kind and default templates, "Test" against the unsaved form (hits, the engine's error, or the
phase that failed; nothing stored), and the endpoint history's diff and restore. No secret on any page."""

import re
import socket

import pytest
from django.urls import reverse

from judgments.capture import services
from judgments.endpoints.engines import ES_DEFAULT_TEMPLATE, SOLR_DEFAULT_TEMPLATE
from judgments.models import SearchConfiguration
from judgments.models.capture import SearchEndpoint
from tests.conftest import login

from .conftest import engine_ranking, es_error, json_response, solr_answer

SECRET = "s3cr3t-9f3e"


def form_data(url, **changes):
    data = {"kind": "elasticsearch", "url": url, "method": "", "template": ES_DEFAULT_TEMPLATE, "headers": "",
            "auth_kind": "", "depth": "100", "schedule": "none", "test_query": "solar panels"}  # fmt: skip
    return {**data, **changes}


def test_new_configuration_leads_on_to_set_a_search_endpoint(client, engineer, search_pool, team):
    login(client, engineer)
    listing = client.get(reverse("judgments:configuration-list", args=[search_pool.name])).content.decode()
    new = reverse("exchange:configuration-new", args=[search_pool.name])
    assert f'href="{new}" id="new-configuration">New configuration<' in listing
    response = client.post(new, {"name": "hybrid", "team": team.pk, "next": "endpoint"}, follow=True)
    configuration = SearchConfiguration.objects.get(name="hybrid")
    assert response.redirect_chain[-1][0] == reverse("capture:endpoint-edit", args=[configuration.pk])
    html = response.content.decode()
    assert "Set a search endpoint for hybrid" in html
    # The form starts from the first kind's default template, and knows every kind's.
    assert "&quot;multi_match&quot;" in html.split('name="template"')[1].split("</textarea>")[0]
    assert '"solr": "q={{query}}\\u0026rows={{depth}}' in html
    assert 'id="starting-templates"' in html and 'data-field="hits_path"' in html


def test_a_rater_sees_no_new_configuration_button(client, rater, search_pool):
    login(client, rater)
    page = client.get(reverse("judgments:configuration-list", args=[search_pool.name]))
    assert page.status_code in (403, 404) or "new-configuration" not in page.content.decode()


def test_test_runs_the_unsaved_form_and_stores_nothing(client, engineer, live_configuration, engine):
    login(client, engineer)
    url = reverse("capture:endpoint-edit", args=[live_configuration.pk])
    template = ES_DEFAULT_TEMPLATE.replace('["title", "body"]', '["title"]')
    response = client.post(url, form_data(engine.search_url, template=template, action="test"))
    html = response.content.decode()
    assert response.status_code == 200 and 'id="test-result"' in html and "Nothing was stored" in html
    expected = engine_ranking(engine, "solar panels")  # title and body; the tested template: title only
    shown = [line.split('<span class="mono">')[1].split("<")[0] for line in html.split("<li>")[1:]]
    assert shown and shown[0].startswith("solar") and set(shown) <= set(expected)
    assert "Solar panels for the home" in html  # the pool's title beside the id
    assert list(live_configuration.endpoints.values_list("version", flat=True)) == [1]


def test_test_shows_the_engines_error_and_a_kind_s_fields_only_count(
    client, engineer, live_configuration, httpserver
):
    httpserver.expect_request("/docs/_search").respond_with_response(json_response(es_error(), status=400))
    login(client, engineer)
    url = reverse("capture:endpoint-edit", args=[live_configuration.pk])
    # hits_path is a json-only field: given with kind elasticsearch it is ignored, not used
    data = form_data(httpserver.url_for("/docs/_search"), hits_path="nowhere", action="test")
    html = client.post(url, data).content.decode()
    assert "The test failed:" in html and "failed to create query" in html
    assert SearchEndpoint.objects.count() == 1


@pytest.fixture
def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_names_the_phase_and_stores_nothing(
    client, engineer, live_configuration, closed_port
):
    login(client, engineer)
    url = reverse("capture:endpoint-edit", args=[live_configuration.pk])
    html = client.post(
        url, form_data(f"http://127.0.0.1:{closed_port}/docs/_search", action="test")
    ).content.decode()
    assert '<span id="test-error">could not connect to the engine: ' in html
    assert SearchEndpoint.objects.count() == 1


def test_a_silent_endpoint_names_waiting(client, engineer, live_configuration, monkeypatch):
    from judgments.capture import views

    monkeypatch.setattr(views, "TEST_TIMEOUT", 0.3)
    with socket.socket() as server:  # accepts the connection, never answers
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        login(client, engineer)
        url = reverse("capture:endpoint-edit", args=[live_configuration.pk])
        html = client.post(url, form_data(f"http://127.0.0.1:{port}/s", action="test")).content.decode()
    assert "timed out after 0.3 s waiting for the answer" in html
    assert SearchEndpoint.objects.count() == 1


def test_a_solr_test_with_a_typed_secret_uses_it_and_never_shows_it(
    client, engineer, live_configuration, httpserver
):
    httpserver.expect_request("/solr/docs/select").respond_with_handler(
        lambda request: (
            json_response(solr_answer([("solar-1", 2.5), ("x-9", 1.0)]))
            if request.headers.get("Authorization", "").startswith("Basic ")
            else json_response({"error": {"msg": "no auth", "code": 401}}, status=401)
        )
    )
    login(client, engineer)
    url = reverse("capture:endpoint-edit", args=[live_configuration.pk])
    data = form_data(httpserver.url_for("/solr/docs/select"), kind="solr", template=SOLR_DEFAULT_TEMPLATE,
                     auth_kind="basic", auth_user="me", auth_secret=SECRET, action="test")  # fmt: skip
    html = client.post(url, data).content.decode()
    assert "<strong>2 hits</strong>" in html and "not in the pool yet" in html
    assert SECRET not in html and "type it again before saving" in html
    assert SearchEndpoint.objects.count() == 1


def test_history_diff_shows_what_changed_without_secrets_and_restore_makes_a_new_version(
    client, engineer, other_engineer, live_configuration, engine
):
    services.set_endpoint(live_configuration, kind="elasticsearch", url=engine.search_url,
                          template=ES_DEFAULT_TEMPLATE.replace('"body"', '"body^2"'),
                          auth_kind="bearer", auth_secret=SECRET, headers=[["X-Api-Key", SECRET + "-h"]])  # fmt: skip
    services.set_endpoint(live_configuration, kind="elasticsearch", url=engine.search_url,
                          template=ES_DEFAULT_TEMPLATE.replace('"body"', '"body^3"'),
                          auth_kind="bearer", auth_secret=SECRET + "-2", headers=[["X-Api-Key", SECRET + "-h"]])  # fmt: skip
    login(client, engineer)
    detail = client.get(
        reverse("judgments:configuration-detail", args=[live_configuration.pk])
    ).content.decode()
    history = reverse("capture:endpoint-history", args=[live_configuration.pk])
    assert history in detail
    html = client.get(history).content.decode()  # v2 -> v3 by default
    assert SECRET not in html
    assert '<span class="del">−     &quot;query&quot;' not in html  # unchanged lines are not marked
    assert (
        "body^2" in html
        and "body^3" in html
        and '<span class="del">' in html
        and '<span class="add">' in html
    )
    assert "set (a different secret)" in html
    html = client.get(history + "?a=1&b=3").content.decode()
    assert "+ bearer" in html and "X-Api-Key: ***" in html and SECRET not in html
    # Another team may look but not restore.
    login(client, other_engineer)
    assert (
        client.post(
            reverse("capture:endpoint-restore", args=[live_configuration.pk]), {"version": 1}
        ).status_code
        == 403
    )
    login(client, engineer)
    response = client.post(
        reverse("capture:endpoint-restore", args=[live_configuration.pk]), {"version": 2}, follow=True
    )
    assert "Version 2 restored as version 4" in response.content.decode()
    restored, old = live_configuration.endpoints.get(version=4), live_configuration.endpoints.get(version=2)
    assert restored.definition() == old.definition() and restored.auth_secret == SECRET
    assert live_configuration.endpoints.count() == 4
    response = client.post(
        reverse("capture:endpoint-restore", args=[live_configuration.pk]), {"version": 99}, follow=True
    )
    assert "Nothing restored: bm25 has no endpoint version 99." in response.content.decode()
    assert live_configuration.endpoints.count() == 4


def test_an_endpoint_that_hangs_up_names_the_phase(client, engineer, live_configuration):
    import threading

    with socket.socket() as server:  # accepts, reads nothing, closes: the answer never comes
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def hang_up():
            connection, _ = server.accept()
            connection.close()

        threading.Thread(target=hang_up, daemon=True).start()
        login(client, engineer)
        url = reverse("capture:endpoint-edit", args=[live_configuration.pk])
        html = client.post(url, form_data(f"http://127.0.0.1:{port}/s", action="test")).content.decode()
    # Whether the engine's hang-up reaches us while sending or while waiting is a race: either is named.
    assert re.search(
        r'<span id="test-error">the connection broke while (sending the request|waiting for the answer): ',
        html,
    )
    assert SearchEndpoint.objects.count() == 1
