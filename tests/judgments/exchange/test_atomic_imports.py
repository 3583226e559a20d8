"""Atomic everything: a refused import, from the command line, the web or the API, leaves every table
exactly as it was: no new pool, query, document, pair, judgment, user/rater account, team,
configuration or stored upload."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from rest_framework.test import APIClient

from judgments.models import Query, Upload


def table_counts() -> dict[str, int]:
    """Rows of every table of the database (the app's, auth's, sessions', tasks')."""
    counts = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f'SELECT count(*) FROM "{table}"')
            counts[table] = cursor.fetchone()[0]
    return counts


@pytest.fixture
def unchanged(db):
    """Call it after setting up; it asserts at the end of the test that no table gained or lost a row."""
    snapshot = {}

    def take():
        snapshot.update(table_counts())

    yield take
    assert snapshot, "take the snapshot before the refused import"
    after = table_counts()
    changed = {t: (snapshot.get(t), n) for t, n in after.items() if snapshot.get(t) != n}
    assert changed == {}, f"a refused import changed these tables (before, after): {changed}"


# Each file is refused for a reason found only after the pool (and raters) would have been made.
BAD_JUDGMENTS_CSV = b"query,docid,rating\nq1,d1,3\nq1,d2,9\n"  # grade 9 is outside the scale


def _write(tmp_path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    return str(path)


@pytest.mark.parametrize(
    ("command", "args", "content"),
    [
        ("import_documents", [], b'{"id": "d1", "title": "ok"}\n{"id": "d 2"}\n'),
        ("import_queries", [], b"q1\tfirst\nq 2\tsecond\n"),
        ("import_qrels", [], b"q1 0 d1 2\nq1 0 d2 7\n"),
        (
            "import_run",
            ["--configuration", "new-config", "--team", "new-team"],
            b"q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n",
        ),
        ("import_judgments", ["--format", "csv", "--rater", "new_rater"], BAD_JUDGMENTS_CSV),
        (
            "import_judgments",
            ["--format", "rater-csv"],
            b"query_id,doc_id,new_a,new_b\nq1,d1,2,3\nq1,d2,2,8\n",
        ),
        (
            "import_judgments",
            ["--format", "jsonl"],
            b'{"query_id": "q1", "doc_id": "d1", "rater": "new_a", "grade": 2}\n'
            b'{"query_id": "q1", "doc_id": "d2", "rater": "new_b", "grade": 6}\n',
        ),
    ],
)
def test_a_refused_command_line_import_into_a_new_pool_changes_nothing(
    unchanged, tmp_path, command, args, content
):
    path = _write(tmp_path, "bad.txt", content)
    unchanged()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command(command, "--pool", "brand-new", *args, path, stdout=StringIO(), stderr=StringIO())


def test_a_refused_import_into_an_existing_pool_changes_nothing(unchanged, tmp_path, pool):
    path = _write(tmp_path, "bad.csv", BAD_JUDGMENTS_CSV)
    unchanged()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command(
            "import_judgments", "--pool", "robust", "--format", "csv", "--rater", "someone_new", path,
            stdout=StringIO(), stderr=StringIO(),
        )  # fmt: skip


# --- Web: upload -> preview -> confirm ------------------------------------------------------------


def _upload(client, kind: str, content: bytes, **extra):
    return client.post(
        "/pools/robust/import/", {"kind": kind, "file": SimpleUploadedFile("bad.csv", content), **extra}
    )


def test_a_refused_web_upload_stores_nothing_not_even_the_file(unchanged, client, site_admin, pool):
    client.force_login(site_admin)
    unchanged()
    response = _upload(client, "judgments-csv", BAD_JUDGMENTS_CSV, rater="new_rater")
    assert response.status_code == 200
    assert [p.line for p in response.context["problems"]] == [3]
    page = response.content.decode()
    assert "nothing was stored" in page and "Confirm import" not in page and "Upload another file" in page


def test_an_import_refused_at_confirm_stores_nothing_and_drops_the_file(unchanged, client, site_admin, pool):
    """The file was fine at upload; the pool changed before the confirm (its query text now names two
    queries): the confirm is refused, no rater account is made and the upload is gone."""
    client.force_login(site_admin)
    stored = _upload(client, "judgments-csv", b"query,docid,rating\nquery q1,d1,3\n", rater="new_rater")
    assert stored.status_code == 302
    Query.objects.filter(pool=pool, external_id="q1").update(text="renamed")
    Upload.objects.all().delete()  # the snapshot is of the database before the file came
    unchanged()
    response = _upload(client, "judgments-csv", b"query,docid,rating\nrenamed,d1,3\n", rater="new_rater")
    assert response.status_code == 302
    Query.objects.filter(pool=pool, external_id="q2").update(text="renamed")
    refused = client.post(response["Location"])
    assert refused.status_code == 200 and [p.field for p in refused.context["problems"]] == ["query"]
    assert "nothing was stored" in refused.content.decode()
    Query.objects.filter(pool=pool, external_id="q2").update(text="query q2")


def test_a_refused_web_run_upload_stores_nothing(unchanged, client, engineer, configuration):
    client.force_login(engineer)
    unchanged()
    response = _upload(
        client, "run", b"q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n", configuration=configuration.pk, order="score"
    )
    assert response.status_code == 200 and response.context["problems"]


# --- API ---------------------------------------------------------------------------------------------


def test_a_refused_api_import_creates_no_rater(unchanged, site_admin, pool):
    client = APIClient()
    client.force_authenticate(site_admin)
    unchanged()
    response = client.post(
        "/api/pools/robust/import/judgments-csv/",
        {"file": SimpleUploadedFile("bad.csv", BAD_JUDGMENTS_CSV), "rater": "api_new_rater"},
        format="multipart",
    )
    assert response.status_code == 400 and response.json()["problems"][0]["line"] == 3


def test_a_refused_api_qrels_import_creates_nothing(unchanged, site_admin, pool):
    client = APIClient()
    client.force_authenticate(site_admin)
    unchanged()
    response = client.post(
        "/api/pools/robust/import/qrels/",
        {"file": SimpleUploadedFile("bad.qrels", b"q9 0 d9 1\nq9 0 d10 12\n"), "rater": "api_new_rater"},
        format="multipart",
    )
    assert response.status_code == 400


def test_a_refused_api_run_upload_creates_nothing(unchanged, engineer, configuration):
    client = APIClient()
    client.force_authenticate(engineer)
    unchanged()
    response = client.post(
        "/api/runs/upload/",
        {"configuration": configuration.pk, "file": SimpleUploadedFile("r.trec", b"q1 Q0 d9 1 2 t\nq1 x\n")},
        format="multipart",
    )
    assert response.status_code == 400
