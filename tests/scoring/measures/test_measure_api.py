"""The measure-set API (scoring/measure_api.py) in the API tests' world: set, read, refuse, scores."""

import pytest

from scoring.models import MeasureScore, PoolMeasures
from tests.judgments.api.conftest import check

URL = "/api/measure-sets/robust/"


@pytest.mark.parametrize(
    ("role", "status"),
    [("site_admin", 200), ("engineer", 200), ("rater", 403), ("outsider", 403), ("anonymous", 403)],
)
def test_set_read_and_scores(client_for, role, status, world):
    client = client_for(role)
    response = client.put(URL, {"measures": ["NDCG@10", "P(rel=2)@5", "RBP(p=0.9,rel=1)"]}, format="json")
    check(role, response, status, None)
    if status != 200:
        assert not PoolMeasures.objects.exists()
        return
    body = response.json()
    assert body["measures"] == ["nDCG@10", "P(rel=2)@5", "RBP(p=0.9,rel=1)"]
    assert body["columns"] == [*body["measures"], "Judged@10", "Judged@5", "RBP(p=0.9,rel=1) residual"]
    assert client.get(URL).json() == body
    scores = client.get(URL + "scores/").json()
    assert {r["configuration"] for r in scores["runs"]} == {"bm25", "dense"}
    for entry in scores["runs"]:
        assert set(entry["per_query"]) == {"q1", "q2"}
        values = [q["nDCG@10"] for q in entry["per_query"].values()]
        assert entry["means"]["nDCG@10"] == pytest.approx(sum(values) / len(values))
    one = client.get(URL + "scores/", {"query": "q1"}).json()
    assert all(set(r["per_query"]) == {"q1"} for r in one["runs"])


def test_bad_names_refused_with_one_line_and_nothing_stored(client_for, world):
    client = client_for("engineer")
    client.put(URL, {"measures": ["nDCG@10"]}, format="json")
    rows = MeasureScore.objects.count()
    for bad in (["P@0"], ["P(rel=9)@5"], ["nDCG(gains={0:0,1:1})@5"], ["Bogus"], "nDCG@10"):
        response = client.put(URL, {"measures": bad}, format="json")
        assert response.status_code == 400
        assert "\n" not in response.json()["detail"]
        assert PoolMeasures.objects.get().names == ["nDCG@10"] and MeasureScore.objects.count() == rows
    assert client.delete(URL).json()["default"] is True
    assert not PoolMeasures.objects.exists() and not MeasureScore.objects.exists()
    assert client.get(URL + "scores/").status_code == 400
