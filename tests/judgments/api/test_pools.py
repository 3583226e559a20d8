"""Every API endpoint under every role: the status AND the data (or its absence).

Roles: site_admin (admin), engineer (team "relevance", owns configuration bm25), other_engineer (team
"other-team", owns dense), rater and other_rater (members of pool robust), outsider (logged in, no role,
no pool) and anonymous. A second pool, "secret", has no member but the admin sees it.
Clients authenticate with their API token, as scripts do.
"""

import json

import pytest
from django.contrib.auth.models import Group
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import services
from judgments.models import Document, Judgment, Pool, Query, Run, SearchConfiguration
from scoring.services import rescore_pool

ROLES = ("site_admin", "engineer", "other_engineer", "rater", "other_rater", "outsider", "anonymous")


@pytest.fixture
def world(
    pool,
    configuration,
    other_configuration,
    run,
    engineer,
    other_engineer,
    rater,
    other_rater,
    site_admin,
    outsider,
):
    """The conftest pool with two configurations' runs, two raters' judgments and stored scores."""
    other_run = services.record_run(
        other_configuration, {"q1": ["d2", "d1"], "q2": ["d1"]}, source="api", submitted_by=other_engineer
    )
    pair = {(p.query.external_id, p.document.external_id): p for p in services_pairs(pool)}
    services.record_judgment(pair[("q1", "d1")], rater, grade=3)
    services.record_judgment(pair[("q1", "d2")], rater, grade=1)
    services.record_judgment(pair[("q1", "d1")], other_rater, grade=2)
    services.record_judgment(pair[("q2", "d3")], other_rater, grade=4)
    secret = Pool.objects.create(name="secret")
    Query.objects.create(pool=secret, external_id="s1", text="secret query")
    Document.objects.create(pool=secret, external_id="sd1", title="Secret", body="secret body")
    rescore_pool(pool)
    return {"pool": pool, "secret": secret, "run": run, "other_run": other_run}


def services_pairs(pool):
    from judgments.models import Pair

    keys = {(q.pk, d.pk) for q in pool.queries.all() for d in pool.documents.all()}
    services.ensure_pairs(pool, keys)
    return Pair.objects.in_pool(pool).select_related("query", "document", "pool")


@pytest.fixture
def client_for(request, world):
    def make(role: str) -> APIClient:
        client = APIClient()
        if role != "anonymous":
            user = request.getfixturevalue(role)
            token, _ = Token.objects.get_or_create(user=user)
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make


def results(response) -> list:
    body = response.json()
    return body["results"] if isinstance(body, dict) and "results" in body else body


def streamed(response) -> str:
    return b"".join(response.streaming_content).decode()


def check(role, response, expected_status, expected):
    assert response.status_code == expected_status, (
        role,
        response.status_code,
        getattr(response, "data", None),
    )
    if expected_status >= 400:
        body = response.content.decode() if not response.streaming else ""
        for leak in ("q1", "d1", "bm25", "rita_rater", "secret"):
            assert f'"{leak}"' not in body, (role, leak, body)


# --- Pools ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "status", "names"),
    [
        ("site_admin", 200, {"robust", "secret"}),
        ("engineer", 200, {"robust"}),
        ("other_engineer", 200, {"robust"}),
        ("rater", 200, {"robust"}),
        ("other_rater", 200, {"robust"}),
        ("outsider", 200, set()),
        ("anonymous", 403, None),
    ],
)
def test_pool_list(client_for, role, status, names):
    response = client_for(role).get("/api/pools/")
    check(role, response, status, names)
    if names is not None:
        assert {p["name"] for p in results(response)} == names
        robust = [p for p in results(response) if p["name"] == "robust"]
        if robust:
            assert (robust[0]["n_queries"], robust[0]["n_documents"], robust[0]["combine_rule"]) == (
                2,
                3,
                "mean",
            )


@pytest.mark.parametrize(
    ("role", "robust", "secret"),
    [
        ("site_admin", 200, 200),
        ("engineer", 200, 404),
        ("other_engineer", 200, 404),
        ("rater", 200, 404),
        ("other_rater", 200, 404),
        ("outsider", 404, 404),
        ("anonymous", 403, 403),
    ],
)
def test_pool_detail(client_for, role, robust, secret):
    client = client_for(role)
    response = client.get("/api/pools/robust/")
    check(role, response, robust, None)
    if robust == 200:
        assert response.json()["guidelines"] == "Grade **carefully**."
    check(role, client.get("/api/pools/secret/"), secret, None)


# --- Queries and documents -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "status", "ids"),
    [
        ("site_admin", 200, {"q1", "q2", "s1"}),
        ("engineer", 200, {"q1", "q2"}),
        ("other_engineer", 200, {"q1", "q2"}),
        ("rater", 200, {"q1", "q2"}),
        ("other_rater", 200, {"q1", "q2"}),
        ("outsider", 200, set()),
        ("anonymous", 403, None),
    ],
)
def test_query_list_and_filters(client_for, role, status, ids):
    client = client_for(role)
    response = client.get("/api/queries/")
    check(role, response, status, ids)
    if ids is not None:
        assert {q["external_id"] for q in results(response)} == ids
        filtered = client.get("/api/queries/", {"pool": "robust", "external_id": "q2"})
        assert [q["text"] for q in results(filtered)] == (["query q2"] if "q2" in ids else [])
        assert results(client.get("/api/queries/", {"search": "SECRET"})) == (
            [
                {
                    "id": Query.objects.get(external_id="s1").pk,
                    "pool": "secret",
                    "external_id": "s1",
                    "text": "secret query",
                    "information_need": "",
                }
            ]
            if "s1" in ids
            else []
        )


@pytest.mark.parametrize(
    ("role", "status"),
    [
        ("site_admin", 201),
        ("engineer", 403),
        ("other_engineer", 403),
        ("rater", 403),
        ("other_rater", 403),
        ("outsider", 403),
        ("anonymous", 403),
    ],
)
def test_only_admins_create_queries_and_documents(client_for, role, status):
    client = client_for(role)
    response = client.post(
        "/api/queries/", {"pool": "robust", "external_id": "q9", "text": "new"}, format="json"
    )
    check(role, response, status, None)
    assert Query.objects.filter(external_id="q9").exists() == (status == 201)
    response = client.post(
        "/api/documents/",
        {"pool": "robust", "external_id": "d9", "title": "T", "extra": {"lang": "en"}},
        format="json",
    )
    check(role, response, status, None)
    assert Document.objects.filter(external_id="d9", extra={"lang": "en"}).exists() == (status == 201)


def test_admin_query_with_whitespace_id_is_refused(client_for):
    response = client_for("site_admin").post(
        "/api/queries/", {"pool": "robust", "external_id": "q 9", "text": "x"}, format="json"
    )
    assert response.status_code == 400 and "external_id" in response.json()
    assert not Query.objects.filter(external_id="q 9").exists()


@pytest.mark.parametrize(
    ("role", "status", "ids"),
    [
        ("site_admin", 200, {"d1", "d2", "d3", "sd1"}),
        ("engineer", 200, {"d1", "d2", "d3"}),
        ("rater", 200, {"d1", "d2", "d3"}),
        ("other_rater", 200, {"d1", "d2", "d3"}),
        ("other_engineer", 200, {"d1", "d2", "d3"}),
        ("outsider", 200, set()),
        ("anonymous", 403, None),
    ],
)
def test_document_list_and_detail(client_for, role, status, ids):
    client = client_for(role)
    response = client.get("/api/documents/")
    check(role, response, status, ids)
    secret = Document.objects.get(external_id="sd1")
    detail = client.get(f"/api/documents/{secret.pk}/")
    if ids is None:
        check(role, detail, 403, None)
        return
    assert {d["external_id"] for d in results(response)} == ids
    check(role, detail, 200 if "sd1" in ids else 404, None)
    empty = client.get("/api/documents/", {"has_content": "false"})
    assert results(empty) == []


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


# --- Scores ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "status"),
    [
        ("site_admin", 200),
        ("engineer", 200),
        ("other_engineer", 200),
        ("rater", 403),
        ("other_rater", 403),
        ("outsider", 403),
        ("anonymous", 403),
    ],
)
def test_scores_read_and_filter(client_for, role, status, world):
    client = client_for(role)
    response = client.get("/api/scores/", {"pool": "robust", "flavor": "trec"})
    check(role, response, status, None)
    if status != 200:
        assert "results" not in response.json()
        check(role, client.get("/api/scores/trec-eval/", {"run": world["run"].pk}), 403, None)
        check(role, client.get("/api/scores/export/", {"pool": "robust"}), 403, None)
        return
    rows = results(response)
    assert {(r["configuration_name"], r["query_id"]) for r in rows} == {
        ("bm25", "q1"),
        ("dense", "q1"),
        ("bm25", "q2"),
        ("dense", "q2"),
    }
    bm25_q1 = next(r for r in rows if (r["configuration_name"], r["query_id"]) == ("bm25", "q1"))
    # q1: d1 mean(3, 2) = 2.5, d2 = 1; bm25 ranks d1, d2, d3 -> ideal order: NDCG = 1.
    assert bm25_q1["metrics"]["ndcg@10"] == pytest.approx(1.0) and bm25_q1["judged"][
        "judged@3"
    ] == pytest.approx(2 / 3)
    only = results(
        client.get(
            "/api/scores/",
            {"configuration": world["other_run"].configuration_id, "query": "q1", "flavor": "exp"},
        )
    )
    assert [(r["configuration_name"], r["query_id"], r["flavor"]) for r in only] == [("dense", "q1", "exp")]
    text = streamed(client.get("/api/scores/trec-eval/", {"run": world["run"].pk}))
    lines = [[m.rstrip(), q, v] for m, q, v in (line.split("\t") for line in text.splitlines())]
    assert ["ndcg_cut_10", "q1", "1.0000"] in lines
    assert ["runid", "all", "bm25"] in lines and ["num_q", "all", "2"] in lines
    exported = [
        json.loads(line)
        for line in streamed(
            client.get("/api/scores/export/", {"pool": "robust", "flavor": "trec"})
        ).splitlines()
    ]
    assert {(r["configuration"], r["query"]) for r in exported} >= {
        ("bm25", "q1"),
        ("bm25", "all"),
        ("dense", "all"),
    }


# --- Pool exports and imports ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "qrels", "queries"),
    [
        ("site_admin", 200, 200),
        ("engineer", 403, 200),
        ("other_engineer", 403, 200),
        ("rater", 403, 403),
        ("other_rater", 403, 403),
        ("outsider", 404, 404),
        ("anonymous", 403, 403),
    ],
)
def test_pool_exports_by_role(client_for, role, qrels, queries):
    client = client_for(role)
    response = client.get("/api/pools/robust/export/qrels-exact/")
    assert response.status_code == qrels
    if qrels == 200:
        assert response.streaming
        assert sorted(streamed(response).splitlines()) == ["q1 0 d1 2.5", "q1 0 d2 1", "q2 0 d3 4"]
        assert response["Content-Disposition"] == 'attachment; filename="robust.mean-exact.qrels"'
    else:
        check(role, response, qrels, None)
    response = client.get("/api/pools/robust/export/queries-tsv/")
    assert response.status_code == queries
    if queries == 200:
        assert streamed(response) == "q1\tquery q1\nq2\tquery q2\n"
    for kind in ("judgments-jsonl", "judgments-rater-csv", "ranklib"):
        got = client.get(f"/api/pools/robust/export/{kind}/")
        assert got.status_code == qrels
        if qrels == 200:
            assert streamed(got)


def test_unknown_export_kind_is_404(client_for):
    assert client_for("site_admin").get("/api/pools/robust/export/passwords/").status_code == 404


@pytest.mark.parametrize(
    ("role", "status"),
    [
        ("site_admin", 201),
        ("engineer", 403),
        ("other_engineer", 403),
        ("rater", 403),
        ("other_rater", 403),
        ("outsider", 404),
        ("anonymous", 403),
    ],
)
def test_pool_import_is_for_admins(client_for, role, status):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = b'{"id": "d7", "title": "Seven", "lang": "fr"}\n'
    response = client_for(role).post(
        "/api/pools/robust/import/documents/",
        {"file": SimpleUploadedFile("docs.jsonl", data)},
        format="multipart",
    )
    check(role, response, status, None)
    assert Document.objects.filter(external_id="d7", extra={"lang": "fr"}).exists() == (status == 201)
    if status == 201:
        assert (response.json()["created"], response.json()["kind"]) == (1, "documents")


def test_pool_import_problems_and_dry_run(client_for, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_for("site_admin")
    bad = b"query,docid,rating\nquery q1,d1,3\nno such query,d1,2\nquery q2,d 2,9\n"
    response = client.post(
        "/api/pools/robust/import/judgments-csv/",
        {"file": SimpleUploadedFile("quepid.csv", bad), "rater": "quepid"},
        format="multipart",
    )
    assert response.status_code == 400
    assert [(p["line"], p["field"]) for p in response.json()["problems"]] == [(4, "docid"), (4, "rating")]
    good = b"query,docid,rating\nQuery Q1,d1,3\nq2,d9,0\n"
    check_only = client.post(
        "/api/pools/robust/import/judgments-csv/?dry_run=1",
        {"file": SimpleUploadedFile("quepid.csv", good), "rater": "quepid"},
        format="multipart",
    )
    assert check_only.status_code == 200 and check_only.json()["created"] == 2
    assert not Judgment.objects.filter(rater__username="quepid").exists()
    assert not Document.objects.filter(external_id="d9").exists()
    settings.UPLOAD_MAX_BYTES = 10
    too_big = client.post(
        "/api/pools/robust/import/judgments-csv/",
        {"file": SimpleUploadedFile("quepid.csv", good)},
        format="multipart",
    )
    assert too_big.status_code == 400 and "limit" in too_big.json()["problems"][0]["message"]


# --- Schema, docs and tokens -----------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_schema_is_served_to_every_signed_in_user_only(client_for, role):
    schema = client_for(role).get("/api/schema/", {"format": "json"})
    if role == "anonymous":
        assert schema.status_code in (401, 403)
        assert b"openapi" not in schema.content
    else:
        assert schema.status_code == 200
        assert schema.json()["openapi"].startswith("3.")


def test_docs_page_needs_a_login_and_loads_nothing_from_a_cdn(client, rater, pool):
    anonymous = client.get("/api/docs/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    client.force_login(rater)
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"/static/vendor/swagger-ui/swagger-ui-bundle.js" in docs.content
    assert b"unpkg" not in docs.content and b"cdn.jsdelivr" not in docs.content


def test_token_obtained_with_a_password_reads_the_api(engineer, pool):
    client = APIClient()
    response = client.post(
        "/api/token/", {"username": engineer.username, "password": "correct-horse-battery"}, format="json"
    )
    assert response.status_code == 200
    token = response.json()["token"]
    assert Token.objects.get(user=engineer).key == token
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert [p["name"] for p in results(client.get("/api/pools/"))] == ["robust"]
    assert (
        APIClient().post("/api/token/", {"username": engineer.username, "password": "wrong"}).status_code
        == 400
    )


def test_session_login_reads_the_api_too(client, rater, pool):
    client.force_login(rater)
    assert client.get("/api/pools/").json()["results"][0]["name"] == "robust"
    assert client.get("/api/runs/").status_code == 403


def test_role_change_takes_effect(client_for, rater):
    rater.groups.add(Group.objects.get(name="engineer"))
    assert client_for("rater").get("/api/runs/").status_code == 200
