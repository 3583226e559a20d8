"""The one rule for a background job whose process died: it is `running` but has given no news (its
`updated_at`, which a live job refreshes as it works) for longer than its `STALE_AFTER`. Captures and
model judges' runs follow it; pages show such a job as interrupted, and a new one may start.

(Scoring's tasks are django-tasks rows with no news field: a running one holds a database advisory
lock instead, which PostgreSQL drops with its worker's connection; scoring.tasks.fail_lost_tasks.)
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

RUNNING = "running"  # the status value of a running job, in every model that uses the rule


class StaleRule:
    """Mixin for a model with `status` and `updated_at`; the model sets STALE_AFTER."""

    STALE_AFTER: timedelta

    def is_stale(self, now: datetime | None = None) -> bool:
        """Running, but silent for STALE_AFTER: its process died (killed, crashed)."""
        return self.status == RUNNING and (now or timezone.now()) - self.updated_at > self.STALE_AFTER

    @property
    def stale(self) -> bool:
        return self.is_stale()
