"""The trust page's stored snapshot (scoring.snapshots) equals the direct computation
(scoring.trust.judge_trust), after each kind of write that changes it; a big pool's trust page shows it."""

import math
import re

import pytest
from django.urls import reverse

from judgments import services as judgment_services
from judgments import snapshots
from judgments.models import Judgment, SearchConfiguration, Snapshot
from scoring import trust
from scoring.snapshots import trust_from
from tests.conftest import login
from tests.scoring import test_trust

judged = test_trust.judged  # the fixture: a pool, its judge, humans and four configurations


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def assert_equal(stored: trust.Trust, direct: trust.Trust) -> None:
    for name in ("n_graded", "n_cant", "n_pairs", "n_alpha_humans", "confusion", "n_far", "n_far_unsent"):
        assert getattr(stored, name) == getattr(direct, name), name
    for name in ("exact", "within_one", "kappa", "alpha", "alpha_humans", "mean_gap"):
        assert same(getattr(stored, name), getattr(direct, name)), name
    assert [
        (f.pair, f.judge_grade, f.judge_reason, f.human_grades, f.human_grade, f.sent) for f in stored.far
    ] == [(f.pair, f.judge_grade, f.judge_reason, f.human_grades, f.human_grade, f.sent) for f in direct.far]
    s, d = stored.decisions, direct.decisions
    assert (s is None) == (d is None)
    if d is not None:
        assert [
            (p.configuration, p.run_id, p.human, p.judge, p.human_rank, p.judge_rank) for p in s.placings
        ] == [(p.configuration, p.run_id, p.human, p.judge, p.human_rank, p.judge_rank) for p in d.placings]
        assert same(s.tau, d.tau) and s.n_queries == d.n_queries
        assert [(a.run_id, b.run_id) for a, b in s.flips] == [(a.run_id, b.run_id) for a, b in d.flips]
    assert trust.verdict(stored) == trust.verdict(direct)


def stored_trust(judge) -> trust.Trust:
    return trust_from(judge, Snapshot.objects.get(pool=judge.pool, kind="trust", key=str(judge.pk)).value)


def test_the_stored_trust_equals_the_direct_computation_after_each_write(judged, rater, site_admin):
    pool = judged.pool
    snapshots.refresh(pool)
    assert_equal(stored_trust(judged), trust.judge_trust(judged))
    pair = Judgment.objects.filter(rater=judged.user).first().pair
    configuration = SearchConfiguration.objects.get(pool=pool, name="bm25")
    writes = [
        lambda: judgment_services.record_judgment(pair, judged.user, grade=0),  # the judge regrades
        lambda: judgment_services.record_judgment(pair, rater, grade=4),  # a human regrades
        lambda: judgment_services.record_run(  # a new run reorders the configurations
            configuration, {f"qq{q}": ["doc7", "doc6", "doc5"] for q in range(6)}, source="api"
        ),
    ]
    for write in writes:
        write()
        assert not snapshots.refresh(pool).skipped
        assert_equal(stored_trust(judged), trust.judge_trust(judged))


def test_a_big_pools_trust_page_reads_the_snapshot(client, judged, site_admin, monkeypatch):
    monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
    login(client, site_admin)
    url = reverse("scoring:trust", args=[judged.pool.name, judged.user.username])
    page = client.get(url).content.decode()
    assert "being computed for the first time" in page and 'id="kappa"' not in page
    snapshots.refresh(judged.pool)
    page = client.get(url).content.decode()
    direct = trust.judge_trust(judged)
    assert "Figures as of" in page and f'id="kappa">{direct.kappa:.3f}<' in page
    assert f'id="n-pairs">{direct.n_pairs}<' in page and trust.verdict(direct).text.split(":")[0] in page


@pytest.mark.parametrize("big", [False, True])
def test_the_trust_page_is_the_same_inline_and_stored(client, judged, site_admin, monkeypatch, big):
    login(client, site_admin)
    url = reverse("scoring:trust", args=[judged.pool.name, judged.user.username])
    inline = client.get(url).content.decode()
    if big:
        monkeypatch.setattr(snapshots, "SMALL_PAIRS", 0)
        snapshots.refresh(judged.pool)
    page = client.get(url).content.decode()

    def figures(html: str) -> str:  # from the figures on, the form's token left out
        return re.sub(
            r'name="csrfmiddlewaretoken" value="[^"]*"', "", html[html.index('<div class="stats">') :]
        )

    assert figures(page) == figures(inline)
