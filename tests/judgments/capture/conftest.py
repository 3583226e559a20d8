"""Engines on 127.0.0.1 for the capture tests, and answers shaped as the engines document them:

- Elasticsearch/OpenSearch `_search`: ``took``, ``timed_out``, ``_shards``, ``hits.total`` as
  ``{"value", "relation"}``, ``hits.max_score``, ``hits.hits[]`` with ``_index``, ``_id``, ``_score``;
  errors ``{"error": {"root_cause": [...], "type", "reason", ...}, "status": N}``.
- Solr `/select` (JSON writer): ``responseHeader.status``/``QTime``/``params``,
  ``response.numFound``/``start``/``numFoundExact``/``maxScore``/``docs[]``; errors
  ``{"responseHeader": {...}, "error": {"metadata": [...], "msg", "code"}}``.

No database: these tests use only pytest-httpserver (a real HTTP server, threaded) and the demo engine.
"""

import pytest
from pytest_httpserver import HTTPServer

QUERY_TEXTS = [
    'he said "hi" \\ back\\slash',
    "line one\nline two\ttab",
    "café 日本語 Ελληνικά 🙂",
    "a & b = c + d ? e # f % 20",
    '}} {{depth}} {{query}} "}}" \'',
    '", "size": 10000, "x": "',
    "",
]


@pytest.fixture(scope="session")
def make_httpserver():
    """pytest-httpserver's server, threaded (concurrent requests) and on 127.0.0.1."""
    server = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    yield server
    server.clear()
    if server.is_running():
        server.stop()


def es_answer(hits, total=None, relation="eq", index="docs"):
    """An Elasticsearch `_search` answer for [(id, score)], as in the search API reference."""
    scores = [s for _, s in hits if s is not None]
    return {
        "took": 3,
        "timed_out": False,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {
            "total": {"value": len(hits) if total is None else total, "relation": relation},
            "max_score": max(scores) if scores else None,
            "hits": [{"_index": index, "_id": doc_id, "_score": score} for doc_id, score in hits],
        },
    }


def es_error(status=400, type_="search_phase_execution_exception", reason="all shards failed", cause=None):
    root = cause or {
        "type": "query_shard_exception",
        "reason": "failed to create query: For input string",
        "index": "docs",
    }
    return {
        "error": {"root_cause": [root], "type": type_, "reason": reason, "phase": "query", "grouped": True},
        "status": status,
    }


def solr_answer(docs, num_found=None, q="*:*"):
    """A Solr `/select` answer (wt=json) for [(id, score)]."""
    return {
        "responseHeader": {"status": 0, "QTime": 1, "params": {"q": q, "wt": "json"}},
        "response": {
            "numFound": len(docs) if num_found is None else num_found,
            "start": 0,
            "numFoundExact": True,
            "maxScore": max([s for _, s in docs], default=0.0),
            "docs": [{"id": doc_id, "score": score} for doc_id, score in docs],
        },
    }


def solr_error(msg="undefined field titel", code=400):
    return {
        "responseHeader": {"status": code, "QTime": 2},
        "error": {
            "metadata": [
                "error-class",
                "org.apache.solr.common.SolrException",
                "root-error-class",
                "org.apache.solr.common.SolrException",
            ],
            "msg": msg,
            "code": code,
        },
    }
