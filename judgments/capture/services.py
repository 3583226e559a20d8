"""Setting a configuration's endpoint and capturing runs from it. Views, the API, the commands and the
background task call these; they know no HTTP of their own beyond the engine's.

- `set_endpoint` stores a new version of the endpoint (the old ones stay), or nothing if the definition
  did not change. Secrets: a stored secret is kept from the previous version unless a new one is given
  or it is cleared; a redacted value ("***") sent back from a page or an API answer means "unchanged".
- `start_capture` creates a queued `CaptureJob` (one active capture per configuration).
- `run_capture` sends every query of the pool to the endpoint (judgments.capture.client), keeps the top
  `depth` ids in engine order, and stores them as a new run (`judgments.run_staging.RunWriter`: staged as the answers
  arrive, then written in one short transaction; unknown documents are created without content, exactly
  as a run import does; the run is scored when its transaction commits). All or nothing: by default the run is stored only when every query
  succeeded; with `keep_partial` the answered queries are stored and the failed ones are listed on the
  job (they score 0). A cancelled or crashed capture stores nothing. Progress goes to the job row in its
  own short statements (at most every 0.5 s), never inside the run's transaction.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from judgments import run_staging, signals
from judgments import services as core
from judgments.endpoints.engines import REDACTED, EndpointError, EndpointSpec
from judgments.models import Query, Ranking, Run, SearchConfiguration
from judgments.models.capture import (
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    MAX_DEPTH,
    SCHEDULE_INTERVALS,
    SPEC_FIELDS,
    CaptureJob,
    Schedule,
    SearchEndpoint,
)

from . import client

logger = logging.getLogger(__name__)
PROGRESS_EVERY = 0.5  # seconds between two writes of a running job's progress
MAX_LISTED = 500  # failures kept on a job with their error text (the count is always exact)
NO_TEXT = "the query has no text in the pool (import its text with import_queries), so it was not sent"
Status = CaptureJob.Status


class CaptureError(ValueError):
    """A capture that cannot start or a definition that cannot be stored; the message says why."""


# --- Endpoints -----------------------------------------------------------------------------------------


def _unredacted(given: str, previous: SearchEndpoint | None, name: str) -> str:
    """A URL or template sent back exactly as pages show it (secrets as ***) means the stored one."""
    if previous is not None and REDACTED in given:
        stored = getattr(previous, name)
        if given == previous.spec().public_dict()[name]:
            return stored
    return given


def _headers(given: Iterable[Any], previous: SearchEndpoint | None) -> list[list[str]]:
    """[[name, value]]; a value of *** takes the previous version's value of that header."""
    old = {n.lower(): v for n, v in (previous.headers if previous else [])}
    headers = []
    for item in given:
        name, value = (str(part) for part in item)
        if value == REDACTED:
            if name.lower() not in old:
                raise EndpointError(f"header {name}: *** stands for a stored value, and there is none")
            value = old[name.lower()]
        headers.append([name, value])
    return headers


def draft_spec(
    previous: SearchEndpoint | None,
    *,
    kind: str,
    url: str,
    method: str = "",
    template: str = "",
    hits_path: str = "",
    id_field: str = "",
    score_field: str = "",
    headers: Iterable[Any] = (),
    auth_kind: str = "",
    auth_user: str = "",
    auth_secret: str | None = None,
    auth_secret_env: str = "",
    auth_header: str = "",
) -> EndpointSpec:
    """The definition these fields make on top of `previous` (the current version, or None), stored or
    not: what `set_endpoint` saves and the endpoint form's Test sends. Secrets: see `set_endpoint`."""
    if auth_secret is None:
        keep = previous is not None and auth_kind and not auth_secret_env and previous.auth_kind
        auth_secret = previous.auth_secret if keep else ""
    return EndpointSpec(
        kind=kind,
        url=_unredacted(url.strip(), previous, "url"),
        method=method.strip(),
        template=_unredacted(template.strip(), previous, "template") if template.strip() else "",
        hits_path=hits_path,
        id_field=id_field,
        score_field=score_field,
        headers=tuple(tuple(h) for h in _headers(headers, previous)),
        auth_kind=auth_kind,
        auth_user=auth_user,
        auth_secret=auth_secret,
        auth_secret_env=auth_secret_env.strip(),
        auth_header=auth_header,
    )


@transaction.atomic
def set_endpoint(
    configuration: SearchConfiguration, *, depth: int | None = None, user=None, **fields: Any
) -> tuple[SearchEndpoint, bool]:
    """Store a new version of the configuration's endpoint; (version, True), or (current, False) when the
    definition is the same as the current one. `fields` are `draft_spec`'s; empty ones take the kind's
    defaults (engines.py).

    auth_secret: None keeps the current version's stored secret (when auth still needs one and no
    environment variable is named), "" clears it, any other value replaces it. EndpointError when the
    definition cannot be used (the message names the field).
    """
    SearchConfiguration.objects.select_for_update().filter(
        pk=configuration.pk
    ).first()  # one editor at a time
    previous = configuration.endpoint
    if depth is None:
        depth = previous.depth if previous else client.DEFAULT_DEPTH
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise EndpointError(f"depth must be a whole number from 1 to {MAX_DEPTH}, not {depth!r}")
    spec = draft_spec(previous, **fields)
    check_template_fields(configuration, spec)
    definition = {name: getattr(spec, name) for name in SPEC_FIELDS}
    definition["headers"] = [list(h) for h in spec.headers]
    if previous is not None and previous.definition() == {**definition, "depth": depth}:
        return previous, False
    endpoint = SearchEndpoint.objects.create(
        configuration=configuration,
        version=(previous.version + 1) if previous else 1,
        depth=depth,
        created_by=user if getattr(user, "pk", None) else None,
        **definition,
    )
    return endpoint, True


def restore_endpoint(
    configuration: SearchConfiguration, version: int, user=None
) -> tuple[SearchEndpoint, bool]:
    """Make an earlier version's definition (its secret included) the current one, as a new version:
    history only grows. EndpointError if there is no such version."""
    old = configuration.endpoints.filter(version=version).first()
    if old is None:
        raise EndpointError(f"{configuration.name} has no endpoint version {version}")
    fields = old.definition()
    depth = fields.pop("depth")
    return set_endpoint(configuration, depth=depth, user=user, **fields)


def check_template_fields(configuration: SearchConfiguration, spec: EndpointSpec) -> None:
    """EndpointError when the template names a field ({{query.fields.NAME}}) that no query of the pool has:
    a typo would otherwise fail every query of every capture."""
    queries = Query.objects.filter(pool=configuration.pool_id)
    for name in sorted(spec.template_fields):
        if not queries.filter(fields__has_key=name).exists():
            raise EndpointError(
                f"template: {{{{query.fields.{name}}}}}: no query of pool {configuration.pool.name} has a "
                f"field {name!r} (give the queries fields first: query files, the API or the queries page)"
            )


def set_schedule(configuration: SearchConfiguration, schedule: str) -> None:
    if schedule not in Schedule.values:
        raise CaptureError(f"schedule must be one of {', '.join(Schedule.values)}, not {schedule!r}")
    SearchConfiguration.objects.filter(pk=configuration.pk).update(capture_schedule=schedule)
    configuration.capture_schedule = schedule


# --- Starting a capture ----------------------------------------------------------------------------------


def active_capture(configuration: SearchConfiguration) -> CaptureJob | None:
    """The configuration's queued or running capture, if any (a stale one does not count)."""
    for job in configuration.captures.filter(status__in=[Status.QUEUED, Status.RUNNING])[:5]:
        if job.active:
            return job
    return None


@transaction.atomic
def start_capture(
    configuration: SearchConfiguration,
    *,
    trigger: str,
    user=None,
    depth: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    keep_partial: bool = False,
) -> CaptureJob:
    """A queued capture of the configuration's current endpoint; CaptureError if it has no endpoint, a
    capture is under way already, or depth/concurrency are out of range. The caller runs it
    (`run_capture`) or hands it to the worker (tasks.capture_configuration)."""
    locked = SearchConfiguration.objects.select_for_update().get(pk=configuration.pk)
    endpoint = locked.endpoint
    if endpoint is None:
        raise CaptureError(f"Configuration {locked.name} has no search endpoint: set one first.")
    depth = endpoint.depth if depth is None else depth
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise CaptureError(f"depth must be a whole number from 1 to {MAX_DEPTH}, not {depth!r}")
    if (
        isinstance(concurrency, bool)
        or not isinstance(concurrency, int)
        or not 1 <= concurrency <= MAX_CONCURRENCY
    ):
        raise CaptureError(
            f"concurrency must be a whole number from 1 to {MAX_CONCURRENCY}, not {concurrency!r}"
        )
    running = active_capture(locked)
    if running is not None:
        raise CaptureError(
            f"Capture #{running.pk} of {locked.name} is {running.status} already: wait for it, or cancel it."
        )
    # A job left "running" by a process that died is closed now, so the page stops showing it as running.
    for stale in locked.captures.filter(status=Status.RUNNING):
        if stale.stale:
            _close(
                stale, Status.FAILED, "The capture's process stopped (killed or crashed); nothing was stored."
            )
    now = timezone.now()
    SearchConfiguration.objects.filter(pk=locked.pk).update(last_capture_at=now)
    configuration.last_capture_at = now
    return CaptureJob.objects.create(
        configuration=locked,
        endpoint=endpoint,
        requested_by=user if getattr(user, "pk", None) else None,
        trigger=trigger,
        depth=depth,
        concurrency=concurrency,
        keep_partial=keep_partial,
        total=locked.pool.queries.count(),
        updated_at=now,
    )


def request_cancel(job: CaptureJob) -> bool:
    """Ask a queued or running capture to stop (it stores nothing). A queued one is cancelled at once."""
    if CaptureJob.objects.filter(pk=job.pk, status=Status.QUEUED).update(
        status=Status.CANCELLED,
        cancel_requested=True,
        finished_at=timezone.now(),
        message="Cancelled before it started; nothing was stored.",
    ):
        return True
    return bool(CaptureJob.objects.filter(pk=job.pk, status=Status.RUNNING).update(cancel_requested=True))


def due_configurations(now: datetime | None = None) -> list[SearchConfiguration]:
    """Configurations whose schedule is due: an endpoint, no capture under way, and the schedule's
    interval elapsed since the last capture started (never captured: due at once)."""
    now = now or timezone.now()
    due = []
    candidates = (
        SearchConfiguration.objects.exclude(capture_schedule=Schedule.NONE)
        .filter(endpoints__isnull=False)
        .distinct()
        .select_related("pool")
        .order_by("pool__name", "name")
    )
    for configuration in candidates:
        interval = SCHEDULE_INTERVALS.get(configuration.capture_schedule)
        last = configuration.last_capture_at
        # A minute's slack: an hourly cron line should not miss a capture that started 59:59 ago.
        if interval and (last is None or now - last >= interval - timedelta(minutes=1)):
            if active_capture(configuration) is None:
                due.append(configuration)
    return due


# --- Running a capture -----------------------------------------------------------------------------------


def _close(job: CaptureJob, status: str, message: str, **fields) -> CaptureJob:
    now = timezone.now()
    fields = {"status": status, "message": message, "finished_at": now, "updated_at": now, **fields}
    CaptureJob.objects.filter(pk=job.pk).update(**fields)
    for name, value in fields.items():
        setattr(job, name, value)
    if status == Status.FAILED:
        signals.capture_failed.send(sender=CaptureJob, job=job)
    return job


def run_capture(
    job: CaptureJob,
    *,
    cancel: threading.Event | None = None,
    on_progress: Callable[[CaptureJob], None] | None = None,
    timeout: float = 10.0,
    retries: int = 3,
    completes: Run | None = None,
) -> CaptureJob:
    """Run a queued capture to its end (see the module doc); returns the job with its outcome. Never
    raises for anything the engine does; a bug is logged and closes the job as failed, storing nothing.

    completes: a partial run of the configuration (kept with keep_partial): only the queries it has no
    ranking for are sent, and the new run holds its rankings plus the new answers (one complete run)."""
    now = timezone.now()
    if not CaptureJob.objects.filter(pk=job.pk, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now, updated_at=now
    ):
        job.refresh_from_db()
        raise CaptureError(f"Capture #{job.pk} is {job.status}, not queued: it cannot be run again.")
    job.refresh_from_db()
    try:
        return _run(job, cancel or threading.Event(), on_progress, timeout, retries, completes)
    except Exception as exc:
        scrub = job.endpoint.spec().scrub if job.endpoint_id else str
        # Logged scrubbed: an exception's text may quote the request (a URL with a key in it).
        logger.error(
            "capture %s of configuration %s crashed:\n%s",
            job.pk,
            job.configuration_id,
            scrub(traceback.format_exc()),
        )
        return _close(
            job,
            Status.FAILED,
            scrub(f"The capture crashed ({type(exc).__name__}: {exc}); nothing was stored."),
        )


def missing_queries(run: Run) -> list[str]:
    """Query ids of the run's pool that the run has no ranking for (failed or unanswered in a capture)."""
    have = Ranking.objects.filter(run=run).values("query_id")
    return list(
        Query.objects.filter(pool=run.configuration.pool_id)
        .exclude(pk__in=have)
        .order_by("external_id")
        .values_list("external_id", flat=True)
    )


def _run(job, cancel, on_progress, timeout, retries, completes=None) -> CaptureJob:
    configuration = job.configuration
    try:
        spec = job.endpoint.spec()
        spec.request_headers()  # an unset secret variable fails here, before any query is sent
    except EndpointError as exc:
        return _close(job, Status.FAILED, f"The endpoint cannot be used: {exc}. Nothing was stored.")
    queries = list(
        Query.objects.filter(pool=configuration.pool_id)
        .order_by("external_id")
        .values_list("external_id", "text", "pk", "fields")
    )
    if not queries:
        return _close(job, Status.FAILED, "The pool has no query to send; nothing was stored.")
    writer = run_staging.RunWriter(configuration, {qid: pk for qid, _, pk, _ in queries}, checked=True)
    try:
        kept = 0
        if completes is not None:
            missing = set(missing_queries(completes))
            queries = [q for q in queries if q[0] in missing]
            kept = writer.stage_run(completes)
        texts = [(qid, text, fields) for qid, text, _, fields in queries if text.strip()]
        no_text = [qid for qid, text, _, _ in queries if not text.strip()]
        return _capture_and_store(
            job, cancel, on_progress, timeout, retries, spec, texts, no_text, writer, completes, kept
        )
    finally:
        writer.close()


def _capture_and_store(
    job, cancel, on_progress, timeout, retries, spec, texts, no_text, writer, completes=None, kept=0
) -> CaptureJob:
    configuration = job.configuration
    job.total = len(texts) + len(no_text)
    CaptureJob.objects.filter(pk=job.pk).update(total=job.total, done=len(no_text), failed=len(no_text))

    def progress(p: client.Progress) -> None:
        job.done, job.failed = p.done + len(no_text), p.failures + len(no_text)
        job.rate, job.updated_at = round(p.rate, 2), timezone.now()
        CaptureJob.objects.filter(pk=job.pk).update(
            done=job.done, failed=job.failed, rate=job.rate, updated_at=job.updated_at
        )
        if CaptureJob.objects.filter(pk=job.pk, cancel_requested=True).exists():
            cancel.set()
        if on_progress is not None:
            on_progress(job)

    doomed = bool(no_text) and not job.keep_partial  # a failure without keep_partial: no run, stop staging

    def stage(result: client.QueryResult) -> None:
        """Stage each answer while the others are on their way (judgments.run_staging); zero hits: no ranking."""
        nonlocal doomed
        doomed = doomed or (not result.ok and not job.keep_partial)
        if result.ok and result.hits and not doomed:
            writer.add(result.query_id, [doc for doc, _ in result.hits])

    result = client.capture(
        spec,
        texts,
        job.depth,
        concurrency=job.concurrency,
        timeout=timeout,
        retries=retries,
        cancel=cancel,
        progress=progress,
        progress_interval=PROGRESS_EVERY,
        on_result=stage,
    )
    rate = round(len(result.results) / result.elapsed, 2) if result.elapsed > 0 else 0.0
    if result.cancelled or cancel.is_set():
        return _close(
            job,
            Status.CANCELLED,
            f"Cancelled after {len(result.results)} of {len(texts)} queries; nothing was stored.",
            rate=rate,
        )
    failures = [(qid, NO_TEXT) for qid in no_text] + [(r.query_id, r.error) for r in result.failures]
    failures.sort()
    listed = [{"query_id": qid, "error": error} for qid, error in failures[:MAX_LISTED]]
    notes = _notes(result.results)
    outcome = {"failures": listed, "failed": len(failures), "notes": notes, "rate": rate, "done": job.total}
    if failures and not job.keep_partial:
        return _close(
            job,
            Status.FAILED,
            f"{len(failures)} of {job.total} queries failed; nothing was stored "
            "(fix them, or capture again keeping a partial run: the failed queries would score 0).",
            **outcome,
        )
    ranked = sum(1 for r in result.results if r.ok and r.hits)
    if not ranked and not kept:
        return _close(job, Status.FAILED, "No query returned any document; nothing was stored.", **outcome)
    try:
        with transaction.atomic():
            run = writer.store(
                source=Run.Source.ENDPOINT,
                submitted_by=job.requested_by,
                tag=f"{configuration.name}-v{job.endpoint.version}",
                endpoint=job.endpoint,
            )
            missing = (
                f"; {len(failures)} failed queries are missing from it (they score 0)" if failures else ""
            )
            stored = f"Run {run.pk} stored: {ranked} of {job.total} queries ranked{missing}."
            if completes is not None:
                stored = (
                    f"Run {run.pk} stored, completing run {completes.pk}: its {kept} rankings and "
                    f"{ranked} of the {job.total} queries it was missing{missing}."
                )
            _close(
                job,
                Status.SUCCEEDED,
                stored,
                run=run,
                **outcome,
            )
    except core.RunError as exc:
        detail = "; ".join(f"{q}: {m}" for q, m in exc.problems[:5])
        return _close(job, Status.FAILED, f"{exc} {detail}".strip(), **outcome)
    return job


def _notes(results: list[client.QueryResult]) -> list[str]:
    """Warnings worth a look that do not fail a query: repeated ids dropped, queries with no hit."""
    notes = []
    repeated = [r for r in results if r.ok and r.duplicates]
    for r in repeated[:20]:
        notes.append(
            f"{r.query_id}: the engine returned {', '.join(r.duplicates[:5])} more than once (first rank kept)"
        )
    if len(repeated) > 20:
        notes.append(f"... and {len(repeated) - 20} more queries with repeated ids")
    empty = sorted(r.query_id for r in results if r.ok and not r.hits)
    if empty:
        shown = ", ".join(empty[:20]) + (f" and {len(empty) - 20} more" if len(empty) > 20 else "")
        notes.append(f"{len(empty)} queries returned no document (no ranking stored; they score 0): {shown}")
    return notes
