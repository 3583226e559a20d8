"""One rule for another team's rankings (access.may_see_rankings), on every path that shows them: private
unless the pool shares rankings (Pool.share_rankings); the owning team and admins always see them; scores
are shared either way."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import services
from judgments.models import Document, Pair, Query
from scoring.services import rescore_pool

SECRET = "only-in-bm25"  # a document only bm25 ranks: seen anywhere, bm25's ranking leaked


@pytest.fixture
def two_teams(pool, configuration, other_configuration, engineer, other_engineer, rater, site_admin):
    Document.objects.create(pool=pool, external_id=SECRET, title="Secret title", body="text")
    bm25 = services.record_run(
        configuration, {"q1": [SECRET, "d1", "d2"], "q2": ["d3"]}, source="api", submitted_by=engineer
    )
    dense = services.record_run(
        other_configuration, {"q1": ["d2", "d3"], "q2": ["d1"]}, source="api", submitted_by=other_engineer
    )
    query = Query.objects.get(pool=pool, external_id="q1")
    for docid, grade in (("d2", 3), ("d3", 1)):
        pair = Pair.objects.create(
            pool=pool, query=query, document=Document.objects.get(pool=pool, external_id=docid)
        )
        services.record_judgment(pair, rater, grade=grade)
    rescore_pool(pool)
    pool.members.add(site_admin)
    return {"pool": pool, "bm25": bm25, "dense": dense}


def _web(client, user, url):
    client.force_login(user)
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body.decode()


def _api(_client, user, url):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body.decode()


# (path, how to fetch it, status when private, status when visible)
PATHS = {
    "compare query": (
        lambda w: f"/pools/{w['pool'].name}/compare/query/?c=bm25&c=dense&q=q1",
        _web,
        200,
        200,
    ),
    "run page": (lambda w: f"/runs/{w['bm25'].pk}/", _web, 200, 200),
    "run download": (lambda w: f"/runs/{w['bm25'].pk}/download/", _web, 403, 200),
    "api rankings": (lambda w: f"/api/runs/{w['bm25'].pk}/rankings/", _api, 403, 200),
    "api trec": (lambda w: f"/api/runs/{w['bm25'].pk}/trec/", _api, 403, 200),
}


@pytest.mark.parametrize("path", PATHS)
def test_another_teams_ranking_is_private_by_default(client, two_teams, other_engineer, path):
    url, fetch, private_status, _ = PATHS[path]
    status, body = fetch(client, other_engineer, url(two_teams))
    assert status == private_status
    assert SECRET not in body


@pytest.mark.parametrize("path", PATHS)
def test_a_pool_that_shares_rankings_shows_them_to_its_engineers(client, two_teams, other_engineer, path):
    two_teams["pool"].share_rankings = True
    two_teams["pool"].save()
    url, fetch, _, shared_status = PATHS[path]
    status, body = fetch(client, other_engineer, url(two_teams))
    assert status == shared_status
    assert SECRET in body


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("who", ["engineer", "site_admin"])
def test_the_owning_team_and_admins_always_see_it(client, two_teams, request, path, who):
    user = request.getfixturevalue(who)
    url, fetch, _, shown_status = PATHS[path]
    status, body = fetch(client, user, url(two_teams))
    assert status == shown_status
    assert SECRET in body


def test_the_side_by_side_keeps_scores_and_the_own_side_but_no_hint_of_the_private_one(
    client, two_teams, other_engineer
):
    status, body = _web(
        client, other_engineer, f"/pools/{two_teams['pool'].name}/compare/query/?c=bm25&c=dense&q=q1"
    )
    assert status == 200
    assert "rankings are private in this pool" in body
    assert 'data-doc="d2"' in body and 'data-doc="d3"' in body  # dense, the viewer's own team
    assert " in A" not in body and "not in A" not in body  # no "where A ranks it" either
    assert 'data-field="ndcg"' in body  # the scores of both stay


def test_the_export_page_lists_other_teams_runs_only_when_shared(client, two_teams, other_engineer):
    url = f"/pools/{two_teams['pool'].name}/export/"
    download = f"/runs/{two_teams['bm25'].pk}/download/"
    assert download not in _web(client, other_engineer, url)[1]
    two_teams["pool"].share_rankings = True
    two_teams["pool"].save()
    assert download in _web(client, other_engineer, url)[1]


def test_an_admin_shares_rankings_in_the_pools_settings(client, two_teams, site_admin, other_engineer):
    pool = two_teams["pool"]
    client.force_login(site_admin)
    form = client.get(f"/campaign/pools/{pool.name}/").content.decode()
    assert 'name="share_rankings"' in form
    data = {
        "description": pool.description,
        "guidelines": pool.guidelines,
        "raters_per_pair": str(pool.raters_per_pair),
        "combine_rule": pool.combine_rule,
        "queue_access": pool.queue_access,
        "share_rankings": "on",
        **{f"label_{g}": f"Label {g}" for g in range(5)},
    }
    assert client.post(f"/campaign/pools/{pool.name}/", data).status_code == 302
    pool.refresh_from_db()
    assert pool.share_rankings
    status, body = _web(client, other_engineer, f"/runs/{two_teams['bm25'].pk}/download/")
    assert status == 200 and SECRET in body
