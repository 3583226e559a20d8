"""Engines on 127.0.0.1 for the capture tests, and answers shaped as the engines document them:

- Elasticsearch/OpenSearch `_search`: ``took``, ``timed_out``, ``_shards``, ``hits.total`` as
  ``{"value", "relation"}``, ``hits.max_score``, ``hits.hits[]`` with ``_index``, ``_id``, ``_score``;
  errors ``{"error": {"root_cause": [...], "type", "reason", ...}, "status": N}``.
- Solr `/select` (JSON writer): ``responseHeader.status``/``QTime``/``params``,
  ``response.numFound``/``start``/``numFoundExact``/``maxScore``/``docs[]``; errors
  ``{"responseHeader": {...}, "error": {"metadata": [...], "msg", "code"}}``.

The client, template, engine and demo-engine tests use no database: only pytest-httpserver (a real HTTP
server, threaded) and the demo engine. The fixtures at the end (`search_pool`, `engine`,
`live_configuration`) are for the database-backed tests of the services, commands, pages and API.
"""

import json
import threading

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

QUERY_TEXTS = [
    'he said "hi" \\ back\\slash',
    "line one\nline two\ttab",
    "café 日本語 Ελληνικά 🙂",
    "a & b = c + d ? e # f % 20",
    '}} {{depth}} {{query}} "}}" \'',
    '", "size": 10000, "x": "',
    "",
]


class SettlingHTTPServer(HTTPServer):
    """pytest-httpserver's server, counting the requests it is still answering: a slow handler of one test
    (a timeout test's sleeping answer) must not land in the next test's log after that test cleared it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._in_flight = 0
        self._idle = threading.Condition()

    def application(self, request):
        with self._idle:
            self._in_flight += 1
        try:
            return super().application(request)
        finally:
            with self._idle:
                self._in_flight -= 1
                self._idle.notify_all()

    def settle(self, timeout=10.0):
        """Wait until no request is being answered (or `timeout` passes), then forget handlers and log."""
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)
        self.clear()


@pytest.fixture(scope="session")
def make_httpserver():
    """pytest-httpserver's server, threaded (concurrent requests) and on 127.0.0.1."""
    server = SettlingHTTPServer(host="127.0.0.1", port=0, threaded=True)
    server.start()
    yield server
    server.settle()
    if server.is_running():
        server.stop()


@pytest.fixture
def httpserver(make_httpserver):
    """The shared server with no handler and an empty log, once the previous test's requests are answered."""
    make_httpserver.settle()
    yield make_httpserver
    make_httpserver.settle()


def json_response(payload, status=200, headers=None):
    return Response(json.dumps(payload), status=status, headers=headers, content_type="application/json")


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


# --- A pool of real text served by the demo engine, for the database-backed tests --------------------

SEARCH_QUERIES = [
    ("q1", "solar panels", "How rooftop solar panels work."),
    ("q2", "sourdough bread starter", "Baking sourdough bread with a starter."),
    ("q3", "bicycle tyre", "Fixing a flat bicycle tyre."),
    ("q4", "home batteries", "Storing solar power at home."),
]
SEARCH_DOCS = [
    ("solar-1", "Solar panels for the home", "How rooftop solar panels turn sunlight into power."),
    ("solar-2", "Batteries", "Storing the power of solar panels in home batteries overnight."),
    ("solar-3", "Solar farms", "Large solar farms feed the grid; panels track the sun."),
    ("bread-1", "Sourdough bread", "A starter, flour, water and salt make a sourdough loaf."),
    ("bread-2", "Quick bread", "Soda bread needs no starter and bakes in forty minutes."),
    ("bike-1", "Fixing a flat tyre", "Patch the inner tube of a bicycle tyre in ten minutes."),
    ("bike-2", "Bicycle maintenance", "Chain, brakes and tyre pressure: a monthly bicycle check."),
    ("home-1", "Home improvement", "Insulation and windows keep a home warm."),
]


@pytest.fixture
def search_pool(db, engineer, other_engineer, rater, site_admin):
    """4 queries with text and 8 documents with content; engineers and the rater are members."""
    from judgments.models import Document, Pool, Query

    pool = Pool.objects.create(name="search", description="live capture tests")
    pool.members.add(engineer, other_engineer, rater)
    Query.objects.bulk_create(
        [Query(pool=pool, external_id=q, text=t, information_need=n) for q, t, n in SEARCH_QUERIES]
    )
    Document.objects.bulk_create(
        [Document(pool=pool, external_id=d, title=t, body=b) for d, t, b in SEARCH_DOCS]
    )
    return pool


@pytest.fixture(scope="session")
def engine():
    """The demo BM25 engine serving SEARCH_DOCS at http://127.0.0.1:<port>/docs/_search."""
    from judgments.capture.demo_engine import serve

    server = serve([{"id": d, "title": t, "body": b} for d, t, b in SEARCH_DOCS])
    yield server
    server.stop()


def engine_ranking(engine, text, depth=100):
    """The demo engine's own answer to `text` (multi_match over title and body), as document ids."""
    _, ranked = engine.engine.search(text, {"title": 1.0, "body": 1.0}, depth)
    return [engine.engine.ids[i] for i, _ in ranked]


@pytest.fixture
def live_configuration(search_pool, team, engine):
    """Configuration `bm25` of team `relevance` with an Elasticsearch endpoint on the demo engine."""
    from judgments.capture import services
    from judgments.models import SearchConfiguration

    configuration = SearchConfiguration.objects.create(pool=search_pool, team=team, name="bm25")
    services.set_endpoint(configuration, kind="elasticsearch", url=engine.search_url)
    return configuration


def manage_py(*args, **popen):
    """`manage.py ARGS` as a real process on the test database (committed data only: use
    django_db(transaction=True)). Returns the Popen."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    from urllib.parse import quote

    from django.db import connection

    connection.ensure_connection()
    s = connection.settings_dict
    url = f"postgres://{quote(s['USER'])}:{quote(s['PASSWORD'] or '')}@{quote(str(s['HOST']), safe='')}:{s['PORT']}/{s['NAME']}"
    env = {**os.environ, "DEBUG": "1", "DATABASE_URL": url, "PYTHONUNBUFFERED": "1"}
    root = Path(__file__).resolve().parents[3]
    return subprocess.Popen(
        [sys.executable, str(root / "manage.py"), *args],
        env=env,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
