"""Stored snapshots of statistics too heavy to compute per page load (judgments.snapshots): one row per
(pool, kind, key) with its value and "as of" time, and the change marker of a pool whose snapshots are
older than its data."""

from django.db import models

from .pools import Pool


class Snapshot(models.Model):
    """A statistic of a pool as computed at `computed_at` (value None: asked for, not computed yet)."""

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="+", db_index=False)  # one_snapshot_...
    kind = models.CharField(max_length=40)
    key = models.CharField(max_length=200, blank=True, default="")
    value = models.JSONField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(default=0.0, help_text="How long the computation took.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "kind", "key"], name="one_snapshot_per_pool_kind_key")
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.key} of {self.pool_id} as of {self.computed_at}"


class SnapshotDue(models.Model):
    """The change marker: the pool changed at `since` (first change after its last refresh), and its
    snapshots are being recomputed. No row: every snapshot of the pool is current."""

    pool = models.OneToOneField(Pool, models.CASCADE, primary_key=True, related_name="+")
    since = models.DateTimeField()

    def __str__(self) -> str:
        return f"snapshots of {self.pool_id} due since {self.since}"


class Disagreement(models.Model):
    """A pair of the disagreements page at its place (`rank`, 1..n) in the page's order, as of the pool's
    "disagreements" snapshot: written whole by judgments.rating.adjudication.store_disagreements, read a
    page at a time on (pool, rank)."""

    pool = models.ForeignKey(Pool, models.CASCADE, related_name="+", db_index=False)  # one_rank_...
    rank = models.PositiveIntegerField()
    pair = models.ForeignKey("Pair", models.CASCADE, related_name="+")
    spread = models.SmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "rank"], name="one_disagreement_per_pool_rank")
        ]

    def __str__(self) -> str:
        return f"#{self.rank} of {self.pool_id}: pair {self.pair_id} (spread {self.spread})"
