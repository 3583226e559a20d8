"""Gold pairs (judgments.gold): marked by admins (API, import_judgments --gold), served unannounced at the
pool's rate, kept out of the combined grade; rater quality on the people page (judgments.rating.quality)."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import gold
from judgments.exchange.exports.grades import combined_grades
from judgments.models import Judgment, Pair
from judgments.rating import grading, quality


def _client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def pairs(pool, queued):
    """q1 d1..d3 and q2 d1..d3, all queued; one grade each wanted."""
    return {(q, d): queued(pool, q, d) for q in ("q1", "q2") for d in ("d1", "d2", "d3")}


def test_mark_gold_refuses_bad_input_with_one_line_and_changes_nothing(pool, pairs, site_admin):
    with pytest.raises(gold.GoldError) as caught:
        gold.mark_gold(pool, [("q1", "d1", 3), ("q1", "d9", 2)], site_admin)
    assert str(caught.value) == "line 2: query 'q1' and document 'd9' are not a pair of pool robust"
    with pytest.raises(gold.GoldError) as caught:
        gold.mark_gold(pool, [("q1", "d1", 7)], site_admin)
    assert str(caught.value) == "line 1: A gold grade must be an integer from 0 to 4, not 7."
    assert not Pair.objects.filter(gold_grade__isnull=False).exists()


def test_a_gold_grade_is_the_combined_grade_whatever_raters_say(pool, pairs, site_admin, rater):
    pool.gold_rate = 0.5
    pool.save()
    assert gold.mark_gold(pool, [("q1", "d1", 3)], site_admin) == 1
    pair = pairs[("q1", "d1")]
    Pair.objects.filter(pk=pair.pk).update(held_by=rater, held_until=pair.queued_at + timedelta(days=1))
    grading.save_grade(Pair.objects.get(pk=pair.pk), rater, grade=0)
    assert Judgment.objects.get(pair=pair, rater=rater).grade == 0
    assert combined_grades(pool)[("q1", "d1")] == 3


def test_gold_pairs_are_served_at_the_pool_rate_to_every_rater(
    pool, pairs, site_admin, rater, other_rater, monkeypatch
):
    gold.mark_gold(pool, [("q2", "d3", 2)], site_admin)
    gold_pair = pairs[("q2", "d3")]
    draws = iter([0.9, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9])  # rate 0.25: gold on the 2nd draw and on
    monkeypatch.setattr(grading.random, "random", lambda: next(draws, 0.9))
    pool.gold_rate = 0.25
    pool.save()
    first = grading.next_pair_for(rater, pool)
    assert first.pk != gold_pair.pk
    grading.save_grade(first, rater, grade=1)
    assert grading.next_pair_for(rater, pool).pk == gold_pair.pk  # 0.1 < 0.25
    assert grading.next_pair_for(rater, pool).pk == gold_pair.pk  # held: served again, no draw
    grading.save_grade(gold_pair, rater, grade=2)
    assert grading.next_pair_for(other_rater, pool).pk == gold_pair.pk  # to every rater, once each
    grading.save_grade(gold_pair, other_rater, grade=0)
    assert grading.next_pair_for(other_rater, pool).pk != gold_pair.pk  # 0.1, but answered already
    assert Judgment.objects.filter(pair=gold_pair).count() == 2  # more than raters_per_pair (1)
    pool.gold_rate = 0
    pool.save()
    assert all(grading.next_pair_for(other_rater, pool).pk != gold_pair.pk for _ in range(3))


def test_a_rater_cannot_tell_a_gold_pair(pool, pairs, site_admin, rater):
    gold.mark_gold(pool, [("q1", "d2", 4)], site_admin)
    client = _client(rater)
    assert client.get("/api/pools/robust/gold/").status_code == 403
    assert (
        client.post(
            "/api/pools/robust/gold/",
            {"pairs": [{"query_id": "q1", "doc_id": "d1", "grade": 1}]},
            format="json",
        ).status_code
        == 403
    )
    assert "gold" not in client.get("/api/judgments/").content.decode()
    assert client.get("/api/scores/").status_code in (403, 200) and "4" not in str(
        client.get("/api/scores/").json().get("results", [])
    )
    assert client.get("/pools/robust/rater-quality/").status_code in (302, 403)


def test_admins_mark_gold_through_the_api_all_or_nothing(pool, pairs, site_admin):
    client = _client(site_admin)
    body = {
        "pairs": [
            {"query_id": "q1", "doc_id": "d1", "grade": 2},
            {"query_id": "q2", "doc_id": "d1", "grade": 5},
        ]
    }
    response = client.post("/api/pools/robust/gold/", body, format="json")
    assert response.status_code == 400
    assert (
        response.json()["problems"][0]["message"]
        == "line 2: A gold grade must be an integer from 0 to 4, not 5."
    )
    assert not Pair.objects.filter(gold_grade__isnull=False).exists()
    body["pairs"][1]["grade"] = 1
    assert client.post("/api/pools/robust/gold/", body, format="json").json()["pairs"] == [
        {"query_id": "q1", "doc_id": "d1", "grade": 2},
        {"query_id": "q2", "doc_id": "d1", "grade": 1},
    ]


def test_import_judgments_gold(pool, pairs, tmp_path):
    good = tmp_path / "gold.qrels"
    good.write_text("q1 0 d1 3\nq2\td2\t0\n")
    out = StringIO()
    call_command("import_judgments", "--pool", "robust", "--gold", str(good), stdout=out)
    assert "Marked 2 pair(s)" in out.getvalue()
    assert dict(
        Pair.objects.filter(gold_grade__isnull=False).values_list("document__external_id", "gold_grade")
    ) == {
        "d1": 3,
        "d2": 0,
    }
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 d3 2\nq1 0 nope 2\n")
    with pytest.raises(
        CommandError, match="^line 2: query 'q1' and document 'nope' are not a pair of pool robust$"
    ):
        call_command("import_judgments", "--pool", "robust", "--gold", str(bad), stdout=StringIO())
    assert not Pair.objects.filter(document__external_id="d3", gold_grade__isnull=False).exists()


def test_rater_quality_measures_gold_agreement_and_time(pool, pairs, site_admin, rater, other_rater, client):
    from judgments import services

    gold.mark_gold(pool, [("q1", "d1", 3), ("q1", "d2", 0)], site_admin)
    services.record_judgment(Pair.objects.get(pk=pairs[("q1", "d1")].pk), rater, grade=3)
    services.record_judgment(Pair.objects.get(pk=pairs[("q1", "d2")].pk), rater, grade=1)
    for d, mine, theirs in (("d3", 2, 2), ("d1", 4, 1)):
        pair = Pair.objects.get(pk=pairs[("q2", d)].pk)
        services.record_judgment(pair, rater, grade=mine)
        services.record_judgment(pair, other_rater, grade=theirs)
    Judgment.objects.filter(rater=rater).update(
        served_at=Judgment.objects.get(rater=rater, pair=pairs[("q2", "d3")]).created_at
        - timedelta(seconds=1)
    )
    rows = {row["rater_id"]: row for row in quality.rater_quality(pool)}
    mine = rows[rater.pk]
    assert (mine["gold_n"], mine["gold_exact"], mine["gold_within_one"]) == (2, 0.5, 1.0)
    # (3,3) and (1,0): observed weighted disagreement 1, expected (9 + 4 + 1) / 2 = 7, so 1 - 1/7
    assert mine["gold_kappa"] == pytest.approx(6 / 7)
    assert (mine["agreement_n"], mine["agreement_exact"], mine["agreement_within_one"]) == (2, 0.5, 0.5)
    assert mine["timed_n"] == 4 and mine["fast_share"] is not None
    assert rows[other_rater.pk]["gold_n"] == 0 and rows[other_rater.pk]["median_seconds"] is None
    client.force_login(site_admin)
    page = client.get("/pools/robust/rater-quality/", headers={"HX-Request": "true"}).content.decode()
    assert "Rater quality" in page and rater.username in page
    assert "rater-quality" in client.get("/campaign/pools/robust/people/").content.decode()


def test_the_gold_page_marks_pairs_all_or_nothing(pool, pairs, site_admin, rater, client):
    client.force_login(site_admin)
    bad = client.post("/pools/robust/gold/", {"lines": "q1 d1 3\nq1 d9 2\n", "action": "mark"})
    assert (
        bad.status_code == 400
        and "line 2: query &#x27;q1&#x27; and document &#x27;d9&#x27;" in bad.content.decode()
    )
    assert not Pair.objects.filter(gold_grade__isnull=False).exists()
    assert client.post("/pools/robust/gold/", {"lines": "q1 0 d1 3\n", "action": "mark"}).status_code == 302
    assert "1 gold pair" in client.get("/pools/robust/gold/").content.decode()
    client.post("/pools/robust/gold/", {"lines": "q1 d1 0\n", "action": "clear"})
    assert not Pair.objects.filter(gold_grade__isnull=False).exists()
    client.force_login(rater)
    assert client.get("/pools/robust/gold/").status_code in (302, 403, 404)
