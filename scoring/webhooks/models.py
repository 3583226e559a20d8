"""A pool's webhooks and their deliveries (registered with the scoring app: scoring/models.py imports
these classes). The secret is stored encrypted, as endpoint secrets are (Fernet with a key derived from
SECRET_KEY), and never shown back."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from judgments.models.secret_fields import EncryptedTextField


class Event(models.TextChoices):
    RUN_SCORED = "run.scored", "A run is stored and scored"
    CAPTURE_FAILED = "capture.failed", "A capture fails"
    GATE_FAILED = "gate.failed", "A gate fails"
    CAPTURE_DROP = "capture.drop", "A scheduled capture drops below its recent band"


class Webhook(models.Model):
    """Where a pool's events are POSTed, signed with the secret."""

    pool = models.ForeignKey("judgments.Pool", models.CASCADE, related_name="webhooks")
    url = models.CharField("URL", max_length=2000)
    secret = EncryptedTextField(help_text="write-only: never shown back; encrypted")
    events = models.JSONField(default=list, help_text="event names; empty: every event")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["pool", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(url__startswith="http://") | Q(url__startswith="https://"),
                name="webhook_url_http",
            )
        ]

    def __str__(self) -> str:
        return f"webhook {self.pk} of {self.pool}: {self.url}"

    def wants(self, event: str) -> bool:
        return self.active and (not self.events or event in self.events)


class WebhookDelivery(models.Model):
    """One event sent (or being sent) to one webhook: the exact body, every attempt's outcome."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    webhook = models.ForeignKey(Webhook, models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=30, choices=Event)
    body = models.TextField(help_text="the JSON sent, byte for byte (what the signature covers)")
    status = models.CharField(max_length=10, choices=Status, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True, help_text="of the last attempt")
    error = models.TextField(blank=True, help_text="of the last attempt")
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["webhook", "-id"], name="delivery_webhook_idx")]

    def __str__(self) -> str:
        return f"delivery {self.pk} ({self.event}) to {self.webhook.url}: {self.status}"
