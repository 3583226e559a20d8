"""A run's page lists its rankings a page at a time (keyset on the query id): a run of 5,000 queries took
5-10 s to read, name and render whole."""

import re

import pytest

from judgments import services, views
from judgments.models import Query


@pytest.fixture
def long_run(pool, configuration, engineer):
    for i in range(3, 8):
        Query.objects.create(pool=pool, external_id=f"q{i}", text=f"query {i}")
    rankings = {f"q{i}": ["d1", "d2"] for i in range(1, 8)}
    return services.record_run(configuration, rankings, source="api", submitted_by=engineer)


def _queries(page: str) -> list[str]:
    return re.findall(r"<tr><td><strong>(q\d)</strong>", page)


def test_pages_forward_and_back(client, engineer, long_run, monkeypatch):
    monkeypatch.setattr(views, "RANKINGS_PER_PAGE", 3)
    client.force_login(engineer)
    url = f"/runs/{long_run.pk}/"
    first = client.get(url).content.decode()
    assert _queries(first) == ["q1", "q2", "q3"]
    assert "<dd>7</dd>" in first  # queries ranked: the whole run
    assert 'href="?after=q3"' in first and "before=" not in first
    second = client.get(url, {"after": "q3"}).content.decode()
    assert _queries(second) == ["q4", "q5", "q6"]
    assert 'href="?before=q4"' in second and 'href="?after=q6"' in second
    last = client.get(url, {"after": "q6"}).content.decode()
    assert _queries(last) == ["q7"] and "after=" not in last.split('class="pages"')[1]
    back = client.get(url, {"before": "q4"}).content.decode()
    assert _queries(back) == ["q1", "q2", "q3"] and "before=" not in back


def test_a_short_run_has_no_pager(client, engineer, run):
    client.force_login(engineer)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert _queries(page) == ["q1", "q2"] and 'class="pages"' not in page
