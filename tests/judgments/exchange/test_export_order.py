"""Every export lists its lines in one order that depends on the content only, never on how a pool
was filled: by query id, then document id, compared as code points (COLLATE "C", whatever the
database's locale). Two pools holding the same queries, documents, grades and runs, filled in opposite
orders, export byte for byte the same files (bar the pool's name)."""

import re

import pytest

from judgments import services
from judgments.exchange.exports.catalog import POOL_EXPORTS
from judgments.exchange.exports.runs import run_chunks
from judgments.models import Document, Judgment, Pair, Pool, Query, SearchConfiguration

# Ids whose code point order differs from a locale's (case, digits, punctuation) and from insertion.
QUERIES = ["q10", "Q2", "q2", "q_1", "a", "10"]
DOCS = ["d10", "D2", "d2", "d-1", "z", "1"]


def _grade(q: str, d: str) -> int:
    return (len(q) * 3 + len(d) + ord(q[-1]) + ord(d[0])) % 5


def _fill(name: str, reverse: bool, raters, team) -> Pool:
    pool = Pool.objects.create(name=name)
    queries, docs = (QUERIES[::-1], DOCS[::-1]) if reverse else (QUERIES, DOCS)
    for q in queries:
        Query.objects.create(pool=pool, external_id=q, text=f"text of {q}", information_need=f"need {q}")
    for d in docs:
        Document.objects.create(pool=pool, external_id=d, title=f"T {d}", body=f"B {d}")
    q_pk = dict(Query.objects.filter(pool=pool).values_list("external_id", "pk"))
    d_pk = dict(Document.objects.filter(pool=pool).values_list("external_id", "pk"))
    combos = [(q, d) for q in queries for d in docs if (len(q) + len(d) + ord(d[-1])) % 3]
    for q, d in combos:
        pair = Pair.objects.create(pool=pool, query_id=q_pk[q], document_id=d_pk[d])
        for rater in raters[::-1] if reverse else raters:
            Judgment.objects.create(pair=pair, rater=rater, grade=(_grade(q, d) + rater.pk) % 5)
    configuration = SearchConfiguration.objects.create(pool=pool, team=team, name="bm25")
    rankings = {q: [d for d in (DOCS[::-1] if q < "q" else DOCS)] for q in queries}
    run = services.record_run(configuration, rankings, source="api")
    return pool, run


@pytest.fixture
def twins(db, rater, other_rater, team):
    return _fill("first", False, [rater, other_rater], team), _fill(
        "second", True, [rater, other_rater], team
    )


def _text(chunks) -> str:
    text = "".join(c.decode() if isinstance(c, bytes) else c for c in chunks)
    return re.sub(r'"(created|updated)_at": "[^"]*"', r'"\1_at": "T"', text)  # when, not what


@pytest.mark.parametrize("key", sorted(POOL_EXPORTS))
def test_every_pool_export_is_in_the_same_order_whatever_the_filling(twins, key):
    (first, _), (second, _) = twins
    export = POOL_EXPORTS[key]
    a = _text(export.open(first))
    b = _text(export.open(second)).replace("second", "first")
    assert a.count("\n") > 5
    assert a == b


def test_line_exports_go_by_query_id_then_document_id_as_code_points(twins):
    (pool, _), _ = twins
    lines = _text(POOL_EXPORTS["qrels"].make(pool)).splitlines()
    keys = [(line.split()[0], line.split()[2]) for line in lines]
    assert keys == sorted(keys)  # Python compares code points: "10" < "Q2" < "a" < "q10" < "q2" < "q_1"
    assert keys[0][0] == "10" and keys[-1][0] == "q_1"
    rows = _text(POOL_EXPORTS["judgments-csv-ids"].make(pool)).splitlines()[1:]
    keys = [tuple(row.split(",")[:2]) for row in rows]
    assert keys == sorted(keys)
    ranklib = [line for line in _text(POOL_EXPORTS["ranklib"].make(pool)).splitlines() if "#" in line[:2]]
    assert ranklib


def test_run_files_go_by_query_id_then_rank(twins):
    (_, first_run), (_, second_run) = twins
    a, b = _text(run_chunks(first_run)), _text(run_chunks(second_run))
    assert a == b
    qids = [line.split()[0] for line in a.splitlines()]
    assert qids == sorted(qids)
