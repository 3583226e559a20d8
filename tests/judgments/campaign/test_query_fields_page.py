"""The campaign's queries page: admins edit a query's fields; bad lines are refused naming the line."""

from judgments.campaign.queries import format_fields, parse_fields
from judgments.models import Query
from tests.conftest import login


def test_parse_fields_types_and_round_trip():
    fields = parse_fields("locale = de-DE\ncat = 12\n# a comment\nbeta=true\nzip = 007\n")
    assert fields == {"locale": "de-DE", "cat": 12, "beta": True, "zip": "007"}
    assert parse_fields(format_fields(fields)) == fields


def test_an_admin_edits_a_querys_fields(client, pool, site_admin):
    login(client, site_admin)
    query = Query.objects.get(pool=pool, external_id="q1")
    page = f"/campaign/pools/{pool.name}/queries/"
    response = client.post(page, {"query": query.pk, "fields": "locale = fr-FR\ncat = 3"})
    assert response.status_code == 302
    assert Query.objects.get(pk=query.pk).fields == {"locale": "fr-FR", "cat": 3}
    html = client.get(page).content.decode()
    assert "locale = fr-FR" in html and "<code>locale</code>" in html


def test_a_bad_line_is_refused_naming_it_and_nothing_is_saved(client, pool, site_admin):
    login(client, site_admin)
    query = Query.objects.get(pool=pool, external_id="q1")
    response = client.post(
        f"/campaign/pools/{pool.name}/queries/", {"query": query.pk, "fields": "locale = fr\nbad name = x"}
    )
    assert response.status_code == 400
    assert "line 2: field name &#x27;bad name&#x27;" in response.content.decode()
    assert Query.objects.get(pk=query.pk).fields == {}


def test_only_admins_see_the_queries_page(client, pool, engineer, rater):
    for user in (engineer, rater):
        login(client, user)
        assert client.get(f"/campaign/pools/{pool.name}/queries/").status_code == 403
