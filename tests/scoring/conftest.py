"""Fixtures shared with the capture tests: the try-a-query page asks the demo engine of a search pool."""

from tests.judgments.capture.conftest import engine, live_configuration, search_pool  # noqa: F401
