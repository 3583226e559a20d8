"""Query tags through the REST API: read and written by admins, the ?tag= filter, bad tags refused naming the field."""

import pytest

from judgments.models import Query

# --- REST API ------------------------------------------------------------------------------------


def test_api_round_trip_and_tag_filter(client_for):
    client = client_for("site_admin")
    response = client.post(
        "/api/queries/",
        {"pool": "robust", "external_id": "q9", "text": "new", "tags": ["tail", "head", "head"]},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["tags"] == ["head", "tail"]
    q1 = Query.objects.get(pool__name="robust", external_id="q1")
    answer = client.patch(f"/api/queries/{q1.pk}/", {"tags": ["head"]}, format="json")
    assert answer.status_code == 200 and Query.objects.get(pk=q1.pk).tags == ["head"]
    engineer = client_for("engineer")
    listed = engineer.get("/api/queries/?pool=robust&tag=head").json()
    ids = [row["external_id"] for row in listed.get("results", listed)]
    assert ids == ["q1", "q9"]
    listed = engineer.get("/api/queries/?pool=robust&tag=head&tag=tail").json()
    assert [row["external_id"] for row in listed.get("results", listed)] == ["q9"]
    assert engineer.get(f"/api/queries/{q1.pk}/").json()["tags"] == ["head"]


@pytest.mark.parametrize(
    ("tags", "words"),
    [
        (["two words"], "whitespace"),
        ([""], "a tag is empty"),
        (["x" * 65], "at most 64"),
        ("head", "must be a list"),
    ],
)
def test_api_refuses_bad_tags_naming_the_field(client_for, tags, words):
    q1 = Query.objects.get(pool__name="robust", external_id="q1")
    response = client_for("site_admin").patch(f"/api/queries/{q1.pk}/", {"tags": tags}, format="json")
    assert response.status_code == 400, response.content
    assert words in response.json()["tags"][0]
    assert Query.objects.get(pk=q1.pk).tags == []
