"""Capture runs from a live search engine (issue 12).

Pure Python + httpx, no Django: `templates` renders request templates, `engines` describes an endpoint
and reads its answers, `client` sends a pool's queries with bounded concurrency, `demo_engine` is a small
BM25 engine speaking Elasticsearch's `_search` format for the demo and the tests.
"""
