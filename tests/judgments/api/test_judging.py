"""The judgments API (judgments/api/judging.py), under every role of conftest.py: the status AND the data
(or its absence)."""

import pytest

from judgments.models import Judgment
from tests.judgments.api.conftest import check, results

# --- Judgments -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "status", "seen"),
    [
        (
            "site_admin",
            200,
            {
                ("rita_rater", "q1", "d1"),
                ("rita_rater", "q1", "d2"),
                ("ray_rater", "q1", "d1"),
                ("ray_rater", "q2", "d3"),
            },
        ),
        ("rater", 200, {("rita_rater", "q1", "d1"), ("rita_rater", "q1", "d2")}),
        ("other_rater", 200, {("ray_rater", "q1", "d1"), ("ray_rater", "q2", "d3")}),
        ("engineer", 200, set()),
        ("other_engineer", 200, set()),
        ("outsider", 200, set()),
        ("anonymous", 403, None),
    ],
)
def test_judgment_list_shows_only_own_unless_admin(client_for, role, status, seen, rater):
    client = client_for(role)
    response = client.get("/api/judgments/", {"pool": "robust"})
    check(role, response, status, seen)
    if seen is None:
        return
    assert {(j["rater"], j["query_id"], j["doc_id"]) for j in results(response)} == seen
    # Asking for another rater's judgments by name gives nothing unless admin.
    theirs = results(client.get("/api/judgments/", {"rater": "rita_rater"}))
    assert len(theirs) == (2 if role in ("site_admin", "rater") else 0)
    rita = Judgment.objects.filter(rater=rater).first()
    check(
        role, client.get(f"/api/judgments/{rita.pk}/"), 200 if role in ("site_admin", "rater") else 404, None
    )


@pytest.mark.parametrize(
    ("role", "status"),
    [
        ("site_admin", 404),  # admins grade only in pools they belong to
        ("engineer", 403),
        ("other_engineer", 403),
        ("rater", 200),  # changes the existing grade
        ("other_rater", 201),
        ("outsider", 403),
        ("anonymous", 403),
    ],
)
def test_judgment_submit(client_for, role, status, request, world):
    from judgments.rating import queue

    world["pool"].raters_per_pair = 2  # rater graded q1/d2 already; it still wants a second grade
    world["pool"].save()
    queue.add_pairs(world["pool"], [("q1", "d2")])
    client = client_for(role)
    response = client.post(
        "/api/judgments/",
        {"pool": "robust", "query_id": "q1", "doc_id": "d2", "grade": 4, "note": "api"},
        format="json",
    )
    check(role, response, status, None)
    if status in (200, 201):
        user = request.getfixturevalue(role)
        judgment = Judgment.objects.get(
            rater=user, pair__query__external_id="q1", pair__document__external_id="d2"
        )
        assert (judgment.grade, judgment.note) == (4, "api")
        assert response.json()["grade"] == 4 and response.json()["rater"] == user.username
    else:
        assert not Judgment.objects.filter(note="api").exists()


def test_judgment_submit_checks_the_grade_and_the_pool(client_for, rater, world):
    from judgments.rating import queue

    queue.add_pairs(world["pool"], [("q1", "d3")])
    client = client_for("rater")
    bad = client.post(
        "/api/judgments/", {"pool": "robust", "query_id": "q1", "doc_id": "d3", "grade": 7}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["problems"][0]["field"] == "grade"
    cant = client.post(
        "/api/judgments/",
        {"pool": "robust", "query_id": "q1", "doc_id": "d3", "cant_judge": True},
        format="json",
    )
    assert cant.status_code == 400 and cant.json()["problems"][0]["field"] == "reason"
    ok = client.post(
        "/api/judgments/",
        {"pool": "robust", "query_id": "q1", "doc_id": "d3", "cant_judge": True, "reason": "paywall"},
        format="json",
    )
    assert ok.status_code == 201 and ok.json()["cant_judge"] is True and ok.json()["reason"] == "paywall"
    secret = client.post(
        "/api/judgments/", {"pool": "secret", "query_id": "s1", "doc_id": "sd1", "grade": 1}, format="json"
    )
    assert secret.status_code == 404
    assert not Judgment.objects.filter(rater=rater, pair__pool__name="secret").exists()
