"""Model judges on the database: setting one up, choosing the pairs it grades, and storing its grades.

A judge is a rater account (a Django user that cannot log in) with a `ModelJudge` row saying how to
reach the model. `judge_pool` asks it about a pool's pairs through the pure modules of this package
(prompt, answers, client, runner) and stores every answer as an ordinary judgment by that user through
`judgments.services.record_judgment`, so history, exports and adjudication treat it like any rater's:
a grade with the model's reason as the note, or "can't judge" with the model's raw answer as the reason
(and what was wrong with it as the note). A call that got no answer stores nothing: the pair is asked
again next run. Pairs the judge already answered are never asked again, so a run that was stopped,
cancelled or killed continues where it was when started again.

Answers are stored as they arrive, a few at a time (every `FLUSH_EVERY` answers or `FLUSH_SECONDS`),
each batch in one transaction with one grades_changed signal, so a killed run loses at most the last
second of answers. Progress goes to the run's `JudgeRun` row as often, and a cancel asked for on the
judge's page (`JudgeRun.cancel_requested`) is noticed there.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from django.contrib.auth import get_user_model
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from judgments import limits, services
from judgments.models import JudgeRun, Judgment, ModelJudge, Pair, Pool
from judgments.outbound import RetryPolicy

from .answers import Verdict, parse_answer
from .client import Budget, ChatClient, ConfigError, Endpoint
from .examples import examples_for
from .prompt import (
    Example,
    PairText,
    PromptTemplate,
    build_messages,
    pair_text,
    scale_entries,
    template_problems,
)
from .runner import CANT_JUDGE, GRADED, Job, Outcome, Summary, describe, judge_pairs

FLUSH_EVERY = 25  # answers stored per transaction at most
FLUSH_SECONDS = 1.0  # ... and at least this often, with the run's progress
PAIR_CHUNK = 200  # pairs read from the database at a time while the judge works
RETRY = RetryPolicy()  # the client's retries (tests make them fast)

SELECTIONS = tuple(v for v in JudgeRun.Selection.values if v != JudgeRun.Selection.PROBES)  # probes: probing
RESERVED_NAMES = frozenset({"new", "grade-source"})  # paths under /pools/<pool>/judges/
SETTINGS = (
    "base_url",
    "model",
    "api_key_env",
    "temperature",
    "max_tokens",
    "prompt_system",
    "prompt_user",
    "max_body_chars",
    "concurrency",
    "example_count",
)


class JudgeSetupError(ValueError):
    """A judge that cannot be created or changed as asked; the message says why."""


# --- Setting a judge up -----------------------------------------------------------------------------


def human_grades():
    """Judgments by human raters (not by a model judge)."""
    return Judgment.objects.by_humans()


def create_or_update_judge(pool: Pool, name: str, **settings) -> tuple[ModelJudge, bool]:
    """The judge `name` of `pool`, created (with its user account) or changed to `settings` (any of
    SETTINGS). Returns (judge, created). JudgeSetupError when the name belongs to a person or to a judge
    of another pool, or a setting is invalid (nothing is stored then)."""
    unknown = set(settings) - set(SETTINGS)
    if unknown:
        raise TypeError(f"unknown judge settings: {', '.join(sorted(unknown))}")
    try:
        UnicodeUsernameValidator()(name)
    except ValidationError:
        raise JudgeSetupError(
            f"A judge's name is a user name: letters, digits and @ . + - _ only, not {name!r}."
        ) from None
    if len(name) > 150:
        raise JudgeSetupError("A judge's name is at most 150 characters.")
    if name in RESERVED_NAMES:
        raise JudgeSetupError(f"{name!r} names a page of the judges' section; choose another name.")
    User = get_user_model()
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=name).first()
        judge = ModelJudge.objects.filter(user=user).first() if user is not None else None
        if user is not None and judge is None:
            raise JudgeSetupError(f"{name} is a person's account; choose another name for the judge.")
        if judge is not None and judge.pool_id != pool.pk:
            raise JudgeSetupError(f"{name} is a judge of pool {judge.pool.name}; choose another name.")
        created = judge is None
        if created:
            judge = ModelJudge(pool=pool)
        for field, value in settings.items():
            setattr(judge, field, value)
        problems = template_problems(PromptTemplate(judge.prompt_system, judge.prompt_user))
        try:
            judge.full_clean(exclude=["user", "pool"])
        except ValidationError as error:
            raise JudgeSetupError(_describe_errors(error)) from None
        if problems:
            raise JudgeSetupError(" ".join(problems))
        if created:
            # A rater account that cannot log in: no usable password, and inactive (no API token works).
            user = User(username=name, is_active=False)
            user.set_unusable_password()
            user.save()
            judge.user = user
        judge.save()
    return judge, created


def _describe_errors(error: ValidationError) -> str:
    if not hasattr(error, "message_dict"):
        return " ".join(error.messages)
    parts = []
    for field, messages in error.message_dict.items():
        label = ModelJudge._meta.get_field(field).verbose_name if field != "__all__" else ""
        parts.append(
            f"{str(label)[:1].upper()}{str(label)[1:]}: {' '.join(messages)}" if label else " ".join(messages)
        )
    return " ".join(parts)


def endpoint_for(judge: ModelJudge) -> Endpoint:
    return Endpoint(
        base_url=judge.base_url,
        model=judge.model,
        api_key_env=judge.api_key_env,
        temperature=judge.temperature,
        max_tokens=judge.max_tokens,
    )


def key_is_set(judge: ModelJudge, environ: Mapping[str, str] | None = None) -> bool | None:
    """Whether the judge's API key variable is set here (None: the judge needs no key). Never the key."""
    if not judge.api_key_env:
        return None
    return bool((os.environ if environ is None else environ).get(judge.api_key_env))


# --- Which pairs ------------------------------------------------------------------------------------


def select_pairs(judge: ModelJudge, selection: str = "queued", limit: int | None = None) -> list[int]:
    """Pair ids the judge should answer, in the order it will (see `selectable`)."""
    ids = selectable(judge, selection).values_list("pk", flat=True)
    return list(ids[:limit] if limit is not None else ids)


def judge_counts(pool: Pool, key: str) -> dict | None:
    """The judge pages' counts of judge `key` (the "judge" snapshot, judgments.snapshots; None: no such
    judge any more): its grades and can't-judge answers in the pool, and the pairs each selection would
    still ask it."""
    judge = ModelJudge.objects.select_related("pool").filter(pool=pool, pk=int(key)).first()
    if judge is None:
        return None
    counts = Judgment.objects.filter(rater_id=judge.user_id, pair__pool=pool).aggregate(
        graded=Count("pk", filter=Q(cant_judge=False)), cant=Count("pk", filter=Q(cant_judge=True))
    )
    waiting = {s.replace("-", "_"): selectable(judge, s).order_by().count() for s in SELECTIONS}
    return {**counts, "waiting": waiting}


def selectable(judge: ModelJudge, selection: str = "queued"):
    """The pairs the judge should answer, in the order it will: pairs it has not answered yet whose
    document has content, among
    - "queued": those waiting in the raters' queue (queued, no final grade, still short of the pool's
      raters_per_pair human grades: what rating.queue.open_pairs calls open), highest priority first;
    - "all": every pair of the pool;
    - "human-graded": those a human rater graded (what the trust page compares on)."""
    if selection not in SELECTIONS:
        raise JudgeSetupError(f"Choose the pairs as one of {', '.join(SELECTIONS)}, not {selection!r}.")
    pool = judge.pool
    pairs = (
        Pair.objects.in_pool(pool)
        .exclude(document__title="", document__body="")
        .exclude(Exists(Judgment.objects.filter(pair=OuterRef("pk"), rater_id=judge.user_id)))
    )
    human = human_grades().filter(pair=OuterRef("pk"), cant_judge=False)
    if selection == "queued":
        n_human = human.values("pair").annotate(n=Count("pk")).values("n")
        pairs = (
            pairs.queued()
            .filter(final_grade__isnull=True)
            .alias(n_human=Coalesce(Subquery(n_human, output_field=IntegerField()), 0))
            .filter(n_human__lt=pool.raters_per_pair)
        )
        order = ("-priority", "query_id", "id")
    elif selection == "human-graded":
        pairs = pairs.filter(Exists(human))
        order = ("query_id", "id")
    else:
        order = ("query_id", "id")
    return pairs.order_by(*order)


# --- Judging --------------------------------------------------------------------------------------


def distractors_enabled(pool: Pool) -> bool:
    """Whether the pool grades distractors (-1): the prompt then describes the grade and the answer
    reader accepts it (otherwise a -1 answer becomes "can't judge", never a stored -1)."""
    return pool.distractors_enabled


def pair_messages(judge: ModelJudge, pair: Pair, examples: Sequence[Example] = ()) -> list[dict]:
    """The chat messages asking `judge` about `pair` (query and document loaded); `examples`: the judge's
    (judges.examples.examples_for), read once per run."""
    return text_messages(judge, pair_text(pair), examples)


def text_messages(judge: ModelJudge, text: PairText, examples: Sequence[Example] = ()) -> list[dict]:
    """The chat messages asking `judge` about a pair's text (possibly altered: judges.probes)."""
    pool = judge.pool
    return build_messages(
        text,
        examples=examples,
        template=PromptTemplate(judge.prompt_system, judge.prompt_user),
        guidelines=pool.guidelines,
        grade_scale=pool.grade_scale,
        distractor=distractors_enabled(pool),
        max_body_chars=judge.max_body_chars,
    )


def answer_reader(pool: Pool) -> Callable[[str], Verdict]:
    """Reads a judge's answer with the pool's allowed grades and their labels."""
    distractor = distractors_enabled(pool)
    labels = {e["grade"]: e["label"] for e in scale_entries(pool.grade_scale, distractor)}
    return functools.partial(parse_answer, allowed=frozenset(pool.grades), labels=labels)


def new_client(judge: ModelJudge, *, concurrency: int | None = None, environ=None) -> ChatClient:
    """The judge's HTTP client (ConfigError when it cannot work, e.g. no key in its variable)."""
    return ChatClient(
        endpoint_for(judge), retry=RETRY, environ=environ, max_connections=concurrency or judge.concurrency
    )


class _AnyOf:
    """Set when any of the events is set (the runner and client only ask is_set())."""

    def __init__(self, *events):
        self.events = [e for e in events if e is not None]

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


END_STATUS = {
    "": JudgeRun.Status.FINISHED,
    "budget": JudgeRun.Status.BUDGET,
    "cancelled": JudgeRun.Status.CANCELLED,
    "failed": JudgeRun.Status.FAILED,
}


class _Recorder:
    """Stores the runner's outcomes in batches and keeps the JudgeRun row up to date."""

    def __init__(self, judge: ModelJudge, run: JudgeRun, actor, progress, stop: threading.Event):
        self.judge, self.run, self.actor, self.progress, self.stop = judge, run, actor, progress, stop
        self.pairs: dict[int, Pair] = {}  # pairs asked about and not stored yet
        self.pending: list[Outcome] = []
        self.failures = 0
        self.last_write = time.monotonic()

    def jobs(self, ids: list[int]) -> Iterator[Job]:
        examples = examples_for(self.judge)
        for start in range(0, len(ids), PAIR_CHUNK):
            chunk = ids[start : start + PAIR_CHUNK]
            found = Pair.objects.filter(pk__in=chunk).select_related("query", "document").in_bulk()
            for pk in chunk:
                if pk in found:  # a pair deleted since the selection is left out
                    self.pairs[pk] = found[pk]
                    yield Job(pk, pair_messages(self.judge, found[pk], examples))

    def on_result(self, outcome: Outcome) -> None:
        if outcome.status in (GRADED, CANT_JUDGE):
            self.pending.append(outcome)
        else:
            self.pairs.pop(outcome.key, None)
            self.failures += 1
        if len(self.pending) >= FLUSH_EVERY:
            self.flush()

    def on_progress(self, summary: Summary) -> None:
        self._count(summary)
        if self.progress is not None:
            self.progress(summary)
        if time.monotonic() - self.last_write >= FLUSH_SECONDS:
            self.flush()

    def _count(self, summary: Summary) -> None:
        run = self.run
        run.calls, run.tokens = summary.calls, summary.tokens
        run.failures = summary.failed

    def flush(self) -> None:
        """Store the pending answers (one transaction, one grades_changed) and the run's progress;
        notice a cancel asked for on the page."""
        batch, self.pending = self.pending, []
        run, user = self.run, self.judge.user
        with transaction.atomic():
            for outcome in batch:
                pair = self.pairs.pop(outcome.key)
                if outcome.status == GRADED:
                    services.record_judgment(
                        pair,
                        user,
                        grade=outcome.grade,
                        note=limits.cut(
                            outcome.reason or "", limits.NOTE
                        ),  # a model's text: cut, not refused
                        actor=self.actor,
                        notify=False,
                    )
                    run.graded += 1
                else:
                    services.record_judgment(
                        pair,
                        user,
                        cant_judge=True,
                        reason=limits.cut(outcome.reason or outcome.problem or "(empty answer)", limits.NOTE),
                        note=limits.cut(outcome.problem or "", limits.NOTE),
                        actor=self.actor,
                        notify=False,
                    )
                    run.cant_judge += 1
            services.notify_grades(self.judge.pool, [o.key for o in batch])
            run.done = run.graded + run.cant_judge + self.failures
            run.save(
                update_fields=["done", "calls", "tokens", "graded", "cant_judge", "failures", "updated_at"]
            )
        if JudgeRun.objects.filter(pk=run.pk, cancel_requested=True).exists():
            self.stop.set()
        self.last_write = time.monotonic()


def judge_pool(
    judge: ModelJudge,
    selection: str = "queued",
    *,
    limit: int | None = None,
    max_calls: int | None = None,
    max_tokens: int | None = None,
    concurrency: int | None = None,
    cancel: threading.Event | None = None,
    progress: Callable[[Summary], None] | None = None,
    run: JudgeRun | None = None,
    started_by=None,
    source: str = "command",
    client: ChatClient | None = None,
    environ: Mapping[str, str] | None = None,
) -> JudgeRun:
    """Ask `judge` about the pairs of its pool that `selection` names (see select_pairs), at most
    `limit`, within a budget of `max_calls` HTTP calls and `max_tokens` tokens, and store its answers.

    Returns the run's JudgeRun row (created unless `run` is given), finished: status finished, budget,
    cancelled or failed, with the counts and a one-line message. A judge that cannot work (no key in
    its variable, a server that cannot be reached, a bad key) fails the run, it does not raise.
    `cancel`: a threading.Event the caller may set; `progress(summary)` after every answer."""
    if run is None:
        run = JudgeRun.objects.create(
            judge=judge,
            selection=selection,
            limit=limit,
            max_calls=max_calls,
            max_tokens=max_tokens,
            started_by=started_by,
            source=source,
        )
    run.status, run.started_at, run.message = JudgeRun.Status.RUNNING, timezone.now(), ""
    run.save(update_fields=["status", "started_at", "message", "updated_at"])
    own_client = client is None
    try:
        try:
            client = client or new_client(judge, concurrency=concurrency, environ=environ)
        except ConfigError as error:
            return end_run(run, JudgeRun.Status.FAILED, str(error))
        ids = select_pairs(judge, selection, limit)
        run.total = len(ids)
        run.save(update_fields=["total", "updated_at"])
        stop = threading.Event()
        recorder = _Recorder(judge, run, started_by, progress, stop)
        try:
            summary = judge_pairs(
                client,
                recorder.jobs(ids),
                parse=answer_reader(judge.pool),
                concurrency=concurrency or judge.concurrency,
                budget=Budget(max_calls, max_tokens),
                cancel=_AnyOf(stop, cancel),
                on_result=recorder.on_result,
                on_progress=recorder.on_progress,
                total=len(ids),
            )
        finally:
            recorder.flush()  # whatever arrived is kept, even when interrupted
        recorder._count(summary)
        if summary.stopped == "cancelled" and not (cancel is not None and cancel.is_set()):
            summary.message = "Cancelled from the judge's page."
        return end_run(run, END_STATUS[summary.stopped], describe(summary))
    except KeyboardInterrupt:
        end_run(run, JudgeRun.Status.CANCELLED, "Interrupted; the answers that arrived are stored.")
        raise
    except Exception as error:
        end_run(run, JudgeRun.Status.FAILED, f"{type(error).__name__}: {error}"[:2000])
        raise
    finally:
        if own_client and client is not None:
            client.close()


def end_run(run: JudgeRun, status: str, message: str) -> JudgeRun:
    run.status, run.message, run.finished_at = status, message, timezone.now()
    run.save()
    return run


# --- Runs seen from a page ----------------------------------------------------------------------------


def active_run(judge: ModelJudge) -> JudgeRun | None:
    """The judge's queued or running run (not a stale one), if any."""
    for run in judge.runs.filter(status__in=JudgeRun.ACTIVE).order_by("-pk"):
        if not run.is_stale():
            return run
    return None


def cancel_run(run: JudgeRun) -> str:
    """Stop a run: a queued (or stale) one at once, a running one at its next answer. Says what it did."""
    if run.is_stale():
        end_run(run, JudgeRun.Status.CANCELLED, "Marked stopped: no news from it for a long time.")
        return "The run is marked stopped."
    if run.status == JudgeRun.Status.QUEUED:
        end_run(run, JudgeRun.Status.CANCELLED, "Cancelled before it started.")
        return "The run is cancelled."
    if run.status == JudgeRun.Status.RUNNING:
        JudgeRun.objects.filter(pk=run.pk).update(cancel_requested=True)
        return "The run stops after the answers on their way; what arrived is kept."
    return "The run had ended already."
