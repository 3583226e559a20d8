"""The estimates' stored snapshot (scoring.snapshots) equals the direct computation (scoring.estimates),
every configuration and every difference of two; a new sample and new grades make it due; a big pool's
estimates page shows the stored figures."""

import math

import pytest
from django.urls import reverse

from judgments import services, snapshots
from judgments.models import Judgment, Snapshot, SnapshotDue
from scoring import estimates as ppi_estimates
from scoring.snapshots import configurations_of, estimate_key, estimates_from
from tests.conftest import login

from .conftest import run_command


def same(a, b) -> bool:
    return all((math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a, b, strict=True))


def fields(e):
    return (e.estimate, e.ci_low, e.ci_high, e.naive, e.rectifier, e.human_queries, e.queries)


def stored(judge, measure="ndcg@10", flavour="exp"):
    value = Snapshot.objects.get(
        pool=judge.pool, kind="estimates", key=estimate_key(judge, measure, flavour)
    ).value
    return value if "error" in value else estimates_from(judge, value, configurations_of([value]))


def assert_equal(kept, direct):
    assert (kept.measure, kept.flavour, kept.n_sample, kept.n_queries) == (
        direct.measure,
        direct.flavour,
        direct.n_sample,
        direct.n_queries,
    )
    assert [(r.configuration, r.run_id) for r in kept.rows] == [
        (r.configuration, r.run_id) for r in direct.rows
    ]
    for a, b in zip(kept.rows, direct.rows, strict=True):
        assert same(fields(a.estimate), fields(b.estimate)) and same(fields(a.plus_plus), fields(b.plus_plus))
    for i in range(len(direct.rows)):
        for j in range(len(direct.rows)):
            if i != j:
                assert same(fields(kept.difference(i, j)), fields(direct.difference(i, j))), (i, j)


def test_the_stored_estimates_equal_the_direct_computation(judged_pool, pool, rater):
    snapshots.refresh(pool)
    assert "has no human sample" in stored(judged_pool)["error"]
    run_command("sample_queries", "--pool", pool.name, "--size", "6", "--seed", "7")
    assert SnapshotDue.objects.filter(pool=pool).exists()  # a new sample queues its pairs: due
    snapshots.refresh(pool)
    assert_equal(stored(judged_pool), ppi_estimates.estimates(pool, judged_pool, "ndcg@10", "exp"))
    # A human regrade in the sample moves the estimates: due, and equal again after the refresh.
    judgment = Judgment.objects.filter(rater=rater, pair__query__external_id="s00").first()
    services.record_judgment(judgment.pair, rater, grade=4 - judgment.grade)
    assert SnapshotDue.objects.filter(pool=pool).exists()
    snapshots.refresh(pool)
    assert_equal(stored(judged_pool), ppi_estimates.estimates(pool, judged_pool, "ndcg@10", "exp"))


@pytest.mark.parametrize("big", [False, True])
def test_the_estimates_page_inline_and_stored(judged_pool, pool, client, engineer, monkeypatch, big):
    run_command("sample_queries", "--pool", pool.name, "--size", "6", "--seed", "7")
    if big:
        monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    login(client, engineer)
    url = reverse("scoring:estimates", args=[pool.name])
    query = {"measure": "p@10", "flavour": "trec", "a": "dense", "b": "bm25"}
    page = client.get(url, query).content.decode()
    if big:  # another measure than the default: asked for, computed by the next refresh, kept after
        assert "being computed for the first time" in page and 'id="difference"' not in page
        snapshots.refresh(pool)
        page = client.get(url, query).content.decode()
        assert "Figures as of" in page
    direct = ppi_estimates.estimates(pool, judged_pool, "p@10", "trec")
    names = [r.configuration.name for r in direct.rows]
    d = direct.difference(names.index("dense"), names.index("bm25"))
    assert 'id="difference"' in page and f"{d.estimate:+.3f}".replace("-", "−") in page
    for row in direct.rows:
        assert f'data-configuration="{row.configuration.name}"' in page
        assert f"<strong>{row.estimate.estimate:.3f}</strong>" in page
