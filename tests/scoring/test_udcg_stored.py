"""UDCG stored with the other scores: computed in the same pass from the combined grades (a negative
combined grade is a distractor), the same in every flavour, averaged on the leaderboard, exported and
served by the API. NDCG and the rest keep counting a distractor as unjudged (trec_eval's reading of a
negative qrels grade)."""

import json
import math
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import services
from judgments.models import Pair
from scoring.leaderboard import configuration_means
from scoring.models import CellScore, QueryScore
from scoring.services import rescore_pool
from tests.conftest import login


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


@pytest.fixture
def distractor_pool(pool, rater, other_rater, run):
    """The run ranks q1: d1 d2 d3, q2: d3 d1. q1: d1 relevant (3), d2 a distractor for both raters,
    d3 split (-1 and 1: mean 0, not relevant, not a distractor); q2: d3 a distractor, d1 0."""
    services.set_distractors(pool, True)
    pairs = {}
    for qid, docid in (("q1", "d1"), ("q1", "d2"), ("q1", "d3"), ("q2", "d3"), ("q2", "d1")):
        query, document = pool.queries.get(external_id=qid), pool.documents.get(external_id=docid)
        pairs[qid, docid], _ = Pair.objects.get_or_create(pool=pool, query=query, document=document)
    for key, grades in {
        ("q1", "d1"): (3,),
        ("q1", "d2"): (-1, -1),
        ("q1", "d3"): (-1, 1),
        ("q2", "d3"): (-1,),
        ("q2", "d1"): (0,),
    }.items():
        for user, grade in zip((rater, other_rater), grades, strict=False):
            services.record_judgment(pairs[key], user, grade=grade)
    rescore_pool(pool)
    return pool


def test_udcg_is_stored_from_the_combined_grades_and_is_the_same_in_every_flavour(distractor_pool, run):
    q1 = {row.flavor: row for row in QueryScore.objects.filter(run=run, query__external_id="q1")}
    assert set(q1) == {"exp", "trec", "jk", "judged"}
    expected_q1 = {3: sigmoid((1 - 1 / 3 + 0) / 3), 5: sigmoid((1 - 1 / 3) / 3), 10: sigmoid((1 - 1 / 3) / 3)}
    for row in q1.values():
        assert row.udcg_3 == pytest.approx(expected_q1[3], abs=1e-12)
        assert row.udcg_10 == pytest.approx(expected_q1[10], abs=1e-12)
    q2 = QueryScore.objects.get(run=run, query__external_id="q2", flavor="trec")
    assert q2.udcg_3 == pytest.approx(sigmoid(-1 / 3 / 2), abs=1e-12)  # the distractor first, then a 0
    # Every other metric: the distractor d2 is unjudged (trec_eval), d3 (mean 0) is judged, not relevant;
    # judged@k counts the distractor as judged (a rater graded it).
    assert q1["trec"].ndcg_3 == pytest.approx(1.0) and q1["trec"].judged_3 == 1.0
    assert q1["judged"].p_3 == pytest.approx(1 / 3)  # condensed list d1 d3: one relevant of 3
    cell = CellScore.objects.get(run=run, query__external_id="q1")
    assert cell.udcg_100 == pytest.approx(expected_q1[10], abs=1e-12)


def test_leaderboard_means_exports_and_api_carry_udcg(client, distractor_pool, run, engineer):
    (row,) = configuration_means(distractor_pool, "exp")
    expected = (sigmoid((1 - 1 / 3) / 3) + sigmoid(-1 / 6)) / 2
    assert row.mean("udcg@10") == pytest.approx(expected, abs=1e-12)

    page = login(client, engineer).get(reverse("scoring:leaderboard", args=[distractor_pool.name]))
    html = page.content.decode()
    assert 'data-metric="udcg@10">' + f"{expected:.3f}" in html
    assert 'id="udcg-definition"' in html and "positional discount is uniform" in html
    csv = client.get(reverse("scoring:leaderboard-csv", args=[distractor_pool.name])).content.decode()
    header, line = csv.splitlines()[:2]
    assert "udcg@10" in header.split(",")
    assert float(line.split(",")[header.split(",").index("udcg@10")]) == pytest.approx(expected)

    out = StringIO()
    call_command("export_scores", "--pool", distractor_pool.name, stdout=out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    udcg = {(r["query"], r["metric"]): r["value"] for r in records if r["metric"].startswith("udcg@")}
    assert udcg["all", "udcg@10"] == pytest.approx(expected)
    assert udcg["q2", "udcg@3"] == pytest.approx(sigmoid(-1 / 6))

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=engineer).key}")
    body = api.get("/api/scores/", {"pool": distractor_pool.name, "flavor": "trec"}).json()
    results = body["results"] if isinstance(body, dict) else body
    q2 = next(r for r in results if r["query_id"] == "q2")
    assert q2["metrics"]["udcg@3"] == pytest.approx(sigmoid(-1 / 6))


def test_compare_page_offers_udcg_as_the_headline_metric(
    client, distractor_pool, engineer, configuration, other_configuration
):
    services.record_run(other_configuration, {"q1": ["d2", "d1"], "q2": ["d1"]}, source="api")
    rescore_pool(distractor_pool)
    url = reverse("scoring:compare", args=[distractor_pool.name])
    page = login(client, engineer).get(url, {"c": ["bm25", "dense"], "metric": "udcg@10"})
    assert page.status_code == 200
    html = page.content.decode()
    assert '<option value="udcg@10" selected>UDCG@10</option>' in html
