"""What a pool's webhooks are sent, and when. A thin service: each event writes one delivery row per
webhook that wants it and queues its POST (tasks.deliver) in the background worker's queue. The caller
(scoring a new run, a failed capture, a gate) pays for a few INSERTs, never for the receiver: a receiver
that is down or slow costs the worker's retries, not a grade, an import or a capture.

Every body names the event, the pool, the configuration, the run, the measures and a link:
    {"event": "run.scored", "pool": "web", "configuration": "bm25", "run": 12,
     "measures": {"ndcg@10": 0.41, ...}, "link": "https://.../configurations/3/scores/", "sent_at": "..."}
plus what the event is about (the gate's summary, the capture's error, the band a capture fell below).
"""

from __future__ import annotations

import json
import logging
from urllib.parse import urlsplit

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from judgments.models import Pool, Run, SearchConfiguration

from ..flavours import DEFAULT_FLAVOUR
from ..leaderboard import run_means
from ..links import absolute
from .models import Event, Webhook, WebhookDelivery

logger = logging.getLogger(__name__)
HEADLINE = ("ndcg@3", "ndcg@5", "ndcg@10", "ndcg@100", "p@10", "recall@100", "mrr", "ap")


class WebhookError(ValueError):
    """A webhook that cannot be stored; the message says why in one line."""


def check_url(url: str) -> str:
    """The URL stripped; WebhookError unless it is http(s) with a host."""
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise WebhookError(f"Webhook URL must be http:// or https:// with a host, not {url!r}.")
    return url


def add_webhook(pool: Pool, url: str, secret: str, events=(), user=None) -> Webhook:
    """Store a webhook of the pool; WebhookError for a non-http(s) URL, an empty secret or an unknown event."""
    url = check_url(url)
    if not (secret or "").strip():
        raise WebhookError("A webhook needs a secret (the receiver checks the signature with it).")
    unknown = [e for e in events if e not in Event.values]
    if unknown:
        raise WebhookError(f"Unknown event {unknown[0]!r}; one of {', '.join(Event.values)}.")
    return Webhook.objects.create(
        pool=pool,
        url=url,
        secret=secret.strip(),
        events=list(dict.fromkeys(events)),
        created_by=user if getattr(user, "pk", None) else None,
    )


def run_measures(run: Run) -> dict[str, float | None]:
    means = run_means([run.pk], DEFAULT_FLAVOUR).get(run.pk)
    return {m: means.means.get(m) for m in HEADLINE} if means else {}


def history_link(configuration: SearchConfiguration) -> str:
    return absolute(reverse("scoring:configuration-history", args=[configuration.pk]))


def emit(pool: Pool, event: str, body: dict) -> list[WebhookDelivery]:
    """One delivery per webhook of the pool that wants `event`, queued for the worker with the commit."""
    from .tasks import deliver

    hooks = [h for h in Webhook.objects.filter(pool=pool, active=True) if h.wants(event)]
    if not hooks:
        return []
    text = json.dumps(
        {"event": event, "pool": pool.name, **body, "sent_at": timezone.now().isoformat()}, sort_keys=False
    )
    with transaction.atomic():
        deliveries = WebhookDelivery.objects.bulk_create(
            [WebhookDelivery(webhook=h, event=event, body=text) for h in hooks]
        )
        for delivery in deliveries:
            deliver.enqueue(delivery.pk)  # a task row in the same transaction: durable with the delivery
    return deliveries


def safely(send, *args) -> None:
    """Run an event's `send`: a webhook problem (the database, a bug) is logged, never raised into the
    scoring, capture or gate that caused it."""
    try:
        send(*args)
    except Exception:
        logger.exception("webhook event %s failed", getattr(send, "__name__", send))


# --- The events -------------------------------------------------------------------------------------


def run_scored(run: Run) -> None:
    """A run is stored and scored; for a scheduled capture, also capture.drop when its mean fell below
    the band of the previous scheduled captures."""
    configuration = run.configuration
    pool = configuration.pool
    if not Webhook.objects.filter(pool=pool, active=True).exists():
        return
    measures = run_measures(run)
    emit(
        pool,
        Event.RUN_SCORED,
        {
            "configuration": configuration.name,
            "run": run.pk,
            "measures": measures,
            "flavor": DEFAULT_FLAVOUR,
            "link": history_link(configuration),
        },
    )
    from judgments.models.capture import CaptureJob

    if CaptureJob.objects.filter(run=run, trigger=CaptureJob.Trigger.SCHEDULE).exists():
        _scheduled_drop(run, measures)


def _scheduled_drop(run: Run, measures: dict) -> None:
    from ..scheduled import METRIC, scheduled_points

    points = scheduled_points(run.configuration, upto=run)
    if not points or points[-1].run.pk != run.pk or points[-1].position != "below":
        return
    point = points[-1]
    emit(
        run.configuration.pool,
        Event.CAPTURE_DROP,
        {
            "configuration": run.configuration.name,
            "run": run.pk,
            "measures": measures,
            "flavor": DEFAULT_FLAVOUR,
            "link": history_link(run.configuration),
            "measure": METRIC,
            "mean": point.mean,
            "band": {"low": point.band.low, "high": point.band.high, "center": point.band.center,
                     "captures": point.band.history},
            "moved": [{"query": m.query_id, "before": m.before, "after": m.after} for m in point.moved],
        },
    )  # fmt: skip


def capture_failed(job) -> None:
    """A capture ended failed (nothing stored)."""
    configuration = job.configuration
    emit(
        configuration.pool,
        Event.CAPTURE_FAILED,
        {
            "configuration": configuration.name,
            "run": None,
            "measures": {},
            "link": absolute(reverse("judgments:configuration-detail", args=[configuration.pk])),
            "capture": job.pk,
            "trigger": job.trigger,
            "message": job.message,
            "failed": job.failed,
            "total": job.total,
            "failures": job.failures[:20],
        },
    )


def gate_failed(summary: dict, pool: Pool, candidate: SearchConfiguration) -> None:
    """A gate failed: its summary (reports.summary) is the body, with the candidate as the configuration."""
    emit(
        pool,
        Event.GATE_FAILED,
        {
            "configuration": candidate.name,
            "run": summary["candidate"]["run"],
            "measures": {m["measure"]: m["candidate"] for m in summary["measures"]},
            "link": summary["link"],
            "gate": summary,
        },
    )
