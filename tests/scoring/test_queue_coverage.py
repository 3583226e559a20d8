"""The judging queue's pooling panel: each configuration's judged@k from the stored totals, equal to the
mean over the rows of the queries its current run ranks; admins only."""

import pytest
from django.urls import reverse

from judgments import services
from judgments.models import Pair
from scoring.models import QueryScore
from scoring.templatetags.scoring_tags import pct


@pytest.mark.parametrize("k", [3, 10])
def test_judged_at_k_equals_a_direct_mean(
    client, site_admin, pool, run, rater, k, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        for doc in ("d1", "d3"):
            pair, _ = Pair.objects.get_or_create(
                pool=pool,
                query=pool.queries.get(external_id="q1"),
                document=pool.documents.get(external_id=doc),
            )
            services.record_judgment(pair, rater, grade=2)
    rows = QueryScore.objects.filter(run=run, flavor="exp", has_ranking=True).values_list(
        f"judged_{k}", flat=True
    )
    direct = sum(rows) / len(rows)
    assert 0 < direct < 1
    client.force_login(site_admin)
    panel = client.get(reverse("scoring:queue-coverage", args=[pool.name]), {"k": str(k)}).content.decode()
    assert f'<td class="num">{pct(direct)}</td>' in panel and f"Judged@{k}" in panel


def test_engineers_do_not_see_it(client, engineer, pool, run):
    client.force_login(engineer)
    assert client.get(reverse("scoring:queue-coverage", args=[pool.name])).status_code in (403, 404)
