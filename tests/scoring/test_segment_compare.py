"""Query segments on the comparison's downloads and on the matrix of three or more configurations: with
?tag=, the CSV rows are the segment's queries and every mean and test is over the segment's stored cells
only; the page's download links and matrix cells carry the tags; a bad tag is a 400 of one line. The fixed
set's cells (QueryScore) and a pool's own measure set (MeasureScore)."""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest

from scoring import stats
from scoring.measure_sets import set_measures
from scoring.metrics import CUTOFFS
from scoring.models import MeasureScore
from tests.conftest import login
from tests.scoring.test_segments import number, stored, tagged  # noqa: F401 (the fixture)


def table(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_compare_csv_of_a_segment_has_its_rows_and_means(client, engineer, tagged):  # noqa: F811
    pool, configurations = tagged
    client = login(client, engineer)
    params = {"c": ["a", "b"], "flavour": "exp", "metric": "ndcg@10", "tag": "tail"}
    a, b = stored(configurations["a"], tag="tail"), stored(configurations["b"], tag="tail")
    assert len(a) == 16
    # the per-query table: the segment's queries only, each with its stored cells
    rows = table(client.get("/pools/robust/compare.csv", {**params, "table": "queries"}))
    assert sorted(r["query"] for r in rows) == sorted(a)
    for r in rows:
        assert float(r["a:a"]) == pytest.approx(a[r["query"]], abs=1e-12)
        assert float(r["b:b"]) == pytest.approx(b[r["query"]], abs=1e-12)
    # every metric: n, means and the tests of stats.compare_many over the segment's cells
    rows = {
        r["metric"]: r for r in table(client.get("/pools/robust/compare.csv", {**params, "table": "metrics"}))
    }
    keys = sorted(a)
    [expected] = stats.compare_many(np.array([[a[k]] for k in keys]), np.array([[b[k]] for k in keys]))
    ndcg = rows["ndcg@10"]
    assert ndcg["queries"] == "16"
    assert float(ndcg["mean_a"]) == pytest.approx(np.mean(list(a.values())), abs=1e-12)
    assert float(ndcg["mean_b"]) == pytest.approx(np.mean(list(b.values())), abs=1e-12)
    assert float(ndcg["p_randomization"]) == pytest.approx(expected.p_randomization)
    p5 = stored(configurations["a"], metric="p_5", tag="tail")
    assert float(rows["p@5"]["mean_a"]) == pytest.approx(np.mean(list(p5.values())), abs=1e-12)
    # NDCG by cutoff: means over the segment
    rows = table(client.get("/pools/robust/compare.csv", {**params, "table": "cutoffs"}))
    for r in rows:
        k = int(r["metric"].split("@")[1])
        values = stored(configurations[r["configuration"]], metric=f"ndcg_{k}", tag="tail")
        assert float(r["mean"]) == pytest.approx(np.mean(list(values.values())), abs=1e-12)
    assert len(rows) == 2 * len(CUTOFFS)
    # the matrix of three: each pair's difference over the segment's queries
    response = client.get("/pools/robust/compare.csv", {**params, "c": ["a", "b", "c"], "table": "matrix"})
    assert "-tail.csv" in response["Content-Disposition"]
    c = stored(configurations["c"], tag="tail")
    means = {"a": np.mean(list(a.values())), "b": np.mean(list(b.values())), "c": np.mean(list(c.values()))}
    rows = table(response)
    assert len(rows) == 6
    for r in rows:
        assert r["queries"] == "16"
        assert float(r["difference_row_minus_column"]) == pytest.approx(
            means[r["row"]] - means[r["column"]], abs=1e-12
        )


def test_compare_page_download_links_keep_the_segment(client, engineer, tagged):  # noqa: F811
    client = login(client, engineer)
    html = client.get(
        "/pools/robust/compare/", {"c": ["a", "b"], "tag": ["tail", "category:shoes"], "flavour": "exp"}
    ).content.decode()
    links = re.findall(r'href="(/pools/robust/compare\.csv\?[^"]+)"', html)
    assert {re.search(r"table=(\w+)", link).group(1) for link in links} >= {"metrics", "queries", "cutoffs"}
    for link in links:
        assert "tag=tail&amp;tag=category%3Ashoes" in link, link
    # back to the leaderboard over the same segment
    assert 'href="/pools/robust/leaderboard/?flavour=exp&amp;tag=tail&amp;tag=category%3Ashoes"' in html
    matrix = client.get("/pools/robust/compare/", {"c": ["a", "b", "c"], "tag": "head"}).content.decode()
    links = re.findall(r'href="(/pools/robust/compare\.csv\?[^"]+)"', matrix)
    assert links and all(link.endswith("tag=head") for link in links), links


def test_compare_csv_bad_tag_is_one_line(client, engineer, tagged):  # noqa: F811
    client = login(client, engineer)
    for c, extra in ((["a", "b"], "queries"), (["a", "b", "c"], "matrix")):
        response = client.get("/pools/robust/compare.csv", {"c": c, "table": extra, "tag": ["head", "a b"]})
        assert response.status_code == 400
        assert response.content.decode() == "tag: tag 'a b' contains whitespace."


def test_matrix_of_a_segment_is_over_its_queries(client, engineer, tagged):  # noqa: F811
    pool, configurations = tagged
    page = login(client, engineer).get(
        "/pools/robust/compare/", {"c": ["a", "b", "c"], "tag": "head", "flavour": "exp", "metric": "ndcg@10"}
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert "ignores" not in html and "apply to the comparison of two" not in html
    assert (
        'data-segment="head" data-segment-n="8"' in html
    )  # the filter bar and its note, as on the leaderboard
    assert 'class="flavour-switch segment-filter"' in html
    head = {name: stored(c, tag="head") for name, c in configurations.items()}
    for name, values in head.items():
        row = re.search(rf'<tr data-configuration="{name}">(.*?)</tr>', html, re.S).group(1)
        mean = re.search(r'data-field="mean">([^<]+)<', row).group(1)
        assert number(mean) == pytest.approx(np.mean(list(values.values())), abs=5e-4)
        for other in head:
            if other == name:
                continue
            cell = re.search(rf'data-column="{other}" data-diff="([^"]+)"[^>]*data-n="(\d+)"', row)
            assert cell.group(2) == "8"
            expected = np.mean(list(values.values())) - np.mean(list(head[other].values()))
            assert float(cell.group(1)) == pytest.approx(expected, abs=1e-9)
    cell_links = re.findall(r'<a href="(/pools/robust/compare/\?[^"]+)">', html)
    assert cell_links and all("tag=head" in link for link in cell_links)
    # the significance is the same code over the segment's differences (Holm over the three pairs)
    whole = client.get("/pools/robust/compare/", {"c": ["a", "b", "c"], "flavour": "exp"}).content.decode()
    assert "data-segment=" not in whole and 'data-n="24"' in whole


def test_matrix_of_an_empty_segment_says_so(client, engineer, tagged):  # noqa: F811
    response = login(client, engineer).get("/pools/robust/compare/", {"c": ["a", "b", "c"], "tag": "nowhere"})
    assert response.status_code == 409
    assert "No stored exp scores on segment nowhere for a, b, c." in response.content.decode()


def test_measure_set_matrix_and_downloads_of_a_segment(client, engineer, tagged):  # noqa: F811
    pool, configurations = tagged
    set_measures(pool, ["nDCG@10", "P(rel=2)@5", "ERR@20"])
    client = login(client, engineer)
    head = set(pool.queries.filter(tags__contains=["head"]).values_list("pk", flat=True))
    external = dict(pool.queries.values_list("pk", "external_id"))
    cells = {}
    for name, configuration in configurations.items():
        run = configuration.runs.order_by("-id").first()
        cells[name] = {
            external[q]: v
            for q, v in MeasureScore.objects.filter(run=run).values_list("query_id", "values")
            if q in head
        }
        assert len(cells[name]) == 8

    def mean(name, column):
        return np.mean([v[column] for v in cells[name].values()])

    html = client.get("/pools/robust/compare/", {"c": ["a", "b", "c"], "tag": "head", "metric": "ERR@20"})
    html = html.content.decode()
    assert 'data-segment="head" data-segment-n="8"' in html and "The pool's measure set" in html
    for name in cells:
        row = re.search(rf'<tr data-configuration="{name}">(.*?)</tr>', html, re.S).group(1)
        assert number(re.search(r'data-field="mean">([^<]+)<', row).group(1)) == pytest.approx(
            mean(name, 2), abs=5e-4
        )
        assert all(n == "8" for n in re.findall(r'data-n="(\d+)"', row))
    links = re.findall(r'href="(/pools/robust/compare\.csv\?[^"]+)"', html)
    assert links and all("tag=head" in link for link in links)
    params = {"c": ["a", "b"], "tag": "head", "metric": "ERR@20"}
    rows = table(client.get("/pools/robust/compare.csv", {**params, "table": "queries"}))
    assert sorted(r["query"] for r in rows) == sorted(cells["a"])
    for r in rows:
        assert float(r["a:a"]) == pytest.approx(cells["a"][r["query"]][2], abs=1e-12)
    rows = {
        r["metric"]: r for r in table(client.get("/pools/robust/compare.csv", {**params, "table": "metrics"}))
    }
    assert rows["P(rel=2)@5"]["queries"] == "8"
    assert float(rows["P(rel=2)@5"]["mean_b"]) == pytest.approx(mean("b", 1), abs=1e-12)
    rows = table(client.get("/pools/robust/compare.csv", {**params, "c": ["a", "b", "c"], "table": "matrix"}))
    for r in rows:
        assert float(r["difference_row_minus_column"]) == pytest.approx(
            mean(r["row"], 2) - mean(r["column"], 2), abs=1e-12
        )
    rows = table(client.get("/pools/robust/compare.csv", {**params, "table": "means"}))
    [row] = [r for r in rows if (r["configuration"], r["metric"]) == ("a", "nDCG@10")]
    assert float(row["mean"]) == pytest.approx(mean("a", 0), abs=1e-12)
    # the two-configuration page's links keep the segment too
    page = client.get("/pools/robust/compare/", params).content.decode()
    links = re.findall(r'href="(/pools/robust/compare\.csv\?[^"]+)"', page)
    assert len(links) == 2 and all(link.endswith("tag=head") for link in links)
    assert 'href="/pools/robust/leaderboard/?tag=head"' in page
