"""Capture runs from a live search engine, and try queries live (issue 12).

What an endpoint means (its kinds, templates and answers) is the core's: judgments/endpoints (pure) and
the models in judgments/models/capture.py (endpoint versions, capture jobs; secrets encrypted at rest by
judgments/models/secret_fields.py). Here, pure Python, no Django: `client` sends a pool's queries with
bounded concurrency (http.client), `demo_engine` is a small BM25 engine speaking Elasticsearch's
`_search` format for the demo and the tests.

Django: `services` (set an endpoint, start and run a capture: the run is staged as the answers arrive,
then stored in one short transaction by judgments.run_staging), `tasks` (the background capture), `views`/`forms`/`urls`
(the configuration page's panel, the endpoint form, progress), `api` and `serializers` (REST), `cli`
(shared by the capture commands), `demo` (the demo's live configuration).
The try-a-query page shows NDCG, so it lives in scoring (scoring/live.py, its page scoring/views/live.py).
"""
