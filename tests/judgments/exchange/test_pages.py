"""The import and export pages: upload → preview (problems by line and field) → confirm, streamed
downloads, new configurations and the API token page, under every role."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import StreamingHttpResponse
from rest_framework.authtoken.models import Token

from judgments import pool_keys, services
from judgments.exchange import uploads
from judgments.models import Document, Judgment, Run, SearchConfiguration, Upload

ROLES = ("site_admin", "engineer", "other_engineer", "rater", "other_rater", "outsider")


@pytest.fixture
def as_role(client, request, pool):
    def login(role):
        if role == "anonymous":
            return client
        client.force_login(request.getfixturevalue(role))
        return client

    return login


def body(response) -> str:
    if isinstance(response, StreamingHttpResponse):
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


# --- Import page -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "status", "kinds"),
    [
        (
            "site_admin",
            200,
            {
                "run",
                "queries",
                "documents",
                "qrels",
                "judgments-csv",
                "judgments-rre",
                "judgments-rater-csv",
                "judgments-jsonl",
            },
        ),
        ("engineer", 200, {"run"}),
        ("other_engineer", 200, {"run"}),
        ("rater", 403, None),
        ("other_rater", 403, None),
        ("outsider", 404, None),
    ],
)
def test_import_page_offers_the_kinds_of_the_role(as_role, role, status, kinds):
    response = as_role(role).get("/pools/robust/import/")
    assert response.status_code == status
    if kinds is not None:
        assert {value for value, _ in response.context["form"].fields["kind"].choices} == kinds
    else:
        assert b"judgments-jsonl" not in response.content


def test_anonymous_is_sent_to_login(client, pool):
    response = client.get("/pools/robust/import/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def upload(client, kind, name, content, **extra):
    return client.post(
        "/pools/robust/import/", {"kind": kind, "file": SimpleUploadedFile(name, content), **extra}
    )


def test_bad_documents_file_is_previewed_with_its_problems_and_not_stored(as_role):
    client = as_role("site_admin")
    content = b'{"id": "d8", "title": "ok"}\n{"id": "d 9"}\nnot json\n{"id": "d8"}\n'
    preview = upload(client, "documents", "docs.jsonl", content)
    assert preview.status_code == 200
    assert not Upload.objects.exists()  # a refused file is not kept, not even for a day
    page = preview.content.decode()
    assert [(p.line, p.field) for p in preview.context["problems"]] == [(2, "id"), (3, "json"), (4, "id")]
    rows = {row["line"]: row for row in preview.context["rows"]}
    assert rows[1]["problems"] == [] and [p.field for p in rows[2]["problems"]] == ["id"]
    assert 'id="line-2"' in page and "Confirm import" not in page and "nothing was stored" in page
    assert not Document.objects.filter(external_id="d8").exists()


def test_an_upload_refused_at_confirm_is_dropped(as_role, pool):
    """Stored when it was fine; refused at confirm (the pool changed meanwhile): nothing stays."""
    client = as_role("site_admin")
    response = upload(client, "judgments-csv", "r.csv", b"query,docid,rating\nquery q1,d1,3\n")
    assert response.status_code == 302 and Upload.objects.count() == 1
    pool.queries.filter(external_id="q2").update(text="query q1")  # the text now names two queries
    refused = client.post(response["Location"])
    assert refused.status_code == 200 and "nothing was stored" in refused.content.decode()
    assert "Upload another file" in refused.content.decode()
    assert not Upload.objects.exists() and not Judgment.objects.exists()


def test_good_documents_file_is_previewed_then_imported_on_confirm(as_role):
    client = as_role("site_admin")
    response = upload(
        client,
        "documents",
        "docs.jsonl",
        b'{"id": "d1", "title": "New title"}\n{"id": "d8", "title": "Eight", "lang": "de"}\n',
    )
    preview = client.get(response["Location"])
    assert "1 created, 1 updated" in preview.context["summary"]
    assert not Document.objects.filter(external_id="d8").exists()  # the preview wrote nothing
    done = client.post(response["Location"])
    assert done.status_code == 302 and done["Location"] == "/pools/robust/"
    assert Document.objects.get(external_id="d8").extra == {"lang": "de"}
    assert Document.objects.get(external_id="d1").title == "New title"
    assert not Upload.objects.exists()


def test_quepid_csv_is_imported_for_the_named_rater(as_role, pool):
    client = as_role("site_admin")
    response = upload(
        client, "judgments-csv", "ratings.csv", b"query,docid,rating\nquery Q1,d2,3\n", rater="quepid_team"
    )
    client.post(response["Location"])
    judgment = Judgment.objects.get(rater__username="quepid_team")
    assert (judgment.pair.query.external_id, judgment.grade) == ("q1", 3)
    assert not judgment.rater.has_usable_password()


def test_engineer_uploads_a_run_for_their_configuration(as_role, configuration, engineer):
    client = as_role("engineer")
    response = upload(
        client,
        "run",
        "bm25.trec",
        b"q1 Q0 d3 1 2.5 t\nq1 Q0 d1 2 1.5 t\n",
        configuration=configuration.pk,
        order="score",
    )
    preview = client.get(response["Location"])
    assert preview.context["problems"] == [] and "1 ranked queries" in preview.context["summary"]
    assert not Run.objects.exists()
    done = client.post(response["Location"])
    assert done["Location"] == f"/configurations/{configuration.pk}/"
    run = Run.objects.get()
    assert (run.submitted_by, run.source, run.filename) == (engineer, "upload", "bm25.trec")
    assert services.ranking_external_ids(run) == {"q1": ["d3", "d1"]}


def test_engineer_cannot_upload_a_run_for_another_team(as_role, other_configuration):
    client = as_role("engineer")
    response = upload(client, "run", "x.trec", b"q1 Q0 d3 1 2.5 t\n", configuration=other_configuration.pk)
    assert response.status_code == 200 and response.context["form"].errors["configuration"]
    assert not Upload.objects.exists() and not Run.objects.exists()


def test_engineer_cannot_confirm_an_upload_of_another_kind(as_role, engineer, pool):
    stored = uploads.store_bytes(
        Upload(pool=pool, uploaded_by=engineer, kind="documents", filename="d.jsonl"), b'{"id": "d9"}\n'
    )
    client = as_role("engineer")
    client.post(f"/pools/robust/import/{stored.pk}/")
    assert not Document.objects.filter(external_id="d9").exists()


def test_an_upload_is_private_to_its_uploader(as_role, site_admin, pool):
    stored = uploads.store_bytes(
        Upload(pool=pool, uploaded_by=site_admin, kind="documents", filename="d.jsonl"), b'{"id": "d9"}\n'
    )
    client = as_role("engineer")
    assert client.get(f"/pools/robust/import/{stored.pk}/").status_code == 404
    assert client.post(f"/pools/robust/import/{stored.pk}/cancel/").status_code == 302
    assert Upload.objects.filter(pk=stored.pk).exists()


def test_upload_size_and_empty_file_are_refused(as_role, settings):
    client = as_role("site_admin")
    settings.UPLOAD_MAX_BYTES = 20
    response = upload(
        client, "documents", "big.jsonl", b'{"id": "d9", "title": "far too long for the limit"}\n'
    )
    assert "limit" in str(response.context["form"].errors["file"])
    response = upload(client, "documents", "empty.jsonl", b"")
    assert response.status_code == 200 and not Upload.objects.exists()


def test_non_utf8_run_shows_an_encoding_problem(as_role, configuration):
    client = as_role("engineer")
    preview = upload(
        client, "run", "latin1.trec", "q1 Q0 dé 1 2 t\n".encode("latin-1"), configuration=configuration.pk
    )
    assert [(p.line, p.field) for p in preview.context["problems"]] == [(1, "encoding")]


def test_cancel_discards_the_upload(as_role):
    client = as_role("site_admin")
    response = upload(client, "documents", "docs.jsonl", b'{"id": "d9"}\n')
    client.post(response["Location"] + "cancel/")
    assert not Upload.objects.exists()


# --- Export page and downloads ---------------------------------------------------------------------


@pytest.fixture
def graded(pool, configuration, run, rater, other_rater):
    pairs = {(p.query.external_id, p.document.external_id): p for p in services_pairs(pool)}
    services.record_judgment(pairs[("q1", "d1")], rater, grade=3)
    services.record_judgment(pairs[("q1", "d1")], other_rater, grade=2)
    services.record_judgment(pairs[("q2", "d3")], rater, cant_judge=True, reason="broken page")
    return pairs


def services_pairs(pool):
    from judgments.models import Pair

    pool_keys.ensure_pairs(pool, {(q.pk, d.pk) for q in pool.queries.all() for d in pool.documents.all()})
    return Pair.objects.in_pool(pool).select_related("query", "document")


@pytest.mark.parametrize(
    ("role", "page", "qrels", "queries", "own_run", "other_run"),
    [
        ("site_admin", 200, 200, 200, 200, 200),
        ("engineer", 200, 403, 200, 200, 403),
        ("other_engineer", 200, 403, 200, 403, 200),
        ("rater", 403, 403, 403, 404, 404),
        ("other_rater", 403, 403, 403, 404, 404),
        ("outsider", 404, 404, 404, 404, 404),
    ],
)
def test_export_page_and_downloads_by_role(
    as_role, graded, run, other_configuration, role, page, qrels, queries, own_run, other_run
):
    other = services.record_run(other_configuration, {"q1": ["d2"]}, source="api")
    client = as_role(role)
    response = client.get("/pools/robust/export/")
    assert response.status_code == page
    if page == 200:
        text = response.content.decode()
        assert ("robust.mean.qrels" in text) == (qrels == 200)
        assert "Combined grades of pool robust: rule mean" in text or qrels != 200
    response = client.get("/pools/robust/export/qrels-exact/")
    assert response.status_code == qrels
    if qrels == 200:
        assert isinstance(response, StreamingHttpResponse)
        assert body(response) == "q1 0 d1 2.5\n"
        assert response["Content-Disposition"] == 'attachment; filename="robust.mean-exact.qrels"'
    response = client.get("/pools/robust/export/queries-jsonl/")
    assert response.status_code == queries
    if queries == 200:
        assert (
            body(response).splitlines()[0]
            == '{"id": "q1", "text": "query q1", "information_need": "need of q1"}'
        )
    response = client.get(f"/runs/{run.pk}/download/")
    assert response.status_code == own_run
    if own_run == 200:
        assert (
            body(response)
            == "q1 Q0 d1 1 3 bm25\nq1 Q0 d2 2 2 bm25\nq1 Q0 d3 3 1 bm25\nq2 Q0 d3 1 2 bm25\nq2 Q0 d1 2 1 bm25\n"
        )
    assert client.get(f"/runs/{other.pk}/download/").status_code == other_run


@pytest.mark.parametrize(
    ("role", "status"), [("site_admin", 200), ("engineer", 200), ("rater", 404), ("outsider", 404)]
)
def test_score_downloads_for_engineers_of_the_pool(as_role, graded, run, role, status):
    from scoring.services import rescore_pool

    rescore_pool(run.configuration.pool)
    client = as_role(role)
    response = client.get(f"/runs/{run.pk}/trec_eval/?flavor=trec")
    assert response.status_code == status
    if status == 200:
        lines = [line.split("\t") for line in body(response).splitlines()]
        assert [m.strip() for m, q, v in lines if q == "q1"][:2] == ["map", "recip_rank"]
        assert ["num_q", "1"] in [[m.strip(), v] for m, q, v in lines if q == "all"]
    response = client.get("/pools/robust/export/scores.csv?flavor=exp")
    assert response.status_code == status
    if status == 200:
        rows = body(response).splitlines()
        assert rows[0] == "configuration,query,flavor,metric,value,judged"
        assert any(row.startswith("bm25,all,exp,ndcg@10,") for row in rows)


def test_judgment_exports_stream_every_format(as_role, graded):
    client = as_role("site_admin")
    assert (
        body(client.get("/pools/robust/export/judgments-rater-csv/"))
        == "query_id,doc_id,ray_rater,rita_rater\nq1,d1,2,3\nq2,d3,,X\n"
    )
    ranklib = body(client.get("/pools/robust/export/ranklib/")).splitlines()
    assert ranklib[0].startswith("# Combined grades of pool robust: rule mean")
    assert ranklib[-1] == "3 qid:1 # d1 query q1"
    assert body(client.get("/pools/robust/export/judgments-csv/")) == "query,docid,rating\nquery q1,d1,3\n"
    jsonl = body(client.get("/pools/robust/export/judgments-jsonl/")).splitlines()
    assert len(jsonl) == 3 and '"reason": "broken page"' in jsonl[2]


# --- Configurations and API token ------------------------------------------------------------------


def test_engineer_creates_a_configuration_for_their_team(as_role, team, other_team):
    client = as_role("engineer")
    form = client.get("/pools/robust/configurations/new/").context["form"]
    assert list(form.fields["team"].queryset) == [team]
    response = client.post(
        "/pools/robust/configurations/new/",
        {"name": "splade", "team": team.pk, "description": "", "parameters": '{"k": 2}'},
    )
    created = SearchConfiguration.objects.get(name="splade")
    assert response["Location"] == f"/pools/robust/import/?kind=run&configuration={created.pk}"
    assert (created.team, created.parameters) == (team, {"k": 2})
    refused = client.post(
        "/pools/robust/configurations/new/", {"name": "dense2", "team": other_team.pk, "parameters": ""}
    )
    assert refused.status_code == 200 and "team" in refused.context["form"].errors
    bad = client.post(
        "/pools/robust/configurations/new/", {"name": "x y", "team": team.pk, "parameters": "[1]"}
    )
    assert set(bad.context["form"].errors) == {"name", "parameters"}
    assert not SearchConfiguration.objects.filter(name__in=["dense2", "x y"]).exists()


@pytest.mark.parametrize(("role", "status"), [("rater", 404), ("outsider", 404)])
def test_raters_and_outsiders_create_no_configuration(as_role, team, role, status):
    client = as_role(role)
    assert (
        client.post("/pools/robust/configurations/new/", {"name": "x", "team": team.pk}).status_code == status
    )
    assert not SearchConfiguration.objects.filter(name="x").exists()


@pytest.mark.parametrize("role", ROLES)
def test_api_token_page_shows_and_regenerates_the_users_token(as_role, request, role):
    client = as_role(role)
    user = request.getfixturevalue(role)
    assert client.get("/account/api-token/").context["token"] is None
    client.post("/account/api-token/")
    first = Token.objects.get(user=user)
    assert first.key in client.get("/account/api-token/").content.decode()
    client.post("/account/api-token/")
    assert Token.objects.get(user=user).key != first.key
    assert Token.objects.count() == 1
