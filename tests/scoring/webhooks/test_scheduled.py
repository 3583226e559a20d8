"""Scheduled captures against the band of their recent history: the capture.drop webhook and the score
history page's marks, one computation (scoring.scheduled, scoring.bands)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from judgments.capture import services as capture
from judgments.models.capture import CaptureJob
from scoring import bands
from scoring.scheduled import scheduled_points
from scoring.services import score_new_run
from scoring.webhooks import events
from scoring.webhooks.models import WebhookDelivery
from scoring.webhooks.tasks import deliver
from tests.conftest import login


def test_band_is_mean_plus_minus_two_sd_with_a_floor():
    assert bands.band([0.5, 0.6]) is None  # fewer than 3 captures: no band
    b = bands.band([0.5, 0.6, 0.7])
    assert (b.center, b.low, b.high) == pytest.approx((0.6, 0.4, 0.8))
    flat = bands.band([0.5] * 12)
    assert (flat.low, flat.high, flat.history) == pytest.approx((0.495, 0.505, 10))
    assert [p for _, p in bands.positions([0.5, 0.5, 0.5, 0.49, 0.6])] == [
        "inside", "inside", "inside", "below", "above",
    ]  # fmt: skip


def _scheduled_capture(pool, tmp_path, configuration, rankings, n):
    """A run imported as if a scheduled capture had stored it, then scored (run.scored, capture.drop)."""
    path = tmp_path / f"{configuration.name}-{n}.run"
    path.write_text(pool.test_run_lines(configuration.name, rankings))
    call_command(
        "import_run", "--pool", pool.name, "--configuration", configuration.name, str(path),
        stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    run = configuration.runs.order_by("-id").first()
    CaptureJob.objects.create(
        configuration=configuration,
        endpoint=configuration.endpoint,
        trigger=CaptureJob.Trigger.SCHEDULE,
        status=CaptureJob.Status.SUCCEEDED,
        run=run,
    )
    score_new_run(run)
    return run


@pytest.fixture
def nightly(gated):
    configuration = gated.configurations.get(name="baseline")
    capture.set_endpoint(configuration, kind="elasticsearch", url="http://127.0.0.1:9/docs/_search")
    return configuration


def test_a_scheduled_capture_below_the_band_is_posted_and_marked(
    gated, nightly, tmp_path, httpserver, client, engineer
):
    httpserver.expect_request("/hook").respond_with_data("ok")
    events.add_webhook(gated, httpserver.url_for("/hook"), "s", ["capture.drop"])
    best = gated.test_rankings["baseline"]
    queries = sorted(best)
    runs = []
    for n in range(4):  # the same answers four nights running, then two queries swap their top document
        rankings = dict(best)
        if n == 1:
            rankings[queries[5]] = [best[queries[5]][1], best[queries[5]][0], *best[queries[5]][2:]]
        runs.append(_scheduled_capture(gated, tmp_path, nightly, rankings, n))
    assert not WebhookDelivery.objects.exists()
    broken = dict(best)
    for q in queries[:3]:
        broken[q] = best[q][::-1]
    dropped = _scheduled_capture(gated, tmp_path, nightly, broken, 9)
    points = scheduled_points(nightly)
    assert [p.position for p in points] == ["inside", "inside", "inside", "inside", "below"]
    assert {m.query_id for m in points[-1].moved} == set(queries[:3])

    [delivery] = WebhookDelivery.objects.all()
    deliver.call(delivery.pk)
    payload = json.loads(httpserver.log[0][0].get_data())
    assert payload["event"] == "capture.drop" and payload["run"] == dropped.pk
    assert payload["configuration"] == "baseline" and payload["measure"] == "ndcg@10"
    assert payload["mean"] < payload["band"]["low"] and payload["band"]["captures"] == 4
    assert {m["query"] for m in payload["moved"]} == set(queries[:3])
    assert payload["measures"]["ndcg@10"] == pytest.approx(payload["mean"])

    gated.members.add(engineer)
    login(client, engineer)
    html = client.get(f"/configurations/{nightly.pk}/scores/").content.decode()
    assert f'data-run="{dropped.pk}" data-scheduled="below" class="band-below"' in html
    assert f'data-band-for="{dropped.pk}"' in html
    for q in queries[:3]:
        assert f'data-query="{q}"' in html
    assert html.count('data-scheduled="inside"') == 4 and html.count("data-band-for=") == 1
