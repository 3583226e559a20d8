"""The runs API (judgments/api/runs.py): configurations and runs, under every role of conftest.py: the
status AND the data (or its absence)."""

import pytest

from judgments import services
from judgments.models import Run, SearchConfiguration
from tests.judgments.api.conftest import check, results, streamed

# --- Configurations --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "status", "names"),
    [
        ("site_admin", 200, {"bm25", "dense"}),
        ("engineer", 200, {"bm25", "dense"}),
        ("other_engineer", 200, {"bm25", "dense"}),
        ("rater", 403, None),
        ("other_rater", 403, None),
        ("outsider", 403, None),
        ("anonymous", 403, None),
    ],
)
def test_configuration_list(client_for, role, status, names, world):
    response = client_for(role).get("/api/configurations/", {"pool": "robust"})
    check(role, response, status, names)
    if names is not None:
        rows = {c["name"]: c for c in results(response)}
        assert rows.keys() == names
        assert (rows["bm25"]["team"], rows["bm25"]["current_run"], rows["bm25"]["n_runs"]) == (
            "relevance",
            world["run"].pk,
            1,
        )


@pytest.mark.parametrize(
    ("role", "status"),
    [
        ("site_admin", 201),
        ("engineer", 201),
        ("other_engineer", 400),  # team "relevance" is not theirs
        ("rater", 403),
        ("other_rater", 403),
        ("outsider", 403),
        ("anonymous", 403),
    ],
)
def test_configuration_create_for_own_team_only(client_for, role, status):
    body = {"pool": "robust", "team": "relevance", "name": "splade", "parameters": {"k": 3}}
    response = client_for(role).post("/api/configurations/", body, format="json")
    check(role, response, status, None)
    assert SearchConfiguration.objects.filter(name="splade", team__name="relevance").exists() == (
        status == 201
    )
    if status == 400:
        assert response.json()["team"]


@pytest.mark.parametrize(
    ("role", "status"),
    [
        ("site_admin", 200),
        ("engineer", 200),
        ("other_engineer", 403),
        ("rater", 403),
        ("outsider", 403),
        ("anonymous", 403),
    ],
)
def test_configuration_change_by_its_team_only(client_for, role, status, configuration):
    response = client_for(role).patch(
        f"/api/configurations/{configuration.pk}/", {"description": "tuned"}, format="json"
    )
    check(role, response, status, None)
    configuration.refresh_from_db()
    assert (configuration.description == "tuned") == (status == 200)


# --- Runs ------------------------------------------------------------------------------------------

RUN_ROLES = [
    ("site_admin", 200, 201, 201),
    ("engineer", 200, 201, 403),
    ("other_engineer", 200, 403, 201),
    ("rater", 403, 403, 403),
    ("other_rater", 403, 403, 403),
    ("outsider", 403, 403, 403),
    ("anonymous", 403, 403, 403),
]


@pytest.mark.parametrize(("role", "read", "own", "other"), RUN_ROLES)
def test_run_list_and_detail(client_for, role, read, own, other, world):
    client = client_for(role)
    response = client.get("/api/runs/", {"pool": "robust"})
    check(role, response, read, None)
    detail = client.get(f"/api/runs/{world['run'].pk}/")
    check(role, detail, read, None)
    if read == 200:
        assert {r["id"] for r in results(response)} == {world["run"].pk, world["other_run"].pk}
        assert detail.json()["n_rankings"] == 2 and detail.json()["configuration_name"] == "bm25"
        current = client.get(
            "/api/runs/", {"configuration": world["run"].configuration_id, "current": "true"}
        )
        assert [r["id"] for r in results(current)] == [world["run"].pk]


@pytest.mark.parametrize(("role", "read", "own", "other"), RUN_ROLES)
def test_run_submit_as_json_only_for_own_team(
    request, client_for, role, read, own, other, configuration, other_configuration
):
    client = client_for(role)
    before = Run.objects.count()
    body = {"configuration": configuration.pk, "rankings": {"q1": ["d3", "d2"], "q2": ["d1"]}, "tag": "v2"}
    response = client.post("/api/runs/", body, format="json")
    check(role, response, own, None)
    if own == 201:
        run = Run.objects.get(pk=response.json()["id"])
        assert services.ranking_external_ids(run) == {"q1": ["d3", "d2"], "q2": ["d1"]}
        assert (run.source, run.submitted_by, run.tag) == ("api", request.getfixturevalue(role), "v2")
    body["configuration"] = other_configuration.pk
    response = client.post("/api/runs/", body, format="json")
    check(role, response, other, None)
    assert Run.objects.count() == before + (own == 201) + (other == 201)


def test_run_with_a_doc_twice_is_refused_with_its_problems(client_for, configuration):
    before = Run.objects.count()
    body = {"configuration": configuration.pk, "rankings": {"q1": ["d1", "d2", "d1"], "q 2": ["d1"]}}
    response = client_for("engineer").post("/api/runs/", body, format="json")
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert {p["field"] for p in problems} == {"rankings.q1", "rankings.q 2"}
    assert any("appears twice" in p["message"] for p in problems)
    assert Run.objects.count() == before


def test_empty_run_is_refused(client_for, configuration):
    response = client_for("engineer").post(
        "/api/runs/", {"configuration": configuration.pk, "rankings": {}}, format="json"
    )
    assert response.status_code == 400 and response.json()["problems"][0]["field"] == "rankings"


@pytest.mark.parametrize(("role", "read", "own", "other"), RUN_ROLES)
def test_run_upload_of_a_trec_file(client_for, role, read, own, other, configuration):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_for(role)
    trec = b"q1 Q0 d2 1 9.5 mine\nq1 Q0 d1 2 3 mine\nq2 Q0 d3 1 1 mine\n"
    response = client.post(
        "/api/runs/upload/",
        {"configuration": configuration.pk, "file": SimpleUploadedFile("mine.trec", trec)},
        format="multipart",
    )
    check(role, response, own, None)
    if own == 201:
        run = Run.objects.get(pk=response.json()["id"])
        assert (run.tag, run.filename) == ("mine", "mine.trec")
        assert services.ranking_external_ids(run) == {"q1": ["d2", "d1"], "q2": ["d3"]}


def test_run_upload_with_bad_lines_answers_400_with_line_and_field(client_for, configuration):
    from django.core.files.uploadedfile import SimpleUploadedFile

    before = Run.objects.count()
    trec = b"q1 Q0 d2 1 9.5 mine\nq1 Q0 d2 2 3 mine\nq2 Q0 d3 1 mine\nq2 Q0 d4 1 x mine\n\xff\n"
    response = client_for("engineer").post(
        "/api/runs/upload/",
        {"configuration": configuration.pk, "file": SimpleUploadedFile("bad.trec", trec)},
        format="multipart",
    )
    assert response.status_code == 400
    body = response.json()
    assert body["file"] == "bad.trec"
    assert [(p["line"], p["field"]) for p in body["problems"]] == [
        (2, "docid"),
        (3, "line"),
        (4, "score"),
        (5, "encoding"),
        (5, "line"),
    ]
    assert Run.objects.count() == before


@pytest.mark.parametrize(
    ("role", "own", "other"),
    [
        ("site_admin", 200, 200),
        ("engineer", 200, 403),
        ("other_engineer", 403, 200),
        ("rater", 403, 403),
        ("outsider", 403, 403),
        ("anonymous", 403, 403),
    ],
)
def test_run_rankings_and_trec_download_for_its_team(client_for, role, own, other, world):
    client = client_for(role)
    response = client.get(f"/api/runs/{world['run'].pk}/rankings/")
    check(role, response, own, None)
    if own == 200:
        assert response.json() == {
            "run": world["run"].pk,
            "rankings": {"q1": ["d1", "d2", "d3"], "q2": ["d3", "d1"]},
        }
    response = client.get(f"/api/runs/{world['run'].pk}/trec/")
    assert response.status_code == own
    if own == 200:
        assert streamed(response).splitlines()[0] == "q1 Q0 d1 1 3 bm25"
        assert "attachment" in response["Content-Disposition"]
    check(role, client.get(f"/api/runs/{world['other_run'].pk}/rankings/"), other, None)
