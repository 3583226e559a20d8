"""Endpoint definitions (defaults, validation, secrets) and reading answers shaped as the engines document
them. No database, no network."""

import base64
import json

import pytest

from judgments.endpoints.answers import EngineError
from judgments.endpoints.engines import ES_DEFAULT_TEMPLATE, EndpointError, EndpointSpec

from .conftest import es_answer, es_error, solr_answer, solr_error

ES_URL = "http://127.0.0.1:9200/docs/_search"
SOLR_URL = "http://127.0.0.1:8983/solr/docs/select"


def _parse(spec, payload, depth=10, status=200, reason="OK", content_type="application/json"):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return spec.parse(status, reason, content_type, body, depth)


def _error(spec, payload, **kwargs) -> EngineError:
    with pytest.raises(EngineError) as caught:
        _parse(spec, payload, **kwargs)
    return caught.value


# -- definitions -------------------------------------------------------------------------------------


def test_elasticsearch_defaults_to_multi_match_over_title_and_body_sized_by_depth():
    spec = EndpointSpec("elasticsearch", ES_URL)
    assert (spec.method, spec.hits_path, spec.id_field, spec.score_field) == (
        "POST",
        "hits.hits",
        "_id",
        "_score",
    )
    method, url, body = spec.build_request("red shoes", "q1", 50)
    assert (method, url) == ("POST", ES_URL)
    assert json.loads(body) == {
        "query": {"multi_match": {"query": "red shoes", "fields": ["title", "body"]}},
        "size": 50,
        "_source": False,
    }
    assert spec.request_headers()["Content-Type"] == "application/json"
    assert EndpointSpec("opensearch", ES_URL).template == ES_DEFAULT_TEMPLATE


def test_solr_defaults_to_q_rows_fl_and_json_answers():
    spec = EndpointSpec("solr", SOLR_URL)
    assert spec.template == "q={{query}}&rows={{depth}}&fl=id,score&wt=json"
    assert spec.build_request("a&b", "q1", 20) == (
        "GET",
        SOLR_URL + "?q=a%26b&rows=20&fl=id,score&wt=json",
        None,
    )


def test_solr_template_without_wt_gets_wt_json_written_into_it():
    spec = EndpointSpec("solr", SOLR_URL + "?defType=edismax", template="q={{query}}\nrows={{depth}}")
    assert spec.template.endswith("&wt=json")
    assert spec.build_request("x", "1", 3)[1] == SOLR_URL + "?defType=edismax&q=x&rows=3&wt=json"


def test_solr_post_sends_the_parameters_as_a_form():
    spec = EndpointSpec("solr", SOLR_URL, method="post")
    assert spec.build_request("x y", "1", 3) == ("POST", SOLR_URL, b"q=x%20y&rows=3&fl=id,score&wt=json")
    assert spec.request_headers()["Content-Type"] == "application/x-www-form-urlencoded"


def test_json_endpoint_get_uses_url_parameters():
    spec = EndpointSpec(
        "json",
        "https://search.example/api?v=2",
        method="GET",
        template="text={{query}}&n={{depth}}",
        hits_path="results",
        id_field="sku",
    )
    assert spec.build_request("é", "1", 5) == ("GET", "https://search.example/api?v=2&text=%C3%A9&n=5", None)
    assert spec.score_field == ""


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "elastic"}, "kind must be one of"),
        ({"url": "ftp://host/x"}, "http:// or https://"),
        ({"url": "http://elastic:pw@host:9200/_search"}, "must not carry a user name or password"),
        ({"url": "http://host/{{query}}"}, "no placeholders"),
        ({"method": "PUT"}, "GET or POST"),
        ({"method": "GET"}, "called with POST"),
        ({"template": '{"q": "{{qeury}}"}'}, "template: unknown placeholder {{qeury}}"),
        ({"kind": "json", "template": '{"q": "{{query}}"}'}, "needs hits path"),
        (
            {"kind": "json", "template": '{"q": "{{query}}"}', "hits_path": "a[", "id_field": "id"},
            "neither a dotted path nor JMESPath",
        ),
        ({"kind": "json"}, "needs a template"),
        ({"headers": [("Bad Name", "x")]}, "not a valid HTTP header name"),
        ({"headers": [("X-A", "1\r\nX-Injected: 2")]}, "line break"),
        ({"auth_kind": "digest", "auth_secret": "s"}, "auth kind must be one of"),
        ({"auth_kind": "basic", "auth_secret": "s"}, "needs a user name"),
        ({"auth_kind": "bearer"}, "either given or as an environment variable"),
        (
            {"auth_kind": "bearer", "auth_secret": "s", "auth_secret_env": "X"},
            "either given or as an environment variable",
        ),
        ({"auth_kind": "bearer", "auth_secret_env": "not a name"}, "not an environment variable name"),
        ({"auth_secret": "s"}, "without an auth kind"),
        (
            {"auth_kind": "bearer", "auth_secret": "s", "headers": [("authorization", "x")]},
            "both as a header and by auth",
        ),
    ],
)
def test_bad_definitions_say_what_is_wrong(kwargs, message):
    fields = {"kind": "elasticsearch", "url": ES_URL, **kwargs}
    with pytest.raises(EndpointError) as caught:
        EndpointSpec(**fields)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("auth", "header", "value"),
    [
        (
            {"auth_kind": "basic", "auth_user": "elastic"},
            "Authorization",
            "Basic " + base64.b64encode(b"elastic:s3cr3t-pw").decode(),
        ),
        ({"auth_kind": "bearer"}, "Authorization", "Bearer s3cr3t-pw"),
        ({"auth_kind": "apikey"}, "Authorization", "ApiKey s3cr3t-pw"),
        ({"auth_kind": "apikey", "auth_header": "X-API-Key"}, "X-API-Key", "s3cr3t-pw"),
    ],
)
def test_auth_header_per_kind_and_secret_never_shown(auth, header, value):
    spec = EndpointSpec("elasticsearch", ES_URL, auth_secret="s3cr3t-pw", **auth)
    assert spec.request_headers()[header] == value
    for shown in (
        repr(spec),
        json.dumps(spec.public_dict()),
        repr(spec.redacted()),
        str(spec.redacted().public_dict()),
    ):
        assert "s3cr3t-pw" not in shown and value not in shown
    assert spec.public_dict()["auth_secret"] == "***"
    assert spec.scrub(f"echo: {value} / s3cr3t-pw") == "echo: *** / ***"


def test_secret_from_an_environment_variable(monkeypatch):
    spec = EndpointSpec("elasticsearch", ES_URL, auth_kind="bearer", auth_secret_env="ES_TOKEN")
    with pytest.raises(EndpointError, match="environment variable ES_TOKEN .* is not set"):
        spec.request_headers()
    monkeypatch.setenv("ES_TOKEN", "tok-from-env")
    assert spec.request_headers()["Authorization"] == "Bearer tok-from-env"
    assert spec.public_dict()["auth_secret_env"] == "ES_TOKEN" and "tok-from-env" not in repr(spec)
    assert spec.scrub("Bearer tok-from-env") == "***"


def test_sensitive_headers_are_redacted_others_shown():
    spec = EndpointSpec(
        "elasticsearch",
        ES_URL,
        headers=[("X-Api-Key", "k-123456"), ("X-Tenant", "acme"), ("Cookie", "sid=abcdef")],
    )
    assert spec.public_dict()["headers"] == [["X-Api-Key", "***"], ["X-Tenant", "acme"], ["Cookie", "***"]]
    assert "k-123456" not in repr(spec) and "sid=abcdef" not in repr(spec)
    assert spec.request_headers()["X-Api-Key"] == "k-123456"


def test_credentials_written_into_the_url_or_template_are_redacted_and_scrubbed():
    spec = EndpointSpec(
        "json",
        "https://api.example/search?api_key=AK%2F123&v=2",
        template='{"q": "{{query}}", "token": "T0K\\"EN", "size": {{depth}}, "auth": {"password": "pw-1"}}',
        hits_path="hits",
        id_field="id",
    )
    shown = spec.public_dict()
    assert shown["url"] == "https://api.example/search?api_key=***&v=2"
    assert (
        shown["template"]
        == '{"q": "{{query}}", "token": "***", "size": {{depth}}, "auth": {"password": "***"}}'
    )
    assert spec.scrub('bad key AK/123, token T0K"EN, pw-1') == "bad key ***, token ***, ***"
    assert json.loads(spec.build_request("x", "1", 3)[2])["token"] == 'T0K"EN'  # still sent as written
    solr = EndpointSpec("solr", SOLR_URL, template="q={{query}}&rows={{depth}}&key=abc&qf=title")
    assert "key=***&qf=title" in repr(solr) and "abc" not in repr(solr)


def test_public_dict_round_trips_with_the_secret_given_back():
    spec = EndpointSpec(
        "json",
        "https://s.example/q",
        template='{"q": "{{query}}"}',
        hits_path="data.items",
        id_field="doc.id",
        score_field="doc.rank",
        auth_kind="basic",
        auth_user="u",
        auth_secret="pw-9",
    )
    again = EndpointSpec.from_dict(spec.public_dict(), auth_secret="pw-9")
    assert again == spec


# -- answers -----------------------------------------------------------------------------------------


def test_elasticsearch_hits_in_engine_order_with_scores_and_total():
    spec = EndpointSpec("elasticsearch", ES_URL)
    got = _parse(spec, es_answer([("d3", 7.5), ("d1", 7.5), ("d2", 1.25)], total=10_000, relation="gte"))
    assert got.hits == [("d3", 7.5), ("d1", 7.5), ("d2", 1.25)]
    assert (got.total, got.total_relation, got.duplicates) == (10_000, "gte", [])


def test_top_depth_only_and_fewer_hits_than_depth_is_fine():
    spec = EndpointSpec("opensearch", ES_URL)
    answer = es_answer([(f"d{i}", 10.0 - i) for i in range(8)])
    assert [d for d, _ in _parse(spec, answer, depth=3).hits] == ["d0", "d1", "d2"]
    assert len(_parse(spec, answer, depth=100).hits) == 8
    assert _parse(spec, es_answer([]), depth=100).hits == []


def test_duplicate_ids_keep_the_first_rank_and_are_reported():
    spec = EndpointSpec("elasticsearch", ES_URL)
    got = _parse(spec, es_answer([("a", 3.0), ("b", 2.0), ("a", 1.5), ("c", 1.0), ("b", 0.5)]), depth=3)
    assert got.hits == [("a", 3.0), ("b", 2.0), ("c", 1.0)]
    assert got.duplicates == ["a"]  # "b" again comes after the top 3 are complete


def test_numeric_ids_become_strings_and_null_scores_none():
    spec = EndpointSpec("elasticsearch", ES_URL)
    answer = es_answer([(17, None), ("x", 2)])
    answer["hits"]["total"] = 2  # a bare number, as before Elasticsearch 7
    got = _parse(spec, answer)
    assert got.hits == [("17", None), ("x", 2.0)] and (got.total, got.total_relation) == (2, "eq")


@pytest.mark.parametrize(
    ("doc_id", "message"),
    [
        ("a b", "contains whitespace or a control character (U+0020 at position 2)"),
        ("tab\there", "U+0009"),
        ("", "is empty"),
        (None, "has no '_id'"),
        (["x"], "is a list, not a string or number"),
        ("x" * 201, "201 characters long"),
    ],
)
def test_bad_ids_fail_the_query_naming_the_rank(doc_id, message):
    spec = EndpointSpec("elasticsearch", ES_URL)
    error = _error(spec, es_answer([("ok", 2.0), (doc_id, 1.0)]))
    assert message in error.message and "rank 2" in error.message and not error.retryable


def test_elasticsearch_error_body_gives_type_reason_and_root_cause():
    spec = EndpointSpec("elasticsearch", ES_URL)
    error = _error(spec, es_error(), status=400, reason="Bad Request")
    assert error.message == (
        "HTTP 400 Bad Request: search_phase_execution_exception: all shards failed "
        "(caused by query_shard_exception: failed to create query: For input string)"
    )
    assert not error.retryable


def test_index_not_found_and_server_errors():
    spec = EndpointSpec("elasticsearch", ES_URL)
    missing = es_error(
        404,
        "index_not_found_exception",
        "no such index [dcos]",
        {"type": "index_not_found_exception", "reason": "no such index [dcos]"},
    )
    error = _error(spec, missing, status=404, reason="Not Found")
    assert (
        error.message == "HTTP 404 Not Found: index_not_found_exception: no such index [dcos]"
        and not error.retryable
    )
    busy = es_error(503, "cluster_block_exception", "blocked by: [SERVICE_UNAVAILABLE/1/state not recovered]")
    assert _error(spec, busy, status=503, reason="Service Unavailable").retryable
    assert _error(spec, {"error": "Too Many Requests"}, status=429, reason="Too Many Requests").retryable


def test_shard_failures_and_timeouts_are_not_taken_as_results():
    spec = EndpointSpec("elasticsearch", ES_URL)
    partial = es_answer([("d1", 1.0)])
    partial["_shards"] = {
        "total": 5,
        "successful": 4,
        "skipped": 0,
        "failed": 1,
        "failures": [
            {
                "shard": 2,
                "index": "docs",
                "reason": {"type": "node_not_connected_exception", "reason": "[n2] Node not connected"},
            }
        ],
    }
    error = _error(spec, partial)
    assert (
        error.message
        == "1 of 5 shards failed (partial results): node_not_connected_exception: [n2] Node not connected"
    )
    assert error.retryable
    timed_out = {**es_answer([("d1", 1.0)]), "timed_out": True}
    assert "timed out" in _error(spec, timed_out).message


def test_solr_docs_scores_and_num_found():
    spec = EndpointSpec("solr", SOLR_URL)
    got = _parse(spec, solr_answer([("b", 3.5), ("a", 1.0)], num_found=1234))
    assert (got.hits, got.total) == ([("b", 3.5), ("a", 1.0)], 1234)


def test_solr_error_gives_msg():
    spec = EndpointSpec("solr", SOLR_URL)
    error = _error(spec, solr_error(), status=400, reason="Bad Request")
    assert error.message == "HTTP 400 Bad Request: undefined field titel"
    status_only = {
        "responseHeader": {"status": 500, "QTime": 0},
        "error": {"msg": "java.lang.NullPointerException", "trace": "...", "code": 500},
    }
    assert _error(spec, status_only).message == "java.lang.NullPointerException"


def test_json_endpoint_with_dotted_and_jmespath_paths():
    dotted = EndpointSpec(
        "json",
        "https://s.example/q",
        template='{"q": "{{query}}"}',
        hits_path="data.results",
        id_field="doc.sku",
        score_field="relevance",
    )
    answer = {"data": {"results": [{"doc": {"sku": "A-1"}, "relevance": "0.9"}, {"doc": {"sku": 2}}]}}
    assert _parse(dotted, answer).hits == [("A-1", 0.9), ("2", None)]
    jmes = EndpointSpec(
        "json",
        "https://s.example/q",
        template='{"q": "{{query}}"}',
        hits_path="data.results[?doc.sku != 'A-1']",
        id_field="doc.sku",
    )
    assert _parse(jmes, answer).hits == [("2", None)]
    error = _error(dotted, {"items": []})
    assert error.message == "no 'data.results' in the answer (it has: items)"


def test_not_json_and_malformed_json():
    spec = EndpointSpec("elasticsearch", ES_URL)
    page = b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"
    error = _error(spec, page, status=502, reason="Bad Gateway", content_type="text/html")
    assert error.message == "HTTP 502 Bad Gateway: 502 Bad Gateway 502 Bad Gateway nginx" and error.retryable
    error = _error(spec, b'{"took": 3, "hits": {"hits": [', content_type="application/json")
    assert error.message.startswith("malformed JSON in the answer (HTTP 200 OK): ") and not error.retryable
    error = _error(spec, b"Login required " * 40, content_type="text/plain")
    assert error.message.startswith("the answer is not JSON (HTTP 200 OK, text/plain): 'Login required Login")
    assert len(error.message) < 300
    assert _error(spec, b"").message == "the answer is empty (HTTP 200 OK)"
    assert (
        _error(spec, b"", status=500, reason="Internal Server Error").message
        == "HTTP 500 Internal Server Error"
    )
