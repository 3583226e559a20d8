"""The OpenAPI 3 schema served at /api/schema/ is valid, and documents every endpoint of the API."""

import pytest
from openapi_spec_validator import validate
from rest_framework.test import APIClient


@pytest.fixture
def schema(db, rater):
    client = APIClient()
    client.force_authenticate(rater)
    response = client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def test_schema_is_valid_openapi_3(schema):
    assert schema["openapi"].startswith("3.")
    validate(schema)  # raises on any violation of the OpenAPI specification


def test_schema_documents_every_endpoint_and_token_auth(schema):
    paths = set(schema["paths"])
    assert {
        "/api/pools/",
        "/api/pools/{name}/",
        "/api/pools/{name}/export/{kind}/",
        "/api/pools/{name}/import/{kind}/",
        "/api/queries/",
        "/api/queries/{id}/",
        "/api/documents/",
        "/api/documents/{id}/",
        "/api/configurations/",
        "/api/configurations/{id}/",
        "/api/runs/",
        "/api/runs/{id}/",
        "/api/runs/upload/",
        "/api/runs/{id}/rankings/",
        "/api/runs/{id}/trec/",
        "/api/judgments/",
        "/api/judgments/{id}/",
        "/api/scores/",
        "/api/scores/{id}/",
        "/api/scores/trec-eval/",
        "/api/scores/export/",
        "/api/token/",
    } <= paths
    assert "tokenAuth" in schema["components"]["securitySchemes"]
    problems = schema["paths"]["/api/runs/"]["post"]["responses"]["400"]["content"]["application/json"][
        "schema"
    ]
    assert problems["$ref"].endswith("/Problems")
    filters = {p["name"] for p in schema["paths"]["/api/scores/"]["get"]["parameters"]}
    assert {"pool", "configuration", "flavor", "query", "run", "limit", "offset"} <= filters
