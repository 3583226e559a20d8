"""An admin's hold on a rater of a pool: pause them, or leave their grades out of the combined grade.

- `set_paused(pool, rater, paused, admin)`: a paused rater is served no pair (the grading page says so,
  `GET pools/{name}/next/` answers 204) and may not add a grade; their held pairs go back to the queue.
- `set_excluded(pool, rater, excluded, admin)`: their judgments of the pool stay stored but are marked
  `excluded`: the combined grade, the scores (grades_changed follows) and the queue's grade counts leave
  them out, so their pairs are served to other raters again. Grades they give while excluded are
  excluded too. Including them again reverses it.
Every change is recorded in RaterStatusChange (who, when, how many judgments it touched).
"""

from __future__ import annotations

from django.db import transaction

from .models import Judgment, Pair, Pool, RaterStatus, RaterStatusChange
from .services import notify_grades


def status_of(pool: Pool, rater) -> RaterStatus:
    """The rater's status in the pool (an unsaved one with both flags off when there is none)."""
    return RaterStatus.objects.filter(pool=pool, rater=rater).first() or RaterStatus(pool=pool, rater=rater)


def is_paused(pool: Pool, rater) -> bool:
    return RaterStatus.objects.filter(pool=pool, rater=rater, paused=True).exists()


@transaction.atomic
def set_paused(pool: Pool, rater, paused: bool, admin) -> bool:
    """Pause or resume; returns whether anything changed."""
    status, _ = RaterStatus.objects.select_for_update().get_or_create(pool=pool, rater=rater)
    if status.paused == paused:
        return False
    status.paused = paused
    status.save(update_fields=["paused"])
    if paused:
        Pair.objects.filter(pool=pool, held_by=rater).update(held_by=None, held_until=None)
    action = RaterStatusChange.Action.PAUSED if paused else RaterStatusChange.Action.RESUMED
    RaterStatusChange.objects.create(pool=pool, rater=rater, action=action, changed_by=admin)
    return True


@transaction.atomic
def set_excluded(pool: Pool, rater, excluded: bool, admin) -> int:
    """Leave the rater's grades out of (or back in) the combined grade. Returns how many judgments
    changed; the scores of their pairs follow."""
    status, _ = RaterStatus.objects.select_for_update().get_or_create(pool=pool, rater=rater)
    if status.excluded == excluded:
        return 0
    status.excluded = excluded
    status.save(update_fields=["excluded"])
    mine = Judgment.objects.filter(pair__pool=pool, rater=rater).exclude(excluded=excluded)
    touched = list(mine.values_list("pair_id", "pair__query_id"))
    Judgment.objects.filter(pair__pool=pool, rater=rater).update(excluded=excluded)
    action = RaterStatusChange.Action.EXCLUDED if excluded else RaterStatusChange.Action.INCLUDED
    RaterStatusChange.objects.create(
        pool=pool, rater=rater, action=action, changed_by=admin, judgments=len(touched)
    )
    notify_grades(pool, [p for p, _ in touched], [q for _, q in touched])
    return len(touched)
