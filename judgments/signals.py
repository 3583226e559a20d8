"""Signals the judgments app sends and the scoring app listens to (scoring imports judgments, never the reverse).

grades_changed(sender, pool, pair_ids[, query_ids]): inside the transaction that changed judgments or final
grades; query_ids (the pairs' queries) when the sender knows them.
run_submitted(sender, run): inside the transaction that stored a run.
capture_failed(sender, job): a capture job has just been closed as failed (nothing stored); not inside a
transaction of the capture's (scoring tells the pool's webhooks).

Both are sent before the commit, so that a receiver can record durable follow-up work (a task row in the
same database) that commits or rolls back with the change: a crash right after the commit cannot lose
it. Slow work belongs after the commit (`transaction.on_commit`), as scoring.receivers does.
"""

from django.dispatch import Signal

grades_changed = Signal()
run_submitted = Signal()
capture_failed = Signal()
