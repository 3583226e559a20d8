"""The configuration page marks the newest run as current (the one the leaderboard scores), with the runs
newest first: counting each run's rankings dropped Meta.ordering, and the page tagged the first row."""

from __future__ import annotations

import re

from django.urls import reverse

from judgments import services


def test_the_newest_run_is_current_and_listed_first(client, engineer, configuration, run):
    newer = services.record_run(configuration, {"q1": ["d2"]}, source="api", submitted_by=engineer)
    client.force_login(engineer)
    page = client.get(reverse("judgments:configuration-detail", args=[configuration.pk])).content.decode()
    order = [int(pk) for pk in re.findall(r'href="/runs/(\d+)/"', page)]
    assert order[:2] == [newer.pk, run.pk]
    current = re.findall(r'href="/runs/(\d+)/">#\d+</a> <span class="flavour-tag">current</span>', page)
    assert current == [str(newer.pk)]
    assert configuration.current_run == newer
