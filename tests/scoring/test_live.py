"""Try a query live: the engine's top documents now with the pool's combined grades, the NDCG@10 of that
list, what moved against the current run, and sending unjudged documents to the raters."""

import math

import pytest
from django.urls import reverse

from judgments.capture import services
from judgments.models import Document, Pair, Query
from judgments.services import record_judgment, record_run
from tests.conftest import login
from tests.judgments.capture.conftest import engine_ranking, es_answer, es_error


def grade(pool, rater, qid, docid, value):
    pair, _ = Pair.objects.get_or_create(
        pool=pool,
        query=Query.objects.get(pool=pool, external_id=qid),
        document=Document.objects.get(pool=pool, external_id=docid),
    )
    record_judgment(pair, rater, grade=value)


def live(client, configuration, **params):
    return client.get(reverse("scoring:live-query", args=[configuration.pk]), params)


def dcg(gains):
    return sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains))


def test_a_pool_query_with_grades_ndcg_and_what_moved(
    client, engineer, rater, live_configuration, engine, django_capture_on_commit_callbacks
):
    pool = live_configuration.pool
    ranking = engine_ranking(engine, "solar panels", 20)  # solar-1, solar-2, solar-3, ...
    assert len(ranking) >= 3
    grade(pool, rater, "q1", ranking[0], 1)
    grade(pool, rater, "q1", ranking[1], 3)
    grade(pool, rater, "q1", "home-1", 2)  # judged relevant, not retrieved: in the ideal ranking
    with django_capture_on_commit_callbacks(execute=True):
        stored = record_run(live_configuration, {"q1": [ranking[1], "bike-1", ranking[0]]}, source="api")
    response = live(login(client, engineer), live_configuration, query="q1")
    assert response.status_code == 200
    result = response.context["result"]
    assert result.error is None and [d.doc_id for d in result.documents] == ranking
    shown = {d.doc_id: (d.grade, d.stored_rank, d.moved) for d in result.documents}
    assert shown[ranking[0]] == (1.0, 3, 2) and shown[ranking[1]] == (3.0, 1, -1)
    assert all(shown[d][1] is None for d in ranking[2:])  # new in the list
    expected = dcg([1, 3] + [0] * (len(ranking) - 2)) / dcg([3, 2, 1])
    assert result.ndcg == pytest.approx(expected) and result.judged == pytest.approx(
        2 / min(10, len(ranking))
    )
    assert result.run == stored and result.stored_ndcg == pytest.approx(dcg([3, 0, 1]) / dcg([3, 2, 1]))
    assert [doc_id for _, doc_id, _ in result.dropped] == ["bike-1"]
    html = response.content.decode()
    assert (
        "▲ 2 (was 3)" in html
        and "▼ 1 (was 1)" in html
        and ">new<" in html
        and "Dropped from the top 20" in html
    )


def test_typed_text_equal_to_a_pool_query_is_graded_as_it_and_other_text_is_not(
    client, engineer, rater, live_configuration, engine
):
    grade(live_configuration.pool, rater, "q3", "bike-1", 4)
    login(client, engineer)
    result = live(client, live_configuration, q="Bicycle Tyre ").context["result"]
    assert result.query.external_id == "q3" and result.ndcg is not None
    result = live(client, live_configuration, q="tyre pressure", depth="10").context["result"]
    assert result.query is None and result.ndcg is None and result.depth == 10
    assert all(d.grade is None for d in result.documents) and result.documents
    assert "is not a query of search" in live(client, live_configuration, q="tyre pressure").content.decode()


def test_an_engine_error_is_shown_in_its_own_words(client, engineer, live_configuration, httpserver):
    services.set_endpoint(live_configuration, kind="elasticsearch", url=httpserver.url_for("/docs/_search"))
    httpserver.expect_request("/docs/_search").respond_with_json(
        es_error(reason="all shards failed", cause={"type": "parse_exception", "reason": "bad query syntax"}),
        status=400,
    )
    response = live(login(client, engineer), live_configuration, q="solar")
    assert response.status_code == 200 and "bad query syntax" in response.content.decode()


def test_documents_not_in_the_pool_are_listed_and_unjudged(client, engineer, live_configuration, httpserver):
    services.set_endpoint(live_configuration, kind="elasticsearch", url=httpserver.url_for("/docs/_search"))
    httpserver.expect_request("/docs/_search").respond_with_json(
        es_answer([("elsewhere-9", 3.0), ("solar-1", 2.0)])
    )
    result = live(login(client, engineer), live_configuration, query="q1").context["result"]
    assert [(d.doc_id, d.document is None, d.grade, d.score) for d in result.documents] == [
        ("elsewhere-9", True, None, 3.0),
        ("solar-1", False, None, 2.0),
    ]
    assert not Document.objects.filter(external_id="elsewhere-9").exists()  # looking creates nothing


def test_only_the_team_and_admins_query_the_engine(
    client, other_engineer, rater, site_admin, live_configuration
):
    assert live(login(client, other_engineer), live_configuration, q="solar").status_code == 403
    assert live(login(client, rater), live_configuration, q="solar").status_code == 404
    assert live(login(client, site_admin), live_configuration, q="solar").status_code == 200


def test_admins_send_the_unjudged_documents_of_the_list_to_the_raters(
    client, engineer, site_admin, rater, live_configuration, engine
):
    pool = live_configuration.pool
    ranking = engine_ranking(engine, "solar panels", 20)
    grade(pool, rater, "q1", ranking[0], 2)
    login(client, engineer)
    html = live(client, live_configuration, query="q1").content.decode()
    assert 'id="live-queue"' not in html  # engineers may not queue in this pool
    url = reverse("scoring:live-queue", args=[live_configuration.pk])
    assert client.post(url, {"query": "q1", "doc": ranking[1:]}).status_code == 403
    login(client, site_admin)
    response = live(client, live_configuration, query="q1")
    unjudged = [d.doc_id for d in response.context["result"].unjudged]
    assert unjudged == ranking[1:] and 'id="live-queue"' in response.content.decode()
    response = client.post(url, {"query": "q1", "doc": unjudged + ["brand-new"], "depth": "20"}, follow=True)
    assert f"{len(unjudged) + 1} pair(s) of q1 newly queued" in response.content.decode()
    queued = set(
        Pair.objects.filter(pool=pool, queued_at__isnull=False).values_list(
            "document__external_id", flat=True
        )
    )
    assert queued == set(unjudged) | {"brand-new"}
    assert not Document.objects.get(pool=pool, external_id="brand-new").has_content
    # the list now marks them queued, and offers nothing more to send
    again = live(client, live_configuration, query="q1")
    assert all(d.queued for d in again.context["result"].unjudged)
    html = again.content.decode()
    assert 'id="live-queue"' not in html and 'id="live-all-queued"' in html and "unjudged · queued" in html
    # bad input queues nothing
    response = client.post(url, {"query": "nope", "doc": ["solar-1"]}, follow=True)
    assert "Pick a query of the pool" in response.content.decode()
    response = client.post(url, {"query": "q1", "doc": ["has space"]}, follow=True)
    assert "Nothing was queued" in response.content.decode()


def test_engineers_queue_from_the_list_where_the_pool_lets_them(client, engineer, live_configuration, engine):
    pool = live_configuration.pool
    pool.queue_access = "engineers"
    pool.save()
    login(client, engineer)
    response = live(client, live_configuration, query="q3")
    unjudged = [d.doc_id for d in response.context["result"].to_queue]
    assert unjudged and 'id="live-queue"' in response.content.decode()
    client.post(reverse("scoring:live-queue", args=[live_configuration.pk]), {"query": "q3", "doc": unjudged})
    queued = Pair.objects.filter(pool=pool, queued_at__isnull=False).values_list(
        "document__external_id", flat=True
    )
    assert sorted(queued) == sorted(unjudged)
