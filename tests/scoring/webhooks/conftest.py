"""Webhook receivers are real HTTP servers on 127.0.0.1 (pytest-httpserver, threaded); the gated pool of
the gate tests."""

from tests.judgments.capture.conftest import (  # noqa: F401
    engine,
    httpserver,
    live_configuration,
    make_httpserver,
    search_pool,
)
from tests.scoring.gate.conftest import gated  # noqa: F401
