"""A pool for judge tests: queries q1..qN x documents d1..dM (all with content), every pair queued, and a
chat handler that grades a pair by its document's number, so every stored grade can be checked."""

import re

from judgments.models import Document, Pair, Pool, Query
from tests.judgments.judges.chat_server import completion, user_text

_DOC = re.compile(r"Body of (d\d+) ")
_QUERY = re.compile(r"## Query\n(\S+)")


def make_pool(name="judged", queries=4, documents=5, members=()) -> Pool:
    pool = Pool.objects.create(name=name, guidelines="Grade by how well the document answers.")
    pool.members.add(*members)
    qs = [
        Query.objects.create(pool=pool, external_id=f"q{i}", text=f"query{i}", information_need=f"need {i}")
        for i in range(1, queries + 1)
    ]
    ds = [
        Document.objects.create(pool=pool, external_id=f"d{i}", title=f"Doc {i}", body=f"Body of d{i} here")
        for i in range(1, documents + 1)
    ]
    for q in qs:
        for d in ds:
            Pair.objects.create(pool=pool, query=q, document=d, queued_at="2025-01-01T00:00:00Z")
    return pool


def asked(body: dict) -> tuple[str, str]:
    """(query text, document id) a chat request is about."""
    text = user_text(body)
    return _QUERY.search(text).group(1), _DOC.search(text).group(1)


def grade_of(doc_id: str) -> int:
    return int(doc_id[1:]) % 5


def by_document(body: dict):
    _, doc = asked(body)
    return completion(f'{{"grade": {grade_of(doc)}, "reason": "doc {doc}"}}')
