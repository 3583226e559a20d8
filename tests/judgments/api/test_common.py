"""What every API endpoint shares (judgments/api/common.py, config/api_urls.py): the schema and docs
pages, token and session logins, roles read on every request."""

import pytest
from django.contrib.auth.models import Group
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.judgments.api.conftest import ROLES, results

# --- Schema, docs and tokens -----------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_schema_is_served_to_every_signed_in_user_only(client_for, role):
    schema = client_for(role).get("/api/schema/", {"format": "json"})
    if role == "anonymous":
        assert schema.status_code in (401, 403)
        assert b"openapi" not in schema.content
    else:
        assert schema.status_code == 200
        assert schema.json()["openapi"].startswith("3.")


def test_docs_page_needs_a_login_and_loads_nothing_from_a_cdn(client, rater, pool):
    anonymous = client.get("/api/docs/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    client.force_login(rater)
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"/static/vendor/swagger-ui/swagger-ui-bundle.js" in docs.content
    assert b"unpkg" not in docs.content and b"cdn.jsdelivr" not in docs.content


def test_token_obtained_with_a_password_reads_the_api(engineer, pool):
    client = APIClient()
    response = client.post(
        "/api/token/", {"username": engineer.username, "password": "correct-horse-battery"}, format="json"
    )
    assert response.status_code == 200
    token = response.json()["token"]
    assert Token.objects.get(user=engineer).key == token
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert [p["name"] for p in results(client.get("/api/pools/"))] == ["robust"]
    assert (
        APIClient().post("/api/token/", {"username": engineer.username, "password": "wrong"}).status_code
        == 400
    )


def test_session_login_reads_the_api_too(client, rater, pool):
    client.force_login(rater)
    assert client.get("/api/pools/").json()["results"][0]["name"] == "robust"
    assert client.get("/api/runs/").status_code == 403


def test_role_change_takes_effect(client_for, rater):
    rater.groups.add(Group.objects.get(name="engineer"))
    assert client_for("rater").get("/api/runs/").status_code == 200
