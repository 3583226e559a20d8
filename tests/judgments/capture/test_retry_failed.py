"""`capture_run --retry-failed RUN`: a partial run completed by asking the engine only for its missing
queries, stored as one complete run (a real engine on 127.0.0.1)."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from judgments.models import Run

from .conftest import es_answer, es_error, json_response

ARGS = ("capture_run", "--pool", "search", "--configuration", "es")


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def flaky(search_pool, team, httpserver):
    """Endpoint `es` whose engine fails q2 and q3 while `state["down"]` is true; answers record which
    query texts were asked."""
    run(
        "set_endpoint", "--pool", "search", "--configuration", "es", "--team", "relevance",
        "--kind", "elasticsearch", "--url", httpserver.url_for("/docs/_search"),
    )  # fmt: skip
    state = {"down": True, "asked": []}
    texts = dict(search_pool.queries.values_list("text", "external_id"))

    def answer(request):
        body = json.loads(request.get_data())
        text = body["query"]["multi_match"]["query"]
        qid = texts[text]
        state["asked"].append(qid)
        if state["down"] and qid in ("q2", "q3"):
            return json_response(es_error(), 503)
        return json_response(es_answer([(f"doc-for-{qid}", 2.0), ("solar-1", 1.0)]))

    httpserver.expect_request("/docs/_search").respond_with_handler(answer)
    return state


def test_retry_failed_asks_only_the_missing_queries_and_stores_one_complete_run(flaky):
    run(*ARGS, "--keep-partial", "--retries", "0")
    partial = Run.objects.get()
    assert set(partial.rankings.values_list("query__external_id", flat=True)) == {"q1", "q4"}
    flaky["down"], flaky["asked"] = False, []
    out, err = run(*ARGS, "--retry-failed", str(partial.pk))
    assert sorted(flaky["asked"]) == ["q2", "q3"]  # only the missing queries went to the engine
    complete = Run.objects.exclude(pk=partial.pk).get()
    rankings = set(complete.rankings.values_list("query__external_id", flat=True))
    assert rankings == {"q1", "q2", "q3", "q4"}
    kept = {r.query_id: r.doc_ids for r in partial.rankings.all()}
    assert {r.query_id: r.doc_ids for r in complete.rankings.filter(query_id__in=kept)} == kept
    assert f"completing run {partial.pk}" in out and "misses 2 queries" in err
    assert complete.endpoint_id == partial.endpoint_id


def test_retry_failed_is_all_or_nothing_and_refuses_a_complete_or_foreign_run(flaky, live_configuration):
    run(*ARGS, "--keep-partial", "--retries", "0")
    partial = Run.objects.get()
    with pytest.raises(CommandError, match="2 of 2 queries failed; nothing was stored"):
        run(*ARGS, "--retry-failed", str(partial.pk), "--retries", "0")
    assert Run.objects.count() == 1
    flaky["down"] = False
    run(*ARGS, "--retry-failed", str(partial.pk))
    complete = Run.objects.exclude(pk=partial.pk).get()
    with pytest.raises(CommandError, match="has a ranking for every query of the pool; nothing to retry"):
        run(*ARGS, "--retry-failed", str(complete.pk))
    other = Run.objects.create(configuration=live_configuration, source="api")
    with pytest.raises(CommandError, match=f"run {other.pk} is not a run of es"):
        run(*ARGS, "--retry-failed", str(other.pk))
