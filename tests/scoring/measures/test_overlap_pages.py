"""Judgment-free comparison on the page and in the API: RBO and Jaccard@10 per query from the stored
rankings, the most changed first, and one click to queue a query's documents."""

import numpy as np
import pytest

from judgments.models import Pair
from scoring.measures.overlap import jaccard_at, rbo_ext
from tests.conftest import login


def expected(world):
    """Per query RBO of the world's two runs, from their rankings."""
    out = {}
    for ranking in world["run"].rankings.select_related("query"):
        other = world["other_run"].rankings.filter(query=ranking.query).first()
        a, b = list(ranking.doc_ids), list(other.doc_ids) if other else []
        depth = max(len(a), len(b))
        A = np.array([a + [-1] * (depth - len(a))])
        B = np.array([b + [-1] * (depth - len(b))])
        out[ranking.query.external_id] = (rbo_ext(A, B)[0], jaccard_at(A, B, 10)[0])
    return out


def test_overlap_api(client_for, world):
    body = client_for("engineer").get("/api/measure-sets/robust/overlap/", {"c": ["bm25", "dense"]}).json()
    want = expected(world)
    got = {q["query"]: (q["rbo"], q["jaccard"]) for q in body["queries"]}
    assert got.keys() == want.keys()
    for q, (rbo, jac) in want.items():
        assert got[q] == (pytest.approx(rbo), pytest.approx(jac))
    assert [q["rbo"] for q in body["queries"]] == sorted(q["rbo"] for q in body["queries"])
    assert body["mean_rbo"] == pytest.approx(np.mean([v[0] for v in want.values()]))
    assert (
        client_for("rater").get("/api/measure-sets/robust/overlap/", {"c": ["bm25", "dense"]}).status_code
        == 403
    )


def test_overlap_page_and_queue(client, site_admin, world):
    admin = login(client, site_admin)
    page = admin.get("/pools/robust/overlap/", {"c": ["bm25", "dense"]})
    assert page.status_code == 200
    text = page.content.decode()
    assert "Mean RBO" in text and 'data-query="q1"' in text and "Queue unjudged" in text
    before = Pair.objects.count()
    response = admin.post("/pools/robust/overlap/queue/", {"c": ["bm25", "dense"], "query": "q1"})
    assert response.status_code == 302
    assert Pair.objects.count() >= before
    follow = admin.get(response["Location"])
    assert b"q1:" in follow.content and b"queued for rating" in follow.content
