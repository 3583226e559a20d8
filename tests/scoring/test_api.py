"""The scores API (scoring/api.py) under every role of the API tests' world (tests/judgments/api/conftest.py):
the status AND the data (or its absence)."""

import json

import pytest

from tests.judgments.api.conftest import check, results, streamed

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
