"""Capture services: endpoint versions, secrets kept write-only, and captures stored all or nothing
against real engines on 127.0.0.1 (the demo BM25 engine, pytest-httpserver shaped as the engines' docs)."""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone
from werkzeug import Response

from judgments.capture import services
from judgments.endpoints.engines import ES_DEFAULT_TEMPLATE, EndpointError
from judgments.models import Document, Pair, Query, Ranking, Run, SearchConfiguration
from judgments.models.capture import CaptureJob, SearchEndpoint
from judgments.services import record_judgment
from scoring.models import QueryScore

from .conftest import SEARCH_QUERIES, engine_ranking, es_answer, es_error, json_response

Status = CaptureJob.Status


def stored_rankings(run):
    names = dict(Document.objects.filter(pool=run.configuration.pool).values_list("pk", "external_id"))
    return {
        r.query.external_id: [names[pk] for pk in r.doc_ids]
        for r in Ranking.objects.filter(run=run).select_related("query")
    }


def capture(configuration, **options):
    job = services.start_capture(configuration, trigger=CaptureJob.Trigger.COMMAND, **options)
    return services.run_capture(job, timeout=5, retries=1)


def es_endpoint(configuration, httpserver, **fields):
    return services.set_endpoint(
        configuration, kind="elasticsearch", url=httpserver.url_for("/docs/_search"), **fields
    )[0]


# --- Endpoint versions ---------------------------------------------------------------------------------


def test_each_change_makes_a_new_version_and_keeps_the_old_ones(live_configuration, engine, engineer):
    first = live_configuration.endpoint
    assert (first.version, first.method, first.template) == (1, "POST", ES_DEFAULT_TEMPLATE)
    assert (first.hits_path, first.id_field, first.score_field, first.depth) == (
        "hits.hits",
        "_id",
        "_score",
        100,
    )
    same, changed = services.set_endpoint(live_configuration, kind="elasticsearch", url=engine.search_url)
    assert (same.pk, changed) == (first.pk, False)
    second, changed = services.set_endpoint(
        live_configuration, kind="elasticsearch", url=engine.search_url, depth=50, user=engineer
    )
    assert changed and second.version == 2 and second.created_by == engineer
    assert list(live_configuration.endpoints.values_list("version", "depth")) == [(2, 50), (1, 100)]
    assert live_configuration.endpoint == second


def test_solr_defaults_and_a_json_endpoint_without_paths_is_refused(configuration):
    solr, _ = services.set_endpoint(configuration, kind="solr", url="http://127.0.0.1:8983/solr/docs/select")
    assert solr.template == "q={{query}}&rows={{depth}}&fl=id,score&wt=json"
    assert (solr.method, solr.hits_path, solr.id_field) == ("GET", "response.docs", "id")
    with pytest.raises(EndpointError, match="hits path"):
        services.set_endpoint(
            configuration, kind="json", url="http://127.0.0.1:1/search", template='{"q": "{{query}}"}'
        )
    assert configuration.endpoints.count() == 1


def test_a_stored_secret_is_kept_replaced_or_removed_and_never_shown(configuration):
    url = "http://127.0.0.1:9/docs/_search"
    first, _ = services.set_endpoint(
        configuration, kind="elasticsearch", url=url, auth_kind="bearer", auth_secret="s3cr3t-token"
    )
    assert first.public()["secret"] == "set" and "s3cr3t-token" not in str(first.public())
    assert "s3cr3t-token" not in str(first) and "s3cr3t-token" not in repr(first.spec())
    kept, changed = services.set_endpoint(configuration, kind="elasticsearch", url=url, auth_kind="bearer")
    assert not changed and kept.auth_secret == "s3cr3t-token"
    replaced, _ = services.set_endpoint(
        configuration, kind="elasticsearch", url=url, auth_kind="bearer", auth_secret="other"
    )
    assert replaced.version == 2 and replaced.auth_secret == "other"
    from_env, _ = services.set_endpoint(
        configuration, kind="elasticsearch", url=url, auth_kind="bearer", auth_secret_env="SEARCH_TOKEN"
    )
    assert from_env.auth_secret == "" and from_env.public()["secret"] == "from $SEARCH_TOKEN"
    with pytest.raises(EndpointError, match="secret"):
        services.set_endpoint(
            configuration, kind="elasticsearch", url=url, auth_kind="bearer", auth_secret=""
        )


def test_redacted_values_sent_back_mean_the_stored_ones(configuration):
    url = "http://127.0.0.1:9/docs/_search?api_key=k-123"
    first, _ = services.set_endpoint(
        configuration, kind="elasticsearch", url=url, headers=[["X-Api-Token", "tok-456"], ["X-Team", "a"]]
    )
    shown = first.public()
    assert "k-123" not in str(shown) and "tok-456" not in str(shown)
    assert shown["headers"] == [["X-Api-Token", "***"], ["X-Team", "a"]]
    again, changed = services.set_endpoint(
        configuration, kind="elasticsearch", url=shown["url"], headers=shown["headers"]
    )
    assert not changed and again.url == url and again.headers[0] == ["X-Api-Token", "tok-456"]
    with pytest.raises(EndpointError, match="no"):
        services.set_endpoint(configuration, kind="elasticsearch", url=url, headers=[["X-Other", "***"]])


# --- Captures --------------------------------------------------------------------------------------------


def test_a_capture_stores_the_engines_top_depth_in_order_and_scores_it(
    live_configuration, engine, rater, django_capture_on_commit_callbacks
):
    pair = Pair.objects.create(
        pool=live_configuration.pool,
        query=Query.objects.get(external_id="q1"),
        document=Document.objects.get(external_id="solar-1"),
    )
    record_judgment(pair, rater, grade=3)
    with django_capture_on_commit_callbacks(execute=True):
        job = capture(live_configuration, depth=2)
    assert job.status == Status.SUCCEEDED, job.message
    run = job.run
    assert (run.source, run.endpoint, run.configuration) == (
        Run.Source.ENDPOINT,
        live_configuration.endpoint,
        live_configuration,
    )
    assert run.tag == "bm25-v1"
    expected = {q: engine_ranking(engine, text, 2) for q, text, _ in SEARCH_QUERIES}
    assert stored_rankings(run) == {q: docs for q, docs in expected.items() if docs}
    assert (job.total, job.done, job.failed, job.failures) == (4, 4, 0, [])
    assert job.rate > 0 and job.finished_at >= job.started_at
    # q1's only graded document, solar-1 (grade 3), is the engine's top hit: NDCG@10 = 1; q2-q4 have no grade
    assert expected["q1"][0] == "solar-1"
    scores = QueryScore.objects.filter(run=run, flavor="exp")
    assert [(s.query.external_id, s.has_ranking, s.ndcg_10) for s in scores] == [("q1", True, 1.0)]


def test_any_failed_query_stores_nothing_and_lists_the_engines_error(search_pool, configuration, httpserver):
    configuration = SearchConfiguration.objects.create(pool=search_pool, team=configuration.team, name="es")
    es_endpoint(configuration, httpserver)
    reason = "failed to create query: field [titel] does not exist"

    def answer(request):
        if b"bicycle" in request.get_data():
            cause = {"type": "query_shard_exception", "reason": reason, "index": "docs"}
            return json_response(es_error(cause=cause), 400)
        return json_response(es_answer([("solar-1", 2.0)]))

    httpserver.expect_request("/docs/_search").respond_with_handler(answer)
    job = capture(configuration)
    assert job.status == Status.FAILED and job.run is None
    assert not Run.objects.filter(configuration=configuration).exists()
    assert job.failed == 1 and job.failures[0]["query_id"] == "q3"
    assert reason in job.failures[0]["error"]
    assert "1 of 4 queries failed; nothing was stored" in job.message


def test_keep_partial_stores_the_answered_queries_and_lists_the_missing(search_pool, team, httpserver):
    configuration = SearchConfiguration.objects.create(pool=search_pool, team=team, name="es")
    es_endpoint(configuration, httpserver)

    def answer(request):
        if b"bicycle" in request.get_data():
            return Response("<html><body>502 Bad Gateway</body></html>", 502, content_type="text/html")
        return json_response(es_answer([("solar-1", 2.0), ("solar-2", 1.0)]))

    httpserver.expect_request("/docs/_search").respond_with_handler(answer)
    job = capture(configuration, keep_partial=True)
    assert job.status == Status.SUCCEEDED
    assert set(stored_rankings(job.run)) == {"q1", "q2", "q4"}
    assert [f["query_id"] for f in job.failures] == ["q3"] and "502" in job.failures[0]["error"]
    assert "1 failed queries are missing from it (they score 0)" in job.message


def test_unknown_documents_are_created_without_content_repeats_and_empty_answers_are_noted(
    search_pool, team, httpserver
):
    configuration = SearchConfiguration.objects.create(pool=search_pool, team=team, name="es")
    es_endpoint(configuration, httpserver)

    def answer(request):
        body = request.get_data()
        hits = [] if b"home batteries" in body else [("new-doc", 3.0), ("solar-1", 2.0), ("new-doc", 1.0)]
        return json_response(es_answer(hits))

    httpserver.expect_request("/docs/_search").respond_with_handler(answer)
    job = capture(configuration)
    assert job.status == Status.SUCCEEDED, job.message
    assert stored_rankings(job.run) == {q: ["new-doc", "solar-1"] for q in ("q1", "q2", "q3")}
    new = Document.objects.get(pool=search_pool, external_id="new-doc")
    assert not new.has_content
    assert any("new-doc more than once" in note for note in job.notes)
    assert any("1 queries returned no document" in note and "q4" in note for note in job.notes)


def test_queries_without_text_count_as_failures(live_configuration):
    Query.objects.create(pool=live_configuration.pool, external_id="q9", text="")
    job = capture(live_configuration)
    assert job.status == Status.FAILED and not Run.objects.exists()
    assert job.failures == [{"query_id": "q9", "error": services.NO_TEXT}]


def test_a_cancel_request_stops_the_capture_and_stores_nothing(search_pool, team, httpserver):
    configuration = SearchConfiguration.objects.create(pool=search_pool, team=team, name="es")
    es_endpoint(configuration, httpserver)
    for i in range(40):
        Query.objects.create(pool=search_pool, external_id=f"x{i:02}", text=f"slow {i}")
    first_request = threading.Event()

    def slow(request):
        first_request.set()
        threading.Event().wait(0.2)
        return json_response(es_answer([("solar-1", 1.0)]))

    httpserver.expect_request("/docs/_search").respond_with_handler(slow)
    job = services.start_capture(configuration, trigger=CaptureJob.Trigger.WEB, concurrency=2)
    CaptureJob.objects.filter(pk=job.pk).update(cancel_requested=True)  # as the Cancel button does
    done = services.run_capture(job, timeout=5)
    assert done.status == Status.CANCELLED and "nothing was stored" in done.message
    assert not Run.objects.exists() and done.done < done.total


def test_a_crash_closes_the_job_stores_nothing_and_logs_no_secret(
    live_configuration, engine, monkeypatch, caplog
):
    services.set_endpoint(
        live_configuration, kind="elasticsearch", url=engine.search_url + "?api_key=k-SECRET-1"
    )

    def broken(*args, **kwargs):
        raise RuntimeError(f"disk full while storing {engine.search_url}?api_key=k-SECRET-1")

    monkeypatch.setattr(services.run_staging.RunWriter, "store", broken)
    job = capture(live_configuration)
    assert job.status == Status.FAILED and "crashed (RuntimeError: disk full" in job.message
    assert not Run.objects.exists()
    assert "disk full" in caplog.text and "Traceback" in caplog.text
    assert "k-SECRET-1" not in caplog.text + job.message


def test_an_unset_secret_variable_fails_before_sending(configuration, httpserver, monkeypatch):
    monkeypatch.delenv("NO_SUCH_SEARCH_SECRET", raising=False)
    es_endpoint(configuration, httpserver, auth_kind="bearer", auth_secret_env="NO_SUCH_SEARCH_SECRET")
    job = capture(configuration)
    assert job.status == Status.FAILED and "NO_SUCH_SEARCH_SECRET" in job.message
    assert httpserver.log == []


def test_one_capture_at_a_time_and_a_dead_one_does_not_block(live_configuration):
    job = services.start_capture(live_configuration, trigger=CaptureJob.Trigger.WEB)
    with pytest.raises(services.CaptureError, match="queued already"):
        services.start_capture(live_configuration, trigger=CaptureJob.Trigger.WEB)
    CaptureJob.objects.filter(pk=job.pk).update(
        status=Status.RUNNING, updated_at=timezone.now() - timedelta(minutes=10)
    )
    job.refresh_from_db()
    assert job.stale and not job.active
    services.start_capture(live_configuration, trigger=CaptureJob.Trigger.WEB)
    job.refresh_from_db()
    assert job.status == Status.FAILED and "process stopped" in job.message


@pytest.mark.parametrize(("depth", "concurrency"), [(0, 8), (10_001, 8), (10, 0), (10, 65)])
def test_depth_and_concurrency_out_of_range_are_refused(live_configuration, depth, concurrency):
    with pytest.raises(services.CaptureError):
        services.start_capture(
            live_configuration, trigger=CaptureJob.Trigger.API, depth=depth, concurrency=concurrency
        )
    assert not CaptureJob.objects.exists()


def test_a_configuration_without_endpoint_cannot_capture(configuration):
    with pytest.raises(services.CaptureError, match="no search endpoint"):
        services.start_capture(configuration, trigger=CaptureJob.Trigger.API)


def test_due_configurations_follow_their_schedule(live_configuration, configuration):
    now = timezone.now()
    assert services.due_configurations(now) == []
    services.set_schedule(live_configuration, "daily")
    assert services.due_configurations(now) == [live_configuration]  # never captured
    SearchConfiguration.objects.filter(pk=live_configuration.pk).update(
        last_capture_at=now - timedelta(hours=5)
    )
    assert services.due_configurations(now) == []
    assert services.due_configurations(now + timedelta(hours=19)) == [live_configuration]
    services.start_capture(live_configuration, trigger=CaptureJob.Trigger.SCHEDULE)
    assert services.due_configurations(now + timedelta(days=3)) == []  # one is under way
    with pytest.raises(services.CaptureError):
        services.set_schedule(live_configuration, "monthly")


def test_deleting_the_pool_in_bulk_takes_endpoints_and_captures(live_configuration):
    from judgments.services import delete_pool_in_bulk

    capture(live_configuration)
    delete_pool_in_bulk(live_configuration.pool)
    assert not SearchEndpoint.objects.exists() and not CaptureJob.objects.exists()
