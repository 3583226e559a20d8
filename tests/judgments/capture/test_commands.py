"""The contract's commands: set_endpoint, capture_run, capture_due, against real engines on 127.0.0.1."""

import io
import logging
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command

from judgments.endpoints.engines import ES_DEFAULT_TEMPLATE
from judgments.models import Run, SearchConfiguration, Team
from judgments.models.capture import CaptureJob, SearchEndpoint
from scoring.models import QueryScore

from .conftest import SEARCH_QUERIES, engine_ranking, es_answer, es_error, json_response, solr_answer

SECRET = "tok-Zq81-very-secret"


def run(*args, **options):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def fails(*args):
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command(*args, stdout=out, stderr=err)
    return str(raised.value), out.getvalue(), err.getvalue()


# --- set_endpoint ------------------------------------------------------------------------------------


def test_set_endpoint_creates_the_configuration_and_team_with_the_es_default(search_pool, engine):
    out, err = run(
        "set_endpoint", "--pool", "search", "--configuration", "bm25", "--team", "search-team",
        "--kind", "elasticsearch", "--url", engine.search_url,
    )  # fmt: skip
    config = SearchConfiguration.objects.get(pool=search_pool, name="bm25")
    assert config.team == Team.objects.get(name="search-team")
    endpoint = config.endpoint
    assert (endpoint.version, endpoint.template, endpoint.method) == (1, ES_DEFAULT_TEMPLATE, "POST")
    assert '"multi_match"' in endpoint.template and '"size": {{depth}}' in endpoint.template
    assert "search/bm25: endpoint version 1 stored" in out and "Created configuration bm25" in err
    out, _ = run(
        "set_endpoint",
        "--pool",
        "search",
        "--configuration",
        "bm25",
        "--kind",
        "elasticsearch",
        "--url",
        engine.search_url,
    )
    assert "endpoint version 1 unchanged" in out and SearchEndpoint.objects.count() == 1


def test_set_endpoint_for_solr_json_headers_and_a_template_file(search_pool, tmp_path):
    run(
        "set_endpoint",
        "--pool",
        "search",
        "--configuration",
        "solr",
        "--kind",
        "solr",
        "--url",
        "http://127.0.0.1:8983/solr/docs/select",
    )
    solr = SearchConfiguration.objects.get(name="solr").endpoint
    assert solr.template == "q={{query}}&rows={{depth}}&fl=id,score&wt=json"
    template = tmp_path / "body.json"
    template.write_text('{"q": "{{query}}", "n": {{depth}}}')
    run(
        "set_endpoint", "--pool", "search", "--configuration", "api", "--kind", "json",
        "--url", "http://127.0.0.1:9/search", "--template", str(template), "--hits", "data.items",
        "--id-field", "sku", "--score-field", "relevance", "--header", "X-Tenant: shop-1",
        "--header", "Accept-Language: en",
    )  # fmt: skip
    api = SearchConfiguration.objects.get(name="api").endpoint
    assert (api.template, api.hits_path, api.id_field, api.score_field) == (
        '{"q": "{{query}}", "n": {{depth}}}',
        "data.items",
        "sku",
        "relevance",
    )
    assert api.headers == [["X-Tenant", "shop-1"], ["Accept-Language", "en"]]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--kind", "json", "--url", "http://127.0.0.1:9/s", "--template", "-"], "json endpoint needs"),
        (["--kind", "elasticsearch", "--url", "ftp://example.org"], "http:// or https://"),
        (["--kind", "elasticsearch", "--url", "http://h/x", "--header", "no colon"], "Name: value"),
        (
            ["--kind", "elasticsearch", "--url", "http://h/x", "--template", "/no/such/file"],
            "Cannot read the template",
        ),
        (["--kind", "elasticsearch", "--url", "http://h/x", "--depth", "0"], "depth must be"),
        (["--kind", "elasticsearch", "--url", "http://h/x", "--auth", "bearer"], "secret"),
    ],
)
def test_set_endpoint_refuses_bad_input_and_creates_nothing(search_pool, extra, message, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO('{"q": "{{query}}"}'))
    text, _, _ = fails("set_endpoint", "--pool", "search", "--configuration", "new-one", *extra)
    assert message in text
    assert not SearchConfiguration.objects.filter(name="new-one").exists() and not Team.objects.exists()


def test_set_endpoint_needs_an_existing_pool_and_the_configurations_team(configuration):
    assert (
        "No pool named 'nope'"
        in fails(
            "set_endpoint", "--pool", "nope", "--configuration", "x", "--kind", "solr", "--url", "http://h/s"
        )[0]
    )
    text = fails(
        "set_endpoint",
        "--pool",
        "robust",
        "--configuration",
        "bm25",
        "--team",
        "other",
        "--kind",
        "solr",
        "--url",
        "http://h/s",
    )[0]
    assert "belongs to team relevance" in text


# --- capture_run -----------------------------------------------------------------------------------------


def test_capture_run_stores_a_scored_run(
    live_configuration, engine, rater, django_capture_on_commit_callbacks
):
    from judgments.models import Document, Pair, Query
    from judgments.services import record_judgment

    pair = Pair.objects.create(pool=live_configuration.pool, query=Query.objects.get(external_id="q2"),
                               document=Document.objects.get(external_id="bread-1"))  # fmt: skip
    record_judgment(pair, rater, grade=2)
    with django_capture_on_commit_callbacks(execute=True):
        out, err = run(
            "capture_run", "--pool", "search", "--configuration", "bm25", "--depth", "3", "--concurrency", "2"
        )
    stored = Run.objects.get(configuration=live_configuration)
    assert stored.source == "endpoint" and stored.endpoint == live_configuration.endpoint
    assert (
        f"Run {stored.pk} stored: {sum(1 for _, t, _ in SEARCH_QUERIES if engine_ranking(engine, t))} of 4 queries ranked"
        in out
    )
    assert "scored" in out and "capture #" in out
    assert QueryScore.objects.filter(run=stored, query__external_id="q2").exists()
    job = CaptureJob.objects.get()
    assert (job.trigger, job.depth, job.concurrency, job.run) == ("command", 3, 2, stored)


def test_capture_run_lists_failed_queries_with_the_engines_error_and_stores_nothing(
    search_pool, team, httpserver
):
    url = httpserver.url_for("/docs/_search")
    run(
        "set_endpoint",
        "--pool",
        "search",
        "--configuration",
        "es",
        "--team",
        "relevance",
        "--kind",
        "elasticsearch",
        "--url",
        url,
    )
    cause = {"type": "query_shard_exception", "reason": "No mapping found for [titel] in order to sort on"}

    def answer(request):
        if b"sourdough" in request.get_data() or b"tyre" in request.get_data():
            return json_response(es_error(cause=cause), 400)
        return json_response(es_answer([("solar-1", 1.5)]))

    httpserver.expect_request("/docs/_search").respond_with_handler(answer)
    text, out, err = fails("capture_run", "--pool", "search", "--configuration", "es")
    assert "2 of 4 queries failed; nothing was stored" in text
    assert "2 failed queries:" in err
    assert "q2: " in err and "q3: " in err and "No mapping found for [titel]" in err
    assert out == "" and not Run.objects.exists()
    # keep-partial stores the two others, and says which are missing
    out, err = run("capture_run", "--pool", "search", "--configuration", "es", "--keep-partial")
    stored = Run.objects.get()
    assert set(stored.rankings.values_list("query__external_id", flat=True)) == {"q1", "q4"}
    assert "2 failed queries are missing from it (they score 0)" in out and "q2: " in err


def test_capture_run_against_solr(search_pool, team, httpserver):
    run(
        "set_endpoint",
        "--pool",
        "search",
        "--configuration",
        "solr",
        "--kind",
        "solr",
        "--url",
        httpserver.url_for("/solr/docs/select"),
    )
    httpserver.expect_request("/solr/docs/select").respond_with_json(
        solr_answer([("bike-2", 4.0), ("bike-1", 3.5)])
    )
    run("capture_run", "--pool", "search", "--configuration", "solr", "--depth", "1")
    stored = Run.objects.get()
    assert {r.query.external_id: len(r.doc_ids) for r in stored.rankings.all()} == {
        q: 1 for q in ("q1", "q2", "q3", "q4")
    }
    request = httpserver.log[0][0]
    assert request.args["rows"] == "1" and request.args["fl"] == "id,score" and request.args["wt"] == "json"


def test_capture_run_refuses_unknown_names_and_bad_options_without_a_traceback(
    live_configuration, configuration
):
    assert (
        "has no configuration named 'nope' (it has: bm25)"
        in fails("capture_run", "--pool", "search", "--configuration", "nope")[0]
    )
    assert "no search endpoint" in fails("capture_run", "--pool", "robust", "--configuration", "bm25")[0]
    assert (
        "depth must be"
        in fails("capture_run", "--pool", "search", "--configuration", "bm25", "--depth", "0")[0]
    )
    assert (
        "concurrency must be"
        in fails("capture_run", "--pool", "search", "--configuration", "bm25", "--concurrency", "999")[0]
    )
    assert (
        "--timeout"
        in fails("capture_run", "--pool", "search", "--configuration", "bm25", "--timeout", "0")[0]
    )
    assert not CaptureJob.objects.exists()


def test_capture_run_reports_an_engine_that_is_down(search_pool, team):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run(
        "set_endpoint",
        "--pool",
        "search",
        "--configuration",
        "down",
        "--kind",
        "elasticsearch",
        "--url",
        f"http://127.0.0.1:{port}/docs/_search",
    )
    text, _, err = fails("capture_run", "--pool", "search", "--configuration", "down", "--retries", "0")
    assert "4 of 4 queries failed" in text and "could not connect to the engine" in err


def test_secrets_stay_out_of_output_logs_and_errors(search_pool, team, httpserver, caplog, monkeypatch):
    """A secret given on stdin and an engine that quotes the request back in its error: the secret is
    sent, and never printed, logged, stored in a job's error text or shown by the API."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    out, err = run(
        "set_endpoint", "--pool", "search", "--configuration", "es", "--kind", "elasticsearch",
        "--url", httpserver.url_for("/docs/_search"), "--auth", "bearer", "--secret-stdin",
    )  # fmt: skip
    received = []

    def echo(request):
        received.append(request.headers.get("Authorization"))
        return json_response(es_error(reason=f"bad header {request.headers.get('Authorization')}"), 401)

    httpserver.expect_request("/docs/_search").respond_with_handler(echo)
    text, out2, err2 = fails("capture_run", "--pool", "search", "--configuration", "es")
    assert received and received[0] == f"Bearer {SECRET}"
    job = CaptureJob.objects.get()
    everything = "\n".join(
        [out, err, text, out2, err2, caplog.text, str(job.failures), job.message, str(job.endpoint.public())]
    )
    assert SECRET not in everything and "***" in err2
    assert "secret: set" in out


# --- capture_due -----------------------------------------------------------------------------------------


def test_capture_due_captures_the_configurations_whose_schedule_is_due(live_configuration, configuration):
    assert run("capture_due")[0].strip() == "No capture is due."
    run("set_endpoint", "--pool", "search", "--configuration", "bm25", "--kind", "elasticsearch",
        "--url", live_configuration.endpoint.url, "--schedule", "daily")  # fmt: skip
    assert "due: search/bm25 (daily)" in run("capture_due", "--dry-run")[0] and not Run.objects.exists()
    out, _ = run("capture_due")
    (stored,) = Run.objects.all()
    assert stored.configuration == live_configuration and f"Run {stored.pk} stored" in out
    assert CaptureJob.objects.get().trigger == "schedule"
    assert run("capture_due")[0].strip() == "No capture is due."  # captured a moment ago
    SearchConfiguration.objects.filter(pk=live_configuration.pk).update(
        last_capture_at=stored.created_at - timedelta(days=1)
    )
    run("capture_due")
    assert Run.objects.count() == 2


def test_capture_due_exits_1_when_a_capture_stores_nothing(search_pool, team, httpserver):
    run("set_endpoint", "--pool", "search", "--configuration", "es", "--kind", "elasticsearch",
        "--url", httpserver.url_for("/docs/_search"), "--schedule", "hourly")  # fmt: skip
    httpserver.expect_request("/docs/_search").respond_with_json(
        es_error(status=503, type_="unavailable"), status=503
    )
    text, _, err = fails("capture_due")
    assert "1 of 1 captures stored nothing: es" in text and "q1: " in err
    assert not Run.objects.exists()


def test_a_captured_runs_exports_and_api_answers_carry_no_secret(
    live_configuration, engine, engineer, monkeypatch
):
    from rest_framework.test import APIClient

    from judgments.capture import services

    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    run("set_endpoint", "--pool", "search", "--configuration", "bm25", "--kind", "elasticsearch",
        "--url", engine.search_url, "--auth", "apikey", "--secret-stdin", "--header", f"X-Api-Key: {SECRET}x")  # fmt: skip
    job = services.run_capture(services.start_capture(live_configuration, trigger=CaptureJob.Trigger.COMMAND))
    assert job.status == "succeeded"
    exported, _ = run("export_run", "--pool", "search", "--configuration", "bm25")
    api = APIClient()
    api.force_authenticate(engineer)

    def body(response):
        if response.streaming:
            return b"".join(response.streaming_content).decode()
        return response.content.decode()

    answers = [
        body(api.get(path))
        for path in (
            "/api/runs/",
            f"/api/runs/{job.run_id}/",
            f"/api/runs/{job.run_id}/trec/",
            f"/api/captures/{job.pk}/",
            "/api/endpoints/",
            "/api/configurations/",
        )
    ]
    assert exported.strip() and all(answers)
    assert not any(SECRET in text for text in [exported, *answers])
