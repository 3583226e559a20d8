"""The demo BM25 engine: real queries answered in Elasticsearch's format, captured by capture(). No database."""

import http.client
import json
import os
import subprocess
import sys
from pathlib import Path

import bm25s
import httpx
import numpy as np
import pytest

from judgments.capture.client import capture
from judgments.capture.demo_engine import BM25Index, load_documents, main, serve, tokens
from judgments.endpoints.engines import EndpointSpec

ROOT = Path(__file__).resolve().parents[3]
DOCS = [
    {
        "id": "solar-1",
        "title": "Solar panels for the home",
        "body": "How rooftop solar panels turn sunlight into power.",
    },
    {
        "id": "solar-2",
        "title": "Batteries",
        "body": "Storing the power of solar panels in home batteries overnight.",
    },
    {
        "id": "bread-1",
        "title": "Sourdough bread",
        "body": "A starter, flour, water and salt make a sourdough loaf.",
    },
    {
        "id": "bread-2",
        "title": "Quick bread",
        "body": "Soda bread needs no starter and bakes in forty minutes.",
    },
    {
        "id": "bike-1",
        "title": "Fixing a flat tyre",
        "body": "Patch the inner tube of a bicycle tyre in ten minutes.",
    },
    {"id": 7, "title": "", "body": ""},
]


@pytest.fixture(scope="module")
def engine():
    server = serve(DOCS, index="demo")
    yield server
    server.stop()


def _search(engine, body, index="demo"):
    response = httpx.post(f"{engine.url}/{index}/_search", json=body)
    return response.status_code, response.json()


def test_capture_from_the_demo_engine_ranks_matching_documents_first(engine):
    spec = EndpointSpec("elasticsearch", engine.search_url)
    result = capture(
        spec,
        [("q1", "solar panels"), ("q2", "sourdough starter"), ("q3", "quantum chromodynamics"), ("q4", "")],
        depth=10,
    )
    assert result.ok
    solar, bread, nothing, empty = result.results
    assert [d for d, _ in solar.hits] == ["solar-1", "solar-2"] and solar.hits[0][1] > solar.hits[1][1] > 0
    assert [d for d, _ in bread.hits][:2] == ["bread-1", "bread-2"]
    assert nothing.hits == [] and nothing.total == 0 and empty.hits == []


def test_answer_has_elasticsearchs_shape(engine):
    status, answer = _search(
        engine,
        {
            "query": {"multi_match": {"query": "bread starter", "fields": ["title", "body"]}},
            "size": 1,
            "_source": False,
        },
    )
    assert status == 200
    assert set(answer) == {"took", "timed_out", "_shards", "hits"} and answer["timed_out"] is False
    assert answer["_shards"] == {"total": 1, "successful": 1, "skipped": 0, "failed": 0}
    assert answer["hits"]["total"] == {"value": 2, "relation": "eq"}
    (hit,) = answer["hits"]["hits"]
    assert set(hit) == {"_index", "_id", "_score"} and hit["_index"] == "demo"
    assert answer["hits"]["max_score"] == hit["_score"]


def test_size_from_source_and_field_boosts(engine):
    _, first_two = _search(engine, {"query": {"multi_match": {"query": "solar power home"}}, "size": 2})
    _, second = _search(
        engine, {"query": {"multi_match": {"query": "solar power home"}}, "size": 1, "from": 1}
    )
    assert second["hits"]["hits"][0]["_id"] == first_two["hits"]["hits"][1]["_id"]
    top = first_two["hits"]["hits"][0]
    stored = next(d for d in DOCS if d["id"] == top["_id"])
    assert top["_source"] == {"title": stored["title"], "body": stored["body"]}
    _, title_only = _search(
        engine, {"query": {"multi_match": {"query": "starter", "fields": ["title^2"]}}, "_source": ["title"]}
    )
    assert title_only["hits"]["hits"] == []  # "starter" is in bodies only
    _, match = _search(engine, {"query": {"match": {"body": {"query": "starter"}}}, "_source": ["title"]})
    assert {h["_id"] for h in match["hits"]["hits"]} == {"bread-1", "bread-2"}
    assert match["hits"]["hits"][0]["_source"] == {"title": "Sourdough bread"}
    _, everything = _search(engine, {"query": {"match_all": {}}, "size": 100})
    assert [h["_id"] for h in everything["hits"]["hits"]] == [str(d["id"]) for d in DOCS]


@pytest.mark.parametrize(
    ("body", "index", "status", "type_"),
    [
        ({"query": {"fuzzy": {"title": "x"}}}, "demo", 400, "parsing_exception"),
        ({"query": {"match_all": {}}, "size": -1}, "demo", 400, "illegal_argument_exception"),
        ({"query": {"match_all": {}}, "size": 9000, "from": 2000}, "demo", 400, "illegal_argument_exception"),
        ({"query": {"match_all": {}}}, "nope", 404, "index_not_found_exception"),
    ],
)
def test_refusals_have_elasticsearchs_error_shape(engine, body, index, status, type_):
    got_status, answer = _search(engine, body, index)
    assert got_status == status and answer["status"] == status
    assert answer["error"]["type"] == type_ and answer["error"]["root_cause"][0]["type"] == type_


def test_capture_reports_the_demo_engines_own_errors(engine):
    spec = EndpointSpec("elasticsearch", f"{engine.url}/nope/_search")
    result = capture(spec, [("q1", "solar")])
    assert result.results[0].error == "HTTP 404 Not Found: index_not_found_exception: no such index [nope]"
    malformed = httpx.post(
        engine.search_url, content=b'{"query": ', headers={"Content-Type": "application/json"}
    )
    assert malformed.status_code == 400 and malformed.json()["error"]["type"] == "x_content_parse_exception"


def test_connections_are_kept_alive(engine):
    connection = http.client.HTTPConnection("127.0.0.1", engine.server_address[1])
    socks = []
    for _ in range(3):
        connection.request(
            "POST", "/demo/_search", body=b'{"size": 1}', headers={"Content-Type": "application/json"}
        )
        assert connection.getresponse().read()
        socks.append(connection.sock)
    connection.close()
    assert socks[0] is socks[1] is socks[2]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "a"}', "{oops"], "line 2: not JSON"),
        (['{"title": "no id"}'], "line 1: needs an object with an id"),
        (['{"id": "a"}', "", '{"id": "a"}'], "line 3: the id 'a' repeats"),
        (['{"id": "a", "body": 5}'], "line 1: body must be a string"),
    ],
)
def test_bad_document_files_name_the_line(tmp_path, lines, message):
    path = tmp_path / "docs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=message):
        load_documents(str(path))
    assert main(["--documents", str(path), "--port", "0"]) == 2


def test_runs_as_a_module_and_stops_on_sigterm(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "judgments.capture.demo_engine",
        "--port",
        "0",
        "--documents",
        str(path),
        "--index",
        "demo",
    ]
    process = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        line = process.stderr.readline()
        assert line.startswith("demo engine: 6 documents at http://127.0.0.1:")
        url = line.split(" at ")[1].strip()
        result = capture(EndpointSpec("elasticsearch", url), [("q1", "flat tyre")], depth=3)
        assert result.ok and result.results[0].hits[0][0] == "bike-1"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def test_scores_are_bm25s_own_scores():
    """The postings arithmetic gives what bm25s computes for the same field (Lucene's BM25 variant)."""
    index = BM25Index(DOCS)
    reference = bm25s.BM25()
    reference.index([tokens(d["body"]) or [""] for d in DOCS], show_progress=False)
    for text in ("solar panels power", "bread starter", "tyre minutes minutes"):
        total, ranked = index.search(text, {"body": 1.0}, size=10)
        expected = reference.get_scores([t for t in tokens(text) if t in reference.vocab_dict])
        assert total == int((expected > 0).sum())
        assert {i: s for i, s in ranked} == pytest.approx(
            {i: float(expected[i]) for i in np.flatnonzero(expected > 0)}
        )


@pytest.mark.parametrize("kind", ["best_fields", "most_fields"])
def test_explain_adds_up_to_each_hits_score(engine, kind):
    body = {
        "query": {"multi_match": {"query": "solar panels home", "fields": ["title^2", "body"], "type": kind}},
        "explain": True,
    }
    status, answer = _search(engine, body)
    assert status == 200 and answer["hits"]["hits"]
    for hit in answer["hits"]["hits"]:
        tree = hit["_explanation"]
        assert tree["value"] == pytest.approx(hit["_score"])
        assert tree["description"] == ("max of:" if kind == "best_fields" else "sum of:")
        for field in tree["details"]:
            assert field["value"] == pytest.approx(sum(t["value"] for t in field["details"]))
            assert all(t["description"].startswith("weight(") for t in field["details"])
    _, plain = _search(engine, {**body, "explain": False})
    assert all("_explanation" not in hit for hit in plain["hits"]["hits"])
