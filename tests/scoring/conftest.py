"""Fixtures shared with other test packages: the try-a-query page asks the demo engine of a search pool
(the capture tests'); the scores API is tried in the API tests' world (tests/judgments/api/conftest.py)."""

from tests.judgments.api.conftest import client_for, world  # noqa: F401
from tests.judgments.capture.conftest import engine, live_configuration, search_pool  # noqa: F401
