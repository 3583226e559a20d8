"""Delivering a webhook: one POST per attempt in the background worker (django-tasks' db_worker).

The body is sent exactly as stored, with `X-Signature-256: sha256=<HMAC-SHA256 of the body>` (signing),
`X-Webhook-Event` and `X-Webhook-Delivery` (the delivery's id, the same on every attempt: a receiver can
drop a repeat). A 2xx answer delivers it. A connection error, a timeout, 408, 429 or 5xx is retried with
the outbound retry rule's exponential backoff and jitter (judgments.outbound.RetryPolicy; a
Retry-After is honoured): the task queues itself again, due later, so no worker sleeps. Any other status
fails the delivery at once, as does the last attempt. Each attempt's status code and error are kept on
the delivery (the pool's webhooks page lists them).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from datetime import timedelta

from django.utils import timezone
from django_tasks import task

from judgments.outbound import RetryPolicy, retry_after_seconds

from . import signing
from .models import WebhookDelivery

TIMEOUT = 10.0  # seconds per attempt
RETRY = RetryPolicy(attempts=6, backoff=30.0, max_backoff=3600.0, max_retry_after=3600.0)
RETRYABLE = {408, 425, 429}
USER_AGENT = "judgment-lists-webhook/1"
Status = WebhookDelivery.Status


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is the receiver's answer (3xx, not retried): urllib would re-send a POST as a GET."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def post(url: str, body: bytes, headers: dict[str, str], timeout: float = TIMEOUT):
    """(status code or None, error text, response headers) of one POST; never raises for the network."""
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            response.read(65536)
            return response.status, "", dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, f"HTTP {exc.code} {exc.reason}", dict(exc.headers or {})
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, f"could not deliver: {reason}", {}


def attempt(delivery: WebhookDelivery) -> WebhookDelivery:
    """One attempt; the delivery's status, code and error updated, and the next attempt queued if due."""
    webhook = delivery.webhook
    body = delivery.body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        signing.HEADER: signing.signature(webhook.secret, body),
        "X-Webhook-Event": delivery.event,
        "X-Webhook-Delivery": str(delivery.pk),
    }
    code, error, answer_headers = post(webhook.url, body, headers)
    now = timezone.now()
    delivery.attempts += 1
    delivery.status_code, delivery.last_attempt_at, delivery.next_attempt_at = code, now, None
    if code is not None and 200 <= code < 300:
        delivery.status, delivery.error = Status.DELIVERED, ""
    else:
        delivery.error = error or f"HTTP {code}"
        retryable = code is None or code in RETRYABLE or code >= 500
        if retryable and delivery.attempts < RETRY.attempts:
            wait = retry_after_seconds(answer_headers)
            if wait is not None and wait > RETRY.max_retry_after:
                wait = RETRY.max_retry_after
            delay = RETRY.delay(delivery.attempts, wait)
            delivery.next_attempt_at = now + timedelta(seconds=delay)
            deliver.using(run_after=delivery.next_attempt_at).enqueue(delivery.pk)
        else:
            delivery.status = Status.FAILED
    delivery.save(
        update_fields=["attempts", "status", "status_code", "error", "last_attempt_at", "next_attempt_at"]
    )
    return delivery


@task()
def deliver(delivery_id: int) -> dict:
    """Attempt a pending delivery (see the module doc)."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != Status.PENDING:
        return {"delivery": delivery_id, "status": delivery.status if delivery else "gone"}
    delivery = attempt(delivery)
    return {"delivery": delivery.pk, "status": delivery.status, "status_code": delivery.status_code}
