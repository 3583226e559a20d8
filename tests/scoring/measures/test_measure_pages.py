"""The pages of a pool's measure set: settings (set, refuse, reset), leaderboard with picked columns,
comparison with CIs and significance, run history and the leaderboard CSV."""

import csv
import io

import pytest

from scoring.models import MeasureScore, PoolMeasures
from tests.conftest import login


@pytest.fixture
def engineer_client(client, engineer, world):
    return login(client, engineer)


def test_settings_page_sets_refuses_and_resets(engineer_client, world):
    url = "/pools/robust/measures/"
    page = engineer_client.get(url)
    assert page.status_code == 200 and b"today's fixed set" in page.content
    response = engineer_client.post(url, {"measures": "NDCG@10\nP(rel=2)@5\n\nERR@20\nRBP(p=0.9,rel=1)"})
    assert response.status_code == 302
    assert PoolMeasures.objects.get().names == ["nDCG@10", "P(rel=2)@5", "ERR@20", "RBP(p=0.9,rel=1)"]
    rows = MeasureScore.objects.count()
    assert rows == 4  # 2 runs x 2 graded queries
    bad = engineer_client.post(url, {"measures": "nDCG@10\nP(rel=7)@5"})
    assert bad.status_code == 400
    assert b"rel must be a grade of the pool&#x27;s scale, 0 to 4, not 7" in bad.content
    assert PoolMeasures.objects.get().names[0] == "nDCG@10" and MeasureScore.objects.count() == rows
    assert engineer_client.post(url, {"default": "1"}).status_code == 302
    assert not PoolMeasures.objects.exists() and not MeasureScore.objects.exists()


def test_rater_and_outsider_get_404(client, rater, world):
    assert login(client, rater).get("/pools/robust/measures/").status_code == 404


def test_leaderboard_compare_history_and_csv_use_the_set(engineer_client, world):
    engineer_client.post("/pools/robust/measures/", {"measures": "nDCG@10\nP(rel=2)@5\nRR\nRBP(p=0.9,rel=1)"})
    board = engineer_client.get("/pools/robust/leaderboard/").content.decode()
    assert "P(rel=2)@5" in board and "RBP(p=0.9,rel=1)" in board and "bm25" in board
    picked = engineer_client.get("/pools/robust/leaderboard/", {"m": "RR"}).content.decode()
    assert '<th class="num" data-sort="number" aria-sort="descending">RR</th>' in picked
    assert "P(rel=2)@5</th>" not in picked
    compare = engineer_client.get("/pools/robust/compare/", {"c": ["bm25", "dense"], "metric": "RR"})
    text = compare.content.decode()
    assert compare.status_code == 200
    for name in ("nDCG@10", "P(rel=2)@5", "RR", "RBP(p=0.9,rel=1)"):
        assert f'data-measure="{name}"' in text
    assert "95% CI" in text and "RR" in text
    history = engineer_client.get(f"/configurations/{world['run'].configuration_id}/scores/").content.decode()
    assert 'data-metric="nDCG@10"' in history
    download = engineer_client.get("/pools/robust/leaderboard.csv").content.decode()
    rows = list(csv.reader(io.StringIO(download)))
    assert rows[0][:5] == ["configuration", "team", "run", "queries", "nDCG@10"]
    assert "RBP(p=0.9,rel=1) residual" in rows[0] and len(rows) == 3


def test_per_query_page_shows_the_set(engineer_client, world):
    engineer_client.post("/pools/robust/measures/", {"measures": "nDCG@10\nRR\nRBP(p=0.9,rel=1)"})
    page = engineer_client.get("/pools/robust/compare/query/", {"c": ["bm25", "dense"], "q": "q1"})
    text = page.content.decode()
    assert page.status_code == 200
    for name in ("nDCG@10", "RR", "Judged@10", "RBP(p=0.9,rel=1) residual"):
        assert f'data-measure="{name}"' in text
    assert (
        engineer_client.get("/pools/robust/compare/query/", {"c": ["bm25", "dense"], "q": "q1"}).status_code
        == 200
    )
