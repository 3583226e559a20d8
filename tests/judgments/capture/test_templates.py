"""Request templates: placeholders escaped for JSON bodies and URL parameters; clear errors. No database."""

import json
from urllib.parse import parse_qs, parse_qsl

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgments.endpoints.templates import JsonTemplate, ParamsTemplate, TemplateError, compile_template

from .conftest import QUERY_TEXTS

ES = '{"query": {"multi_match": {"query": "{{query}}", "fields": ["title", "body"]}}, "size": {{depth}}, "_source": false}'
# No surrogates: a query comes from PostgreSQL text or an HTTP form, which cannot hold one.
TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)))


@pytest.mark.parametrize("query", QUERY_TEXTS)
def test_json_body_carries_any_query_verbatim(query):
    body = json.loads(JsonTemplate(ES).render(query, "q1", 25))
    assert body == {
        "query": {"multi_match": {"query": query, "fields": ["title", "body"]}},
        "size": 25,
        "_source": False,
    }


@given(query=TEXT, query_id=TEXT)
def test_json_body_never_breaks_nor_gains_keys(query, query_id):
    template = JsonTemplate('{"q": "{{query}}", "id": {{query_id}}, "note": "qid={{query_id}}; q={{query}}"}')
    body = json.loads(template.render(query, query_id, 10))
    assert body == {"q": query, "id": query_id, "note": f"qid={query_id}; q={query}"}


def test_json_body_is_ascii_with_non_ascii_escaped():
    raw = JsonTemplate(ES).render("café", "1", 5)
    assert raw.isascii() and b"caf\\u00e9" in raw


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ('{"q": "{{query}}", "size": {{depth}}}', {"q": "x y", "size": 7}),  # bare: a number
        ('{"q": "{{query}}", "size": "{{depth}}"}', {"q": "x y", "size": 7}),  # the whole string: a number
        ('{"q": "{{query}}", "size": "top {{depth}}"}', {"q": "x y", "size": "top 7"}),  # inside text: text
        ('{"q": {{ query }}}', {"q": "x y"}),  # bare, spaces inside the braces
        ('{"ids": ["{{query_id}}", {{query_id}}], "q": "{{query}}"}', {"ids": ["42", "42"], "q": "x y"}),
    ],
)
def test_placeholder_types_quoted_or_bare(template, expected):
    assert json.loads(JsonTemplate(template).render("x y", "42", 7)) == expected


def test_literal_json_values_survive_untouched():
    template = '{"q": "{{query}}", "n": 1.5, "t": true, "nil": null, "deep": [{"a": ["x", 2]}], "u": "caf\\u00e9 \\"q\\""}'
    body = json.loads(JsonTemplate(template).render("z", "1", 3))
    assert body == {"q": "z", "n": 1.5, "t": True, "nil": None, "deep": [{"a": ["x", 2]}], "u": 'café "q"'}


@pytest.mark.parametrize("query", QUERY_TEXTS)
def test_url_parameters_carry_any_query_verbatim(query):
    rendered = ParamsTemplate("q={{query}}&rows={{depth}}&fl=id,score&wt=json").render(query, "q1", 10)
    assert parse_qsl(rendered, keep_blank_values=True) == [
        ("q", query),
        ("rows", "10"),
        ("fl", "id,score"),
        ("wt", "json"),
    ]
    assert rendered.isascii() and " " not in rendered and "\n" not in rendered


@given(query=TEXT)
def test_url_parameters_never_gain_parameters(query):
    rendered = ParamsTemplate("q=title:({{query}})&rows={{depth}}").render(query, "1", 3)
    assert parse_qs(rendered, keep_blank_values=True, strict_parsing=True) == {
        "q": [f"title:({query})"],
        "rows": ["3"],
    }


def test_url_parameter_template_keeps_its_own_text_and_escapes():
    template = ParamsTemplate("?defType=edismax\nqf=title^2 body\nfq=type%3Abook\nq={{query}}\nbq=a+b\n")
    rendered = template.render("x", "1", 5)
    assert rendered == "defType=edismax&qf=title%5E2%20body&fq=type%3Abook&q=x&bq=a+b"
    assert template.names == ["defType", "qf", "fq", "q", "bq"]


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ('{"q": "{{qeury}}"}', "unknown placeholder {{qeury}} at $.q"),
        ('{"q": "{{query}", "s": 1}', "malformed placeholder at $.q"),
        ('{"q": {{query}, "s": 1}', "malformed placeholder at line 1 column 7"),
        (
            '{"q": "{{query}}",\n "s": {{depth}} x}',
            "not valid JSON: Expecting ',' delimiter at line 2 column 17",
        ),
        ('{"{{query}}": 1}', "placeholder in the key '{{query}}' at $"),
        ('{"q": "fixed"}', "never uses {{query}}"),
        ('{"q": "{{query}}", "n": NaN}', "not valid JSON"),
        ("  ", "empty"),
    ],
)
def test_bad_json_templates_say_where(template, message):
    with pytest.raises(TemplateError) as caught:
        JsonTemplate(template)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("q={{query}}&rows={{dpeth}}", "unknown placeholder {{dpeth}} in parameter 2 ('rows={{dpeth}}')"),
        ("q={{query}&rows=1", "malformed placeholder in parameter 1"),
        ("={{query}}", "parameter 1 ('={{query}}') has no name"),
        ("{{query}}=x", "placeholder in the name of parameter 1"),
        ("rows={{depth}}", "never uses {{query}}"),
        ("&&", "has no parameters"),
    ],
)
def test_bad_parameter_templates_say_where(template, message):
    with pytest.raises(TemplateError) as caught:
        ParamsTemplate(template)
    assert message in str(caught.value)


def test_depth_must_be_a_positive_whole_number():
    with pytest.raises(TemplateError, match="depth"):
        JsonTemplate(ES).render("q", "1", 0)
    with pytest.raises(TemplateError, match="depth"):
        ParamsTemplate("q={{query}}").render("q", "1", True)


def test_compile_template_picks_the_format():
    assert isinstance(compile_template(ES, "json"), JsonTemplate)
    assert isinstance(compile_template("q={{query}}", "params"), ParamsTemplate)
    with pytest.raises(TemplateError, match="unknown template format"):
        compile_template(ES, "xml")
