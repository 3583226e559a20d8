"""A refused import through the API leaves the database as it was: no rater account, no query, no grade."""

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments.models import Document, Judgment, Query


@pytest.fixture
def admin_api(site_admin):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=site_admin)[0].key}")
    return client


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("qrels", b"q1 0 d1 2\nq9 0 d9 7\n"),  # grade 7: outside the scale
        ("judgments-csv", b"query,docid,rating\nq1,d1,2\nq1,d2,abc\n"),
    ],
)
def test_a_refused_api_import_creates_no_rater_account(admin_api, pool, kind, data):
    before = (Query.objects.count(), Document.objects.count(), get_user_model().objects.count())
    response = admin_api.post(
        f"/api/pools/{pool.name}/import/{kind}/",
        {"file": SimpleUploadedFile("grades.txt", data), "rater": "brand-new-rater"},
        format="multipart",
    )
    assert response.status_code == 400 and response.json()["problems"]
    assert not get_user_model().objects.filter(username="brand-new-rater").exists()
    assert (Query.objects.count(), Document.objects.count(), get_user_model().objects.count()) == before
    assert not Judgment.objects.exists()


def test_an_accepted_api_import_creates_the_rater(admin_api, pool):
    response = admin_api.post(
        f"/api/pools/{pool.name}/import/qrels/",
        {"file": SimpleUploadedFile("grades.qrels", b"q1 0 d1 2\n"), "rater": "brand-new-rater"},
        format="multipart",
    )
    assert response.status_code == 201
    assert Judgment.objects.get().rater.username == "brand-new-rater"
