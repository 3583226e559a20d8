"""A document id that only another team's private run brought into the pool tells what that run
returned: it is listed (API documents, the documents export, web and API) only to those who may see
that configuration's rankings (access.documents_for follows access.may_see_rankings). Queued for
judging, or given content by an admin, it is pool material and everyone's."""

import io

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import pool_keys, services
from judgments.exchange.imports.documents import import_documents
from judgments.exchange.imports.fastrun import import_run_fast
from judgments.models import Document, Pair, Query

SECRET = "only-bm25-returns-this"
FAST_SECRET = "only-bm25-file-returns-this"


def _api(user, url):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body.decode()


def _web(client, user, url):
    client.force_login(user)
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body.decode()


@pytest.fixture
def private(pool, configuration, other_configuration, engineer, other_engineer, site_admin):
    services.record_run(
        configuration, {"q1": [SECRET, "d1"], "q2": ["d2"]}, source="api", submitted_by=engineer
    )
    services.record_run(other_configuration, {"q1": ["d3", "d1"]}, source="api", submitted_by=other_engineer)
    run = import_run_fast(
        configuration, f"q2 Q0 {FAST_SECRET} 1 9 bm25\nq2 Q0 d1 2 8 bm25\n".encode(), name="r"
    )
    assert run is not None  # the fast path stored it
    pool.members.add(site_admin)
    return pool


def _listed(user, client, pool) -> dict[str, bool]:
    status, listed = _api(user, f"/api/documents/?pool={pool.name}&limit=1000")
    assert status == 200
    _, one = _api(user, f"/api/documents/?external_id={SECRET}")
    _, api_export = _api(user, f"/api/pools/{pool.name}/export/documents/")
    _, web_export = _web(client, user, f"/pools/{pool.name}/export/documents/")
    return {
        "list": SECRET in listed and FAST_SECRET in listed,
        "none in list": SECRET not in listed and FAST_SECRET not in listed,
        "by id": SECRET in one,
        "api export": SECRET in api_export and FAST_SECRET in api_export,
        "web export": SECRET in web_export,
        "others listed": '"d3"' in listed,
    }


def test_another_teams_private_run_introduced_ids_are_hidden(client, private, other_engineer, rater):
    seen = _listed(other_engineer, client, private)
    assert seen["none in list"] and not seen["by id"] and not seen["api export"] and not seen["web export"]
    assert seen["others listed"]  # only those ids are hidden
    status, listed = _api(rater, f"/api/documents/?pool={private.name}")
    assert status == 200 and SECRET not in listed and FAST_SECRET not in listed and "d1" in listed


@pytest.mark.parametrize("who", ["engineer", "site_admin"])
def test_the_owning_team_and_admins_see_them(client, private, request, who):
    seen = _listed(request.getfixturevalue(who), client, private)
    assert seen["list"] and seen["by id"] and seen["api export"] and seen["web export"]


def test_a_pool_that_shares_rankings_lists_them_to_its_engineers_not_raters(
    client, private, other_engineer, rater
):
    private.share_rankings = True
    private.save()
    seen = _listed(other_engineer, client, private)
    assert seen["list"] and seen["by id"] and seen["api export"]
    assert SECRET not in _api(rater, f"/api/documents/?pool={private.name}")[1]


def test_queued_or_given_content_it_is_everyones(client, private, other_engineer, rater):
    query = Query.objects.get(pool=private, external_id="q1")
    Pair.objects.create(
        pool=private, query=query, document=Document.objects.get(pool=private, external_id=SECRET)
    )
    assert SECRET in _api(other_engineer, f"/api/documents/?pool={private.name}")[1]
    assert SECRET in _api(rater, f"/api/documents/?pool={private.name}")[1]
    assert FAST_SECRET not in _api(rater, f"/api/documents/?pool={private.name}")[1]
    line = f'{{"id": "{FAST_SECRET}", "title": "Now public", "body": "b"}}\n'
    import_documents(private, io.BytesIO(line.encode()), name="docs.jsonl")
    assert Document.objects.get(pool=private, external_id=FAST_SECRET).introduced_by is None
    assert FAST_SECRET in _api(other_engineer, f"/api/documents/?pool={private.name}")[1]


def test_who_introduced_a_document_is_recorded_on_every_run_path(private, configuration):
    introduced = dict(Document.objects.filter(pool=private).values_list("external_id", "introduced_by"))
    assert introduced[SECRET] == introduced[FAST_SECRET] == configuration.pk
    assert introduced["d1"] is None  # the pool's own documents
    # the temporary-table path of ensure_documents (5,000 ids or more)
    many = [f"bulk-{i}" for i in range(5000)]
    pool_keys.ensure_documents(private, many, introduced_by=configuration)
    assert Document.objects.filter(pool=private, introduced_by=configuration).count() == 5002
