"""Shared by the estimates tests: a pool graded by a human and a lenient, noisy model judge."""

import random
from io import StringIO

import pytest
from django.core.management import call_command

from judgments import services
from judgments.judges.services import create_or_update_judge
from judgments.models import Document, Judgment, Pair, Query, SearchConfiguration

N_QUERIES, N_DOCS = 12, 8
CONFIGURATIONS = ("bm25", "dense", "hybrid")


def run_command(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def judged_pool(pool, rater, team):
    """12 queries x 8 documents, every pair graded by a human and (leniently, noisily) by a judge; three
    configurations rank 6-8 documents of 11 of the queries (q11 is answered by none)."""
    rng = random.Random(5)
    Query.objects.filter(pool=pool).delete()  # the shared pool's q1 and q2: this pool is built here
    judge = create_or_update_judge(pool, "llm", base_url="http://127.0.0.1:9/v1", model="gpt-x")[0]
    docs = [
        Document.objects.create(pool=pool, external_id=f"e{d}", title=f"T{d}", body="b")
        for d in range(N_DOCS)
    ]
    queries = [
        Query.objects.create(pool=pool, external_id=f"s{q:02d}", text=f"query {q}") for q in range(N_QUERIES)
    ]
    rows = []
    for query in queries:
        for doc in docs:
            pair = Pair.objects.create(pool=pool, query=query, document=doc)
            g = rng.randint(0, 4)
            rows.append(Judgment(pair=pair, rater=rater, grade=g))
            if rng.random() < 0.9:
                rows.append(Judgment(pair=pair, rater=judge.user, grade=min(4, g + rng.choice((0, 1, 1, 2)))))
    Judgment.objects.bulk_create(rows)
    names = [d.external_id for d in docs]
    for i, name in enumerate(CONFIGURATIONS):
        configuration = SearchConfiguration.objects.create(pool=pool, team=team, name=name)
        ranking = {}
        for q in queries[:-1]:
            order = names[:]
            random.Random(f"{name}{q.external_id}").shuffle(order)
            ranking[q.external_id] = order[: 6 + i]
        services.record_run(configuration, ranking, source="api")
    return judge
