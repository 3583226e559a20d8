"""A configuration's search endpoint, one row per version, and the captures run against it (the capture
wing, judgments/capture, sends the queries; the definition's meaning is judgments/endpoints, pure Python).

Every edit of an endpoint creates a new `SearchEndpoint` version and keeps the old ones, and every
captured run links to the version it was captured with (`Run.endpoint`), so a score can always be traced to the exact definition.

Stored versions hold the *resolved* definition (the kind's defaults written out), so a change of a
default in the code never changes what an old version means. Secrets: `auth_secret_env` names an
environment variable holding the secret (preferred: nothing secret in the database); `auth_secret` is a
stored secret, write-only: pages, API answers, exports and logs show "set" / "not set", never its value.
Header values, URL parameters and template fields that look like credentials are redacted the same way
(`EndpointSpec.public_dict`). At rest, the stored secret and credential-like header values are encrypted
with a key derived from SECRET_KEY (secret_fields.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from ..endpoints.engines import AUTH_KINDS, KINDS, EndpointSpec
from .jobs import StaleRule
from .secret_fields import EncryptedTextField, SecretHeadersField

MAX_DEPTH = 10_000  # Elasticsearch's index.max_result_window
DEFAULT_DEPTH = 100
MAX_CONCURRENCY = 64
DEFAULT_CONCURRENCY = 8
# A running capture reports at least every 0.5 s; one silent this long has lost its process.
STALE_AFTER = timedelta(minutes=2)
SPEC_FIELDS = (
    "kind",
    "url",
    "method",
    "template",
    "hits_path",
    "id_field",
    "score_field",
    "headers",
    "auth_kind",
    "auth_user",
    "auth_secret",
    "auth_secret_env",
    "auth_header",
)


class Schedule(models.TextChoices):
    NONE = "none", "Never (by hand)"
    HOURLY = "hourly", "Every hour"
    DAILY = "daily", "Every day"
    WEEKLY = "weekly", "Every week"


SCHEDULE_INTERVALS = {
    Schedule.HOURLY: timedelta(hours=1),
    Schedule.DAILY: timedelta(days=1),
    Schedule.WEEKLY: timedelta(weeks=1),
}


class SearchEndpoint(models.Model):
    """One version of a configuration's endpoint: where and how to send the pool's queries."""

    configuration = models.ForeignKey(
        "judgments.SearchConfiguration", models.CASCADE, related_name="endpoints"
    )
    version = models.PositiveIntegerField()
    kind = models.CharField(max_length=20, choices=[(k, k) for k in KINDS])
    url = models.CharField("URL", max_length=2000)
    method = models.CharField(max_length=4)
    template = models.TextField()
    hits_path = models.CharField(max_length=500)
    id_field = models.CharField(max_length=500)
    score_field = models.CharField(max_length=500, blank=True)
    headers = SecretHeadersField(
        default=list, blank=True, help_text='[["Name", "value"], ...]; credential-like values encrypted'
    )
    auth_kind = models.CharField(max_length=10, blank=True, choices=[(k, k) for k in AUTH_KINDS])
    auth_user = models.CharField(max_length=200, blank=True)
    auth_secret = EncryptedTextField(blank=True, help_text="write-only: never shown back; encrypted")
    auth_secret_env = models.CharField("secret's environment variable", max_length=200, blank=True)
    auth_header = models.CharField(max_length=200, blank=True)
    depth = models.PositiveIntegerField(
        default=DEFAULT_DEPTH, help_text="documents kept per query ({{depth}} in the template)"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["configuration", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["configuration", "version"], name="endpoint_version_unique"),
            models.CheckConstraint(condition=Q(version__gte=1), name="endpoint_version_positive"),
            models.CheckConstraint(
                condition=Q(depth__gte=1, depth__lte=MAX_DEPTH), name="endpoint_depth_in_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.configuration} endpoint v{self.version} ({self.kind} {self.public()['url']})"

    def spec(self) -> EndpointSpec:
        """The definition as an EndpointSpec (EndpointError if it cannot be used)."""
        return EndpointSpec.from_dict({name: getattr(self, name) for name in SPEC_FIELDS})

    def public(self) -> dict[str, Any]:
        """The definition with every secret redacted (what pages and API answers show), plus the
        secret's state as "set" / "not set" / "from $NAME"."""
        data = self.spec().public_dict()
        data.pop("auth_secret", None)
        data["secret"] = self.secret_state
        data["depth"] = self.depth
        return data

    @property
    def secret_state(self) -> str:
        if self.auth_secret_env:
            return f"from ${self.auth_secret_env}"
        return "set" if self.auth_secret else "not set"

    def definition(self) -> dict[str, Any]:
        """Every stored field that defines the endpoint (secrets included: never show this)."""
        return {name: getattr(self, name) for name in (*SPEC_FIELDS, "depth")}


class CaptureJob(StaleRule, models.Model):
    """One capture of a configuration's endpoint: its progress while it runs, then its outcome. A stale
    one (`StaleRule`: its process died) stored nothing."""

    STALE_AFTER = STALE_AFTER

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Stored"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    class Trigger(models.TextChoices):
        WEB = "web", "Capture button"
        API = "api", "API"
        COMMAND = "command", "capture_run command"
        SCHEDULE = "schedule", "Schedule (capture_due)"

    configuration = models.ForeignKey(
        "judgments.SearchConfiguration", models.CASCADE, related_name="captures"
    )
    endpoint = models.ForeignKey(SearchEndpoint, models.CASCADE, related_name="captures")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, models.SET_NULL, null=True, blank=True, related_name="+"
    )
    trigger = models.CharField(max_length=10, choices=Trigger)
    status = models.CharField(max_length=10, choices=Status, default=Status.QUEUED)
    depth = models.PositiveIntegerField(default=DEFAULT_DEPTH)
    concurrency = models.PositiveSmallIntegerField(default=DEFAULT_CONCURRENCY)
    keep_partial = models.BooleanField(default=False, help_text="store the run even if some queries fail")
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    rate = models.FloatField(default=0.0, help_text="queries per second")
    failures = models.JSONField(default=list, blank=True, help_text='[{"query_id", "error"}, ...]')
    notes = models.JSONField(default=list, blank=True, help_text="warnings: duplicates, zero hits, ...")
    message = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    run = models.ForeignKey("judgments.Run", models.SET_NULL, null=True, blank=True, related_name="captures")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["configuration", "-id"], name="capture_configuration_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(depth__gte=1, depth__lte=MAX_DEPTH), name="capture_depth_in_range"
            ),
            models.CheckConstraint(
                condition=Q(concurrency__gte=1, concurrency__lte=MAX_CONCURRENCY),
                name="capture_concurrency_in_range",
            ),
        ]

    def __str__(self) -> str:
        return f"capture {self.pk} of {self.configuration}: {self.status} {self.done}/{self.total}"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED, self.Status.CANCELLED)

    @property
    def active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING) and not self.stale

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0

    @property
    def missing(self) -> int:
        """Queries without a ranking in the stored run (keep-partial): their errors are in `failures`."""
        return self.failed
