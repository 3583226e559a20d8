"""`POST /api/pools/<name>/gate/`: the command's summary, 400 naming the field, roles."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def client(user) -> APIClient:
    api = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return api


def url(pool="gated") -> str:
    return f"/api/pools/{pool}/gate/"


def test_the_api_answers_what_the_command_prints(gated, engineer):
    gated.members.add(engineer)
    body = {"baseline": "baseline", "candidate": "worse", "measures": ["nDCG@10", "mrr"], "test": "t"}
    response = client(engineer).post(url(), body, format="json")
    assert response.status_code == 200, response.content
    out = StringIO()
    with pytest.raises(CommandError):
        call_command(
            "gate", "--pool", "gated", "--baseline", "baseline", "--candidate", "worse",
            "--measure", "nDCG@10", "--measure", "mrr", stdout=out, stderr=StringIO(),
        )  # fmt: skip
    printed = json.loads(out.getvalue().splitlines()[-1])
    assert response.json()["verdict"] == "fail"
    assert response.json()["measures"] == printed["measures"]
    assert "Relevance gate failed" in response.json()["markdown"]
    assert response.json()["junit"].startswith("<?xml") and 'name="mrr"' in response.json()["junit"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"baseline": "baseline", "candidate": "baseline"}, "candidate"),
        ({"baseline": "baseline", "candidate": "nope"}, "candidate"),
        ({"baseline": "nope", "candidate": "worse"}, "baseline"),
        ({"baseline": "baseline", "candidate": "worse", "alpha": 1.5}, "alpha"),
        ({"baseline": "baseline", "candidate": "worse", "measures": ["f1"]}, "measures"),
        ({"baseline": "baseline", "candidate": "worse", "flavor": "zz"}, "flavor"),
        ({"baseline": "baseline", "candidate": "worse", "test": "zz"}, "test"),
        ({"candidate": "worse"}, "baseline"),
    ],
)
def test_bad_input_is_400_naming_the_field(gated, site_admin, body, field):
    response = client(site_admin).post(url(), body, format="json")
    assert response.status_code == 400
    assert [p["field"] for p in response.json()["problems"]] == [field]


def test_who_may_gate(gated, engineer, rater, outsider):
    body = {"baseline": "baseline", "candidate": "same"}
    assert client(engineer).post(url(), body, format="json").status_code == 404  # not a member
    assert client(rater).post(url(), body, format="json").status_code == 403
    assert client(outsider).post(url(), body, format="json").status_code == 403
    assert APIClient().post(url(), body, format="json").status_code in (401, 403)
    gated.members.add(engineer)
    answer = client(engineer).post(url(), body, format="json")
    assert answer.status_code == 200 and answer.json()["verdict"] == "pass"
