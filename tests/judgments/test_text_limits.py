"""One limit per text field (judgments.limits), the same on every path that writes it: the API, the
import formats (TSV, JSON lines, Quepid CSV, RRE), the rating page, the services, model judges (which
cut) and the database (CHECK constraints, for writers that bypass the rest). A value at the limit
passes; one character more is refused with one line naming the field (and the line), and nothing
is written. docs/limits.md lists the same numbers."""

import json
import re
from pathlib import Path

import pytest
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import limits, services
from judgments.exchange.formats import FormatError
from judgments.exchange.imports import import_queries
from judgments.exchange.imports.documents import import_documents
from judgments.exchange.imports.judgments import import_judgments
from judgments.models import Document, Judgment, Pair, Query
from judgments.rating import queue

DOCS = Path(__file__).resolve().parents[2] / "docs" / "limits.md"


def _api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def _refused(call, field: str, line: int | None = None):
    with pytest.raises(FormatError) as caught:
        call()
    problems = caught.value.problems
    assert [p.field for p in problems] == [field], problems
    assert "at most" in problems[0].message and f"{field}".split("_")[0] in problems[0].message
    if line is not None:
        assert problems[0].line == line


def test_the_table_drives_models_and_database():
    assert limits.FIELDS[("query", "text")] == limits.QUERY_TEXT
    for (model, field), limit in limits.FIELDS.items():
        cls = {"query": Query, "document": Document, "judgment": Judgment}[model]
        validators = cls._meta.get_field(field).validators
        assert [v.limit_value for v in validators if hasattr(v, "limit_value")] == [limit]
        assert f"{model}_{field}_limit" in {c.name for c in cls._meta.constraints}


def test_query_text_and_need_on_every_import_format(pool):
    over, at = "x" * (limits.QUERY_TEXT + 1), "x" * limits.QUERY_TEXT
    _refused(lambda: import_queries(pool, f"q1\tok\nq9\t{over}\n".encode(), name="q.tsv"), "text", 2)
    line = json.dumps({"id": "q9", "text": over})
    _refused(lambda: import_queries(pool, line.encode(), name="q.jsonl"), "text", 1)
    need = json.dumps({"id": "q9", "text": "t", "information_need": "n" * (limits.INFORMATION_NEED + 1)})
    _refused(lambda: import_queries(pool, need.encode(), name="q.jsonl"), "information_need", 1)
    _refused(
        lambda: import_judgments(
            pool, f"query,docid,rating\n{over},d1,3\n".encode(), format="csv", name="r.csv"
        ),
        "query",
        2,
    )
    rre = json.dumps(
        {
            "index": "i",
            "id_field": "id",
            "queries": [{"placeholders": {"$query": over}, "relevant_documents": {"3": ["d1"]}}],
        }
    )
    with pytest.raises(FormatError):
        import_judgments(pool, rre.encode(), format="rre", name="r.json")
    assert not Query.objects.filter(external_id="q9").exists()
    import_queries(pool, f"q9\t{at}\n".encode(), name="q.tsv")  # at the limit: fine
    assert len(Query.objects.get(pool=pool, external_id="q9").text) == limits.QUERY_TEXT


def test_document_title_and_body_on_import_and_api(pool, site_admin):
    for field, limit in (("title", limits.DOCUMENT_TITLE), ("body", limits.DOCUMENT_BODY)):
        line = json.dumps({"id": "big", field: "b" * (limit + 1)})
        _refused(lambda line=line: import_documents(pool, line.encode(), name="d.jsonl"), field, 1)
        response = _api(site_admin).post(
            "/api/documents/",
            {"pool": pool.name, "external_id": "big", field: "b" * (limit + 1)},
            format="json",
        )
        assert response.status_code == 400 and field in json.dumps(response.json()), response.content[:300]
    assert not Document.objects.filter(external_id="big").exists()
    ok = _api(site_admin).post(
        "/api/documents/",
        {"pool": pool.name, "external_id": "big", "title": "t" * limits.DOCUMENT_TITLE},
        format="json",
    )
    assert ok.status_code == 201


def test_query_text_on_the_api(pool, site_admin):
    over = "x" * (limits.QUERY_TEXT + 1)
    response = _api(site_admin).post(
        "/api/queries/", {"pool": pool.name, "external_id": "q9", "text": over}, format="json"
    )
    assert response.status_code == 400 and "text" in json.dumps(response.json())
    query = Query.objects.get(pool=pool, external_id="q1")
    patch = _api(site_admin).patch(
        f"/api/queries/{query.pk}/", {"information_need": "n" * (limits.INFORMATION_NEED + 1)}, format="json"
    )
    assert patch.status_code == 400


def test_notes_and_reasons_on_every_judgment_path(client, pool, rater):
    queue.add_pairs(pool, [("q1", "d1")])
    pair = Pair.objects.get(pool=pool, query__external_id="q1", document__external_id="d1")
    over = "n" * (limits.NOTE + 1)
    with pytest.raises(services.JudgmentError, match="note is 2,001 characters long"):
        services.record_judgment(pair, rater, grade=2, note=over)
    with pytest.raises(services.JudgmentError, match="reason"):
        services.record_judgment(pair, rater, cant_judge=True, reason=over)
    api = _api(rater).post(
        "/api/judgments/",
        {"pool": pool.name, "query_id": "q1", "doc_id": "d1", "grade": 2, "note": over},
        format="json",
    )
    assert api.status_code == 400
    line = json.dumps({"query_id": "q1", "doc_id": "d1", "rater": "rita_rater", "grade": 2, "note": over})
    _refused(lambda: import_judgments(pool, line.encode(), format="jsonl", name="j.jsonl"), "note", 1)
    client.force_login(rater)
    assert client.get(f"/pools/{pool.name}/grade/").status_code == 200  # the rater now holds the pair
    page = client.post(
        f"/pools/{pool.name}/grade/{pair.pk}/", {"action": "grade", "grade": "2", "note": over}
    )
    assert page.status_code == 400 and not Judgment.objects.exists()
    services.record_judgment(pair, rater, grade=2, note="n" * limits.NOTE)  # at the limit
    assert len(Judgment.objects.get().note) == limits.NOTE


def test_the_database_refuses_what_bypasses_the_rest(pool):
    query = Query.objects.get(pool=pool, external_id="q1")
    for model, field, limit, row in (
        (Query, "text", limits.QUERY_TEXT, query),
        (Query, "information_need", limits.INFORMATION_NEED, query),
        (Document, "body", limits.DOCUMENT_BODY, Document.objects.get(pool=pool, external_id="d1")),
    ):
        with pytest.raises(IntegrityError, match=f"_{field}_limit"), transaction.atomic():
            model.objects.filter(pk=row.pk).update(**{field: "z" * (limit + 1)})


def test_a_model_judges_long_reason_is_cut_not_refused():
    assert limits.cut("r" * 5000, limits.NOTE) == "r" * (limits.NOTE - 1) + "…"
    assert limits.cut("short", limits.NOTE) == "short"


def test_docs_list_the_same_limits():
    text = DOCS.read_text()
    for name in ("QUERY_TEXT", "INFORMATION_NEED", "DOCUMENT_TITLE", "DOCUMENT_BODY", "NOTE", "ID", "URL"):
        value = getattr(limits, name)
        assert re.search(rf"`{name}`.*\|\s*{value:,}\s*\|", text), name
