"""The pools API (judgments/api/pools.py): pools, their queries and documents, exports and imports,
under every role of conftest.py: the status AND the data (or its absence)."""

import pytest

from judgments.models import Document, Judgment, Query
from tests.judgments.api.conftest import check, results, streamed

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
                    "fields": {},
                    "tags": [],
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
