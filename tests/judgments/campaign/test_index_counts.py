"""The campaign index counts each pool's queries, documents, raters and queued pairs without joining them:
four Count(distinct) over one join made queries x documents x raters x pairs rows per pool (45 million for
the README's trec-sample pool), and the page never loaded."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from judgments.models import Document, Pair, Query
from tests.conftest import _user
from tests.plans import most_rows, page_statements

N = 8


@pytest.fixture
def busy_pool(pool, django_user_model):
    """The conftest pool grown to N queries, N documents, N raters and N queued pairs."""
    Query.objects.bulk_create(Query(pool=pool, external_id=f"x{i}", text=f"x {i}") for i in range(N - 2))
    Document.objects.bulk_create(Document(pool=pool, external_id=f"y{i}", title="t") for i in range(N - 3))
    for i in range(N - 2):
        pool.members.add(_user(django_user_model, f"extra-rater-{i}", "rater"))
    queries, documents = list(pool.queries.all()), list(pool.documents.all())
    Pair.objects.bulk_create(
        Pair(pool=pool, query=queries[i], document=documents[i], queued_at=timezone.now()) for i in range(N)
    )
    return pool


def test_the_index_shows_each_count(client, site_admin, busy_pool):
    client.force_login(site_admin)
    row = client.get(reverse("campaign:index")).context["pools"][0]
    assert (row.n_queries, row.n_documents, row.n_raters, row.n_queued) == (N, N, N, N)


def test_the_index_reads_each_relation_once_instead_of_their_product(client, site_admin, busy_pool):
    client.force_login(site_admin)
    worst, sql = most_rows(page_statements(client, reverse("campaign:index")))
    # Joined, one pool's rows were N**4 (4,096); counted one by one, no step sees more than a table's rows.
    assert worst <= 4 * N, sql
