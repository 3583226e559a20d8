"""Capture runs from a live search engine, and try queries live (issue 12).

Pure Python, no Django: `templates` renders request templates, `engines` describes an endpoint and
reads its answers (`answers`), `client` sends a pool's queries with bounded concurrency (http.client),
`demo_engine` is a small BM25 engine speaking Elasticsearch's `_search` format for the demo and the tests.

Django: `models` (endpoint versions, capture jobs; registered by judgments.models), `secret_fields` (secrets
encrypted at rest), `services` (set an endpoint, start and run a capture), `storing` (the run staged as
the answers arrive, then stored in one short transaction), `tasks` (the background
capture), `views`/`forms`/`urls` (the configuration page's panel, the endpoint form, progress), `api`
and `serializers` (REST), `cli` (shared by the capture commands), `demo` (the demo's live configuration).
The try-a-query page shows NDCG, so it lives in scoring (scoring/live.py).
"""
