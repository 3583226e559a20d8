"""Webhooks: signed POSTs on run.scored, capture.failed, gate.failed; retries with backoff; refusals."""

import json
import socket
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django_tasks_db.models import DBTaskResult
from werkzeug import Response

from scoring.webhooks import events, signing
from scoring.webhooks.models import Webhook, WebhookDelivery
from scoring.webhooks.tasks import deliver

SECRET = "s3cret-for-tests"


def received(httpserver):
    """[(headers, raw body)] of the POSTs the receiver got."""
    return [(request.headers, request.get_data()) for request, _ in httpserver.log]


def hook(pool, httpserver, *events_, path="/hook"):
    return events.add_webhook(pool, httpserver.url_for(path), SECRET, events_)


def run_delivery(delivery_id):
    return deliver.call(delivery_id)


def import_run(pool_name, tmp_path, name="fresh"):
    path = tmp_path / f"{name}.run"
    path.write_text(
        "".join(f"q{i:02d} Q0 q{i:02d}-d{j} {j + 1} {50 - j} x\n" for i in range(40) for j in range(5))
    )
    call_command(
        "import_run",
        "--pool",
        pool_name,
        "--configuration",
        name,
        str(path),
        stdout=StringIO(),
        stderr=StringIO(),
    )


def test_a_scored_run_is_posted_signed_with_its_measures(
    gated, httpserver, tmp_path, django_capture_on_commit_callbacks
):
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    webhook = hook(gated, httpserver)
    with django_capture_on_commit_callbacks(execute=True):
        import_run("gated", tmp_path)
    delivery = WebhookDelivery.objects.get(webhook=webhook)
    assert delivery.event == "run.scored" and delivery.status == "pending" and delivery.attempts == 0
    assert DBTaskResult.objects.filter(
        task_path="scoring.webhooks.tasks.deliver", args_kwargs__args=[delivery.pk]
    ).exists()
    run_delivery(delivery.pk)
    [(headers, body)] = received(httpserver)
    assert headers["X-Signature-256"] == signing.signature(SECRET, body)
    assert signing.verify(SECRET, body, headers["X-Signature-256"])
    assert not signing.verify("another secret", body, headers["X-Signature-256"])
    assert headers["X-Webhook-Event"] == "run.scored" and headers["X-Webhook-Delivery"] == str(delivery.pk)
    payload = json.loads(body)
    run = gated.configurations.get(name="fresh").runs.get()
    assert payload["event"] == "run.scored" and payload["pool"] == "gated"
    assert payload["configuration"] == "fresh" and payload["run"] == run.pk
    assert 0 < payload["measures"]["ndcg@10"] <= 1
    assert payload["link"].endswith(f"/configurations/{run.configuration_id}/scores/")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.status_code, delivery.attempts) == ("delivered", 200, 1)


def test_a_failing_receiver_is_retried_with_backoff_then_delivered(gated, httpserver):
    httpserver.expect_ordered_request("/hook").respond_with_data("busy", status=503)
    httpserver.expect_ordered_request("/hook").respond_with_response(
        Response("slow down", status=429, headers={"Retry-After": "7"})
    )
    httpserver.expect_ordered_request("/hook").respond_with_data("ok", status=204)
    webhook = hook(gated, httpserver)
    [delivery] = events.emit(
        gated, "gate.failed", {"configuration": "worse", "run": 1, "measures": {}, "link": ""}
    )
    run_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.status_code, delivery.attempts) == ("pending", 503, 1)
    first_wait = (delivery.next_attempt_at - delivery.last_attempt_at).total_seconds()
    assert 15 <= first_wait <= 30  # backoff 30 s with jitter (0.5-1x)
    queued = DBTaskResult.objects.filter(
        task_path="scoring.webhooks.tasks.deliver", args_kwargs__args=[delivery.pk]
    )
    # the first task had no run_after (django-tasks stores the far future for "none"); the retry is due later
    assert sorted(t.run_after for t in queued)[0] == delivery.next_attempt_at
    run_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.status_code, delivery.attempts) == ("pending", 429, 2)
    assert (delivery.next_attempt_at - delivery.last_attempt_at).total_seconds() == pytest.approx(7)
    run_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.status_code, delivery.attempts, delivery.error) == (
        "delivered",
        204,
        3,
        "",
    )
    bodies = {body for _, body in received(httpserver)}
    assert len(bodies) == 1  # the same bytes every attempt
    assert webhook.deliveries.count() == 1


def test_a_client_error_fails_at_once_and_the_last_attempt_gives_up(gated, httpserver):
    httpserver.expect_request("/gone").respond_with_data("no", status=404)
    hook(gated, httpserver, path="/gone")
    [delivery] = events.emit(
        gated, "gate.failed", {"configuration": "x", "run": 1, "measures": {}, "link": ""}
    )
    run_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.status_code, delivery.next_attempt_at) == ("failed", 404, None)
    assert "404" in delivery.error


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_receiver_that_is_down_never_slows_an_import(gated, tmp_path, django_capture_on_commit_callbacks):
    webhook = events.add_webhook(gated, f"http://127.0.0.1:{_dead_port()}/hook", SECRET)
    started = time.perf_counter()
    with django_capture_on_commit_callbacks(execute=True):
        import_run("gated", tmp_path)
    assert time.perf_counter() - started < 5
    delivery = webhook.deliveries.get()
    assert delivery.attempts == 0  # nothing was sent in the importing process: the worker sends it
    run_delivery(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.status_code is None
    assert delivery.error.startswith("could not deliver") and delivery.next_attempt_at is not None


def test_a_failed_gate_posts_its_summary(gated, httpserver):
    httpserver.expect_request("/hook").respond_with_data("ok")
    hook(gated, httpserver, "gate.failed")
    with pytest.raises(CommandError):
        call_command(
            "gate",
            "--pool",
            "gated",
            "--baseline",
            "baseline",
            "--candidate",
            "worse",
            stdout=StringIO(),
            stderr=StringIO(),
        )
    call_command(
        "gate",
        "--pool",
        "gated",
        "--baseline",
        "baseline",
        "--candidate",
        "same",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    [delivery] = WebhookDelivery.objects.all()
    run_delivery(delivery.pk)
    payload = json.loads(received(httpserver)[0][1])
    assert payload["event"] == "gate.failed" and payload["configuration"] == "worse"
    assert (
        payload["gate"]["verdict"] == "fail"
        and payload["measures"]["ndcg@10"] < payload["gate"]["measures"][0]["baseline"]
    )
    assert "/pools/gated/compare/" in payload["link"]


def test_a_failed_capture_is_posted(live_configuration, httpserver):
    from judgments.capture import services

    httpserver.expect_request("/hook").respond_with_data("ok")
    hook(live_configuration.pool, httpserver, "capture.failed")
    services.set_endpoint(
        live_configuration, kind="elasticsearch", url=f"http://127.0.0.1:{_dead_port()}/docs/_search"
    )
    job = services.start_capture(live_configuration, trigger="command")
    services.run_capture(job, timeout=1, retries=0)
    assert job.status == "failed"
    [delivery] = WebhookDelivery.objects.all()
    run_delivery(delivery.pk)
    payload = json.loads(received(httpserver)[0][1])
    assert payload["event"] == "capture.failed" and payload["capture"] == job.pk and payload["run"] is None
    assert payload["configuration"] == "bm25" and "nothing was stored" in payload["message"]


@pytest.mark.parametrize(
    "url", ["ftp://example.com/hook", "file:///etc/passwd", "example.com/hook", "http://", ""]
)
def test_a_url_that_is_not_http_is_refused_with_one_line(gated, url):
    with pytest.raises(events.WebhookError) as caught:
        events.add_webhook(gated, url, SECRET)
    assert "\n" not in str(caught.value) and "http" in str(caught.value)
    with pytest.raises(CommandError, match="must be http"):
        call_command(
            "webhook", "--pool", "gated", "--add", url or " ", "--secret-env", "PATH", stdout=StringIO()
        )
    assert not Webhook.objects.exists()


def test_the_secret_is_stored_encrypted_and_never_shown(gated, httpserver, monkeypatch):
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    out = StringIO()
    call_command(
        "webhook",
        "--pool",
        "gated",
        "--add",
        httpserver.url_for("/h"),
        "--secret-env",
        "HOOK_SECRET",
        stdout=out,
    )
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT secret FROM scoring_webhook")
        [(stored,)] = cursor.fetchall()
    assert stored.startswith("fernet:") and SECRET not in stored
    assert Webhook.objects.get().secret == SECRET
    listing = StringIO()
    call_command("webhook", "--pool", "gated", "--list", stdout=listing)
    assert SECRET not in out.getvalue() + listing.getvalue() and "secret set" in listing.getvalue()
