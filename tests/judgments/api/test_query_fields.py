"""Query fields through the API: written by admins, read back, refused naming the field when bad."""

from judgments.models import Query


def test_admin_creates_and_patches_a_querys_fields(client_for):
    client = client_for("site_admin")
    response = client.post(
        "/api/queries/",
        {"pool": "robust", "external_id": "q9", "text": "new", "fields": {"locale": "fr-FR", "cat": 3}},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["fields"] == {"locale": "fr-FR", "cat": 3}
    query = Query.objects.get(external_id="q9")
    answer = client.patch(f"/api/queries/{query.pk}/", {"fields": {"locale": "de"}}, format="json")
    assert answer.status_code == 200 and Query.objects.get(pk=query.pk).fields == {"locale": "de"}
    engineer = client_for("engineer").get(f"/api/queries/{query.pk}/")
    assert engineer.json()["fields"] == {"locale": "de"}


def test_bad_fields_are_refused_naming_the_field(client_for):
    response = client_for("site_admin").post(
        "/api/queries/",
        {"pool": "robust", "external_id": "q9", "text": "new", "fields": {"bad name": "x"}},
        format="json",
    )
    assert response.status_code == 400
    assert "field name 'bad name'" in response.json()["fields"][0]
    assert not Query.objects.filter(external_id="q9").exists()
