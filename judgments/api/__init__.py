"""The REST API (Django REST Framework): pools, queries, documents, configurations, runs, judgments,
imports and exports. Scores live in scoring/api.py; the router is config/api_urls.py.

Permissions follow the roles of `access`, and every ViewSet scopes its rows in `get_queryset`:
- raters read the pools they belong to, their queries and documents, and submit and read their own
  judgments; they read no configuration, run or score (403);
- engineers read configurations and runs of their pools, create configurations for their teams and
  submit runs only to their own team's configurations (403 otherwise);
- admins read everything, including every rater's judgments, import files and export qrels.
A row outside the user's scope is a 404, never data. Bad input is a 400 with
``{"detail", "file"?, "problems": [{"line", "field", "message"}, ...]}`` and nothing stored.
"""

from .common import (  # noqa: F401
    IMPORT_KINDS,
    POOL_PARAM,
    PROBLEMS_400,
    STREAM_200,
    IsAdminOrReadOnly,
    IsEngineer,
    field_problems,
    format_error_response,
    problems_response,
    query_param,
    stream,
    too_large,
    truthy,
)
from .judging import JudgmentViewSet, TokenView  # noqa: F401
from .pools import DocumentViewSet, PoolViewSet, QueryViewSet  # noqa: F401
from .runs import ConfigurationViewSet, RunViewSet  # noqa: F401
