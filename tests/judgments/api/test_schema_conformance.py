"""The OpenAPI schema (drf-spectacular) matches what the API answers: schemathesis generates requests
for every operation from the schema itself, and checks that no answer is a server error and that every
answer's status, body and content type are what the schema says. A bounded run CI can afford (a few
examples an operation, deterministic), as an admin on a pool with runs, judgments and scores, with the
pool's own names and ids mixed into the generated paths so that the answers are not all 404s.
The full run (more examples, every check) is in docs/api.md."""

import json
import zlib

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, response_schema_conformance

from config.wsgi import application

CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]


def _api_schema():
    """The schema as /api/schema/ serves it (generating it reads no table)."""
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.renderers import OpenApiJsonRenderer

    document = SchemaGenerator().get_schema(request=None, public=True)
    return schemathesis.openapi.from_dict(json.loads(OpenApiJsonRenderer().render(document)))


schema = _api_schema()


@pytest.fixture
def wsgi_app():
    """The WSGI application as a real server runs it, minus closing the database connection around
    each request (the test's transaction lives on it), as Django's test client does."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield application
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


def _known_values(world) -> dict:
    from judgments.models import Judgment

    return {
        "name": world["pool"].name,
        "pool": world["pool"].name,
        "id": world["run"].pk,
        "pk": world["run"].pk,
        "judgment": Judgment.objects.values_list("pk", flat=True).first(),
    }


@schema.parametrize()
@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_every_answer_matches_the_schema(case, world, site_admin, wsgi_app):
    from judgments import services

    # A run nobody submitted (a command's import): its submitted_by is null, as the schema must say.
    services.record_run(world["run"].configuration, {"q1": ["d1"]}, source="api")
    token = Token.objects.get_or_create(user=site_admin)[0].key
    # Every other example on the pool's own names and ids: success answers get checked too.
    if (
        case.path_parameters
        and zlib.crc32(json.dumps(case.path_parameters, sort_keys=True, default=str).encode()) % 2
    ):
        known = _known_values(world)
        for key in list(case.path_parameters):
            if key in known and key != "kind":
                case.path_parameters[key] = known[key]
    response = case.call(app=wsgi_app, headers={"Authorization": f"Token {token}"})
    case.validate_response(response, checks=CHECKS)


def test_paging_values_past_what_the_database_holds_are_clamped(client, site_admin, world):
    """Found by schemathesis: a 30-digit limit or offset was a 500 (bigint out of range)."""
    client.force_login(site_admin)
    huge = "395408825824472018555978645504"
    for url in ("/api/configurations/", "/api/runs/", "/api/queries/", "/api/scores/"):
        assert client.get(url, {"limit": huge}).status_code == 200, url
        page = client.get(url, {"offset": huge})
        assert page.status_code == 200 and page.json()["results"] == [], url


def test_a_body_that_is_not_json_gets_the_documented_problems_answer(client, site_admin, world):
    client.force_login(site_admin)
    response = client.post("/api/endpoints/", b"\xb8not json", content_type="application/json")
    assert response.status_code == 400
    assert (
        response.json()["problems"][0]["field"] == "body" and "JSON parse error" in response.json()["detail"]
    )


def test_fields_null_for_deleted_or_absent_accounts_are_nullable_in_the_schema():
    """Capture.requested_by and Run.submitted_by are null once the account is deleted (or for a run a
    command imported): the schema said string."""
    components = json.loads(json.dumps(schema.raw_schema))["components"]["schemas"]
    assert components["Capture"]["properties"]["requested_by"]["nullable"] is True
    assert components["Run"]["properties"]["submitted_by"]["nullable"] is True


def test_a_nul_in_a_name_in_a_body_is_a_400(client, site_admin, world):
    """Found by schemathesis: a team or pool name with a NUL in a form body was a 500."""
    client.force_login(site_admin)
    response = client.post("/api/configurations/", {"pool": "robust", "team": "x\x00", "name": "n"})
    assert response.status_code == 400 and "team" in response.json()
    response = client.post("/api/queries/", {"pool": "a\x00b", "external_id": "q9", "text": "t"})
    assert response.status_code == 400 and "pool" in response.json()
