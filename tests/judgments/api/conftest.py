"""The API tests' world, shared with tests/scoring/test_api.py: every API endpoint is tried under every
role, for the status AND the data (or its absence).

Roles: site_admin (admin), engineer (team "relevance", owns configuration bm25), other_engineer (team
"other-team", owns dense), rater and other_rater (members of pool robust), outsider (logged in, no role,
no pool) and anonymous. A second pool, "secret", has no member but the admin sees it.
Clients authenticate with their API token, as scripts do.
"""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import pool_keys, services
from judgments.models import Document, Pool, Query
from scoring.services import rescore_pool

ROLES = ("site_admin", "engineer", "other_engineer", "rater", "other_rater", "outsider", "anonymous")


@pytest.fixture
def world(
    pool,
    configuration,
    other_configuration,
    run,
    engineer,
    other_engineer,
    rater,
    other_rater,
    site_admin,
    outsider,
):
    """The conftest pool with two configurations' runs, two raters' judgments and stored scores."""
    other_run = services.record_run(
        other_configuration, {"q1": ["d2", "d1"], "q2": ["d1"]}, source="api", submitted_by=other_engineer
    )
    pair = {(p.query.external_id, p.document.external_id): p for p in services_pairs(pool)}
    services.record_judgment(pair[("q1", "d1")], rater, grade=3)
    services.record_judgment(pair[("q1", "d2")], rater, grade=1)
    services.record_judgment(pair[("q1", "d1")], other_rater, grade=2)
    services.record_judgment(pair[("q2", "d3")], other_rater, grade=4)
    secret = Pool.objects.create(name="secret")
    Query.objects.create(pool=secret, external_id="s1", text="secret query")
    Document.objects.create(pool=secret, external_id="sd1", title="Secret", body="secret body")
    rescore_pool(pool)
    return {"pool": pool, "secret": secret, "run": run, "other_run": other_run}


def services_pairs(pool):
    from judgments.models import Pair

    keys = {(q.pk, d.pk) for q in pool.queries.all() for d in pool.documents.all()}
    pool_keys.ensure_pairs(pool, keys)
    return Pair.objects.in_pool(pool).select_related("query", "document", "pool")


@pytest.fixture
def client_for(request, world):
    def make(role: str) -> APIClient:
        client = APIClient()
        if role != "anonymous":
            user = request.getfixturevalue(role)
            token, _ = Token.objects.get_or_create(user=user)
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


def results(response) -> list:
    body = response.json()
    return body["results"] if isinstance(body, dict) and "results" in body else body


def streamed(response) -> str:
    return b"".join(response.streaming_content).decode()


def check(role, response, expected_status, expected):
    assert response.status_code == expected_status, (
        role,
        response.status_code,
        getattr(response, "data", None),
    )
    if expected_status >= 400:
        body = response.content.decode() if not response.streaming else ""
        for leak in ("q1", "d1", "bm25", "rita_rater", "secret"):
            assert f'"{leak}"' not in body, (role, leak, body)
