"""Per-query template variables: {{query.fields.NAME}} in endpoint templates, from the query files, the
API and the queries page to the engine (a real engine on 127.0.0.1); a missing field is an error naming
the query, never an empty value sent."""

import io
import json
from urllib.parse import parse_qs

import pytest
from django.core.management import CommandError, call_command

from judgments.capture import services
from judgments.endpoints.engines import EndpointError
from judgments.endpoints.templates import MissingFieldError, TemplateError, compile_template
from judgments.models import Query, Run, SearchConfiguration

from .conftest import es_answer, json_response

LOCALE_TEMPLATE = (
    '{"query": {"bool": {"must": {"match": {"body": "{{query}}"}},'
    ' "filter": [{"term": {"locale": "{{query.fields.locale}}"}}, {"term": {"cat": {{ query.fields.cat }}}}]}},'
    ' "size": {{depth}}, "_source": false, "note": "lang {{query.fields.locale}}"}'
)


def test_json_template_writes_fields_with_their_json_type():
    template = compile_template(LOCALE_TEMPLATE, "json")
    assert template.fields == {"locale", "cat"}
    body = json.loads(template.render('say "hi"', "q1", 10, {"locale": "fr-FR", "cat": 3}))
    assert body["query"]["bool"]["filter"] == [{"term": {"locale": "fr-FR"}}, {"term": {"cat": 3}}]
    assert body["note"] == "lang fr-FR" and body["query"]["bool"]["must"]["match"]["body"] == 'say "hi"'
    tricky = json.loads(template.render("x", "q1", 10, {"locale": '"}, "size": 9999', "cat": "a&b"}))
    assert (
        tricky["size"] == 10 and tricky["query"]["bool"]["filter"][0]["term"]["locale"] == '"}, "size": 9999'
    )


def test_params_template_percent_encodes_fields():
    template = compile_template("q={{query}}&fq=locale:{{query.fields.locale}}&rows={{depth}}", "params")
    rendered = template.render("tea", "q1", 5, {"locale": "fr&rows=1"})
    assert parse_qs(rendered) == {"q": ["tea"], "fq": ["locale:fr&rows=1"], "rows": ["5"]}


@pytest.mark.parametrize("fields", [None, {}, {"locale": ""}, {"cat": 3}, {"locale": None, "cat": 1}])
def test_a_missing_field_is_an_error_naming_the_query_never_an_empty_value(fields):
    template = compile_template(LOCALE_TEMPLATE, "json")
    with pytest.raises(
        MissingFieldError, match=r"^query q7 has no fields? ('cat', )?'locale' \(the template uses "
    ):
        template.render("x", "q7", 10, fields)


@pytest.mark.parametrize(
    "bad", ["{{query.field.locale}}", "{{query.fields.}}", "{{query.fields.a.b}}", "{{fields.x}}"]
)
def test_a_misspelt_field_placeholder_is_refused(bad):
    with pytest.raises(TemplateError, match="unknown placeholder|malformed placeholder"):
        compile_template('{"q": "{{query}}", "f": "' + bad + '"}', "json")


@pytest.fixture
def fielded(search_pool, team, httpserver):
    """Queries q1-q3 carry locale and cat; q4 has no locale."""
    for qid, fields in (("q1", {"locale": "fr-FR", "cat": 1}), ("q2", {"locale": "de", "cat": 2}),
                        ("q3", {"locale": "en", "cat": 3}), ("q4", {"cat": 4})):  # fmt: skip
        Query.objects.filter(pool=search_pool, external_id=qid).update(fields=fields)
    configuration = SearchConfiguration.objects.create(pool=search_pool, team=team, name="es")
    seen = []

    def answer(request):
        body = json.loads(request.get_data())
        seen.append(body["query"]["bool"]["filter"])
        return json_response(es_answer([("solar-1", 2.0)]))

    httpserver.expect_request("/docs/_search").respond_with_handler(answer)
    return configuration, seen, httpserver


def test_a_capture_sends_each_querys_fields_and_fails_the_query_that_lacks_one(fielded):
    configuration, seen, server = fielded
    services.set_endpoint(
        configuration, kind="elasticsearch", url=server.url_for("/docs/_search"), template=LOCALE_TEMPLATE
    )
    job = services.run_capture(services.start_capture(configuration, trigger="command"))
    assert job.status == "failed" and not Run.objects.exists()
    assert [f["query_id"] for f in job.failures] == ["q4"]
    assert "query q4 has no field 'locale'" in job.failures[0]["error"]
    assert len(seen) == 3 and {f[0]["term"]["locale"] for f in seen} == {"fr-FR", "de", "en"}
    assert all(f[0]["term"]["locale"] for f in seen)  # never an empty value
    Query.objects.filter(external_id="q4").update(fields={"locale": "it", "cat": 4})
    job = services.run_capture(services.start_capture(configuration, trigger="command"))
    assert job.status == "succeeded" and {f[1]["term"]["cat"] for f in seen[3:]} == {1, 2, 3, 4}


def test_a_template_naming_a_field_no_query_has_is_refused_at_save(fielded):
    configuration, _, server = fielded
    template = LOCALE_TEMPLATE.replace("query.fields.locale", "query.fields.region")
    with pytest.raises(
        EndpointError, match=r"\{\{query.fields.region\}\}: no query of pool search has a field 'region'"
    ):
        services.set_endpoint(
            configuration, kind="elasticsearch", url=server.url_for("/x/_search"), template=template
        )
    assert configuration.endpoint is None
    path = server.url_for("/x/_search")
    with pytest.raises(CommandError, match="no query of pool search has a field 'region'") as caught:
        call_command(
            "set_endpoint", "--pool", "search", "--configuration", "es", "--kind", "elasticsearch",
            "--url", path, "--template", _write(template), stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
    assert "\n" not in str(caught.value)


def _write(text):
    import tempfile

    handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    handle.write(text)
    handle.close()
    return handle.name


def test_query_files_carry_fields_in_and_out(search_pool, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(
        '{"id": "q1", "text": "solar panels", "fields": {"locale": "fr-FR", "cat": 2, "beta": true}}\n'
        '{"id": "n1", "text": "new one", "fields": {"locale": "de"}}\n'
    )
    call_command("import_queries", "--pool", "search", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    assert Query.objects.get(pool=search_pool, external_id="q1").fields == {
        "locale": "fr-FR",
        "cat": 2,
        "beta": True,
    }
    assert Query.objects.get(pool=search_pool, external_id="n1").fields == {"locale": "de"}
    (tmp_path / "q.tsv").write_text("q1\tsolar panels again\n")  # TSV says nothing about fields: kept
    call_command(
        "import_queries",
        "--pool",
        "search",
        str(tmp_path / "q.tsv"),
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert Query.objects.get(pool=search_pool, external_id="q1").fields["locale"] == "fr-FR"
    out = io.StringIO()
    call_command("export_queries", "--pool", "search", "--format", "jsonl", stdout=out)
    lines = {json.loads(line)["id"]: json.loads(line) for line in out.getvalue().splitlines()}
    assert (
        lines["q1"]["fields"] == {"locale": "fr-FR", "cat": 2, "beta": True} and "fields" not in lines["q2"]
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [('["fr"]', "fields must be an object"), ('{"lo cale": "fr"}', "field name 'lo cale'"),
     ('{"locale": null}', "field locale must be a string, a number or true/false, got null"),
     ('{"locale": {"a": 1}}', "got an object")],
)  # fmt: skip
def test_bad_fields_in_a_query_file_are_refused_naming_the_line(search_pool, tmp_path, fields, message):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "z1", "text": "ok"}\n{"id": "z2", "text": "bad", "fields": ' + fields + "}\n")
    with pytest.raises(CommandError) as caught:
        call_command(
            "import_queries", "--pool", "search", str(path), stdout=io.StringIO(), stderr=io.StringIO()
        )
    assert ":2:" in str(caught.value) or "line 2" in str(caught.value) or "2: fields" in str(caught.value)
    assert message in str(caught.value)
    assert not Query.objects.filter(external_id__in=["z1", "z2"]).exists()


def test_a_query_written_by_sql_gets_no_fields(search_pool):
    """Bulk paths and benchmarks insert queries with SQL: the column's database default is {}."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO judgments_query (pool_id, external_id, text, information_need) VALUES (%s, 'sql1', 'x', '')",
            [search_pool.pk],
        )
    assert Query.objects.get(external_id="sql1").fields == {}
