"""Stored snapshots of statistics too heavy to compute per page load: agreement over a pool, a model
judge's trust report, prediction-powered estimates. A task computes them when the pool has changed; the
pages show the stored figures with their "as of" time.

A kind is registered (`register`) with the function that computes it, (pool, key) -> a JSON value (None:
the key no longer exists, e.g. a removed judge), and the keys the task keeps current for a pool (e.g.
one per judge); a key a page asked for once (an estimate in another measure) is kept current too.
scoring.snapshots registers the kinds.

The change marker is a `SnapshotDue` row: the pool changed since its snapshots were computed. The writes
that change what a snapshot shows insert it in their own transaction, after their write (`mark_changed`,
wired to grades_changed and run_submitted: grades, can't judge, exclusions, final grades, imports, judges'
answers, runs; called by hand for a new sample, examples, adjudication requests, a new grade rule). It is
one `INSERT ... ON CONFLICT DO NOTHING`: a rater's submit pays that one statement and never waits on a
busy row, but for the first writer after a refresh, which also enqueues the refresh task, due
REFRESH_DELAY later, so that a burst of grades is computed once. An unchanged pool has no row and is
never recomputed.

The task puts itself off while the last refresh is recent for what it cost (`next_refresh`: COST_FACTOR
times its seconds), so a big pool graded all day keeps the worker busy a fifth of the time at most.
`refresh(pool)` (what the task and `manage.py refresh_snapshots` run) deletes the row, waits for the transactions that were
writing at that moment (they may have found the row there and not inserted it) and computes every
snapshot of the pool from what is committed then. A write during the computation inserts the row again,
so another refresh follows.

Pages call `read(pool, kind, keys)`: each key's stored value, its time, and whether it is being
recomputed, in one statement. A pool of at most SMALL_PAIRS pairs (the demo, the tests) computes a
missing or stale value inline instead, with the function the task calls; a bigger pool never does: the
page shows the last snapshot and says that a new one is being computed.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection, models, transaction
from django.utils import timezone
from django.utils.module_loading import import_string
from django_tasks import task

from .models import Pool, Snapshot

logger = logging.getLogger(__name__)

SMALL_PAIRS = 20_000  # a pool with at most this many pairs computes its snapshots inline on a page
REFRESH_DELAY = timedelta(seconds=60)  # the refresh runs this long after the first change
# ... and no sooner after the previous one than this many times what that one cost, so that a big pool
# graded all day keeps the worker busy with its snapshots at most a fifth of the time.
COST_FACTOR = 4
WRITERS_TIMEOUT = 60.0  # seconds the refresh waits for the transactions writing when it began


def _one_key(pool: Pool) -> list[str]:
    return [""]


@dataclass(frozen=True)
class Kind:
    """A snapshot kind: its compute and keys functions, given as dotted paths (imported when first used,
    so that registering one imports nothing heavy)."""

    name: str
    compute_path: str  # (pool, key) -> JSON value, or None: the key no longer exists
    keys_path: str | None = None  # (pool) -> the keys the task keeps current; None: the one key ""

    def compute(self, pool: Pool, key: str) -> dict | None:
        return import_string(self.compute_path)(pool, key)

    def keys(self, pool: Pool) -> Iterable[str]:
        return (import_string(self.keys_path) if self.keys_path else _one_key)(pool)


_KINDS: dict[str, Kind] = {}


def register(name: str, compute: str, keys: str | None = None) -> None:
    """Make `name` a snapshot kind (ScoringConfig.ready registers scoring.snapshots' kinds)."""
    _KINDS[name] = Kind(name, compute, keys)


def kinds() -> dict[str, Kind]:
    return dict(_KINDS)


def jsonable(value):
    """`value` with every nan or infinity as None (PostgreSQL's jsonb has no NaN) and tuples as lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def number(value) -> float:
    """A stored figure back as a float (None, an undefined figure, is nan)."""
    return math.nan if value is None else float(value)


# --- The change marker ----------------------------------------------------------------------------------


def mark_changed(pool_id: int) -> None:
    """The pool's data changed (call inside the writing transaction, after the write): its snapshots are
    due. One statement; the first writer after a refresh also enqueues the refresh (see the docstring)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO judgments_snapshotdue (pool_id, since) VALUES (%s, now())"
            " ON CONFLICT (pool_id) DO NOTHING RETURNING pool_id",
            [pool_id],
        )
        inserted = cursor.fetchone() is not None
    if inserted:
        backend = refresh_snapshots.get_backend()
        if backend.supports_defer:  # without a deferring queue (a development setting) pages compute inline
            refresh_snapshots.using(run_after=timezone.now() + REFRESH_DELAY).enqueue(pool_id)


def on_grades_changed(sender, pool: Pool, **kwargs) -> None:
    """judgments.signals.grades_changed (connected in JudgmentsConfig.ready)."""
    mark_changed(pool.pk)


def on_run_submitted(sender, run, **kwargs) -> None:
    """judgments.signals.run_submitted (connected in JudgmentsConfig.ready)."""
    mark_changed(run.configuration.pool_id)


# --- Pages ----------------------------------------------------------------------------------------------


@dataclass
class Shown:
    """What a page shows of one snapshot."""

    value: dict | None  # None: not computed yet
    computed_at: datetime | None
    updating: bool  # the pool changed since (or it was never computed): a refresh is due or under way
    inline: bool = False  # computed for this page (a small pool)
    extra: dict = field(default_factory=dict)


def oldest(shown: Iterable[Shown]) -> Shown | None:
    """One "as of" line for several snapshots on a page: the oldest time, updating if any is."""
    shown = list(shown)
    if not shown:
        return None
    times = [s.computed_at for s in shown if s.value is not None and s.computed_at]
    return Shown(
        {} if times else None,
        min(times) if times else None,
        updating=any(s.updating for s in shown),
        inline=all(s.inline for s in shown),
    )


_READ = """
    SELECT k.key, s.value, s.computed_at,
           EXISTS (SELECT 1 FROM judgments_snapshotdue d WHERE d.pool_id = %(pool)s),
           (SELECT count(*) FROM (SELECT 1 FROM judgments_pair p WHERE p.pool_id = %(pool)s LIMIT %(over)s) c)
    FROM unnest(%(keys)s::text[]) AS k(key)
    LEFT JOIN judgments_snapshot s ON s.pool_id = %(pool)s AND s.kind = %(kind)s AND s.key = k.key
"""


def read(pool: Pool, kind: str, keys: Iterable[str] = ("",)) -> dict[str, Shown]:
    """{key: Shown} for the snapshots of `kind` of `pool` (see the module docstring): one statement when
    they are current or the pool is big; a small pool's missing or stale ones are computed here."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_READ, {"pool": pool.pk, "kind": kind, "keys": keys, "over": SMALL_PAIRS + 1})
        rows = cursor.fetchall()
    shown = {}
    missing = []
    for key, value, computed_at, due, pairs in rows:
        if isinstance(value, str):  # Django has psycopg hand jsonb over as text (JSONField parses it)
            value = json.loads(value)
        if value is not None and not due:
            shown[key] = Shown(value, computed_at, updating=False)
        elif pairs <= SMALL_PAIRS:
            value = jsonable(_KINDS[kind].compute(pool, key))  # as the task would store it
            shown[key] = Shown(value, timezone.now(), updating=False, inline=True)
        else:
            shown[key] = Shown(value, computed_at, updating=True)
            if value is None:
                missing.append(key)
    if missing:
        _ask_for(pool, kind, missing)
    return shown


def _ask_for(pool: Pool, kind: str, keys: list[str]) -> None:
    """Keys a page of a big pool asked for and nobody computed yet: kept from now on, and due."""
    Snapshot.objects.bulk_create(
        [Snapshot(pool=pool, kind=kind, key=key) for key in keys], ignore_conflicts=True
    )
    mark_changed(pool.pk)


# --- The refresh ----------------------------------------------------------------------------------------


def _take_marker(pool_id: int) -> bool:
    """Delete the pool's change marker (committed at once); then wait until every transaction of this
    database that was in progress at that moment has ended, so that what they wrote is seen. Returns
    whether there was one. Transactions of the cluster's other databases cannot have written to this one
    and are not waited for (two test databases' refreshes, each inside a test's transaction, waited the
    whole WRITERS_TIMEOUT for each other); the app's sessions share one role, so they see each other's
    transaction ids in pg_stat_activity."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM judgments_snapshotdue WHERE pool_id = %s RETURNING pool_id", [pool_id]
            )
            taken = cursor.fetchone() is not None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_snapshot()::text")
        (snapshot,) = cursor.fetchone()
        deadline = time.monotonic() + WRITERS_TIMEOUT
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_snapshot_xip(%s::pg_snapshot) AS x"
                " WHERE pg_xact_status(x) = 'in progress' AND x IS DISTINCT FROM pg_current_xact_id_if_assigned()"
                " AND x::xid IN (SELECT backend_xid FROM pg_stat_activity"
                " WHERE datname = current_database() AND backend_xid IS NOT NULL)",
                [snapshot],
            )
            if not cursor.fetchone()[0]:
                break
            time.sleep(0.05)
    return taken


@dataclass
class Refreshed:
    pool: str
    computed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[str] = field(
        default_factory=list
    )  # logged; they keep their last value until the next change
    skipped: bool = False  # nothing changed since the last refresh
    seconds: float = 0.0


def refresh(pool: Pool, *, force: bool = False) -> Refreshed:
    """Recompute and store every snapshot of `pool` if it changed since the last refresh (or `force`),
    else nothing: see the module docstring."""
    started = time.monotonic()
    result = Refreshed(pool.name)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [_LOCK_KEY, pool.pk])
    try:
        taken = _take_marker(pool.pk)
        stored = {(k, key): at is not None for k, key, at in _stored(pool)}
        wanted = {(name, key) for name, kind in _KINDS.items() for key in kind.keys(pool)}
        todo = sorted(wanted | set(stored))
        never = [item for item in todo if not stored.get(item)]
        if not (taken or force or never):
            result.skipped = True
            return result
        for name, key in todo if (taken or force) else never:
            if name not in _KINDS:
                continue
            began = time.monotonic()
            try:
                value = _KINDS[name].compute(pool, key)
            except Exception:  # the others are still computed; this one keeps its last value
                logger.exception("snapshot %s %r of pool %s failed", name, key, pool.name)
                result.failed.append(f"{name}:{key}" if key else name)
                continue
            if value is None:
                Snapshot.objects.filter(pool=pool, kind=name, key=key).delete()
                result.removed.append(f"{name}:{key}")
                continue
            Snapshot.objects.update_or_create(
                pool=pool,
                kind=name,
                key=key,
                defaults={
                    "value": jsonable(value),
                    "computed_at": timezone.now(),
                    "seconds": time.monotonic() - began,
                },
            )
            result.computed.append(f"{name}:{key}" if key else name)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_KEY, pool.pk])
    result.seconds = time.monotonic() - started
    return result


_LOCK_KEY = 0x5A4E  # first key of the advisory lock one refresh of a pool holds (second: the pool's id)


def _stored(pool: Pool):
    return Snapshot.objects.filter(pool=pool).values_list("kind", "key", "computed_at")


def next_refresh(pool: Pool) -> datetime | None:
    """When the pool's next refresh may start: COST_FACTOR times the last one's cost after it ended
    (None: now)."""
    last = Snapshot.objects.filter(pool=pool, computed_at__isnull=False).aggregate(
        at=models.Max("computed_at"), cost=models.Sum("seconds")
    )
    if last["at"] is None:
        return None
    earliest = last["at"] + COST_FACTOR * timedelta(seconds=last["cost"] or 0.0)
    return earliest if earliest > timezone.now() else None


@task()
def refresh_snapshots(pool_id: int) -> dict:
    """Recompute the snapshots of a pool that changed (enqueued by mark_changed), or put itself off to
    `next_refresh` when the last refresh was recent for its cost. Returns a summary."""
    pool = Pool.objects.filter(pk=pool_id).first()
    if pool is None:
        return {"pool": pool_id, "deleted": True}
    later = next_refresh(pool)
    if later is not None:
        refresh_snapshots.using(run_after=later).enqueue(pool_id)
        return {"pool": pool.name, "put_off_until": later.isoformat()}
    done = refresh(pool)
    return {
        "pool": done.pool,
        "computed": done.computed,
        "removed": done.removed,
        "failed": done.failed,
        "skipped": done.skipped,
        "seconds": round(done.seconds, 3),
    }
