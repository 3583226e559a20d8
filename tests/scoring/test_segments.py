"""Query segments on the score pages: the leaderboard and the comparison filtered by tag show means, CIs
and tests equal to a direct computation over the segment's stored rows; the breakdown by tag; a bad tag is
one message. A real pool: graded pairs, three configurations' runs, scored by scoring.services."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.utils import timezone

from judgments import services
from judgments.models import Document, Judgment, Pair, Query, SearchConfiguration
from scoring import segments, stats
from scoring import services as scoring
from scoring.models import QueryScore
from tests.conftest import login

N_QUERIES = 24
TAGS = {  # query index -> tags
    **{i: ["head"] for i in range(0, 8)},
    **{i: ["tail"] for i in range(8, 24)},
}
for _i in range(0, 24, 3):
    TAGS[_i] = [*TAGS[_i], "category:shoes"]


def build(pool, team, other_team, rater, site_admin, n_queries=N_QUERIES, seed=7):
    """n_queries x 6 documents, graded by one rater, tagged as TAGS says (by index modulo 24); configurations
    a, b, c rank them differently; scored."""
    rng = np.random.default_rng(seed)
    queries = Query.objects.bulk_create(
        Query(
            pool=pool, external_id=f"s{i:02d}", text=f"segment query {i}", tags=sorted(TAGS.get(i % 24, []))
        )
        for i in range(n_queries)
    )
    documents = Document.objects.bulk_create(
        Document(pool=pool, external_id=f"x{q}-{j}", title="t", body="b")
        for q in range(n_queries)
        for j in range(6)
    )
    now = timezone.now()
    pairs = Pair.objects.bulk_create(
        Pair(pool=pool, query=queries[i // 6], document=d, queued_at=now) for i, d in enumerate(documents)
    )
    Judgment.objects.bulk_create(Judgment(pair=p, rater=rater, grade=int(rng.integers(0, 5))) for p in pairs)
    configurations = {}
    for name, owner in (("a", team), ("b", other_team), ("c", team)):
        configuration = SearchConfiguration.objects.create(pool=pool, team=owner, name=name)
        rankings = {
            q.external_id: [f"x{i}-{j}" for j in rng.permutation(6)[: int(rng.integers(3, 7))]]
            for i, q in enumerate(queries)
        }
        services.record_run(configuration, rankings, source="api", submitted_by=site_admin)
        configurations[name] = configuration
    scoring.rescore_pool(pool)
    return pool, configurations


@pytest.fixture
def tagged(db, pool, team, other_team, rater, site_admin):
    """24 queries x 6 documents, graded by one rater; configurations a, b, c rank them differently."""
    return build(pool, team, other_team, rater, site_admin)


def stored(configuration, flavour="exp", metric="ndcg_10", tag=None):
    """{query external id: value} of the configuration's current run, straight from QueryScore."""
    run = configuration.runs.order_by("-id").first()
    rows = QueryScore.objects.filter(run=run, flavor=flavour)
    if tag:
        rows = rows.filter(query__tags__contains=[tag])
    return dict(rows.values_list("query__external_id", metric))


def number(text: str) -> float:
    return float(text.replace("−", "-"))


def test_segment_and_pool_tags(tagged):
    pool, _ = tagged
    assert segments.pool_tags(pool) == [("category:shoes", 8), ("head", 8), ("tail", 16)]
    seg = segments.segment(pool, ["head", "category:shoes"])
    assert seg.n == 3 and seg.label == "head + category:shoes"
    assert sorted(
        Query.objects.filter(pk__in=seg.query_ids.tolist()).values_list("external_id", flat=True)
    ) == [
        "s00",
        "s03",
        "s06",
    ]
    with pytest.raises(segments.SegmentError, match="tag: tag 'two words' contains whitespace"):
        segments.segment(pool, ["two words"])


def test_leaderboard_filtered_by_tag_equals_the_subset(client, engineer, tagged):
    pool, configurations = tagged
    page = login(client, engineer).get("/pools/robust/leaderboard/", {"tag": "head", "flavour": "exp"})
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-segment="head" data-segment-n="8"' in html
    for name, configuration in configurations.items():
        values = stored(configuration, tag="head")
        assert len(values) == 8
        row = re.search(rf'<tr data-configuration="{name}">(.*?)</tr>', html, re.S).group(1)
        cell = re.search(r'data-metric="ndcg@10"><span class="score">([^<]+)<', row).group(1)
        assert number(cell) == pytest.approx(np.mean(list(values.values())), abs=5e-4)
    # The segment's spread: the same bootstrap and randomization code over the segment's matrix.
    run_ids = [c.runs.order_by("-id").first().pk for c in configurations.values()]
    matrix = np.array(
        [
            [stored(c, tag="head")[q] for c in configurations.values()]
            for q in sorted(stored(configurations["a"], tag="head"))
        ]
    )
    expected = segments.spread(run_ids, matrix)
    leader = next(
        n for n, c in configurations.items() if c.runs.order_by("-id").first().pk == expected.leader
    )
    spread = re.search(r'<table class="table segment-spread">(.*?)</table>', html, re.S).group(1)
    assert f'<tr data-configuration="{leader}"><td>{leader} <span class="flavour-tag">leader</span>' in spread
    for name, configuration in configurations.items():
        s = expected.runs[configuration.runs.order_by("-id").first().pk]
        row = re.search(rf'<tr data-configuration="{name}">(.*?)</tr>', spread, re.S).group(1)
        assert f"{s.ci[0]:.3f} – {s.ci[1]:.3f}" in row
        assert s.mean == pytest.approx(np.mean(list(stored(configuration, tag="head").values())))
    # Unfiltered, the board shows the whole pool and the breakdown has every tag.
    whole = login(client, engineer).get("/pools/robust/leaderboard/", {"flavour": "exp"}).content.decode()
    assert "data-segment=" not in whole and 'id="breakdown-link"' in whole
    assert "segment-breakdown" not in whole  # read on demand: every cell of the current runs
    whole = client.get("/pools/robust/leaderboard/", {"flavour": "exp", "breakdown": "1"}).content.decode()
    breakdown = re.search(r'<table class="table segment-breakdown"[^>]*>(.*?)</table>', whole, re.S).group(1)
    assert [t for t in re.findall(r'data-tag="([^"]+)"', breakdown)] == ["category:shoes", "head", "tail"]
    row = re.search(r'<tr data-configuration="b">(.*?)</tr>', breakdown, re.S).group(1)
    cells = [number(c) for c in re.findall(r'<td class="num">([^<]+)</td>', row)]
    for cell, tag in zip(cells, ("category:shoes", "head", "tail"), strict=True):
        assert cell == pytest.approx(np.mean(list(stored(configurations["b"], tag=tag).values())), abs=5e-4)


def test_leaderboard_csv_of_a_segment(client, engineer, tagged):
    import csv
    import io

    pool, configurations = tagged
    client = login(client, engineer)
    assert (
        'leaderboard.csv?flavour=exp&amp;tag=tail"'
        in client.get("/pools/robust/leaderboard/", {"tag": "tail", "flavour": "exp"}).content.decode()
    )
    response = client.get("/pools/robust/leaderboard.csv", {"tag": "tail", "flavour": "exp"})
    assert 'filename="leaderboard-robust-exp-tail.csv"' in response["Content-Disposition"]
    rows = {r["configuration"]: r for r in csv.DictReader(io.StringIO(response.content.decode()))}
    for name, configuration in configurations.items():
        values = stored(configuration, "exp", tag="tail")
        assert float(rows[name]["ndcg@10"]) == pytest.approx(np.mean(list(values.values())), abs=1e-12)
        assert rows[name]["queries"] == "16"
    bad = client.get("/pools/robust/leaderboard.csv", {"tag": "a b"})
    assert bad.status_code == 400 and bad.content.decode() == "tag: tag 'a b' contains whitespace."


def test_compare_filtered_by_tag_equals_the_subset(client, engineer, tagged):
    pool, configurations = tagged
    page = login(client, engineer).get(
        "/pools/robust/compare/", {"c": ["a", "b"], "tag": "tail", "flavour": "trec", "metric": "ndcg@10"}
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-segment="tail" data-segment-n="16"' in html
    a, b = stored(configurations["a"], "trec", tag="tail"), stored(configurations["b"], "trec", tag="tail")
    keys = sorted(a)
    [expected] = stats.compare_many(np.array([[a[k]] for k in keys]), np.array([[b[k]] for k in keys]))
    assert "16 queries" in html
    sentence = expected.sentence("NDCG@10 (trec)", "a", "b")
    assert sentence.replace("–", "&ndash;") in html or sentence in html
    # the per-tag breakdown: every tag, n and both means
    breakdown = re.search(r'<table class="table segment-breakdown"[^>]*>(.*?)</table>', html, re.S).group(1)
    row = re.search(r'<tr data-tag="head">(.*?)</tr>', breakdown, re.S).group(1)
    cells = re.findall(r'<td class="num">(?:<strong>)?([^<]+)', row)
    head_a = stored(configurations["a"], "trec", tag="head")
    head_b = stored(configurations["b"], "trec", tag="head")
    assert int(cells[0]) == 8
    assert number(cells[1]) == pytest.approx(np.mean(list(head_a.values())), abs=5e-4)
    assert number(cells[2]) == pytest.approx(np.mean(list(head_b.values())), abs=5e-4)


def test_bad_tag_on_a_page_is_one_message_and_every_query_shown(client, engineer, tagged):
    page = login(client, engineer).get("/pools/robust/leaderboard/", {"tag": "x" * 65})
    assert page.status_code == 200
    html = page.content.decode()
    assert (
        "tag: tag &#x27;xxxxxxxxxxxxxxxxxxxx&#x27;... is 65 characters long; at most 64. Showing every query."
        in html
    )
    assert "data-segment=" not in html


def test_unknown_tag_is_an_empty_segment(client, engineer, tagged):
    html = login(client, engineer).get("/pools/robust/leaderboard/", {"tag": "nowhere"}).content.decode()
    assert 'data-segment="nowhere" data-segment-n="0"' in html


def test_segment_pages_run_as_many_statements_on_a_pool_ten_times_larger(
    client, engineer, pool, team, other_team, rater, site_admin
):
    """No statement per query or per tag: the filtered pages, the breakdown, the API and the export run as
    many statements on 240 queries as on 24 (the segment ten times larger too)."""
    from io import StringIO

    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    from judgments.models import Pool

    big = Pool.objects.create(name="big", description="10x")
    big.members.add(engineer)
    build(pool, team, other_team, rater, site_admin, n_queries=24)
    build(big, team, other_team, rater, site_admin, n_queries=240)
    from django.test import Client

    login(client, engineer)
    admin = login(Client(), site_admin)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=engineer).key}")
    counts = {}
    for name in ("robust", "big"):
        requests = {
            "leaderboard": lambda n=name: client.get(
                f"/pools/{n}/leaderboard/", {"tag": "head", "breakdown": "1"}
            ),
            "compare": lambda n=name: client.get(f"/pools/{n}/compare/", {"c": ["a", "b"], "tag": "head"}),
            "matrix": lambda n=name: client.get(
                f"/pools/{n}/compare/", {"c": ["a", "b", "c"], "tag": "head"}
            ),
            "compare.csv": lambda n=name: client.get(
                f"/pools/{n}/compare.csv", {"c": ["a", "b"], "tag": "head", "table": "queries"}
            ),
            "api": lambda n=name: api.get(f"/api/segments/{n}/", {"tag": "head", "breakdown": "1"}),
            "export": lambda n=name: call_command(
                "export_scores", "--pool", n, "--tag", "head", stdout=StringIO()
            ),
            "tagging": lambda n=name: admin.get(f"/campaign/pools/{n}/queries/", {"tag": "head"}),
        }
        for what, request in requests.items():
            with CaptureQueriesContext(connection) as captured:
                response = request()
            assert response is None or response.status_code == 200, (what, response.status_code)
            counts[(what, name)] = len(captured.captured_queries)
    for what in ("leaderboard", "compare", "matrix", "compare.csv", "api", "export", "tagging"):
        assert counts[(what, "robust")] == counts[(what, "big")], (what, counts)


def test_spread_leaves_out_a_run_without_values():
    """An unscored run (every cell NaN) does not empty the board; the others keep their figures."""
    rng = np.random.default_rng(3)
    matrix = rng.uniform(0, 1, (30, 3))
    matrix[:, 1] = np.nan
    board = segments.spread([10, 11, 12], matrix)
    assert board.n == 30 and set(board.runs) == {10, 12}
    whole = segments.spread([10, 12], matrix[:, [0, 2]])
    assert board.runs == whole.runs and board.leader == whole.leader
    expected = stats.randomization_pvalues(
        matrix[:, [0]] - matrix[:, [2]] if board.leader == 12 else matrix[:, [2]] - matrix[:, [0]],
        n_resamples=segments.BOARD_RESAMPLES,
    )
    other = 10 if board.leader == 12 else 12
    assert board.runs[other].p == pytest.approx(float(expected[0]))
    assert board.runs[other].mean == pytest.approx(matrix[:, 0 if other == 10 else 2].mean())
