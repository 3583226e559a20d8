"""The demo's live configuration: `bm25-live`, whose endpoint is the demo BM25 engine (demo_engine.py)
serving the demo pool's documents on localhost. `seed_demo` creates it; `make run` (run_local) starts
the engine and points the endpoint at it (a new endpoint version only when its address changed)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from judgments.models import Document, Pool, SearchConfiguration, Team

from . import services
from .demo_engine import DemoServer, serve

logger = logging.getLogger(__name__)
LIVE_CONFIGURATION = "bm25-live"
DEFAULT_PORT = 9200
PLACEHOLDER_URL = f"http://127.0.0.1:{DEFAULT_PORT}/docs/_search"


def ensure_live_configuration(pool: Pool, team: Team, user=None) -> SearchConfiguration:
    """The demo pool's live configuration with an Elasticsearch endpoint (created once)."""
    configuration, created = SearchConfiguration.objects.get_or_create(
        pool=pool,
        name=LIVE_CONFIGURATION,
        defaults={
            "team": team,
            "description": "BM25 (bm25s) over title and body, asked live: press Capture for a new run.",
            "parameters": {"engine": "demo BM25 (bm25s)", "k1": 1.5, "b": 0.75},
        },
    )
    if configuration.endpoint is None:
        services.set_endpoint(configuration, kind="elasticsearch", url=PLACEHOLDER_URL, user=user)
    return configuration


def start_engine(pool_name: str = "demo", host: str = "127.0.0.1") -> DemoServer | None:
    """Serve the pool's documents with the demo engine, on the port its live endpoint names if free (else
    any free port), and point the endpoint there. None when the pool or the configuration is missing."""
    configuration = (
        SearchConfiguration.objects.filter(pool__name=pool_name, name=LIVE_CONFIGURATION)
        .select_related("pool")
        .first()
    )
    if configuration is None or configuration.endpoint is None:
        return None
    current = configuration.endpoint
    documents = [
        {"id": doc_id, "title": title, "body": body}
        for doc_id, title, body in Document.objects.filter(pool=configuration.pool)
        .with_content()
        .order_by("external_id")
        .values_list("external_id", "title", "body")
    ]
    try:
        server = serve(documents, port=urlsplit(current.url).port or DEFAULT_PORT, host=host)
    except OSError:  # the port is taken: any free one
        server = serve(documents, port=0, host=host)
    if current.url != server.search_url:
        services.set_endpoint(
            configuration,
            kind=current.kind,
            url=server.search_url,
            template=current.template,
            hits_path=current.hits_path,
            id_field=current.id_field,
            score_field=current.score_field,
        )
    return server
