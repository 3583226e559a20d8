"""Query segments in the exports and the API: `export_scores --tag` (repeatable), `/api/scores/export/?tag=`,
`/api/scores/?tag=`, `/api/segments/<pool>/` and `/api/measure-sets/<pool>/scores/?tag=` give the same
numbers: each configuration's "all" line is the mean over the segment's stored rows only."""

from __future__ import annotations

import json
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from scoring.measure_sets import set_measures
from scoring.models import MEAN_FIELDS, MeasureScore
from tests.scoring.test_segments import stored, tagged  # noqa: F401 (the fixture)


def export(*args) -> list[dict]:
    out = StringIO()
    call_command("export_scores", "--pool", "robust", *args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.fixture
def api(engineer):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=engineer).key}")
    return client


def test_export_scores_tag_gives_the_segment_and_its_means(tagged):  # noqa: F811
    pool, configurations = tagged
    lines = export("--tag", "head", "--flavor", "trec")
    head = {q for (q,) in pool.queries.filter(tags__contains=["head"]).values_list("external_id")}
    assert {r["query"] for r in lines} == head | {"all"}
    for name, configuration in configurations.items():
        for metric, field in MEAN_FIELDS.items():
            values = stored(configuration, "trec", field, tag="head")
            [line] = [
                r for r in lines if (r["configuration"], r["query"], r["metric"]) == (name, "all", metric)
            ]
            assert line["value"] == pytest.approx(np.mean(list(values.values())), abs=1e-12)
        per_query = {
            r["query"]: r["value"] for r in lines if r["configuration"] == name and r["metric"] == "ndcg@10"
        }
        assert per_query.pop("all") == pytest.approx(np.mean(list(per_query.values())), abs=1e-12)
        assert per_query == pytest.approx(stored(configuration, "trec", tag="head"))
    both = export("--tag", "head", "--tag", "category:shoes")
    assert {r["query"] for r in both} == {"s00", "s03", "s06", "all"}
    # Without --tag: every query, as before.
    assert {r["query"] for r in export()} == {f"s{i:02d}" for i in range(24)} | {"all"}  # the graded ones


@pytest.mark.parametrize(
    ("tags", "words"),
    [
        (["two words"], "--tag: tag 'two words' contains whitespace"),
        ([""], "--tag: a tag is empty"),
        (["x" * 65], "at most 64"),
        (["nowhere"], "--tag: no query of pool robust carries nowhere"),
        (["head", "tail"], "--tag: no query of pool robust carries every tag of head + tail"),
    ],
)
def test_export_scores_bad_tag_is_one_line(tagged, tags, words):  # noqa: F811
    args = [arg for tag in tags for arg in ("--tag", tag)]
    with pytest.raises(CommandError) as error:
        export(*args)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_api_gives_the_same_numbers(tagged, api):  # noqa: F811
    pool, configurations = tagged
    lines = export("--tag", "tail", "--flavor", "exp")
    download = api.get("/api/scores/export/", {"pool": "robust", "tag": "tail", "flavor": "exp"})
    assert download.status_code == 200
    assert [json.loads(line) for line in b"".join(download.streaming_content).decode().splitlines()] == lines
    assert "breakdown" not in api.get("/api/segments/robust/", {"tag": "tail"}).json()
    body = api.get("/api/segments/robust/", {"tag": "tail", "flavor": "exp", "breakdown": "1"}).json()
    assert body["tags"] == ["tail"] and body["n_queries"] == 16
    for row in body["configurations"]:
        for metric in MEAN_FIELDS:
            [line] = [
                r
                for r in lines
                if (r["configuration"], r["query"], r["metric"]) == (row["configuration"], "all", metric)
            ]
            assert row["means"][metric] == pytest.approx(line["value"], abs=1e-12)
        assert row["queries"] == 16
    breakdown = {t["tag"]: t for t in body["breakdown"]["tags"]}
    assert breakdown["head"]["n"] == 8 and body["breakdown"]["metric"] == "ndcg@10"
    for name, configuration in configurations.items():
        expected = np.mean(list(stored(configuration, "exp", tag="category:shoes").values()))
        assert breakdown["category:shoes"]["means"][name] == pytest.approx(expected)
    rows = api.get(
        "/api/scores/", {"pool": "robust", "tag": ["head", "category:shoes"], "flavor": "exp"}
    ).json()
    rows = rows["results"] if isinstance(rows, dict) else rows
    assert {r["query_id"] for r in rows} == {"s00", "s03", "s06"} and len(rows) == 9
    bad = api.get("/api/segments/robust/", {"tag": "a b"})
    assert bad.status_code == 400 and "contains whitespace" in json.dumps(bad.json())
    bad = api.get("/api/scores/export/", {"pool": "robust", "tag": "nowhere"})
    assert bad.status_code == 400 and "no query of pool robust carries nowhere" in json.dumps(bad.json())


def test_measure_set_segment_export_api_and_page(tagged, api, client, engineer):  # noqa: F811
    from tests.conftest import login

    pool, configurations = tagged
    set_measures(pool, ["nDCG@10", "P(rel=2)@5", "ERR@20"])
    head = set(pool.queries.filter(tags__contains=["head"]).values_list("pk", flat=True))
    lines = export("--tag", "head")
    body = api.get("/api/segments/robust/", {"tag": "head"}).json()
    scores = api.get("/api/measure-sets/robust/scores/", {"tag": "head"}).json()
    page = login(client, engineer).get("/pools/robust/leaderboard/", {"tag": "head"}).content.decode()
    download = client.get("/pools/robust/leaderboard.csv", {"tag": "head"}).content.decode()
    board = {line.split(",")[0]: line.split(",") for line in download.splitlines()[1:]}
    assert 'data-segment="head" data-segment-n="8"' in page
    for name, configuration in configurations.items():
        run = configuration.runs.order_by("-id").first()
        values = np.array(
            [
                v
                for q, v in MeasureScore.objects.filter(run=run).values_list("query_id", "values")
                if q in head
            ]
        )
        assert len(values) == 8
        expected = values.mean(axis=0)
        [line] = [
            r for r in lines if (r["configuration"], r["query"], r["metric"]) == (name, "all", "ERR@20")
        ]
        assert line["value"] == pytest.approx(expected[2], abs=1e-12)
        [row] = [r for r in body["configurations"] if r["configuration"] == name]
        assert row["means"]["P(rel=2)@5"] == pytest.approx(expected[1], abs=1e-12)
        [api_run] = [r for r in scores["runs"] if r["configuration"] == name]
        assert api_run["queries"] == 8 and api_run["means"]["nDCG@10"] == pytest.approx(
            expected[0], abs=1e-12
        )
        assert f"{expected[0]:.3f}" in page
        assert board[name][3] == "8" and float(board[name][4]) == pytest.approx(expected[0], abs=1e-12)
