"""The capture API: set an endpoint (a new version; secrets write-only), start a capture, poll it, cancel
it; team-scoped like the rest of the API, and documented in the OpenAPI schema."""

import pytest
from django_tasks_db.models import DBTaskResult
from openapi_spec_validator import validate
from rest_framework.test import APIClient

from judgments.capture import services
from judgments.models.capture import CaptureJob

SECRET = "api-Key-77x-hidden"


def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def endpoint_body(configuration, engine, **extra):
    return {"configuration": configuration.pk, "kind": "elasticsearch", "url": engine.search_url, **extra}


def test_set_an_endpoint_version_with_a_write_only_secret(engineer, live_configuration, engine):
    client = api(engineer)
    body = endpoint_body(
        live_configuration, engine, auth_kind="apikey", secret=SECRET, depth=20, schedule="weekly"
    )
    response = client.post("/api/endpoints/", body, format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["version"], data["depth"], data["secret_state"], data["auth_kind"]) == (
        2,
        20,
        "set",
        "apikey",
    )
    assert "secret" not in data and SECRET not in response.content.decode()
    assert data["template"].startswith("{") and '"size": {{depth}}' in data["template"]
    live_configuration.refresh_from_db()
    assert (
        live_configuration.endpoint.auth_secret == SECRET and live_configuration.capture_schedule == "weekly"
    )
    # the same definition again, without the secret: kept, nothing new
    again = client.post("/api/endpoints/", {**body, "secret": None}, format="json")
    assert again.status_code == 200 and again.json()["version"] == 2
    listed = client.get("/api/endpoints/", {"configuration": live_configuration.pk})
    assert [row["version"] for row in listed.json()["results"]] == [2, 1]
    assert SECRET not in listed.content.decode()
    assert SECRET not in client.get(f"/api/endpoints/{data['id']}/").content.decode()


def test_a_bad_endpoint_is_a_400_naming_the_problem(engineer, live_configuration, engine):
    response = api(engineer).post(
        "/api/endpoints/",
        endpoint_body(live_configuration, engine, kind="json", template='{"q": "{{query}}"}'),
        format="json",
    )
    assert response.status_code == 400 and "hits path" in response.json()["detail"]
    response = api(engineer).post(
        "/api/endpoints/", endpoint_body(live_configuration, engine, kind="mongo"), format="json"
    )
    assert response.status_code == 400 and response.json()["problems"][0]["field"] == "kind"
    assert live_configuration.endpoints.count() == 1


def test_other_teams_and_raters_cannot_set_or_capture(
    other_engineer, rater, outsider, live_configuration, engine
):
    response = api(other_engineer).post(
        "/api/endpoints/", endpoint_body(live_configuration, engine, depth=5), format="json"
    )
    assert response.status_code == 403
    response = api(other_engineer).post(
        "/api/captures/", {"configuration": live_configuration.pk}, format="json"
    )
    assert response.status_code == 403
    for user in (rater, outsider):
        assert api(user).get("/api/endpoints/").status_code == 403
        assert (
            api(user)
            .post("/api/captures/", {"configuration": live_configuration.pk}, format="json")
            .status_code
            == 403
        )
    assert live_configuration.endpoints.count() == 1 and not CaptureJob.objects.exists()


def test_an_engineer_outside_the_pool_sees_no_endpoint_of_it(django_user_model, live_configuration):
    from django.contrib.auth.models import Group

    stranger = django_user_model.objects.create_user("stranger")
    stranger.groups.add(Group.objects.get(name="engineer"))
    assert api(stranger).get("/api/endpoints/").json()["results"] == []
    endpoint = live_configuration.endpoint
    assert api(stranger).get(f"/api/endpoints/{endpoint.pk}/").status_code == 404
    response = api(stranger).post("/api/captures/", {"configuration": live_configuration.pk}, format="json")
    assert response.status_code == 400 and response.json()["problems"][0]["field"] == "configuration"


def test_start_poll_and_cancel_a_capture(engineer, live_configuration, django_capture_on_commit_callbacks):
    client = api(engineer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/captures/",
            {"configuration": live_configuration.pk, "depth": 5, "keep_partial": True},
            format="json",
        )
    assert response.status_code == 202
    started = response.json()
    assert (started["status"], started["depth"], started["keep_partial"], started["total"]) == (
        "queued",
        5,
        True,
        4,
    )
    assert DBTaskResult.objects.get().args_kwargs["args"] == [started["id"]]
    assert (
        client.post("/api/captures/", {"configuration": live_configuration.pk}, format="json").status_code
        == 400
    )
    # the worker runs it; polling shows the outcome
    services.run_capture(CaptureJob.objects.get(pk=started["id"]))
    polled = client.get(f"/api/captures/{started['id']}/").json()
    assert (
        polled["status"] == "succeeded"
        and polled["run"]
        and polled["done"] == 4
        and polled["endpoint_version"] == 1
    )
    assert (
        client.get("/api/runs/", {"configuration": live_configuration.pk}).json()["results"][0]["endpoint"]
        == live_configuration.endpoint.pk
    )
    # a new one, cancelled before a worker takes it
    second = client.post("/api/captures/", {"configuration": live_configuration.pk}, format="json").json()
    cancelled = client.post(f"/api/captures/{second['id']}/cancel/").json()
    assert cancelled["status"] == "cancelled" and cancelled["cancel_requested"]


@pytest.fixture
def schema(db, rater):
    client = APIClient()
    client.force_authenticate(rater)  # the schema needs a login
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def test_the_schema_documents_the_capture_api(schema):
    validate(schema)
    assert {"/api/endpoints/", "/api/endpoints/{id}/", "/api/captures/", "/api/captures/{id}/",
            "/api/captures/{id}/cancel/"} <= set(schema["paths"])  # fmt: skip
    assert "202" in schema["paths"]["/api/captures/"]["post"]["responses"]
    endpoint = schema["components"]["schemas"]["Endpoint"]["properties"]
    assert endpoint["secret"].get("writeOnly") and endpoint["secret_state"].get("readOnly")
