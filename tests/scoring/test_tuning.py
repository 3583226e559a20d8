"""Tune without saving, and explain: the saved endpoint and an edited template side by side with grades,
NDCG@10 and what moved, "Save as new version", and the engines' score explanations read as Elasticsearch,
OpenSearch (explain) and Solr (debugQuery) document them, from pytest-httpserver."""

import json

import pytest
from django.urls import reverse
from werkzeug import Response

from judgments.capture import services
from judgments.endpoints.engines import ES_DEFAULT_TEMPLATE
from judgments.models import Document
from tests.conftest import login
from tests.judgments.capture.conftest import engine_ranking, es_answer, solr_answer

from .test_live import grade, live

SECRET = "tok-4471-hidden"


def tune(client, configuration, **data):
    return client.post(reverse("scoring:live-tune", args=[configuration.pk]), data)


def test_side_by_side_runs_the_edit_without_saving_and_save_keeps_it(
    client, engineer, rater, live_configuration, engine
):
    pool = live_configuration.pool
    grade(pool, rater, "q1", "solar-1", 3)
    grade(pool, rater, "q1", "solar-2", 1)
    grade(pool, rater, "q1", "solar-3", 0)
    login(client, engineer)
    edited = ES_DEFAULT_TEMPLATE.replace('["title", "body"]', '["title"]')
    response = tune(client, live_configuration, query="q1", depth="10", template=edited, action="run")
    assert response.status_code == 200
    saved, after, moves = (response.context[k] for k in ("saved", "edited", "moves"))
    assert [d.doc_id for d in saved.documents] == engine_ranking(engine, "solar panels")[:10]
    title_only = engine.engine.search("solar panels", {"title": 1.0}, 10)[1]
    assert [d.doc_id for d in after.documents] == [engine.engine.ids[i] for i, _ in title_only]
    assert saved.ndcg is not None and after.ndcg is not None
    assert moves.delta == pytest.approx(after.ndcg - saved.ndcg)
    assert set(moves.left) == {d.doc_id for d in saved.documents} - {d.doc_id for d in after.documents}
    for d in after.documents:  # each edited hit knows its rank in the saved list
        assert d.was == next((s.rank for s in saved.documents if s.doc_id == d.doc_id), None)
    html = response.content.decode()
    assert 'id="tune-saved"' in html and 'id="tune-edited"' in html and 'id="tune-summary"' in html
    assert live_configuration.endpoints.count() == 1  # nothing saved by running
    response = tune(client, live_configuration, query="q1", depth="10", template=edited, action="save")
    assert response.status_code == 302 and "query=q1" in response["Location"]
    assert live_configuration.endpoints.count() == 2
    assert live_configuration.endpoint.template == edited and live_configuration.endpoint.version == 2


def test_a_broken_edit_says_why_and_saves_nothing(client, engineer, live_configuration):
    login(client, engineer)
    broken = ES_DEFAULT_TEMPLATE.replace("{{query}}", "{{qeury}}")
    for action in ("run", "save"):
        html = tune(client, live_configuration, q="solar", template=broken, action=action).content.decode()
        assert "The edited template cannot be used: template: unknown placeholder {{qeury}}" in html
    assert live_configuration.endpoints.count() == 1


def test_tuning_keeps_a_stored_secret_and_never_shows_it(client, engineer, live_configuration, httpserver):
    services.set_endpoint(live_configuration, kind="elasticsearch", url=httpserver.url_for("/docs/_search"),
                          auth_kind="bearer", auth_secret=SECRET)  # fmt: skip
    httpserver.expect_request(
        "/docs/_search", headers={"Authorization": f"Bearer {SECRET}"}
    ).respond_with_json(es_answer([("solar-1", 2.0)]))
    login(client, engineer)
    edited = ES_DEFAULT_TEMPLATE.replace('"body"', '"body^2"')
    html = tune(client, live_configuration, q="solar", template=edited, action="run").content.decode()
    assert SECRET not in html and html.count('data-doc="solar-1"') == 2
    tune(client, live_configuration, q="solar", template=edited, action="save")
    assert live_configuration.endpoint.auth_secret == SECRET and live_configuration.endpoint.version == 3


def test_only_the_team_and_admins_tune(client, other_engineer, rater, live_configuration):
    for user, status in ((other_engineer, 403), (rater, 404)):
        login(client, user)
        response = tune(client, live_configuration, q="solar", template=ES_DEFAULT_TEMPLATE, action="save")
        assert response.status_code == status
    assert live_configuration.endpoints.count() == 1


ES_EXPLANATION = {
    "value": 2.5,
    "description": "max of:",
    "details": [
        {
            "value": 2.5,
            "description": "weight(title:solar in 0) [PerFieldSimilarity], result of:",
            "details": [
                {"value": 2.2, "description": "boost", "details": []},
                {
                    "value": 1.13,
                    "description": "idf, computed as log(1 + (N - n + 0.5) / (n + 0.5)) from:",
                    "details": [],
                },
            ],
        },
        {
            "value": 0.7,
            "description": "weight(body:solar in 0) [PerFieldSimilarity], result of:",
            "details": [],
        },
    ],
}


@pytest.mark.parametrize("kind", ["elasticsearch", "opensearch"])
def test_elasticsearch_and_opensearch_hits_unfold_their_explain(
    client, engineer, live_configuration, httpserver, kind
):
    def answer(request):
        body = json.loads(request.data)
        payload = es_answer([("solar-1", 2.5), ("bread-1", 0.4)])
        if body.get("explain") is True:  # asked only when the page asks
            for hit in payload["hits"]["hits"]:
                hit["_explanation"] = ES_EXPLANATION
        return Response(json.dumps(payload), content_type="application/json")

    httpserver.expect_request("/docs/_search", method="POST").respond_with_handler(answer)
    services.set_endpoint(live_configuration, kind=kind, url=httpserver.url_for("/docs/_search"))
    login(client, engineer)
    plain = live(client, live_configuration, q="solar").content.decode()
    assert "why this score" not in plain and "explain the scores" in plain
    response = live(client, live_configuration, q="solar", explain="1")
    html = response.content.decode()
    assert html.count("why this score") == 2
    first = response.context["result"].documents[0]
    assert first.explanation[:3] == [
        (0, "2.5", "max of:"),
        (1, "2.5", "weight(title:solar in 0) [PerFieldSimilarity], result of:"),
        (2, "2.2", "boost"),
    ]
    assert "weight(body:solar in 0)" in html


SOLR_STRUCTURED = {
    "match": True,
    "value": 1.9,
    "description": "sum of:",
    "details": [
        {
            "match": True,
            "value": 1.9,
            "description": "weight(text:solar in 3) [SchemaSimilarity]",
            "details": [],
        }
    ],
}


@pytest.mark.parametrize("structured", [True, False])
def test_solr_hits_unfold_their_debug_query_explain(
    client, engineer, live_configuration, httpserver, structured
):
    def answer(request):
        payload = solar = solr_answer([("solar-1", 1.9)])
        if request.args.get("debugQuery") == "true":
            explained = (
                SOLR_STRUCTURED if structured else "\n1.9 = sum of:\n  1.9 = weight(text:solar in 3)\n"
            )
            solar["debug"] = {"rawquerystring": "solar", "explain": {"solar-1": explained}}
        return Response(json.dumps(payload), content_type="application/json")

    httpserver.expect_request("/solr/docs/select").respond_with_handler(answer)
    services.set_endpoint(live_configuration, kind="solr", url=httpserver.url_for("/solr/docs/select"))
    login(client, engineer)
    assert "why this score" not in live(client, live_configuration, q="solar").content.decode()
    response = live(client, live_configuration, q="solar", explain="1")
    (only,) = response.context["result"].documents
    if structured:
        assert only.explanation == [
            (0, "1.9", "sum of:"),
            (1, "1.9", "weight(text:solar in 3) [SchemaSimilarity]"),
        ]
    else:
        assert only.explanation[0][2].strip().startswith("1.9 = sum of:")
    assert "why this score" in response.content.decode()
    assert Document.objects.filter(external_id="solar-1").exists()
