"""Deleting and archiving judges, configurations, runs and pools from the app.

Every removal is planned first (`plan`): what would go with it, counted, and whether it may go at all.
Three outcomes, decided here and nowhere else:

- **delete**: nothing worth keeping depends on it; it goes with what the plan lists.
- **archive**: history must stay (a judge's or a pool's grades, a configuration's runs): it is hidden
  from lists (the home page, the configurations list, the leaderboard, the judges list) and kept, with
  every grade and run, for exports and the commands; it can be restored.
- **refuse**: something else depends on it now (a capture or a judging run under way; a run that is its
  configuration's current run, which the leaderboard and the compare page score). One line names the
  dependants; nothing changes.

A delete asked for when the plan says archive or refuse is refused with that line, so a page or a
script cannot delete history by skipping the confirmation page.

A pool's grades, pairs and documents and a judge's grades are read from the stored tallies
(judgments.tallies, exact, one statement: counting a pool of 1.2M grades took 446-1,085 ms). Its queries,
which no tally counts, are counted up to COUNT_CAP and said as "more than 10,000 queries" beyond it (the
statement stops there).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from judgments import snapshots, tallies
from judgments.models import (
    JudgmentChange,
    ModelJudge,
    Pool,
    Query,
    Ranking,
    Run,
    SearchConfiguration,
)
from judgments.models.capture import CaptureJob
from judgments.models.judges import JudgeRun

DELETE, ARCHIVE, REFUSE = "delete", "archive", "refuse"
ACTIVE_CAPTURE = (CaptureJob.Status.QUEUED, CaptureJob.Status.RUNNING)


class RemovalRefused(Exception):
    """A removal that may not happen; the message is the one line to show."""


COUNT_CAP = 10_000  # rows counted at most per statement (see the module docstring)


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def _up_to_cap(queryset) -> int:
    """The queryset's rows, counted up to COUNT_CAP + 1 (one statement that stops there)."""
    return queryset.order_by()[: COUNT_CAP + 1].count()


def _capped(count: int, one: str, many: str | None = None) -> str:
    """_n for a count from _up_to_cap: beyond the cap, "more than 10,000 ..."."""
    if count > COUNT_CAP:
        return f"more than {COUNT_CAP:,} {many or one + 's'}"
    return _n(count, one, many)


@dataclass
class Plan:
    """What removing `target` would do: `goes` (what is deleted with it, counted), `keeps` (why it must be
    archived instead), `blocks` (what depends on it now)."""

    target: object
    what: str  # "judge gpt-4o", "configuration bm25", ...
    goes: list[str] = field(default_factory=list)
    keeps: list[str] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)

    @property
    def action(self) -> str:
        return REFUSE if self.blocks else ARCHIVE if self.keeps else DELETE

    @property
    def line(self) -> str:
        """The one line a refused delete shows."""
        if self.blocks:
            return f"Refused: {self.what} cannot be deleted: {'; '.join(self.blocks)}."
        if self.keeps:
            return (
                f"Refused: {self.what} has {' and '.join(self.keeps)}: archive it instead (kept for exports)."
            )
        return f"{self.what} can be deleted."


def _active_captures(configurations) -> list[str]:
    jobs = CaptureJob.objects.filter(configuration__in=configurations, status__in=ACTIVE_CAPTURE)
    return [f"capture #{job.pk} of {job.configuration.name} is {job.status}" for job in jobs if job.active]


def _active_judge_runs(judges) -> list[str]:
    runs = JudgeRun.objects.filter(judge__in=judges, status__in=JudgeRun.ACTIVE).select_related("judge__user")
    return [
        f"judging run #{run.pk} of {run.judge.user.username} is {run.status}" for run in runs if run.active
    ]


def plan_judge(judge: ModelJudge) -> Plan:
    plan = Plan(judge, f"judge {judge.user.username}")
    grades = tallies.rater_counts(judge.pool, judge.user).done  # a judge grades in its own pool only
    changes = grades or JudgmentChange.objects.filter(rater=judge.user).exists()
    if grades or changes:
        plan.keeps.append(_n(grades, "grade") + " of graded pairs" if grades else "grade history")
    plan.blocks += _active_judge_runs([judge])
    plan.goes += [_n(judge.runs.count(), "judging run"), f"its rater account {judge.user.username}"]
    return plan


def plan_configuration(configuration: SearchConfiguration) -> Plan:
    plan = Plan(configuration, f"configuration {configuration.name}")
    runs = configuration.runs.count()
    if runs:
        plan.keeps.append(_n(runs, "run") + " scored on the leaderboard")
    plan.blocks += _active_captures([configuration])
    plan.goes += [
        _n(runs, "run"),
        _n(configuration.endpoints.count(), "endpoint version"),
        _n(configuration.captures.count(), "capture"),
    ]
    return plan


def plan_run(run: Run) -> Plan:
    configuration = run.configuration
    plan = Plan(run, f"run #{run.pk} of {configuration.name}")
    current = configuration.runs.order_by("-id").values_list("pk", flat=True).first()
    if run.pk == current:
        plan.blocks.append(
            f"it is {configuration.name}'s current run, which the leaderboard, the compare page and the "
            "trust page score (add a newer run, or archive the configuration)"
        )
    plan.goes += [_n(Ranking.objects.filter(run=run).count(), "ranking"), "its scores"]
    return plan


def plan_pool(pool: Pool) -> Plan:
    plan = Plan(pool, f"pool {pool.name}")
    counts = tallies.pool_counts(pool)
    grades = counts.judgments  # every grade and can't-judge answer
    runs = Run.objects.filter(configuration__pool=pool).count()
    if grades:
        plan.keeps.append(_n(grades, "grade"))
    if runs:
        plan.keeps.append(_n(runs, "run"))
    configurations = pool.configurations.all()
    plan.blocks += _active_captures(configurations) + _active_judge_runs(pool.judges.all())
    if plan.keeps:  # archived, never deleted: no need to count a big pool's rows
        return plan
    plan.goes += [
        _capped(_up_to_cap(Query.objects.filter(pool=pool)), "query", "queries"),
        _n(counts.documents, "document"),
        _n(counts.pairs, "pair"),
        _n(configurations.count(), "configuration"),
        _n(pool.judges.count(), "model judge"),
    ]
    return plan


PLANS = {ModelJudge: plan_judge, SearchConfiguration: plan_configuration, Run: plan_run, Pool: plan_pool}


def plan(target) -> Plan:
    return PLANS[type(target)](target)


@transaction.atomic
def delete(target) -> Plan:
    """Delete `target` as planned; RemovalRefused (nothing changed) unless the plan says delete."""
    planned = plan(target)
    if planned.action != DELETE:
        raise RemovalRefused(planned.line)
    pool_id = _pool_id(target)
    if isinstance(target, ModelJudge):
        user = target.user
        target.delete()
        user.delete()
    else:
        target.delete()
    if pool_id is not None and not isinstance(target, Pool):
        snapshots.mark_changed(pool_id)  # trust and estimates list judges and configurations
    return planned


def _pool_id(target) -> int | None:
    if isinstance(target, ModelJudge | SearchConfiguration):
        return target.pool_id
    if isinstance(target, Run):
        return target.configuration.pool_id
    return None


ARCHIVABLE = (ModelJudge, SearchConfiguration, Pool)


def archive(target, archived: bool = True) -> None:
    """Hide `target` from lists (or show it again), keeping everything it holds."""
    if not isinstance(target, ARCHIVABLE):
        raise RemovalRefused(f"Refused: a {type(target).__name__.lower()} cannot be archived.")
    if archived:
        planned = plan(target)
        if planned.blocks:
            raise RemovalRefused(
                f"Refused: {planned.what} cannot be archived now: {'; '.join(planned.blocks)}."
            )
    target.archived_at = timezone.now() if archived else None
    with transaction.atomic():
        type(target).objects.filter(pk=target.pk).update(archived_at=target.archived_at)
        if not isinstance(target, Pool):
            snapshots.mark_changed(target.pool_id)  # trust and estimates list judges and configurations
